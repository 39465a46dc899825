//! The registry client against the real CNCF registry: streamed uploads, mounts, manifests,
//! aborted and refused uploads, credentials, TLS, and what the errors say.

use std::error::Error as _;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;

use crate::support::registry::TestRegistry;
use crate::support::run::assert_redacted;
use crate::support::token_server::TokenAuth;
use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::{self, Stream};
use kubectl_registry::image::digest::Digest;
use kubectl_registry::image::reference::RegistryHost;
use kubectl_registry::image::registry::{
    CredentialSources, RegistryClient, TransportOptions, is_retryable,
};
use kubectl_registry::plumbing::error::{Error, ExitCode};
use snapbox::str;

const HELP: &str = "https://example.test/local-registry-guide";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Options that never read the process environment's credentials.
fn options() -> TransportOptions {
    TransportOptions {
        help: Some(HELP.to_string()),
        credentials: CredentialSources::default(),
        ..TransportOptions::default()
    }
}

fn client(host: &str, options: &TransportOptions) -> RegistryClient {
    install_crypto();
    RegistryClient::new(&RegistryHost::parse(host).unwrap(), options).unwrap()
}

/// Deterministic, incompressible-looking bytes (xorshift), different per seed.
fn generated(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// The bytes as a stream of 64 KiB chunks, as a file reader would give them.
fn chunked(bytes: &[u8]) -> impl Stream<Item = std::io::Result<Bytes>> + Send + 'static {
    let chunks: Vec<std::io::Result<Bytes>> = bytes
        .chunks(64 * 1024)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    stream::iter(chunks)
}

fn manifest_for(config: &[u8], layers: &[&[u8]]) -> Vec<u8> {
    let descriptor = |media_type: &str, bytes: &[u8]| serde_json::json!({"mediaType": media_type, "digest": Digest::of_bytes(bytes).as_str(), "size": bytes.len()});
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": descriptor("application/vnd.oci.image.config.v1+json", config),
        "layers": layers.iter().map(|l| descriptor("application/vnd.oci.image.layer.v1.tar", l)).collect::<Vec<_>>(),
    });
    serde_json::to_vec_pretty(&manifest).unwrap()
}

fn image_config() -> Vec<u8> {
    br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]},"config":{}}"#
        .to_vec()
}

fn causes_and_hints(err: &Error) -> String {
    format!(
        "{}\n{}\n{}",
        err.message(),
        err.causes().join("\n"),
        err.hints().join("\n")
    )
}

/// The error of a push of the five bytes `layer` to `app` that must fail, as [`causes_and_hints`].
async fn refused_layer(client: &RegistryClient) -> String {
    let blob = b"layer";
    let err = client
        .push_blob("app", &Digest::of_bytes(blob), 5, chunked(blob))
        .await
        .unwrap_err();
    causes_and_hints(&err)
}

async fn push(client: &RegistryClient, repo: &str, bytes: &[u8]) -> Digest {
    let digest = Digest::of_bytes(bytes);
    client
        .push_blob(repo, &digest, bytes.len() as u64, chunked(bytes))
        .await
        .unwrap();
    digest
}

#[tokio::test]
async fn pushed_blobs_and_manifest_read_back_identically() {
    let registry = TestRegistry::start();
    let client = client(&registry.host(), &options());
    client.ping().await.unwrap();
    let config = image_config();
    let layer_a = generated(3 * 1024 * 1024 + 17, 1);
    let layer_b = generated(5 * 1024 * 1024, 2);
    for blob in [&config, &layer_a, &layer_b] {
        push(&client, "myimg", blob).await;
    }
    let manifest = manifest_for(&config, &[&layer_a, &layer_b]);
    let digest = client
        .put_manifest("myimg", "dev", OCI_MANIFEST, Bytes::from(manifest.clone()))
        .await
        .unwrap();

    assert_eq!(digest, Digest::of_bytes(&manifest));
    assert_eq!(registry.skopeo_raw_manifest("myimg:dev"), manifest);
    for blob in [&config, &layer_a, &layer_b] {
        let answer = registry.get(&format!("/v2/myimg/blobs/{}", Digest::of_bytes(blob)));
        assert_eq!(answer.status, 200);
        assert_eq!(Digest::of_bytes(&answer.body), Digest::of_bytes(blob));
        assert_eq!(answer.body.len(), blob.len());
    }
    let by_digest = registry.request_with(
        "GET",
        &format!("/v2/myimg/manifests/{digest}"),
        &[("Accept", OCI_MANIFEST)],
    );
    assert_eq!(by_digest.body, manifest);
    assert_eq!(
        by_digest.header("Docker-Content-Digest"),
        Some(digest.as_str())
    );
}

#[tokio::test]
async fn head_finds_a_present_blob_with_its_size_and_not_an_absent_one() {
    let registry = TestRegistry::start();
    let client = client(&registry.host(), &options());
    let blob = generated(1024 * 1024 + 3, 3);
    let digest = Digest::of_bytes(&blob);
    assert_eq!(client.blob_exists("app", &digest).await.unwrap(), None);
    push(&client, "app", &blob).await;
    assert_eq!(
        client.blob_exists("app", &digest).await.unwrap(),
        Some(blob.len() as u64)
    );
    assert_eq!(
        client.blob_exists("other", &digest).await.unwrap(),
        None,
        "blobs belong to a repository"
    );
}

#[tokio::test]
async fn a_blob_mounts_from_another_repository_and_an_unknown_one_does_not() {
    let registry = TestRegistry::start();
    let client = client(&registry.host(), &options());
    let blob = generated(2 * 1024 * 1024, 4);
    let digest = push(&client, "base", &blob).await;
    assert_eq!(registry.blob_status("app", digest.as_str()), 404);

    assert!(client.mount_blob("app", &digest, "base").await.unwrap());
    let answer = registry.get(&format!("/v2/app/blobs/{digest}"));
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, blob);

    let unknown = Digest::of_bytes(b"never pushed");
    assert!(!client.mount_blob("app", &unknown, "base").await.unwrap());
    assert_eq!(registry.blob_status("app", unknown.as_str()), 404);
}

#[tokio::test]
async fn a_body_stream_that_fails_aborts_the_upload_and_leaves_no_blob() {
    let registry = TestRegistry::start();
    let client = client(&registry.host(), &options());
    let content = generated(4 * 1024 * 1024, 5);
    let digest = Digest::of_bytes(&content);
    let first_megabyte: Vec<std::io::Result<Bytes>> = content[..1024 * 1024]
        .chunks(64 * 1024)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let failing = stream::iter(first_megabyte).chain(stream::iter([Err(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "layer 1: content does not match its digest",
    ))]));

    let err = client
        .push_blob("app", &digest, content.len() as u64, failing)
        .await
        .unwrap_err();

    let io = err
        .source()
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .expect("the stream's io error as source");
    assert_eq!(io.to_string(), "layer 1: content does not match its digest");
    assert!(
        err.message()
            .contains(&format!("sha256:{}", &digest.hex()[..12])),
        "{}",
        err.message()
    );
    assert_redacted(
        &causes_and_hints(&err),
        str![[r#"
pushing blob sha256:[DIGEST]… to 127.0.0.1:[PORT]/app: reading the blob's content failed, so the upload was aborted
layer 1: content does not match its digest

"#]],
    );
    assert_eq!(err.exit_code(), ExitCode::Input);
    assert!(!is_retryable(&err));
    assert_eq!(registry.blob_status("app", digest.as_str()), 404);
    let tags = registry.get("/v2/app/tags/list");
    assert!(
        tags.status == 404 || !String::from_utf8_lossy(&tags.body).contains("\"tags\":["),
        "no tag may exist: {} {}",
        tags.status,
        String::from_utf8_lossy(&tags.body)
    );
}

#[tokio::test]
async fn a_stream_shorter_than_its_declared_size_is_refused_in_our_words() {
    let registry = TestRegistry::start();
    let client = client(&registry.host(), &options());
    let content = generated(512 * 1024, 6);
    let digest = Digest::of_bytes(&content);

    let err = client
        .push_blob("app", &digest, content.len() as u64 + 10, chunked(&content))
        .await
        .unwrap_err();

    let io = err
        .source()
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .expect("an io error as source");
    assert_eq!(io.kind(), std::io::ErrorKind::UnexpectedEof);
    assert_redacted(
        &io.to_string(),
        str!["the blob's content ended after 524288 bytes; its declared size is 524298"],
    );
    assert_eq!(registry.blob_status("app", digest.as_str()), 404);
}

#[tokio::test]
async fn a_claimed_digest_that_does_not_match_the_bytes_is_refused() {
    let registry = TestRegistry::start();
    let client = client(&registry.host(), &options());
    let content = generated(1024 * 1024, 7);
    let claimed = Digest::of_bytes(b"something else");

    let err = client
        .push_blob("app", &claimed, content.len() as u64, chunked(&content))
        .await
        .unwrap_err();

    let text = causes_and_hints(&err);
    assert!(
        err.message()
            .starts_with(&format!("pushing blob sha256:{}", &claimed.hex()[..12])),
        "{text}"
    );
    assert_redacted(
        &text,
        str![[r#"
pushing blob sha256:[DIGEST]… to 127.0.0.1:[PORT]/app
the registry answered 400 Bad Request: DIGEST_INVALID: provided digest did not match uploaded content ({"Digest":"sha256:[DIGEST]","Reason":{}})
this cluster's registry guide: https://example.test/local-registry-guide
"#]],
    );
    assert_eq!(err.exit_code(), ExitCode::Registry);
    assert_eq!(registry.blob_status("app", claimed.as_str()), 404);
    assert_eq!(
        registry.blob_status("app", Digest::of_bytes(&content).as_str()),
        404
    );
}

#[tokio::test]
async fn content_of_unknown_digest_is_pushed_and_named_by_its_hash() {
    let registry = TestRegistry::start();
    let client = client(&registry.host(), &options());
    let content = generated(3 * 1024 * 1024 + 5, 8);

    let (digest, size) = client
        .push_blob_unknown_digest("app", chunked(&content))
        .await
        .unwrap();

    assert_eq!(digest, Digest::of_bytes(&content));
    assert_eq!(size, content.len() as u64);
    let answer = registry.get(&format!("/v2/app/blobs/{digest}"));
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, content);
}

#[tokio::test]
async fn a_registry_that_is_down_is_named_with_the_guide() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let host = format!("127.0.0.1:{port}");
    let client = client(&host, &options());

    let err = client.ping().await.unwrap_err();
    let text = causes_and_hints(&err);
    assert_redacted(
        &text,
        str![[r#"
reaching the registry 127.0.0.1:[PORT]
the registry at 127.0.0.1:[PORT] is down or not reachable from here
Connection refused (os error 111)
this cluster's registry guide: https://example.test/local-registry-guide
check that the registry runs and that 127.0.0.1:[PORT] is reachable from this machine
"#]],
    );
    assert_eq!(err.exit_code(), ExitCode::Registry);

    let text = refused_layer(&client).await;
    assert_redacted(
        &text,
        str![[r#"
pushing blob sha256:[DIGEST]… to 127.0.0.1:[PORT]/app
the registry at 127.0.0.1:[PORT] is down or not reachable from here
Connection refused (os error 111)
this cluster's registry guide: https://example.test/local-registry-guide
check that the registry runs and that 127.0.0.1:[PORT] is reachable from this machine
"#]],
    );
}

fn docker_config(dir: &Path, json: &str) -> CredentialSources {
    let path = dir.join("config.json");
    std::fs::write(&path, json).unwrap();
    CredentialSources {
        docker_config: Some(path),
        podman_auth_file: None,
        helper_path: Some(helper_path(dir)),
    }
}

/// `dir` first, then our own PATH (the helper script needs `cat`). Read, never changed.
fn helper_path(dir: &Path) -> std::ffi::OsString {
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(
        std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&inherited)),
    )
    .unwrap()
}

fn auths(host: &str, user: &str, password: &str) -> String {
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!(r#"{{"auths":{{"https://{host}":{{"auth":"{auth}"}}}}}}"#)
}

#[tokio::test]
async fn wrong_or_missing_credentials_name_the_host_and_docker_login() {
    let registry = TestRegistry::with_basic_auth("alice", "s3cret");
    let host = registry.host();
    let dir = tempfile::tempdir().unwrap();
    let wrong = TransportOptions {
        credentials: docker_config(dir.path(), &auths(&host, "alice", "wrong")),
        ..options()
    };

    let err = client(&host, &wrong).ping().await.unwrap_err();
    let text = causes_and_hints(&err);
    assert_redacted(
        &text,
        str![[r#"
reaching the registry 127.0.0.1:[PORT]
wrong or missing credentials for 127.0.0.1:[PORT]: the credentials from the auths entry for 127.0.0.1:[PORT] in [ROOT]/config.json were refused
the registry answered 401 Unauthorized: UNAUTHORIZED: authentication required
this cluster's registry guide: https://example.test/local-registry-guide
run `docker login 127.0.0.1:[PORT]` (or `podman login 127.0.0.1:[PORT]`) with an account allowed to push
"#]],
    );
    assert!(
        !text.contains("wrong\n") && !text.contains("YWxpY2U6d3Jvbmc"),
        "no secret is shown: {text}"
    );

    let nowhere = TransportOptions {
        credentials: CredentialSources {
            docker_config: Some(dir.path().join("absent.json")),
            ..CredentialSources::default()
        },
        ..options()
    };
    let text = refused_layer(&client(&host, &nowhere)).await;
    assert_redacted(
        &text,
        str![[r#"
pushing blob sha256:[DIGEST]… to 127.0.0.1:[PORT]/app
wrong or missing credentials for 127.0.0.1:[PORT]: no credentials for 127.0.0.1:[PORT] were found ([ROOT]/absent.json)
the registry answered 401 Unauthorized: UNAUTHORIZED: authentication required ([{"Action":"pull","Class":"","Name":"app","Type":"repository"},{"Action":"push","Class":"","Name":"app","Type":"repository"}])
this cluster's registry guide: https://example.test/local-registry-guide
run `docker login 127.0.0.1:[PORT]` (or `podman login 127.0.0.1:[PORT]`) with an account allowed to push
"#]],
    );
}

#[tokio::test]
async fn credentials_from_docker_auths_let_a_push_through() {
    let registry = TestRegistry::with_basic_auth("alice", "s3cret");
    let (_, manifest) = push_as_alice(&registry, "secure/app", 2 * 1024 * 1024, 9).await;
    assert_eq!(registry.skopeo_raw_manifest("secure/app:v1"), manifest);
}

/// A `docker-credential-test` helper that knows one server, and records what it was asked.
fn write_helper(dir: &Path, server: &str, user: &str, password: &str) {
    let script = format!(
        "#!/bin/sh\n\
         [ \"$1\" = get ] || exit 2\n\
         asked=$(cat)\n\
         printf '%s\\n' \"$asked\" >> '{asked}'\n\
         if [ \"$asked\" = '{server}' ]; then\n\
           printf '{{\"ServerURL\":\"%s\",\"Username\":\"{user}\",\"Secret\":\"{password}\"}}' \"$asked\"\n\
         else\n\
           echo 'credentials not found in native keychain'; exit 1\n\
         fi\n",
        asked = dir.join("asked").display(),
    );
    let path = dir.join("docker-credential-test");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test]
async fn credentials_from_a_helper_on_path_let_a_push_through() {
    let registry = TestRegistry::with_basic_auth("alice", "s3cret");
    let host = registry.host();
    let dir = tempfile::tempdir().unwrap();
    write_helper(dir.path(), &host, "alice", "s3cret");
    let options = TransportOptions {
        credentials: docker_config(
            dir.path(),
            &format!(r#"{{"credHelpers":{{"{host}":"test"}}}}"#),
        ),
        ..options()
    };
    let client = client(&host, &options);
    let layer = generated(1024 * 1024, 10);
    let digest = push(&client, "app", &layer).await;
    assert_eq!(registry.blob_status("app", digest.as_str()), 200);
    let asked = std::fs::read_to_string(dir.path().join("asked")).unwrap();
    assert_eq!(
        asked,
        format!("{host}\n"),
        "the helper is asked once, for the host"
    );
}

#[tokio::test]
async fn a_store_without_credentials_falls_back_to_auths() {
    let registry = TestRegistry::with_basic_auth("alice", "s3cret");
    let host = registry.host();
    let dir = tempfile::tempdir().unwrap();
    write_helper(dir.path(), "some.other.registry", "x", "y");
    let json = auths(&host, "alice", "s3cret").replacen('{', r#"{"credsStore":"test","#, 1);
    let options = TransportOptions {
        credentials: docker_config(dir.path(), &json),
        ..options()
    };
    client(&host, &options).ping().await.unwrap();
    let asked = std::fs::read_to_string(dir.path().join("asked")).unwrap();
    assert_eq!(
        asked,
        format!("{host}\n"),
        "the store was asked and said not found"
    );
}

#[tokio::test]
async fn an_https_registry_needs_its_ca_or_insecure() {
    let registry = TestRegistry::with_tls();
    let host = registry.host();

    let err = client(&host, &options()).ping().await.unwrap_err();
    let text = causes_and_hints(&err);
    assert_redacted(
        &text,
        str![[r#"
reaching the registry 127.0.0.1:[PORT]
the TLS certificate of 127.0.0.1:[PORT] is not trusted
invalid peer certificate: UnknownIssuer
this cluster's registry guide: https://example.test/local-registry-guide
pass --ca-file with the CA that signed the registry's certificate, or --insecure to skip the check
"#]],
    );

    let trusted = TransportOptions {
        ca_file: Some(registry.ca_file()),
        ..options()
    };
    let client_with_ca = client(&host, &trusted);
    client_with_ca.ping().await.unwrap();
    let config = image_config();
    let layer = generated(1024 * 1024, 11);
    push(&client_with_ca, "tls/app", &config).await;
    push(&client_with_ca, "tls/app", &layer).await;
    let manifest = manifest_for(&config, &[&layer]);
    client_with_ca
        .put_manifest("tls/app", "v1", OCI_MANIFEST, Bytes::from(manifest.clone()))
        .await
        .unwrap();
    assert_eq!(registry.skopeo_raw_manifest("tls/app:v1"), manifest);

    let insecure = TransportOptions {
        insecure: true,
        ..options()
    };
    let insecure_client = client(&host, &insecure);
    insecure_client.ping().await.unwrap();
    assert_eq!(
        insecure_client
            .blob_exists("tls/app", &Digest::of_bytes(&layer))
            .await
            .unwrap(),
        Some(layer.len() as u64)
    );
}

#[tokio::test]
async fn a_ca_file_for_a_plain_http_loopback_registry_falls_back_to_http() {
    let registry = TestRegistry::start();
    let dir = tempfile::tempdir().unwrap();
    // Any valid PEM certificate will do: the registry never shows one.
    let tls_registry = TestRegistry::with_tls();
    let ca = dir.path().join("ca.crt");
    std::fs::copy(tls_registry.ca_file(), &ca).unwrap();
    let options = TransportOptions {
        ca_file: Some(ca),
        ..options()
    };
    let client = client(&registry.host(), &options);
    client.ping().await.unwrap();
    push(&client, "app", b"plain").await;
    assert_eq!(
        registry.blob_status("app", Digest::of_bytes(b"plain").as_str()),
        200
    );
}

#[tokio::test]
async fn a_manifest_over_the_registry_limit_is_refused_as_too_big() {
    let registry = TestRegistry::start();
    let client = client(&registry.host(), &options());
    let config = image_config();
    push(&client, "app", &config).await;
    let padding = "x".repeat(5 * 1024 * 1024);
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&manifest_for(&config, &[])).unwrap();
    manifest["annotations"] = serde_json::json!({ "padding": padding });
    let bytes = serde_json::to_vec(&manifest).unwrap();

    let err = client
        .put_manifest("app", "big", OCI_MANIFEST, Bytes::from(bytes.clone()))
        .await
        .unwrap_err();

    let text = causes_and_hints(&err);
    assert!(
        text.contains(&format!(
            "the manifest is {} bytes, more than the registry accepts",
            bytes.len()
        )),
        "{text}"
    );
    assert_redacted(
        &text,
        str![[r#"
pushing manifest sha256:[DIGEST]… (big) to 127.0.0.1:[PORT]/app
the manifest is 5243156 bytes, more than the registry accepts (distribution takes at most 4 MiB)
the registry answered 400 Bad Request: MANIFEST_INVALID: manifest invalid (http: request body too large)
this cluster's registry guide: https://example.test/local-registry-guide
"#]],
    );
    assert_eq!(registry.get("/v2/app/manifests/big").status, 404);
}

#[tokio::test]
async fn a_manifest_naming_a_missing_blob_is_refused_with_the_registry_reason() {
    let registry = TestRegistry::start();
    let client = client(&registry.host(), &options());
    let config = image_config();
    push(&client, "app", &config).await;
    let manifest = manifest_for(&config, &[b"layer never pushed"]);

    let err = client
        .put_manifest("app", "dev", OCI_MANIFEST, Bytes::from(manifest))
        .await
        .unwrap_err();

    let text = causes_and_hints(&err);
    assert_redacted(
        &text,
        str![[r#"
pushing manifest sha256:[DIGEST]… (dev) to 127.0.0.1:[PORT]/app
the registry answered 400 Bad Request: MANIFEST_BLOB_UNKNOWN: blob unknown to registry (sha256:[DIGEST])
this cluster's registry guide: https://example.test/local-registry-guide
"#]],
    );
    assert_eq!(registry.get("/v2/app/manifests/dev").status, 404);
}

/// A stand-in for a registry that stores something other than what it was sent (no real one does
/// that on purpose): answers `/v2/` and every manifest PUT with a fixed, wrong digest.
fn rewriting_registry() -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let handle = std::thread::spawn(move || {
        // Two requests: the ping and the manifest PUT.
        for _ in 0..2 {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap();
                }
            }
            std::io::Read::read_exact(&mut reader, &mut vec![0; length]).unwrap();
            let wrong = format!("sha256:{}", "0".repeat(64));
            let answer = if request_line.starts_with("PUT ") {
                format!(
                    "HTTP/1.1 201 Created\r\nDocker-Content-Digest: {wrong}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
            } else {
                "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".to_string()
            };
            let mut stream = stream;
            stream.write_all(answer.as_bytes()).unwrap();
        }
    });
    (host, handle)
}

#[tokio::test]
async fn a_registry_answering_another_manifest_digest_is_an_error() {
    let (host, server) = rewriting_registry();
    let client = client(&host, &options());
    client.ping().await.unwrap();
    let manifest = manifest_for(&image_config(), &[]);

    let err = client
        .put_manifest("app", "dev", OCI_MANIFEST, Bytes::from(manifest.clone()))
        .await
        .unwrap_err();

    let text = causes_and_hints(&err);
    let sent = Digest::of_bytes(&manifest);
    assert!(
        text.contains(&format!(
            "the registry stored the manifest as \"sha256:{}\", but the bytes sent hash to {sent}",
            "0".repeat(64)
        )),
        "{text}"
    );
    assert_redacted(
        &text,
        str![[r#"
pushing manifest sha256:[DIGEST]… (dev) to 127.0.0.1:[PORT]/app
the registry stored the manifest as "sha256:[DIGEST]", but the bytes sent hash to sha256:[DIGEST]
this cluster's registry guide: https://example.test/local-registry-guide
a proxy or the registry rewrote the manifest; pin the digest the registry reports, or push to it directly
"#]],
    );
    server.join().unwrap();
}

fn token_auth() -> TokenAuth {
    TokenAuth {
        user: "alice".into(),
        password: "s3cret".into(),
        refresh_token: "refresh-me".into(),
    }
}

/// A client of `registry` as alice (her password in docker's `auths`), and `repo:v1` pushed
/// with it, its layer `layer_size` bytes from `seed`: the client and the manifest.
async fn push_as_alice(
    registry: &TestRegistry,
    repo: &str,
    layer_size: usize,
    seed: u64,
) -> (RegistryClient, Vec<u8>) {
    let host = registry.host();
    let dir = tempfile::tempdir().unwrap();
    let options = TransportOptions {
        credentials: docker_config(dir.path(), &auths(&host, "alice", "s3cret")),
        ..options()
    };
    let client = client(&host, &options);
    client.ping().await.unwrap();
    let config = image_config();
    let layer = generated(layer_size, seed);
    push(&client, repo, &config).await;
    push(&client, repo, &layer).await;
    let manifest = manifest_for(&config, &[&layer]);
    client
        .put_manifest(repo, "v1", OCI_MANIFEST, Bytes::from(manifest.clone()))
        .await
        .unwrap();
    (client, manifest)
}

fn token_scopes(registry: &TestRegistry) -> Vec<Vec<String>> {
    registry
        .token_requests()
        .into_iter()
        .map(|r| r.scopes)
        .collect()
}

#[tokio::test]
async fn a_bearer_challenge_is_met_with_a_token_for_the_push_scope() {
    let registry = TestRegistry::with_token_auth(token_auth());
    let (_client, manifest) = push_as_alice(&registry, "team/app", 1024 * 1024, 12).await;
    // One token for the ping, then one for the repository, reused by every later request.
    assert_eq!(
        token_scopes(&registry),
        vec![vec![], vec!["repository:team/app:pull,push".to_string()]]
    );
    assert_eq!(registry.skopeo_raw_manifest("team/app:v1"), manifest);
}

#[tokio::test]
async fn a_manifest_read_in_a_push_uses_the_push_token_and_one_read_alone_a_pull_token() {
    let registry = TestRegistry::with_token_auth(token_auth());
    let (client, manifest) = push_as_alice(&registry, "team/app", 1024 * 1024, 12).await;
    let digest = Digest::of_bytes(&manifest);
    let push_scope = vec!["repository:team/app:pull,push".to_string()];

    // What an engine pushed, read back by tag and by digest: no second token.
    for reference in ["v1", digest.as_str()] {
        let read = client
            .manifest_in_push("team/app", reference)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (read.digest.as_str(), &read.bytes[..]),
            (digest.as_str(), &manifest[..])
        );
        assert_eq!(read.media_type, OCI_MANIFEST);
    }
    assert!(
        client
            .manifest_in_push("team/app", "v2")
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(token_scopes(&registry), vec![vec![], push_scope.clone()]);

    // ls and why read only: a pull token, asked once.
    for _ in 0..2 {
        let read = client.manifest("team/app", "v1").await.unwrap().unwrap();
        assert_eq!(read.digest, digest);
    }
    assert_eq!(
        token_scopes(&registry),
        vec![
            vec![],
            push_scope,
            vec!["repository:team/app:pull".to_string()]
        ]
    );
}

#[tokio::test]
async fn an_identity_token_is_exchanged_for_an_access_token() {
    let registry = TestRegistry::with_token_auth(token_auth());
    let host = registry.host();
    let dir = tempfile::tempdir().unwrap();
    let json = format!(r#"{{"auths":{{"{host}":{{"identitytoken":"refresh-me"}}}}}}"#);
    let options = TransportOptions {
        credentials: docker_config(dir.path(), &json),
        ..options()
    };
    let client = client(&host, &options);
    let digest = push(&client, "app", b"identity").await;
    assert_eq!(client.blob_exists("app", &digest).await.unwrap(), Some(8));
    let requests = registry.token_requests();
    assert!(
        requests.iter().all(|r| r.method == "POST" && r.granted),
        "{requests:?}"
    );
}

#[tokio::test]
async fn a_token_server_refusing_the_password_names_the_host_and_docker_login() {
    let registry = TestRegistry::with_token_auth(token_auth());
    let host = registry.host();
    let dir = tempfile::tempdir().unwrap();
    let options = TransportOptions {
        credentials: docker_config(dir.path(), &auths(&host, "alice", "nope")),
        ..options()
    };
    let text = refused_layer(&client(&host, &options)).await;
    assert_redacted(
        &text,
        str![[r#"
pushing blob sha256:[DIGEST]… to 127.0.0.1:[PORT]/app
wrong or missing credentials for 127.0.0.1:[PORT]: the credentials from the auths entry for 127.0.0.1:[PORT] in [ROOT]/config.json were refused
the registry answered 401 Unauthorized: UNAUTHORIZED: bad credentials
this cluster's registry guide: https://example.test/local-registry-guide
run `docker login 127.0.0.1:[PORT]` (or `podman login 127.0.0.1:[PORT]`) with an account allowed to push
"#]],
    );
    assert!(!registry.token_requests()[0].granted);
}

#[tokio::test]
async fn a_non_loopback_plain_http_registry_needs_insecure() {
    let registry = TestRegistry::start();
    // 0.0.0.0 is not a loopback address by our rules (so HTTPS is expected), yet Linux delivers a
    // connection to it to the local listener: a non-loopback host without DNS.
    let host = registry.host().replace("127.0.0.1", "0.0.0.0");

    let err = client(&host, &options()).ping().await.unwrap_err();
    let text = causes_and_hints(&err);
    assert!(text.contains(&host), "{text}");
    assert_redacted(
        &text,
        str![[r#"
reaching the registry 0.0.0.0:[..]
0.0.0.0:[..] answered in plain HTTP, not HTTPS
received corrupt message of type InvalidContentType
this cluster's registry guide: https://example.test/local-registry-guide
pass --insecure to allow plain HTTP to 0.0.0.0:[..]
"#]],
    );

    let insecure = TransportOptions {
        insecure: true,
        ..options()
    };
    let client = client(&host, &insecure);
    client.ping().await.unwrap();
    let digest = push(&client, "app", b"over plain http").await;
    assert_eq!(registry.blob_status("app", digest.as_str()), 200);
}

#[tokio::test]
async fn many_uploads_share_one_client_concurrently() {
    let registry = TestRegistry::start();
    let client = client(&registry.host(), &options());
    let blobs: Vec<Vec<u8>> = (0..8)
        .map(|seed| generated(1024 * 1024 + seed as usize, 100 + seed))
        .collect();
    let uploads = blobs.iter().map(|blob| {
        let client = client.clone();
        let digest = Digest::of_bytes(blob);
        let body = chunked(blob);
        let size = blob.len() as u64;
        tokio::spawn(async move { client.push_blob("app", &digest, size, body).await })
    });
    for finished in futures_util::future::join_all(uploads).await {
        finished.unwrap().unwrap();
    }
    for blob in &blobs {
        let answer = registry.get(&format!("/v2/app/blobs/{}", Digest::of_bytes(blob)));
        assert_eq!(answer.status, 200);
        assert_eq!(&answer.body, blob);
    }
}

#[tokio::test]
async fn an_upload_cut_off_by_the_registry_dying_is_retryable() {
    let registry = TestRegistry::start();
    let client = client(&registry.host(), &options());
    let content = generated(16 * 1024 * 1024, 13);
    let digest = Digest::of_bytes(&content);
    let pid = registry.pid().to_string();
    let chunks: Vec<Bytes> = content
        .chunks(64 * 1024)
        .map(Bytes::copy_from_slice)
        .collect();
    // After 1 MiB has gone out, the registry is killed; the rest of the body has nowhere to go.
    let body = stream::iter(chunks.into_iter().enumerate()).then(move |(index, chunk)| {
        let pid = pid.clone();
        async move {
            if index == 16 {
                let killed = std::process::Command::new("kill")
                    .args(["-9", &pid])
                    .status()
                    .unwrap();
                assert!(killed.success());
                // SIGKILL lands a moment later on a loaded machine: wait until it has (a
                // zombie is dead), not a fixed while.
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
                loop {
                    let stat =
                        std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                    let state = stat.rsplit(')').next().unwrap_or_default().trim_start();
                    if stat.is_empty() || state.starts_with('Z') {
                        break;
                    }
                    assert!(
                        std::time::Instant::now() < deadline,
                        "the registry outlived SIGKILL"
                    );
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
            }
            Ok(chunk)
        }
    });

    let err = client
        .push_blob("app", &digest, content.len() as u64, body)
        .await
        .unwrap_err();

    let text = causes_and_hints(&err);
    assert!(is_retryable(&err), "{text}");
    assert_eq!(err.exit_code(), ExitCode::Registry);
    assert!(
        err.message().contains(&format!("{}/app", registry.host())),
        "{text}"
    );
    assert!(text.contains(HELP), "{text}");
}
