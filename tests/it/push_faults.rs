//! `kubectl registry push` through a fault-injecting proxy in front of the real registry: what is
//! transient is retried and the push lands; what stalls ends within its bound with a clear
//! error; nothing partial is tagged; a rerun sends only what is missing.

use snapbox::str;
use std::io::Read;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::fault_proxy::{Action, FaultProxy, Rule};
use crate::support::fixtures::{Format, Image};
use crate::support::push::{Bench, HELP, Outcome, docker_config};
use crate::support::registry::{RegistryConfig, TestRegistry};
use crate::support::run::Run;

/// Bounds small enough for tests to meet them in seconds.
const FAST_BOUNDS: [(&str, &str); 4] = [
    ("KUBECTL_REGISTRY_RETRY_DELAY", "0.05"),
    ("KUBECTL_REGISTRY_STALL_TIMEOUT", "2"),
    ("KUBECTL_REGISTRY_REQUEST_TIMEOUT", "2"),
    ("KUBECTL_REGISTRY_ATTEMPTS", "5"),
];
/// Far beyond any bound a test sets: a run still going then has hung.
const HUNG: Duration = Duration::from_secs(90);
const STALL_HINT: &str = "hint: check that the registry (and any proxy in front of it) works; \
     KUBECTL_REGISTRY_STALL_TIMEOUT and KUBECTL_REGISTRY_REQUEST_TIMEOUT set how long to wait";

/// A bench whose cluster advertises the proxy, which fronts the bench's real registry.
struct Faulty {
    bench: Bench,
    proxy: FaultProxy,
    image: Image,
    archive: String,
}

impl Faulty {
    fn new(seed: u64, rules: Vec<Rule>) -> Self {
        Self::with(seed, |registry| FaultProxy::start(registry, rules))
    }

    fn with(seed: u64, proxy: impl FnOnce(&str) -> FaultProxy) -> Self {
        let registry = TestRegistry::start();
        let proxy = proxy(&registry.host());
        let bench = Bench::advertising(registry, &proxy.host());
        let image = Image::sample(seed);
        let archive = bench.path("img.tar");
        image.write(Format::DockerLegacy, &archive, &["myimg:dev"]);
        Self {
            bench,
            proxy,
            image,
            archive: archive.to_str().unwrap().to_string(),
        }
    }

    /// The binary with the fast bounds, killed (and the test failed) if it outlives `HUNG`.
    fn cmd(&self) -> Run {
        self.bench.cmd().envs(FAST_BOUNDS).timeout(HUNG)
    }

    fn push(&self, extra: &[&str]) -> Outcome {
        self.bench
            .run(self.cmd().args(["push", &self.archive]).args(extra))
    }

    /// Blob uploads the proxy saw from request `from` on: PUTs and PATCHes of upload sessions.
    fn uploads_since(&self, from: usize) -> Vec<String> {
        self.proxy.seen()[from..]
            .iter()
            .filter(|seen| matches!(seen.method.as_str(), "PUT" | "PATCH"))
            .filter(|seen| seen.target.contains("/blobs/uploads/"))
            .map(|seen| seen.target.clone())
            .collect()
    }

    /// How many of the image's blobs (config and layers, stored as sent) the registry lacks.
    fn missing_blobs(&self) -> usize {
        let mut digests = vec![self.image.config_digest()];
        digests.extend(self.image.diff_ids());
        digests
            .iter()
            .filter(|digest| self.bench.registry.blob_status("myimg", digest) != 200)
            .count()
    }
}

/// `digest=sha256:...` of an upload's closing PUT.
fn digest_of(target: &str) -> Option<&str> {
    let (_, query) = target.split_once('?')?;
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("digest="))
}

/// Short digests vary with which upload a fault hit first: `sha256:0123456789ab…` -> `sha256:…`.
fn without_short_digests(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("sha256:") {
        let (before, after) = rest.split_at(at + "sha256:".len());
        out.push_str(before);
        let hex = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex == 12 && after[hex..].starts_with('…') {
            rest = &after[hex + '…'.len_utf8()..];
            out.push('…');
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn one_503_on_a_blob_put_is_retried_and_the_push_lands() {
    let faulty = Faulty::new(71, vec![Rule::status("PUT", "/blobs/uploads/", 1, 503)]);
    let run = faulty.push(&[]);
    faulty.bench.assert_pushed(&run, "myimg", "dev");
    let puts = faulty.uploads_since(0);
    let failed = faulty.proxy.seen().into_iter().find(|s| s.faulted).unwrap();
    let again = digest_of(&failed.target).unwrap();
    assert_eq!(
        puts.iter().filter(|t| digest_of(t) == Some(again)).count(),
        2,
        "the refused blob is sent again, once: {puts:#?}"
    );
    assert_eq!(puts.len(), faulty.image.layer_count() + 2, "{puts:#?}");
}

#[test]
fn a_connection_reset_mid_put_is_retried_and_the_push_lands() {
    let faulty = Faulty::new(
        72,
        vec![Rule::new(
            "PUT",
            "/blobs/uploads/",
            1,
            Action::ResetAfter(64 << 10),
        )],
    );
    let run = faulty.push(&[]);
    faulty.bench.assert_pushed(&run, "myimg", "dev");
}

#[test]
fn a_reset_2_mb_into_a_20_mb_layer_put_is_retried_and_the_push_lands() {
    // The layer is far larger than the upload body's buffer, so our reader is still sending
    // when the reset ends the request: the consumer hanging up is the registry's fault
    // (transient), not the archive's.
    let registry = TestRegistry::start();
    let proxy = FaultProxy::on_uploads(&registry.host(), 1, Action::ResetAfter(2 << 20));
    let bench = Bench::advertising(registry, &proxy.host());
    let image = Image::with_layers(74, "linux/amd64", &[20 << 20]);
    let archive = bench.path("big.tar");
    image.write(Format::DockerLegacy, &archive, &["myimg:dev"]);
    let run = bench
        .cmd()
        .envs(FAST_BOUNDS)
        .timeout(HUNG)
        .args(["push", archive.to_str().unwrap()])
        .output();
    bench.assert_pushed(&run, "myimg", "dev");
    let faulted: Vec<_> = proxy.seen().into_iter().filter(|s| s.faulted).collect();
    assert_eq!(faulted.len(), 1, "{faulted:#?}");
    let layer = image.diff_ids()[0].replace(':', "%3A");
    assert_eq!(digest_of(&faulted[0].target), Some(layer.as_str()));
    let puts = proxy
        .seen()
        .into_iter()
        .filter(|s| s.method == "PUT" && digest_of(&s.target) == Some(layer.as_str()))
        .count();
    assert_eq!(puts, 2, "the layer is sent again, once");
}

#[test]
fn a_503_and_a_reset_on_a_compressing_patch_are_retried_and_the_push_lands() {
    let faulty = Faulty::new(
        73,
        vec![
            Rule::status("PATCH", "/blobs/uploads/", 1, 503),
            Rule::new("PATCH", "/blobs/uploads/", 1, Action::ResetAfter(16 << 10)),
        ],
    );
    let run = faulty.push(&["--compression", "gzip"]);
    faulty.bench.assert_pushed(&run, "myimg", "dev");
    let faulted = faulty.proxy.seen().iter().filter(|s| s.faulted).count();
    assert_eq!(faulted, 2);
}

#[test]
fn every_transient_status_is_retried_and_retry_after_is_honoured() {
    let mut rules: Vec<Rule> = [408, 500, 502, 504]
        .into_iter()
        .map(|status| Rule::status("PUT", "/blobs/uploads/", 1, status))
        .collect();
    rules.push(Rule::new(
        "HEAD",
        "/blobs/",
        1,
        Action::Status {
            status: 429,
            headers: vec![("Retry-After".into(), "1".into())],
            body: Vec::new(),
        },
    ));
    let faulty = Faulty::new(74, rules);
    let run = faulty.push(&[]);
    faulty.bench.assert_pushed(&run, "myimg", "dev");
    assert_eq!(faulty.proxy.seen().iter().filter(|s| s.faulted).count(), 5);
}

#[test]
fn a_permanent_refusal_is_not_retried() {
    let faulty = Faulty::new(75, vec![Rule::status("PUT", "/blobs/uploads/", 100, 400)]);
    let run = faulty.push(&[]);
    assert_eq!((run.code, run.stdout.as_str()), (5, ""), "{}", run.stderr);
    let puts = faulty.uploads_since(0);
    for put in &puts {
        let digest = digest_of(put);
        assert_eq!(
            puts.iter().filter(|t| digest_of(t) == digest).count(),
            1,
            "{puts:#?}"
        );
    }
    faulty.bench.assert_not_tagged("myimg", "dev");
}

#[test]
fn a_registry_failing_every_attempt_fails_the_push_after_the_attempts() {
    let faulty = Faulty::new(76, vec![Rule::status("PUT", "/blobs/uploads/", 1000, 503)]);
    let run = faulty.bench.run(
        faulty
            .cmd()
            .env("KUBECTL_REGISTRY_ATTEMPTS", "3")
            .args(["push", &faulty.archive]),
    );
    assert_eq!((run.code, run.stdout.as_str()), (5, ""), "{}", run.stderr);
    assert_eq!(
        without_short_digests(&run.stderr),
        format!(
            "error: pushing blob sha256:… to 127.0.0.1:[PORT]/myimg\n\
             caused by: the registry is overloaded, failing or restarting\n\
             caused by: the registry answered 503 Service Unavailable\n\
             hint: this cluster's registry guide: {HELP}\n"
        )
    );
    let puts = faulty.uploads_since(0);
    for put in &puts {
        let digest = digest_of(put);
        assert!(puts.iter().filter(|t| digest_of(t) == digest).count() <= 3);
    }
    faulty.bench.assert_not_tagged("myimg", "dev");
}

#[test]
fn a_registry_that_reads_a_blob_and_never_answers_ends_the_push_and_a_rerun_sends_the_rest() {
    let faulty = Faulty::new(
        77,
        vec![Rule::new(
            "PUT",
            "/blobs/uploads/",
            1,
            Action::StallAfterBody,
        )],
    );
    let run = faulty.push(&[]);
    assert_eq!((run.code, run.stdout.as_str()), (5, ""), "{}", run.stderr);
    assert_eq!(
        without_short_digests(&run.stderr),
        format!(
            "error: pushing blob sha256:… to 127.0.0.1:[PORT]/myimg\n\
             caused by: the registry at 127.0.0.1:[PORT] stopped answering: nothing moved for 2s\n\
             hint: this cluster's registry guide: {HELP}\n\
             {STALL_HINT}\n"
        )
    );
    faulty.bench.assert_not_tagged("myimg", "dev");

    let missing = faulty.missing_blobs();
    assert!(missing > 0);
    let before = faulty.proxy.seen().len();
    let rerun = faulty.push(&[]);
    faulty.bench.assert_pushed(&rerun, "myimg", "dev");
    assert_eq!(faulty.uploads_since(before).len(), missing);
}

#[test]
fn a_token_server_streaming_without_end_is_cut_off_at_its_cap_with_memory_bounded() {
    // 8 GiB at most: far past any cap, and past this machine's patience without one.
    let faulty = Faulty::with(79, |registry| {
        FaultProxy::start(
            registry,
            vec![Rule::new("GET", "/token", 1, Action::EndlessBody(8 << 30))],
        )
        .demanding_bearer(1000)
    });
    let rss_file = faulty.bench.path("peak-rss-kib");
    let run = Run::plugin_timed(faulty.bench.dir.path(), &rss_file)
        .kubeconfig(&faulty.bench.kubeconfig)
        .envs(FAST_BOUNDS)
        .args(["push", &faulty.archive])
        .timeout(HUNG)
        .output();
    assert_eq!((run.code, run.stdout.as_str()), (5, ""), "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: reaching the registry 127.0.0.1:[PORT]
caused by: getting an access token for 127.0.0.1:[PORT] from http://127.0.0.1:[PORT]/token
caused by: the answer is larger than 1048576 bytes
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/

"#]]);
    assert!(
        run.stderr
            .contains("caused by: the answer is larger than 1048576 bytes"),
        "{}",
        run.stderr
    );
    // GNU time says "Command exited with non-zero status 5" first, then the figure.
    let report = std::fs::read_to_string(&rss_file).unwrap();
    let peak_kib: u64 = report.lines().last().unwrap().trim().parse().unwrap();
    assert!(peak_kib < 64 << 10, "peak RSS {peak_kib} KiB");
    faulty.bench.assert_not_tagged("myimg", "dev");
}

#[test]
fn a_token_server_that_never_answers_is_one_bounded_wait() {
    let faulty = Faulty::with(78, |registry| {
        FaultProxy::start(
            registry,
            vec![Rule::new("GET", "/token", 1, Action::StallAfterBody)],
        )
        .demanding_bearer(1000)
    });
    let run = faulty.push(&[]);
    assert_eq!((run.code, run.stdout.as_str()), (5, ""), "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: reaching the registry 127.0.0.1:[PORT]
caused by: getting an access token for 127.0.0.1:[PORT] from http://127.0.0.1:[PORT]/token: the token server did not answer in 2s
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
hint: check that the token server works; KUBECTL_REGISTRY_REQUEST_TIMEOUT sets how long to wait

"#]]);
    assert_eq!(
        faulty.proxy.seen_short(),
        ["GET /v2/", "GET /token"],
        "a stalled wait is not repeated"
    );
}

#[test]
fn a_silent_registry_is_one_bounded_wait_then_a_clear_error() {
    let faulty = Faulty::new(
        79,
        vec![Rule::new("GET", "/v2/", 10, Action::StallAfterBody)],
    );
    let run = faulty.push(&[]);
    assert_eq!((run.code, run.stdout.as_str()), (5, ""), "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: reaching the registry 127.0.0.1:[PORT]
caused by: the registry at 127.0.0.1:[PORT] stopped answering: nothing moved for 2s
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
hint: check that the registry (and any proxy in front of it) works; KUBECTL_REGISTRY_STALL_TIMEOUT and KUBECTL_REGISTRY_REQUEST_TIMEOUT set how long to wait

"#]]);
    assert_eq!(faulty.proxy.seen_short(), ["GET /v2/"]);
}

#[test]
fn an_expired_bearer_token_is_fetched_again_and_the_push_lands() {
    // Each token is good for three requests: it expires several times in one push, uploads included.
    let faulty = Faulty::with(80, |registry| {
        FaultProxy::start(registry, Vec::new()).demanding_bearer(3)
    });
    let run = faulty.push(&[]);
    faulty.bench.assert_pushed(&run, "myimg", "dev");
    assert!(
        faulty.proxy.tokens_issued() > 2,
        "{:#?}",
        faulty.proxy.seen_short()
    );
}

#[test]
fn a_token_refused_right_after_it_was_fetched_is_its_own_error_after_one_more_fetch() {
    // Every token the token server hands out has expired by the time the registry sees it,
    // though the token server answers each time: no credentials are needed, none are missing.
    let faulty = Faulty::with(89, |registry| {
        FaultProxy::start(registry, Vec::new()).demanding_bearer(0)
    });
    let run = faulty.push(&[]);
    assert_eq!(run.code, 5, "{run:?}");
    run.assert_stderr(str![[r#"
error: reaching the registry 127.0.0.1:[PORT]
caused by: the registry at 127.0.0.1:[PORT] refused the access token it had just been given for its `/v2/` check (no scope), twice (invalid_token)
caused by: the registry answered 401 Unauthorized: UNAUTHORIZED: authentication required
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
hint: the token server (http://127.0.0.1:[PORT]/token) answers, but the registry does not take its tokens: a token that expires before it is used (clocks apart, a lifetime of seconds), a service name or signing key the registry does not expect

"#]]);
    assert!(!run.stderr.contains("no credentials"), "{run:?}");
    // The ping's challenge met, then the token refused, fetched once more, refused again.
    assert_eq!(
        faulty.proxy.tokens_issued(),
        2,
        "{:#?}",
        faulty.proxy.seen_short()
    );
}

#[test]
fn a_manifest_put_answered_200_or_202_is_a_success() {
    for status in [200, 202] {
        let faulty = Faulty::new(
            81,
            vec![Rule::new(
                "PUT",
                "/manifests/",
                1,
                Action::Rewrite(Arc::new(move |answer| {
                    answer.status = status;
                    answer.reason = "Rewritten".into();
                })),
            )],
        );
        let run = faulty.push(&[]);
        faulty.bench.assert_pushed(&run, "myimg", "dev");
    }
}

#[test]
fn a_refused_cross_repository_mount_falls_back_to_an_upload() {
    let faulty = Faulty::new(82, vec![Rule::status("POST", "mount=", 100, 405)]);
    faulty.push(&["--tag", "first:dev"]).assert_clean_success();
    let before = faulty.proxy.seen().len();
    let run = faulty.push(&["--tag", "second:dev"]);
    faulty.bench.assert_pushed(&run, "second", "dev");
    let refused = faulty.proxy.seen()[before..]
        .iter()
        .filter(|seen| seen.faulted)
        .count();
    assert_eq!(refused, faulty.image.layer_count());
    assert_eq!(
        faulty.uploads_since(before).len(),
        faulty.image.layer_count() + 1
    );
}

#[test]
fn a_record_naming_an_invalid_repository_is_skipped() {
    let faulty = Faulty::new(83, Vec::new());
    let layers = faulty.image.diff_ids();
    let entries: Vec<serde_json::Value> = layers
        .iter()
        .enumerate()
        .map(|(index, diff_id)| {
            serde_json::json!([
                format!("{} {diff_id} stored", faulty.proxy.host()),
                {
                    "digest": diff_id,
                    "size": faulty.image.layer(index).len(),
                    "mediaType": "application/vnd.docker.image.rootfs.diff.tar",
                    "repository": "Not/../A/Repository"
                }
            ])
        })
        .collect();
    let dir = faulty.bench.path(".cache/kubectl-registry");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("sent-blobs-v1.json"),
        serde_json::json!({ "entries": entries }).to_string(),
    )
    .unwrap();
    let run = faulty.push(&[]);
    faulty.bench.assert_pushed(&run, "myimg", "dev");
    assert!(
        !faulty
            .proxy
            .seen_short()
            .iter()
            .any(|s| s.starts_with("POST") && s.contains("mount")),
        "{:#?}",
        faulty.proxy.seen_short()
    );
}

#[test]
fn a_failed_gzip_push_records_each_layer_as_it_lands_so_a_rerun_compresses_nothing_again() {
    // The tag is refused through every attempt of the first run, after every layer landed.
    let faulty = Faulty::new(84, vec![Rule::status("PUT", "/manifests/", 5, 500)]);
    let first = faulty.push(&["--compression", "gzip"]);
    assert_eq!(first.code, 5, "{}", first.stderr);
    faulty.bench.assert_not_tagged("myimg", "dev");
    let before = faulty.proxy.seen().len();
    let rerun = faulty.push(&["--compression", "gzip"]);
    faulty.bench.assert_pushed(&rerun, "myimg", "dev");
    assert_eq!(faulty.uploads_since(before), Vec::<String>::new());
}

#[test]
fn error_bodies_with_terminal_controls_are_printed_escaped() {
    let body = "{\"errors\":[{\"code\":\"MANIFEST_INVALID\",\"message\":\"bad \\u001b[2J\\u001b]0;owned\\u0007 \\u202eexe.txt\"}]}";
    let faulty = Faulty::new(
        85,
        vec![Rule::new(
            "PUT",
            "/manifests/",
            1,
            Action::Status {
                status: 400,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: body.as_bytes().to_vec(),
            },
        )],
    );
    let run = faulty.push(&[]);
    assert_eq!(run.code, 5, "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: pushing manifest sha256:[DIGEST]… (dev) to 127.0.0.1:[PORT]/myimg
caused by: the registry answered 400 Bad Request: MANIFEST_INVALID: bad \u001b[2J\u001b]0;owned\u0007 \u202eexe.txt
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/

"#]]);
    assert!(!run.stderr.contains(['\u{1b}', '\u{7}', '\u{202e}']));
    faulty.bench.assert_not_tagged("myimg", "dev");
}

#[test]
fn a_malformed_bound_is_refused_before_anything_is_sent() {
    let faulty = Faulty::new(88, Vec::new());
    let run = faulty.bench.run(
        faulty
            .cmd()
            .env("KUBECTL_REGISTRY_ATTEMPTS", "many")
            .args(["push", &faulty.archive]),
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            2,
            "",
            "error: KUBECTL_REGISTRY_ATTEMPTS=\"many\" is not valid: expected a whole number from 1 to 100\n\
             hint: fix or unset KUBECTL_REGISTRY_ATTEMPTS\n"
        )
    );
    assert!(faulty.proxy.seen().is_empty(), "{:#?}", faulty.proxy.seen());
}

#[test]
fn an_unknown_engine_is_refused_not_run() {
    let faulty = Faulty::new(88, Vec::new());
    let run = faulty.bench.run(
        faulty
            .cmd()
            .env("KUBECTL_REGISTRY_ENGINE", "true")
            .args(["push", "myimg:dev"]),
    );
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            2,
            "",
            "error: KUBECTL_REGISTRY_ENGINE=\"true\" is not valid: expected docker, podman or nerdctl\n\
             hint: fix or unset KUBECTL_REGISTRY_ENGINE\n"
        )
    );
    assert!(faulty.proxy.seen().is_empty(), "{:#?}", faulty.proxy.seen());
}

/// A loopback port that records whatever arrives on it, for a test to say nothing did.
struct Trap {
    address: String,
    received: Arc<Mutex<Vec<u8>>>,
}

impl Trap {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let received = Arc::new(Mutex::new(Vec::new()));
        let sink = received.clone();
        std::thread::spawn(move || {
            // Bounded: a test run makes at most a few connections.
            for stream in listener.incoming().take(8).flatten() {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let mut bytes = Vec::new();
                let _ = (&stream).take(64 * 1024).read_to_end(&mut bytes);
                sink.lock().unwrap().extend(bytes);
                sink.lock().unwrap().extend(b"<connection>");
            }
        });
        Self { address, received }
    }

    fn received(&self) -> String {
        String::from_utf8_lossy(&self.received.lock().unwrap()).into_owned()
    }
}

#[test]
fn an_https_registry_sending_uploads_to_plain_http_is_left_and_gets_no_credentials_there() {
    // The real registry, told it is reached at a plain-HTTP URL, hands out upload Locations there.
    let trap = Trap::start();
    let registry = TestRegistry::start_with(RegistryConfig {
        tls: true,
        basic_auth: Some(("kind".into(), "s3cret".into())),
        external_url: Some(format!("http://{}", trap.address)),
        ..RegistryConfig::default()
    });
    let ca_file = registry.ca_file();
    let bench = Bench::with_registry(registry);
    let credentials = docker_config(&bench, &bench.registry.host(), "kind", "s3cret");
    let path = bench.path("img.tar");
    Image::sample(89).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let run = bench.run(
        bench
            .cmd()
            .envs(FAST_BOUNDS)
            .env("DOCKER_CONFIG", &credentials)
            .args(["push", path.to_str().unwrap()])
            .args(["--ca-file", ca_file.to_str().unwrap()]),
    );
    assert_eq!((run.code, run.stdout.as_str()), (5, ""), "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: pushing blob sha256:[DIGEST]… to 127.0.0.1:[PORT]/myimg
caused by: the registry 127.0.0.1:[PORT] sent us on to http://127.0.0.1:[PORT]/v2/myimg/blobs/uploads/[..], which is not HTTPS; we do not leave HTTPS
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
hint: a proxy in front of the registry may rewrite its answers: check its settings for HTTPS

"#]]);
    assert_eq!(trap.received(), "", "something was sent over plain HTTP");
    let tag = std::process::Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-u",
            "kind:s3cret",
        ])
        .arg("--cacert")
        .arg(&ca_file)
        .arg(format!(
            "https://{}/v2/myimg/manifests/dev",
            bench.registry.host()
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&tag.stdout), "404", "tagged");
}

#[test]
fn proxies_in_the_environment_are_never_used_for_loopback() {
    let bench = Bench::new();
    let path = bench.path("img.tar");
    Image::sample(86).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let nowhere = format!(
        "http://127.0.0.1:{}",
        crate::support::apiserver::unused_port()
    );
    let run = bench.run(
        bench
            .cmd()
            .env("HTTPS_PROXY", &nowhere)
            .env("HTTP_PROXY", &nowhere)
            .env("ALL_PROXY", &nowhere)
            .args(["push", path.to_str().unwrap()]),
    );
    bench.assert_pushed(&run, "myimg", "dev");
}

#[test]
fn a_result_that_cannot_be_written_fails_the_push() {
    let faulty = Faulty::new(87, Vec::new());
    let binary = assert_cmd::cargo::cargo_bin("kubectl-registry");
    let output = crate::support::push::clean_std_cmd(binary.as_os_str(), faulty.bench.dir.path())
        .env("KUBECONFIG", &faulty.bench.kubeconfig)
        .args(["push", &faulty.archive])
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        "error: writing the result to standard output\n\
         caused by: No space left on device (os error 28)\n"
    );
}

#[test]
fn concurrent_pushes_sharing_the_record_lose_none_of_it() {
    let bench = Bench::new();
    let images: Vec<Image> = (0..4).map(|i| Image::sample(90 + i)).collect();
    let children: Vec<std::process::Child> = images
        .iter()
        .enumerate()
        .map(|(i, image)| {
            let path = bench.path(&format!("img{i}.tar"));
            image.write(Format::DockerLegacy, &path, &[&format!("app{i}:dev")]);
            let binary = assert_cmd::cargo::cargo_bin("kubectl-registry");
            crate::support::push::clean_std_cmd(binary.as_os_str(), bench.dir.path())
                .env("KUBECONFIG", &bench.kubeconfig)
                .args(["push", path.to_str().unwrap(), "--compression", "gzip"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(bench.path(".cache/kubectl-registry/sent-blobs-v1.json")).unwrap(),
    )
    .unwrap();
    let keys: Vec<&str> = record["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry[0].as_str().unwrap())
        .collect();
    for image in &images {
        for diff_id in image.diff_ids() {
            assert!(
                keys.iter().any(|key| key.contains(&diff_id)),
                "{diff_id} lost from {keys:#?}"
            );
        }
    }
}
