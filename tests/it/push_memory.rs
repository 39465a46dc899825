//! `kubectl registry push` of a 1 GiB layer keeps its memory flat: the child's peak RSS, as
//! the kernel reports it to `wait4` (`/usr/bin/time -f %M`), stays under 64 MiB; so does a push
//! whose engine socket answers its image inspect without end.

use snapbox::str;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::process::Command as StdCommand;

use crate::support::push::{Bench, RUNTIME_HOST};
use crate::support::run::Run;
use serde_json::json;

const LAYER_CONTENT: u64 = 1 << 30;
const PEAK_RSS_CEILING_KIB: u64 = 64 << 10;
const BLOCK: u64 = 512;

#[test]
fn a_one_gib_layer_pushes_with_peak_rss_under_64_mib() {
    let bench = Bench::new();
    let big = write_sparse_big_image(bench.dir.path());
    let rss_file = bench.path("peak-rss-kib");
    let run = Run::plugin_timed(bench.dir.path(), &rss_file)
        .kubeconfig(&bench.kubeconfig)
        .arg("push")
        .arg(bench.path("big.tar"))
        .args(["-o", "json"])
        .output();
    run.assert_clean_success();

    let (manifest, digest) = bench.landed("big:1");
    let manifest: serde_json::Value = serde_json::from_slice(&manifest).unwrap();
    assert_eq!(manifest["layers"][0]["digest"], big.diff_id.as_str());
    assert_eq!(manifest["layers"][0]["size"], big.layer_size);
    let report = run.json();
    assert_eq!(
        report["ref"],
        format!("{RUNTIME_HOST}/big:1@{digest}").as_str()
    );
    assert_eq!(
        (
            report["blobsPushed"].as_u64(),
            report["bytesPushed"].as_u64()
        ),
        (Some(2), Some(big.layer_size + big.config_size))
    );
    assert_eq!(bench.registry.blob_status("big", &big.diff_id), 200);

    let peak_kib: u64 = std::fs::read_to_string(&rss_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        peak_kib < PEAK_RSS_CEILING_KIB,
        "pushing a {LAYER_CONTENT}-byte layer peaked at {peak_kib} KiB of RSS"
    );
}

struct BigImage {
    diff_id: String,
    layer_size: u64,
    config_size: u64,
}

/// Writes `dir/big.tar`, a legacy docker archive `big:1` with one uncompressed layer holding a
/// 1 GiB file of zeros, as sparse files: the holes cost no disk writes, and `sha256sum`
/// hashes the layer far faster than a debug build could.
fn write_sparse_big_image(dir: &Path) -> BigImage {
    let layer_path = dir.join("layer.tar");
    let layer_header = ustar_header("data/big.bin", LAYER_CONTENT);
    // The layer tar: header, content (a hole), then the two zero blocks that end a tar.
    let layer_size = BLOCK + LAYER_CONTENT + 2 * BLOCK;
    let mut layer = File::create(&layer_path).unwrap();
    layer.write_all(&layer_header).unwrap();
    layer.set_len(layer_size).unwrap();
    drop(layer);
    let diff_id = sha256sum(&layer_path);

    let config = serde_json::to_vec(&json!({
        "architecture": "amd64", "os": "linux",
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }))
    .unwrap();
    let config_name = format!(
        "{}.json",
        &crate::support::fixtures::sha256(&config)["sha256:".len()..]
    );
    let manifest = serde_json::to_vec(
        &json!([{"Config": config_name, "RepoTags": ["big:1"], "Layers": ["big/layer.tar"]}]),
    )
    .unwrap();

    // The archive: the layer's member (its header, then the layer tar with its hole), the
    // config, manifest.json, and the end of the tar.
    let mut archive = File::create(dir.join("big.tar")).unwrap();
    archive
        .write_all(&ustar_header("big/layer.tar", layer_size))
        .unwrap();
    archive.write_all(&layer_header).unwrap();
    archive.seek(SeekFrom::Start(BLOCK + layer_size)).unwrap();
    for (name, bytes) in [
        (config_name.as_str(), &config),
        ("manifest.json", &manifest),
    ] {
        archive
            .write_all(&ustar_header(name, bytes.len() as u64))
            .unwrap();
        archive.write_all(bytes).unwrap();
        let padding = (BLOCK - bytes.len() as u64 % BLOCK) % BLOCK;
        archive.write_all(&vec![0; padding as usize]).unwrap();
    }
    archive.write_all(&[0; 2 * BLOCK as usize]).unwrap();
    std::fs::remove_file(&layer_path).unwrap();
    BigImage {
        diff_id,
        layer_size,
        config_size: config.len() as u64,
    }
}

fn ustar_header(path: &str, size: u64) -> [u8; BLOCK as usize] {
    let mut header = tar::Header::new_ustar();
    header.set_path(path).unwrap();
    header.set_size(size);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_cksum();
    *header.as_bytes()
}

fn sha256sum(path: &Path) -> String {
    let out = StdCommand::new("sha256sum").arg(path).output().unwrap();
    assert!(out.status.success(), "sha256sum failed");
    let text = String::from_utf8(out.stdout).unwrap();
    format!("sha256:{}", text.split_whitespace().next().unwrap())
}

/// A stand-in engine socket: every request (the `_ping`, `GET /images/{name}/json`) is answered
/// 200 with a chunked JSON body that starts as an inspect answer and never ends, until the
/// client hangs up or `limit` bytes went out. It stops when `stop` is set (or after 90 s), and
/// returns how many bytes it sent in all.
fn endless_engine(
    socket: &Path,
    limit: u64,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    let listener = std::os::unix::net::UnixListener::bind(socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
        let mut sent = 0u64;
        // The push asks once (or a few times); each connection is served in turn.
        while std::time::Instant::now() < deadline
            && !stop.load(std::sync::atomic::Ordering::SeqCst)
        {
            let mut connection = match listener.accept() {
                Ok((connection, _)) => connection,
                Err(_) => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    continue;
                }
            };
            connection.set_nonblocking(false).unwrap();
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n")
                && std::io::Read::read(&mut connection, &mut byte).unwrap_or(0) == 1
            {
                head.push(byte[0]);
            }
            let start = "{\"Id\":\"sha256:0000000000000000000000000000000000000000000000000000000000000000\",\
                         \"RepoTags\":[\"myimg:dev\"],\"Comment\":\"";
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\
                 {:x}\r\n{start}\r\n",
                start.len()
            );
            if connection.write_all(answer.as_bytes()).is_err() {
                continue;
            }
            let chunk = vec![b'a'; 64 << 10];
            let framed = [format!("{:x}\r\n", chunk.len()).as_bytes(), &chunk, b"\r\n"].concat();
            while sent < limit && connection.write_all(&framed).is_ok() {
                sent += chunk.len() as u64;
            }
        }
        sent
    })
}

#[test]
fn an_engine_socket_answering_without_end_is_cut_at_the_inspect_cap() {
    let bench = Bench::new();
    let socket = bench.path("docker.sock");
    // 8 GiB at most: far past the cap, and past this machine's memory without one.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let engine = endless_engine(&socket, 8 << 30, std::sync::Arc::clone(&stop));
    let rss_file = bench.path("peak-rss-kib");
    let run = Run::plugin_timed(bench.dir.path(), &rss_file)
        .kubeconfig(&bench.kubeconfig)
        .env("KUBECTL_REGISTRY_ENGINE", "docker")
        .env("DOCKER_HOST", format!("unix://{}", socket.display()))
        .args(["push", "myimg:dev"])
        .timeout(std::time::Duration::from_secs(90))
        .output();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    assert_eq!((run.code, run.stdout.as_str()), (4, ""), "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: "myimg:dev" is not a file, and no local engine has it:
  docker: reading the inspect answer: the answer is larger than 4194304 bytes
  podman: Error: inspecting object: myimg:dev: image not known
hint: pass an archive (`docker save IMAGE -o image.tar`), `-` for stdin, or an image your engine has

"#]]);
    let sent = engine.join().unwrap();
    assert!(
        sent < 1 << 30,
        "the engine sent {sent} bytes before the push hung up"
    );
    // GNU time says "Command exited with non-zero status 4" first, then the figure.
    let report = std::fs::read_to_string(&rss_file).unwrap();
    let peak_kib: u64 = report.lines().last().unwrap().trim().parse().unwrap();
    eprintln!("peak RSS {peak_kib} KiB, the engine sent {sent} bytes");
    assert!(peak_kib < PEAK_RSS_CEILING_KIB, "peak RSS {peak_kib} KiB");
}
