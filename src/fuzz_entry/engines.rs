//! Targets for what local engines hand us: podman's tar-split records, containerd's gRPC frames
//! and messages, the Engine API's JSON (`image inspect`, a push's progress), and the engines'
//! TOML files (`storage.conf`, `nerdctl.toml`).

use std::io::{self, Read, Write};

use bytes::BytesMut;
use reqwest::header::{HeaderMap, HeaderValue};

use crate::image::digest::Digest;
use crate::image::engine::ImageFacts;
use crate::image::engine::fuzzing::{
    LayerReader, PushAnswer, get_image_response, grpc_status, info_response, next_message,
    parse_storage_conf, read_nerdctl_toml, read_response,
};

/// The most of a replayed layer a target reads.
const REPLAY_LIMIT: u64 = 64 << 20;

/// A layer's tar-split record (the input, gzipped as podman stores it) replayed over the
/// layer's directory, as a push of a podman image reads it: the segments' bytes and the
/// files' contents, checked against the diff_id at the end.
pub fn tar_split(data: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let record = dir.path().join("layer.tar-split.gz");
    let files = dir.path().join("diff");
    let written = std::fs::create_dir(&files)
        .and_then(|()| std::fs::write(files.join("a"), b"the file a\n"))
        .and_then(|()| std::fs::create_dir(files.join("etc")))
        .and_then(|()| std::fs::write(files.join("etc/passwd"), b"root:x:0:0\n"))
        .and_then(|()| {
            let mut gzip = flate2::write::GzEncoder::new(
                std::fs::File::create(&record)?,
                flate2::Compression::fast(),
            );
            gzip.write_all(data)?;
            gzip.finish().map(drop)
        });
    if written.is_err() {
        return;
    }
    let diff_id = Digest::of_bytes(b"");
    let Ok(reader) = LayerReader::open(&record, &files, "layer fuzz".into(), diff_id, 0) else {
        return;
    };
    let _ = io::copy(&mut reader.take(REPLAY_LIMIT), &mut io::sink());
}

/// containerd's answers over its socket: the bytes of a call's body, cut into frames (a flag,
/// a length, a message) however they arrive, each message decoded as the answers we read
/// (an image, a blob's info, a read of content), then the trailers' status.
pub fn containerd(data: &[u8]) {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let mut buffer = BytesMut::new();
    for chunk in rest.chunks(usize::from(split).max(1)) {
        buffer.extend_from_slice(chunk);
        loop {
            match next_message(&mut buffer) {
                Ok(Some(message)) => {
                    let _ = get_image_response(&message);
                    let _ = info_response(&message);
                    let _ = read_response(&message);
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
    let text = String::from_utf8_lossy(rest);
    let mut trailers = HeaderMap::new();
    let mut lines = text.lines();
    for name in ["grpc-status", "grpc-message"] {
        if let Some(value) = lines.next().and_then(|l| HeaderValue::from_str(l).ok()) {
            trailers.insert(name, value);
        }
    }
    let _ = grpc_status(&trailers);
}

/// The Engine API's JSON: an `image inspect` answer (the API's object or the CLIs' array),
/// then (after the first NUL) a push's progress stream, cut into chunks however they arrive.
/// (The `/events` stream is not parsed: any chunk of it is a reason to look again.)
pub fn engine_api(data: &[u8]) {
    let mut parts = data.splitn(2, |&b| b == 0);
    let inspect = parts.next().unwrap_or_default();
    let progress = parts.next().unwrap_or_default();
    if let Ok(facts) = ImageFacts::parse(inspect) {
        let _ = (facts.id, facts.platform);
    }
    let Some((&split, stream)) = progress.split_first() else {
        return;
    };
    let mut answer = PushAnswer::default();
    let mut events = 0usize;
    for chunk in stream.chunks(usize::from(split).max(1)) {
        if answer.read(chunk, &mut |_| events += 1).is_err() {
            return;
        }
    }
    let _ = answer.end(&mut |_| events += 1);
}

/// podman's `storage.conf` and nerdctl's `nerdctl.toml`, the same text read as each.
pub fn engine_conf(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_storage_conf(text);
    let _ = read_nerdctl_toml(text);
}
