//! Hostile peers (issue 39), each a stand-in of its own that trickles, floods or loops: an API
//! server that trickles its answer, a ConfigMap with a control character in `help` or a 10 MB
//! host, a 10,000-character tag, a registry answering a 10 KB `Docker-Content-Digest` or a
//! `Link` back to the same page, an xz archive claiming a 4 GiB dictionary, an engine whose
//! export streams junk forever. Each is met as a class: a bound on the whole answer, on the
//! decoder's memory, on the stream against what the source said; the echo of an outside value
//! shortened; a loop of requests stopped when it repeats; one bad optional field dropped.

use snapbox::str;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::support::apiserver::{ApiServer, kubeconfig_yaml};
use crate::support::fault_proxy::{Action, FaultProxy, Rule};
use crate::support::fixtures::{Format, Image};
use crate::support::push::{Bench, clean_cmd, clean_run};
use crate::support::registry::TestRegistry;
use crate::support::run::assert_redacted;

/// What any error about one outside value may print at most: our words and the value shortened.
const SHORT_STDERR: usize = 2048;

/// A stand-in API server that answers every request with a 200 whose JSON body trickles in, a
/// byte every half second, as a broken proxy or an overloaded server may.
struct TricklingServer {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl TricklingServer {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let stopping = Arc::clone(&stopping);
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                        line.clear();
                    }
                    let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n";
                    if stream.write_all(head.as_bytes()).is_err() {
                        return;
                    }
                    while !stopping.load(Ordering::Relaxed) {
                        if stream.write_all(b" ").is_err() {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(500));
                    }
                });
            }
        });
        Self { port, stop }
    }
}

impl Drop for TricklingServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[test]
fn an_api_server_answer_that_trickles_is_cut_off_at_the_bound_of_the_whole_answer() {
    let server = TricklingServer::start();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let server_url = format!("http://127.0.0.1:{}", server.port);
    std::fs::write(&kubeconfig, kubeconfig_yaml(&server_url, "slow", "slow")).unwrap();
    let started = Instant::now();
    let output = clean_cmd(dir.path())
        .env("KUBECONFIG", &kubeconfig)
        .env("KUBECTL_REGISTRY_REQUEST_TIMEOUT", "2")
        .arg("info")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        took < Duration::from_secs(20),
        "info took {took:?} against a trickling answer (the per-read bound alone never ends it): {stderr}"
    );
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert_redacted(
        &stderr,
        str![[r#"
error: reading ConfigMap kube-public/local-registry-hosting: the API server of context "slow" (http://127.0.0.1:[PORT]) answered too slowly: the answer did not arrive whole within 2s
hint: its answer kept coming, a little at a time: is the cluster overloaded or stuck? `kubectl --context slow get nodes` shows whether it answers; KUBECTL_REGISTRY_REQUEST_TIMEOUT sets how long to wait

"#]],
    );
}

#[test]
fn a_control_character_in_the_configmaps_help_drops_help_and_keeps_the_registry() {
    let server = ApiServer::builder()
        .hosting_v1("host: \"localhost:5001\"\nhelp: \"https://x.example/\\e]0;pwned\\a\"\n")
        .start();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = server.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
    let run = clean_run(dir.path())
        .kubeconfig(&kubeconfig)
        .args(["info", "-o", "json"])
        .output();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let info = run.json();
    assert_eq!(info["registry"]["host"], "localhost:5001");
    assert_eq!(info["registry"]["help"], serde_json::Value::Null);
    run.assert_stderr(str![[r#"
warning: ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field help "https://x.example/\u{1b}]0;pwned\u{7}" contains a control character; ignoring it

"#]]);
}

#[test]
fn a_ten_megabyte_host_in_the_configmap_is_quoted_short() {
    let host = format!("localhost:5001/{}", "a".repeat(10 << 20));
    let server = ApiServer::builder()
        .hosting_v1(&format!("host: \"{host}\"\n"))
        .start();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = server.write_kubeconfig(dir.path(), "kind-dev", "kind-dev");
    let output = clean_cmd(dir.path())
        .env("KUBECONFIG", &kubeconfig)
        .arg("info")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3));
    assert!(
        stderr.len() < SHORT_STDERR,
        "{} bytes on stderr: {}",
        stderr.len(),
        &stderr[..SHORT_STDERR]
    );
    assert!(
        stderr.contains(&format!("... ({} more characters)", host.len() - 120)),
        "{stderr}"
    );
    assert_redacted(
        &stderr,
        str![[r#"
error: ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field host is not a registry host
caused by: "localhost:5001/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"... (10485655 more characters) is not a registry host[:port]: it has a path (/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa... (10485641 more characters))
hint: fix it with `kubectl -n kube-public edit configmap local-registry-hosting`, or skip discovery with --registry HOST[:PORT]

"#]],
    );
}

#[test]
fn a_ten_thousand_character_tag_is_quoted_short() {
    let bench = Bench::new();
    let path = bench.path("img.tar");
    Image::sample(391).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let tag = format!("myimg:{}", "t".repeat(10_000));
    let run = bench.push(&[path.to_str().unwrap(), "--tag", &tag]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.len() < SHORT_STDERR,
        "{} bytes on stderr: {}",
        run.stderr.len(),
        &run.stderr[..SHORT_STDERR]
    );
    run.assert_stderr(str![[r#"
error: the image name from --tag is not usable
caused by: "myimg:tttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt"... (9886 more characters) is not an image name: a tag is up to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'
hint: pass a valid name with --tag NAME[:TAG]

"#]]);
}

#[test]
fn a_ten_kilobyte_docker_content_digest_is_quoted_short() {
    let registry = TestRegistry::start();
    let huge = format!("sha256:{}", "f".repeat(10 << 10));
    let answered = huge.clone();
    let proxy = FaultProxy::start(
        &registry.host(),
        vec![Rule::new(
            "PUT",
            "/manifests/",
            10,
            Action::Rewrite(Arc::new(move |answer| {
                answer
                    .headers
                    .retain(|(name, _)| !name.eq_ignore_ascii_case("docker-content-digest"));
                answer
                    .headers
                    .push(("Docker-Content-Digest".into(), answered.clone()));
            })),
        )],
    );
    let bench = Bench::advertising(registry, &proxy.host());
    let path = bench.path("img.tar");
    Image::sample(392).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let run = bench.push(&[path.to_str().unwrap()]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr
            .contains("the registry stored the manifest as \"sha256:fff"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.len() < SHORT_STDERR,
        "{} bytes on stderr: {}",
        run.stderr.len(),
        &run.stderr[..SHORT_STDERR.min(run.stderr.len())]
    );
    assert!(!run.stderr.contains(&huge));
    run.assert_stderr(str![[r#"
error: pushing manifest sha256:[DIGEST]… (dev) to 127.0.0.1:[PORT]/myimg
caused by: the registry stored the manifest as "sha256:[DIGEST]fffffffffffffffffffffffffffffffffffffffffffffffff"... (10127 more characters), but the bytes sent hash to sha256:[DIGEST]
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
hint: a proxy or the registry rewrote the manifest; pin the digest the registry reports, or push to it directly

"#]]);
}

#[test]
fn a_catalog_whose_link_names_the_same_page_again_is_left_after_one_round() {
    let registry = TestRegistry::start();
    let proxy = FaultProxy::start(
        &registry.host(),
        vec![Rule::new(
            "GET",
            "/v2/_catalog",
            usize::MAX,
            Action::Rewrite(Arc::new(|answer| {
                answer
                    .headers
                    .push(("Link".into(), "</v2/_catalog?n=100>; rel=\"next\"".into()));
            })),
        )],
    );
    let bench = Bench::advertising(registry, &proxy.host());
    let path = bench.path("img.tar");
    Image::sample(393).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    bench.push(&[path.to_str().unwrap()]).assert_clean_success();
    let run = bench.run(bench.cmd().args(["ls"]));
    assert_ne!(run.code, 0, "{}", run.stdout);
    run.assert_stderr(str![[r#"
error: listing the repositories of 127.0.0.1:[PORT]
caused by: the registry's Link header names page "http://127.0.0.1:[PORT]/v2/_catalog?n=100" again, after 1 pages; stopped there
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/

"#]]);
    let catalogs = proxy
        .seen_short()
        .iter()
        .filter(|seen| seen.starts_with("GET /v2/_catalog"))
        .count();
    assert_eq!(catalogs, 1, "{:#?}", proxy.seen_short());
}

/// `tar` compressed by the real xz with a 4 KiB dictionary, its block header then edited to
/// claim a 4 GiB one (the LZMA2 property byte 40), its CRC32 made right: what a hostile
/// archive looks like, small on disk.
fn xz_claiming_a_huge_dictionary(tar: &std::path::Path) -> Vec<u8> {
    let output = Command::new("xz")
        .args(["--format=xz", "-T1", "--lzma2=preset=0,dict=4KiB", "-c"])
        .arg(tar)
        .output()
        .expect("xz (scripts/install-test-deps)");
    assert!(output.status.success());
    let mut xz = output.stdout;
    let header = 12;
    let size = (usize::from(xz[header]) + 1) * 4;
    let flags = xz[header + 1];
    let mut at = header + 2;
    for present in [flags & 0x40 != 0, flags & 0x80 != 0] {
        if present {
            while xz[at] & 0x80 != 0 {
                at += 1;
            }
            at += 1;
        }
    }
    assert_eq!(
        &xz[at..at + 2],
        &[0x21, 0x01],
        "one LZMA2 filter with one property byte"
    );
    xz[at + 2] = 40;
    let mut crc = flate2::Crc::new();
    crc.update(&xz[header..header + size - 4]);
    xz[header + size - 4..header + size].copy_from_slice(&crc.sum().to_le_bytes());
    xz
}

#[test]
fn an_xz_archive_claiming_a_four_gigabyte_dictionary_is_refused_within_bounded_memory() {
    let bench = Bench::new();
    let tar = bench.path("img.tar");
    // 200 MiB in one member: decoded into a 4 GiB dictionary, every byte of it stays resident.
    let mut builder = tar::Builder::new(std::fs::File::create(&tar).unwrap());
    let mut header = tar::Header::new_gnu();
    header.set_size(200 << 20);
    header.set_mode(0o644);
    builder
        .append_data(&mut header, "layer.tar", std::io::repeat(0).take(200 << 20))
        .unwrap();
    builder.into_inner().unwrap();
    let hostile = bench.path("img.tar.xz");
    std::fs::write(&hostile, xz_claiming_a_huge_dictionary(&tar)).unwrap();
    let rss = bench.path("rss");
    let run = crate::support::run::Run::plugin_timed(bench.dir.path(), &rss)
        .kubeconfig(&bench.kubeconfig)
        .args(["push", hostile.to_str().unwrap()])
        .output();
    let stderr = &run.stderr;
    assert_eq!(run.code, 4, "{stderr}");
    run.assert_stderr(str![[r#"
error: decompressing [ROOT]/img.tar.xz (xz)
caused by: the stream needs more than 256 MiB of memory to decompress (its header asks for a larger dictionary than `xz -9` uses); decompress it yourself (`xz -d --memlimit=0`) and push the tar
hint: the archive is damaged or incomplete; write it again (e.g. docker save -o FILE IMAGE)

"#]]);
    // GNU time writes "Command exited with non-zero status 4" first, then the figure.
    let peak_kib: u64 = std::fs::read_to_string(&rss)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(peak_kib < 128 << 10, "peak RSS {} MiB", peak_kib >> 10);
    let mut first = [0u8; 6];
    std::fs::File::open(&hostile)
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    assert_eq!(first, [0xfd, b'7', b'z', b'X', b'Z', 0]);
}

/// A docker CLI stand-in (alone on PATH with the system's tools) whose `image inspect` says the
/// image holds `size` bytes (or says nothing of it), and whose `image save` begins a layer that
/// never ends: a tar header claiming a terabyte, then zeros for ever, from a child of its own
/// (as a CLI's helper process would) that ignores SIGPIPE and goes on writing when its reader
/// has gone, so nothing but a kill of the whole group ends it; that child's pid is written in
/// `save-started` as it begins.
fn endless_docker(bench: &Bench, size: Option<u64>) -> (std::path::PathBuf, std::path::PathBuf) {
    let bin = bench.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let image = Image::sample(395);
    let mut inspect = serde_json::json!({
        "Id": image.config_digest(),
        "RepoTags": ["junk:forever"],
        "Os": "linux",
        "Architecture": "amd64",
        "RootFS": {"Type": "layers", "Layers": image.diff_ids()},
    });
    if let Some(size) = size {
        inspect["Size"] = size.into();
    }
    let inspect_file = bench.path("inspect.json");
    std::fs::write(&inspect_file, serde_json::json!([inspect]).to_string()).unwrap();
    let mut header = tar::Header::new_gnu();
    header.set_path("0123456789abcdef/layer.tar").unwrap();
    header.set_size(1 << 40);
    header.set_mode(0o644);
    header.set_cksum();
    let head = bench.path("head.tar");
    std::fs::write(&head, header.as_bytes()).unwrap();
    let started = bench.path("save-started");
    let script = bin.join("docker");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n\
             if [ \"$1 $2 $3\" = 'image inspect junk:forever' ]; then exec cat '{inspect}'; fi\n\
             if [ \"$1 $2 $3\" = 'image save junk:forever' ]; then cat '{head}'; (trap '' PIPE; while :; do cat /dev/zero 2>/dev/null; done) & echo $! > '{started}'; wait; fi\n\
             echo \"Error response from daemon: No such image: $3\" >&2\nexit 1\n",
            inspect = inspect_file.display(),
            started = started.display(),
            head = head.display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (bin, started)
}

#[test]
fn an_engine_export_that_streams_junk_for_ever_is_stopped_past_what_its_inspect_said() {
    let bench = Bench::new();
    let (bin, started) = endless_docker(&bench, Some(1 << 20));
    let run = bench.run(
        bench
            .cmd()
            .path(format!("{}:/usr/bin:/bin", bin.display()))
            .timeout(Duration::from_secs(120))
            .args(["push", "junk:forever"]),
    );
    assert_eq!(run.code, 4, "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: pushing a blob to 127.0.0.1:[PORT]/junk: reading the blob's content failed, so the upload was aborted
caused by: the engine's export went on past 260 MiB, though its image inspect says the image holds 1 MiB; it was stopped there

"#]]);
    bench.assert_not_tagged("junk", "forever");
    assert_gone(std::fs::read_to_string(&started).unwrap().trim());
}

/// The process `pid` has ended (killed: a zombie its new parent has yet to reap counts as
/// ended) within a few seconds: the bound our own reaping keeps.
fn assert_gone(pid: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The state follows the command's name in parentheses: "PID (COMM) S ...".
        let running = state
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'));
        if !running {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the engine's export (pid {pid}) outlived the push: {state}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_ends_a_push_whose_engine_streams_junk_for_ever_within_five_seconds() {
    let bench = Bench::new();
    let (bin, started) = endless_docker(&bench, None);
    let binary = assert_cmd::cargo::cargo_bin("kubectl-registry");
    let mut child = crate::support::push::clean_std_cmd(binary.as_os_str(), bench.dir.path())
        .env("KUBECONFIG", &bench.kubeconfig)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .args(["push", "junk:forever"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let engine = loop {
        let pid = std::fs::read_to_string(&started).unwrap_or_default();
        if pid.ends_with('\n') {
            break pid.trim().to_string();
        }
        assert!(Instant::now() < deadline, "the export never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    crate::support::run::signal(child.id(), "-TERM");
    let signalled = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if signalled.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("the push outlived its SIGTERM by 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = signalled.elapsed();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        took < Duration::from_secs(5),
        "SIGTERM took {took:?}: {stderr}"
    );
    assert_eq!(output.status.code(), Some(143), "{stderr}");
    assert_gone(&engine);
}
