//! What registries hold besides images, against the real registry: cosign's signature,
//! attestation and SBOM tags (`sha256-<digest>.sig`, `.att`, `.sbom`, their configs dated
//! `0001-01-01`), Notation signatures with a `subject` behind the OCI 1.1 referrers tag
//! (`sha256-<digest>`), BuildKit's attestation manifests inside an index, and configs whose
//! `created` is unknown. Each shape is built from the tool's spec and sources and put there
//! byte for byte over the distribution API (images by skopeo). `ls` shows them under their
//! subject; `prune` keeps them while it keeps the subject and deletes them with it. A repository
//! that does not exist, and a catalog a proxy refuses, are errors saying what to do.

use snapbox::str;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::support::cluster_scene::{RegistryScene, deleted_digests, kept_reasons};
use crate::support::fault_proxy::{Action, FaultProxy, Rule};
use crate::support::fixtures::{
    self, Image, LayerCompression, OCI_CONFIG, OCI_INDEX, OCI_MANIFEST, sha256,
};
use crate::support::registry::TestRegistry;

const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
const DSSE: &str = "application/vnd.dsse.envelope.v1+json";
const SPDX_JSON: &str = "text/spdx+json";
const NOTATION: &str = "application/vnd.cncf.notary.signature";
const JOSE: &str = "application/jose+json";
const IN_TOTO: &str = "application/vnd.in-toto+json";

/// What these tests put in a registry besides images: blobs and manifests, byte for byte.
trait Uploads {
    fn put_blob(&self, repo: &str, media_type: &str, bytes: &[u8]) -> Value;
    fn put_manifest(&self, repo: &str, reference: Option<&str>, manifest: &Value) -> Value;
}

impl Uploads for RegistryScene {
    /// Uploads `bytes` as a blob of `repo` (POST, then PUT with the digest); its descriptor.
    fn put_blob(&self, repo: &str, media_type: &str, bytes: &[u8]) -> Value {
        let digest = sha256(bytes);
        let started = self.registry.request_with_body(
            "POST",
            &format!("/v2/{repo}/blobs/uploads/"),
            &[],
            &[],
        );
        assert_eq!(started.status, 202, "starting an upload");
        let location = started.header("Location").expect("an upload location");
        let path = location
            .find("/v2/")
            .map(|at| &location[at..])
            .expect("a /v2/ location");
        let separator = if path.contains('?') { '&' } else { '?' };
        let done = self.registry.request_with_body(
            "PUT",
            &format!("{path}{separator}digest={digest}"),
            &[("Content-Type", "application/octet-stream")],
            bytes,
        );
        assert_eq!(done.status, 201, "uploading {digest}");
        json!({"mediaType": media_type, "digest": digest, "size": bytes.len()})
    }

    /// PUTs `manifest` as `repo`'s `reference` (a tag, or its digest); its descriptor.
    fn put_manifest(&self, repo: &str, reference: Option<&str>, manifest: &Value) -> Value {
        let bytes = serde_json::to_vec(manifest).unwrap();
        let digest = sha256(&bytes);
        let media_type = manifest["mediaType"].as_str().unwrap();
        let answer = self.registry.request_with_body(
            "PUT",
            &format!("/v2/{repo}/manifests/{}", reference.unwrap_or(&digest)),
            &[("Content-Type", media_type)],
            &bytes,
        );
        assert_eq!(
            answer.status,
            201,
            "{}",
            String::from_utf8_lossy(&answer.body)
        );
        json!({"mediaType": media_type, "digest": digest, "size": bytes.len()})
    }
}

/// An image of two small layers, created at `created` (`None`: no `created` at all).
fn image(seed: u64, created: Option<&str>) -> Image {
    Image::with_layers(seed, "linux/amd64", &[20 << 10, 10 << 10]).created(created)
}

/// `sha256-<hex>` for `digest`, with cosign's `.suffix` when given.
fn digest_tag(digest: &str, suffix: Option<&str>) -> String {
    let hex = digest.trim_start_matches("sha256:");
    suffix.map_or_else(
        || format!("sha256-{hex}"),
        |suffix| format!("sha256-{hex}.{suffix}"),
    )
}

/// What cosign's `mutate` writes for an attachment: a config dated Go's zero time, its one
/// diff_id the layer's digest (cosign's `pkg/oci/static`, and what it pushes, cosign#3657).
fn cosign_config(layer: &Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "architecture": "",
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]},
        "config": {},
    }))
    .unwrap()
}

/// cosign's attachment of `subject` in `repo` under `sha256-<hex>.<suffix>`: one layer of
/// `media_type` holding `payload`, with `annotations` (cosign's SIGNATURE_SPEC, ATTESTATION_SPEC,
/// SBOM_SPEC); its manifest digest.
fn cosign_attach(
    shelf: &RegistryScene,
    repo: &str,
    subject: &str,
    suffix: &str,
    (media_type, payload): (&str, &[u8]),
    annotations: Value,
) -> String {
    let mut layer = shelf.put_blob(repo, media_type, payload);
    layer["annotations"] = annotations;
    let config = shelf.put_blob(repo, OCI_CONFIG, &cosign_config(&layer));
    let manifest =
        json!({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config, "layers": [layer]});
    let tag = digest_tag(subject, Some(suffix));
    shelf.put_manifest(repo, Some(&tag), &manifest)["digest"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `cosign sign`, `cosign attest` and `cosign attach sbom` of `subject`: the three tags.
fn cosign_all(shelf: &RegistryScene, repo: &str, subject: &str) -> [String; 3] {
    let simple_signing = json!({"critical": {"identity": {"docker-reference": format!("{}/{repo}", shelf.registry.host())},
        "image": {"docker-manifest-digest": subject}, "type": "cosign container image signature"}, "optional": null});
    let signature =
        base64::engine::general_purpose::STANDARD.encode(format!("signature of {subject}"));
    cosign_attach(
        shelf,
        repo,
        subject,
        "sig",
        (
            SIMPLE_SIGNING,
            &serde_json::to_vec(&simple_signing).unwrap(),
        ),
        json!({"dev.cosignproject.cosign/signature": signature}),
    );
    let statement = json!({"_type": "https://in-toto.io/Statement/v0.1", "predicateType": "https://slsa.dev/provenance/v0.2",
        "subject": [{"name": repo, "digest": {"sha256": subject.trim_start_matches("sha256:")}}], "predicate": {}});
    let envelope = json!({"payloadType": "application/vnd.in-toto+json",
        "payload": base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&statement).unwrap()),
        "signatures": [{"keyid": "", "sig": "MEUCIQ"}]});
    cosign_attach(
        shelf,
        repo,
        subject,
        "att",
        (DSSE, &serde_json::to_vec(&envelope).unwrap()),
        json!({"dev.cosignproject.cosign/signature": "", "predicateType": "https://slsa.dev/provenance/v0.2"}),
    );
    let sbom = format!("{{\"spdxVersion\":\"SPDX-2.3\",\"name\":\"{subject}\"}}");
    cosign_attach(
        shelf,
        repo,
        subject,
        "sbom",
        (SPDX_JSON, sbom.as_bytes()),
        json!({}),
    );
    ["sig", "att", "sbom"].map(|suffix| digest_tag(subject, Some(suffix)))
}

/// The attachments `ls -o json` shows under the row of `tag`, as (tag, kind).
fn attachments_of(listed: &Value, tag: &str) -> Vec<(Value, String)> {
    let row = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["tag"] == tag)
        .unwrap_or_else(|| panic!("no row for {tag}: {listed}"));
    row["attachments"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|a| (a["tag"].clone(), a["kind"].as_str().unwrap().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn row_tags(listed: &Value) -> Vec<&str> {
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["tag"].as_str().unwrap())
        .collect()
}

/// [`kept_reasons`], sorted.
fn kept_sorted(report: &Value) -> Vec<(String, String)> {
    let mut kept = kept_reasons(report);
    kept.sort();
    kept
}

#[test]
fn cosign_tags_are_listed_under_their_image_and_kept_and_deleted_with_it() {
    let shelf = RegistryScene::bare();
    let v1 = shelf.put(&image(401, Some("2024-01-01T00:00:00Z")), "app", "v1");
    let v2 = shelf.put(&image(402, Some("2024-02-01T00:00:00Z")), "app", "v2");
    let v1_tags = cosign_all(&shelf, "app", &v1);
    let v2_tags = cosign_all(&shelf, "app", &v2);

    let out = shelf.run(&["ls", "app", "-o", "json"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{}", out.stdout);
    let listed = out.json();
    assert_eq!(row_tags(&listed), ["v1", "v2"], "{listed}");
    let kinds: Vec<String> = attachments_of(&listed, "v2")
        .into_iter()
        .map(|(_, kind)| kind)
        .collect();
    // In tag order: `.att`, `.sbom`, `.sig`.
    assert_eq!(
        kinds,
        ["cosign attestation", "cosign SBOM", "cosign signature"],
        "{listed}"
    );
    let table = shelf.run(&["ls", "app"]);
    table.assert_stdout(str![[r#"
REPOSITORY   TAG                                             DIGEST                SIZE    CREATED                IN USE BY
app          v1                                              sha256:[DIGEST]   17 kB   2024-01-01T00:00:00Z   -
             └ cosign attestation sha256-e8684a16d4e2….att   sha256:[DIGEST]   635 B   -                      -
             └ cosign SBOM sha256-e8684a16d4e2….sbom         sha256:[DIGEST]   340 B   -                      -
             └ cosign signature sha256-e8684a16d4e2….sig     sha256:[DIGEST]   468 B   -                      -
app          v2                                              sha256:[DIGEST]   17 kB   2024-02-01T00:00:00Z   -
             └ cosign attestation sha256-3b5fe8386fc9….att   sha256:[DIGEST]   635 B   -                      -
             └ cosign SBOM sha256-3b5fe8386fc9….sbom         sha256:[DIGEST]   340 B   -                      -
             └ cosign signature sha256-3b5fe8386fc9….sig     sha256:[DIGEST]   468 B   -                      -

"#]]);

    let out = shelf.run(&["prune", "app", "--keep", "1", "-o", "json"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{}", out.stdout);
    let report = out.json();
    let mut kept_expected: Vec<(String, String)> = v2_tags
        .iter()
        .map(|tag| (tag.clone(), "attached-to-kept".to_string()))
        .collect();
    kept_expected.push(("v2".into(), "newest".into()));
    kept_expected.sort();
    assert_eq!(kept_sorted(&report), kept_expected, "{report}");
    let mut left = v2_tags.to_vec();
    left.push("v2".to_string());
    left.sort();
    assert_eq!(
        shelf.tags("app"),
        left,
        "v1 and its signatures went; v2's stayed"
    );
    for tag in v1_tags {
        assert!(!shelf.tags("app").contains(&tag));
    }
}

/// Notation's signature of `subject` (`notation sign --image-spec v1.1-image`: an image
/// manifest whose config is `{}` typed as the signature, a JWS envelope layer, `subject`),
/// pushed by digest, and the referrers tag schema's index naming it, as notation writes both to
/// a registry without the referrers API. The signature's digest.
fn notation_sign(shelf: &RegistryScene, repo: &str, subject: &str) -> String {
    let subject_bytes = shelf
        .registry
        .skopeo_raw_manifest(&format!("{repo}@{subject}"));
    let config = shelf.put_blob(repo, NOTATION, b"{}");
    let envelope = json!({"payload": "eyJ0YXJnZXRBcnRpZmFjdCI6e319", "protected": "eyJhbGciOiJQUzI1NiJ9", "header": {}, "signature": "c2ln"});
    let layer = shelf.put_blob(repo, JOSE, &serde_json::to_vec(&envelope).unwrap());
    let annotations = json!({"io.cncf.notary.x509chain.thumbprint#S256": "[\"b7a69a70992ae4f9ff103ebe04a2c3ba6c777e439253ce36562e6e98375068c3\"]",
        "org.opencontainers.image.created": "2024-03-01T00:00:00Z"});
    let signature = json!({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config, "layers": [layer],
        "subject": {"mediaType": OCI_MANIFEST, "digest": subject, "size": subject_bytes.len()},
        "annotations": annotations});
    let mut descriptor = shelf.put_manifest(repo, None, &signature);
    descriptor["artifactType"] = json!(NOTATION);
    descriptor["annotations"] = annotations;
    let index = json!({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [descriptor]});
    shelf.put_manifest(repo, Some(&digest_tag(subject, None)), &index);
    descriptor["digest"].as_str().unwrap().to_string()
}

#[test]
fn notation_signatures_behind_the_referrers_tag_go_with_their_image() {
    let shelf = RegistryScene::bare();
    let v1 = shelf.put(&image(411, Some("2024-01-01T00:00:00Z")), "app", "v1");
    let v2 = shelf.put(&image(412, Some("2024-02-01T00:00:00Z")), "app", "v2");
    let v1_signature = notation_sign(&shelf, "app", &v1);
    let v2_signature = notation_sign(&shelf, "app", &v2);

    let out = shelf.run(&["ls", "app", "-o", "json"]);
    out.assert_stdout(str![[r#"
[
  {
    "repository": "app",
    "tag": "v1",
    "digest": "sha256:[DIGEST]",
    "size": 16687,
    "created": "2024-01-01T00:00:00Z",
    "inUseBy": [],
    "attachments": [
      {
        "tag": "sha256-f609ba50fa27c3907909f107a1fa4a041714f93a4c03404ade5dd334f6dba058",
        "digest": "sha256:[DIGEST]",
        "kind": "OCI referrers index: Notation signature (application/vnd.cncf.notary.signature)",
        "size": 0
      }
    ]
  },
  {
    "repository": "app",
    "tag": "v2",
    "digest": "sha256:[DIGEST]",
    "size": 16684,
    "created": "2024-02-01T00:00:00Z",
    "inUseBy": [],
    "attachments": [
      {
        "tag": "sha256-bf3dfd44b12f27cf542ceb936e2d6a883cb51dcfe2b4878d75024005db484e9f",
        "digest": "sha256:[DIGEST]",
        "kind": "OCI referrers index: Notation signature (application/vnd.cncf.notary.signature)",
        "size": 0
      }
    ]
  }
]

"#]]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{}", out.stdout);
    let listed = out.json();
    assert_eq!(row_tags(&listed), ["v1", "v2"], "{listed}");
    let attached = attachments_of(&listed, "v1");
    assert_eq!(attached.len(), 1, "{listed}");
    assert_eq!(attached[0].0, json!(digest_tag(&v1, None)));
    assert!(
        attached[0].1.contains("Notation signature"),
        "{}",
        attached[0].1
    );

    let out = shelf.run(&["prune", "app", "--keep", "1", "-o", "json"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{}", out.stdout);
    let report = out.json();
    let deleted = deleted_digests(&report);
    assert!(
        deleted.contains(&v1.as_str()) && deleted.contains(&v1_signature.as_str()),
        "{report}"
    );
    assert_eq!(shelf.tags("app"), {
        let mut left = vec!["v2".to_string(), digest_tag(&v2, None)];
        left.sort();
        left
    });
    assert_eq!(
        shelf.manifest_status("app", &v1_signature),
        404,
        "v1's signature went with it"
    );
    assert_eq!(
        shelf.manifest_status("app", &v2_signature),
        200,
        "v2's stayed"
    );
}

/// A BuildKit image index: one platform manifest and its attestation manifest (an image
/// manifest of in-toto statements, its config `unknown/unknown`, annotated
/// `vnd.docker.reference.type: attestation-manifest`; buildkit's attestation-storage.md), tagged
/// `tag` in `repo`. The platform's and the attestation's digests.
fn buildkit_index(
    shelf: &RegistryScene,
    repo: &str,
    tag: &str,
    platform: &Image,
) -> (String, String) {
    for layer in 0..platform.layer_count() {
        shelf.put_blob(repo, fixtures::OCI_LAYER, platform.layer(layer));
    }
    shelf.put_blob(repo, OCI_CONFIG, platform.config_bytes());
    let manifest: Value =
        serde_json::from_slice(&platform.manifest(LayerCompression::None)).unwrap();
    let mut platform_descriptor = shelf.put_manifest(repo, None, &manifest);
    platform_descriptor["platform"] = json!({"architecture": "amd64", "os": "linux"});
    let statement = json!({"_type": "https://in-toto.io/Statement/v0.1", "predicateType": "https://slsa.dev/provenance/v0.2",
        "subject": [{"name": "_", "digest": {"sha256": platform_descriptor["digest"].as_str().unwrap().trim_start_matches("sha256:")}}],
        "predicate": {"buildType": "https://mobyproject.org/buildkit@v1"}});
    let statement = serde_json::to_vec(&statement).unwrap();
    let mut layer = shelf.put_blob(repo, IN_TOTO, &statement);
    layer["annotations"] = json!({"in-toto.io/predicate-type": "https://slsa.dev/provenance/v0.2"});
    let config = json!({"architecture": "unknown", "os": "unknown", "config": {},
        "rootfs": {"type": "layers", "diff_ids": [sha256(&statement)]}});
    let config = shelf.put_blob(repo, OCI_CONFIG, &serde_json::to_vec(&config).unwrap());
    let attestation =
        json!({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "config": config, "layers": [layer]});
    let mut attestation_descriptor = shelf.put_manifest(repo, None, &attestation);
    attestation_descriptor["platform"] = json!({"architecture": "unknown", "os": "unknown"});
    attestation_descriptor["annotations"] = json!({
        "vnd.docker.reference.digest": platform_descriptor["digest"],
        "vnd.docker.reference.type": "attestation-manifest",
    });
    let index = json!({"schemaVersion": 2, "mediaType": OCI_INDEX,
        "manifests": [platform_descriptor, attestation_descriptor]});
    shelf.put_manifest(repo, Some(tag), &index);
    (
        platform_descriptor["digest"].as_str().unwrap().to_string(),
        attestation_descriptor["digest"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

#[test]
fn buildkit_attestations_are_shown_under_their_index_and_not_counted_as_a_platform() {
    let shelf = RegistryScene::bare();
    let platform = image(421, Some("2024-03-01T00:00:00Z"));
    let (platform_digest, attestation) = buildkit_index(&shelf, "multi", "v1", &platform);
    let out = shelf.run(&["ls", "multi", "-o", "json"]);
    out.assert_stdout(str![[r#"
[
  {
    "repository": "multi",
    "tag": "v1",
    "digest": "sha256:[DIGEST]",
    "size": 36238,
    "created": "2024-03-01T00:00:00Z",
    "inUseBy": [],
    "attachments": [
      {
        "tag": null,
        "digest": "sha256:[DIGEST]",
        "kind": "BuildKit attestation of sha256:[DIGEST]…",
        "size": 0
      }
    ]
  }
]

"#]]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{}", out.stdout);
    let row = &out.json()[0];
    let platform_size = platform.config_bytes().len()
        + (0..platform.layer_count())
            .map(|l| platform.layer(l).len())
            .sum::<usize>();
    assert_eq!(
        row["size"], platform_size,
        "the platform's image alone: {row}"
    );
    assert_eq!(row["created"], "2024-03-01T00:00:00Z");
    assert_eq!(
        row["attachments"][0]["digest"],
        attestation.as_str(),
        "{row}"
    );
    assert_eq!(row["attachments"][0]["tag"], Value::Null);
    let kind = row["attachments"][0]["kind"].as_str().unwrap();
    assert!(
        kind.starts_with("BuildKit attestation of") && kind.contains(&platform_digest[7..19]),
        "{kind}"
    );
}

#[test]
fn a_created_that_is_missing_zero_or_the_epoch_is_unknown_never_the_oldest() {
    let shelf = RegistryScene::bare();
    shelf.put(&image(431, Some("2024-01-01T00:00:00Z")), "app", "old");
    shelf.put(&image(432, Some("2024-02-01T00:00:00Z")), "app", "new");
    shelf.put(&image(433, Some("0001-01-01T00:00:00Z")), "app", "zero");
    shelf.put(&image(434, Some("1970-01-01T00:00:00Z")), "app", "epoch");
    shelf.put(&image(435, None), "app", "missing");

    let out = shelf.run(&["ls", "app", "-o", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for row in out.json().as_array().unwrap() {
        let dated = matches!(row["tag"].as_str(), Some("old" | "new"));
        assert_eq!(row["created"].is_null(), !dated, "{row}");
    }
    let out = shelf.run(&["prune", "app", "--keep", "1", "-o", "json"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{}", out.stdout);
    let kept = kept_sorted(&out.json());
    assert_eq!(
        kept,
        [
            ("epoch".into(), "no-created-time".into()),
            ("missing".into(), "no-created-time".into()),
            ("new".into(), "newest".into()),
            ("zero".into(), "no-created-time".into()),
        ]
    );
    assert_eq!(shelf.tags("app"), ["epoch", "missing", "new", "zero"]);
}

#[test]
fn a_repository_that_does_not_exist_is_name_unknown_for_ls_and_prune() {
    let shelf = RegistryScene::bare();
    shelf.put(&image(441, Some("2024-01-01T00:00:00Z")), "app", "v1");
    for (command, stderr) in [
        (
            "ls",
            str![[r#"
error: the registry 127.0.0.1:[PORT] has no repository nosuch (NAME_UNKNOWN)
hint: `kubectl registry ls` without a repository lists those it has

"#]],
        ),
        (
            "prune",
            str![[r#"
error: the registry 127.0.0.1:[PORT] has no repository nosuch (NAME_UNKNOWN)
hint: `kubectl registry prune` without a repository lists those it has

"#]],
        ),
    ] {
        let out = shelf.run(&[command, "nosuch"]);
        assert_eq!(out.code, 5, "{command}: {}", out.stderr);
        assert!(
            out.stderr
                .contains("has no repository nosuch (NAME_UNKNOWN)"),
            "{command}: {}",
            out.stderr
        );
        assert_eq!(out.stdout, "", "{command}");
        eprintln!("{command} nosuch:");
        out.assert_stderr(stderr);
    }
    assert_eq!(shelf.run(&["ls", "app"]).code, 0);
}

#[test]
fn a_registry_refusing_its_catalog_says_to_name_the_repositories() {
    let unauthorized = Action::Status {
        status: 401,
        headers: vec![("WWW-Authenticate".into(), "Basic realm=\"Registry Realm\"".into())],
        body: br#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}"#.to_vec(),
    };
    for (answer, status, said) in [
        (
            unauthorized,
            "401",
            [
                str![[r#"
error: the registry 127.0.0.1:[PORT] does not list its repositories: its catalog (GET /v2/_catalog) was refused
caused by: listing the repositories of 127.0.0.1:[PORT]
caused by: wrong or missing credentials for 127.0.0.1:[PORT]: no credentials for 127.0.0.1:[PORT] were found ([ROOT]/no-docker-config/config.json)
caused by: the registry answered 401 Unauthorized: UNAUTHORIZED: authentication required
hint: name the repositories instead: kubectl registry ls REPO..., e.g. kubectl registry ls myimg
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
hint: run `docker login 127.0.0.1:[PORT]` (or `podman login 127.0.0.1:[PORT]`) with an account allowed to push

"#]],
                str![[r#"
error: the registry 127.0.0.1:[PORT] does not list its repositories: its catalog (GET /v2/_catalog) was refused
caused by: listing the repositories of 127.0.0.1:[PORT]
caused by: wrong or missing credentials for 127.0.0.1:[PORT]: no credentials for 127.0.0.1:[PORT] were found ([ROOT]/no-docker-config/config.json)
caused by: the registry answered 401 Unauthorized: UNAUTHORIZED: authentication required
hint: name the repositories instead: kubectl registry prune REPO..., e.g. kubectl registry prune myimg
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
hint: run `docker login 127.0.0.1:[PORT]` (or `podman login 127.0.0.1:[PORT]`) with an account allowed to push

"#]],
            ],
        ),
        (
            Action::Status {
                status: 404,
                headers: Vec::new(),
                body: b"404 page not found\n".to_vec(),
            },
            "404",
            [
                str![[r#"
error: the registry 127.0.0.1:[PORT] does not list its repositories: its catalog (GET /v2/_catalog) was refused
caused by: listing the repositories of 127.0.0.1:[PORT]
caused by: the registry answered 404 Not Found: it serves no catalog
hint: name the repositories instead: kubectl registry ls REPO..., e.g. kubectl registry ls myimg
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/

"#]],
                str![[r#"
error: the registry 127.0.0.1:[PORT] does not list its repositories: its catalog (GET /v2/_catalog) was refused
caused by: listing the repositories of 127.0.0.1:[PORT]
caused by: the registry answered 404 Not Found: it serves no catalog
hint: name the repositories instead: kubectl registry prune REPO..., e.g. kubectl registry prune myimg
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/

"#]],
            ],
        ),
    ] {
        let registry = TestRegistry::start();
        let proxy = FaultProxy::start(
            &registry.host(),
            vec![Rule::new("GET", "/v2/_catalog", usize::MAX, answer)],
        );
        let shelf = RegistryScene::advertising(registry, &proxy.host(), |api, _| api);
        shelf.put(&image(451, Some("2024-01-01T00:00:00Z")), "app", "v1");
        for (command, stderr) in ["ls", "prune"].into_iter().zip(said) {
            let out = shelf.run(&[command]);
            assert_eq!(out.code, 5, "{status} {command}: {}", out.stderr);
            assert!(
                out.stderr
                    .contains("its catalog (GET /v2/_catalog) was refused")
                    && out
                        .stderr
                        .contains(&format!("kubectl registry {command} REPO...")),
                "{status} {command}: {}",
                out.stderr
            );
            eprintln!("{status} {command}:");
            out.assert_stderr(stderr);
        }
        // Named, the repositories are read through the same proxy.
        let named = shelf.run(&["ls", "app", "-o", "json"]);
        assert_eq!(named.code, 0, "{status}: {}", named.stderr);
        assert_eq!(row_tags(&named.json()), ["v1"]);
    }
}
