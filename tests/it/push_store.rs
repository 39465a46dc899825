//! `kubectl registry push NAME` reading podman's store (containers-storage) directly, with real
//! podman and buildah on overlay storage (as workstations have it) and vfs: podman itself is not
//! run; only the layers the registry lacks are read, each rebuilt exactly from its tar-split
//! record, with the store's layer lock held for reading; a layer without its record, or holding a
//! file we may not read, is exported instead; a layer removed while it is read (not by podman) is
//! a clear error, nothing tagged.

use snapbox::str;
use std::io::{BufRead, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::podman::{Podman, layer_dir};
use crate::support::push::{Bench, Node, Outcome, RUNTIME_HOST, blob_sizes, counts};
use crate::support::run::{Run, redact};
use serde_json::Value;

/// The binary with the test's podman storage and a podman CLI that logs its calls.
struct StoreBench {
    bench: Bench,
    podman: Podman,
    bin: PathBuf,
    calls: PathBuf,
}

impl StoreBench {
    fn new(podman: Podman) -> Self {
        let bench = Bench::new();
        let bin = bench.path("bin");
        std::fs::create_dir(&bin).unwrap();
        let calls = bench.path("podman-calls");
        crate::support::standins::spy(&bin, "podman", "/usr/bin/podman", &calls);
        Self {
            bench,
            podman,
            bin,
            calls,
        }
    }

    fn cmd(&self) -> Run {
        self.bench
            .cmd()
            .envs(self.podman.envs())
            .env("KUBECTL_REGISTRY_ENGINE", "podman")
            .path(format!("{}:/usr/bin:/bin", self.bin.display()))
    }

    fn push(&self, args: &[&str]) -> Outcome {
        self.cmd().arg("push").args(args).output()
    }

    /// The podman calls since the last look.
    fn take_calls(&self) -> Vec<String> {
        let calls = std::fs::read_to_string(&self.calls).unwrap_or_default();
        let _ = std::fs::remove_file(&self.calls);
        calls.lines().map(str::to_string).collect()
    }

    /// `the overlay store at [ROOT]/... (CONTAINERS_STORAGE_CONF: ...)` as -v names it.
    fn store_words(&self, driver: &str) -> String {
        let dir = self.podman.dir().display().to_string();
        redact(&format!(
            "the {driver} store at {dir}/storage (CONTAINERS_STORAGE_CONF: {dir}/storage.conf)"
        ))
    }
}

fn image_id(podman: &Podman, name: &str) -> String {
    format!(
        "sha256:{}",
        podman.tool("podman", &["image", "inspect", "--format", "{{.Id}}", name])
    )
}

#[test]
fn an_overlay_store_is_read_directly_and_a_rebuild_reads_only_its_new_layer() {
    let sb = StoreBench::new(Podman::overlay());
    let dirs = sb.podman.dir();
    let base = layer_dir(dirs, "base", 61, &[1_500_000, 400_000]);
    let more = layer_dir(dirs, "more", 62, &[900_000]);
    let app = layer_dir(dirs, "app", 63, &[700_000]);
    sb.podman
        .build("localhost/myimg:dev", &[&base, &more, &app]);

    let first = sb.push(&["myimg:dev", "-v", "-o", "json"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let id = image_id(&sb.podman, "myimg:dev");
    assert!(first.stderr.contains(&id), "{}", first.stderr);
    first.assert_stderr(str![[r#"
podman's store has myimg:dev (image sha256:[DIGEST]): podman not asked
reading myimg:dev from the overlay store at [ROOT]/storage (CONTAINERS_STORAGE_CONF: [ROOT]/storage.conf)
pushed 4 blobs (3.5 MB), 0 blobs already there, in [ELAPSED]s

"#]]);
    assert_eq!(sb.take_calls(), Vec::<String>::new(), "podman was run");
    let (bytes, digest) = sb.bench.landed("myimg:dev");
    let manifest: Value = serde_json::from_slice(&bytes).unwrap();
    sb.bench.assert_blobs_present("myimg", &manifest);
    // The engine's image: its config is the image ID, its layers the engine's, copied back whole.
    assert_eq!(
        manifest["config"]["digest"],
        image_id(&sb.podman, "myimg:dev").as_str()
    );
    let report = first.json();
    let reference = format!("{RUNTIME_HOST}/myimg:dev@{digest}");
    assert_eq!(report["ref"], reference.as_str());
    let sizes = blob_sizes(&manifest);
    assert_eq!(counts(&report), [4, sizes.iter().sum(), 0, 0]);
    let node = Node::start(&sb.bench.registry);
    node.pull(&reference, &[]);
    assert_eq!(
        node.layer_diff_ids(&digest),
        sb.podman.diff_ids("localhost/myimg:dev")
    );
    assert_eq!(sb.bench.read_back_whole("myimg:dev"), digest);

    // The registry has the base layers now: their files are not read again (gone, they would
    // fail the push).
    let base_layer = sb.podman.top_layer("localhost/myimg:dev-base0");
    for entry in std::fs::read_dir(sb.podman.layer_files(&base_layer)).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            std::fs::remove_dir_all(path).unwrap();
        } else {
            std::fs::remove_file(path).unwrap();
        }
    }
    let app2 = layer_dir(dirs, "app2", 64, &[800_000]);
    sb.podman
        .build_on("localhost/myimg:dev-base1", "localhost/myimg:dev", &[&app2]);
    let rebuilt = sb.push(&["myimg:dev", "-o", "json"]);
    assert_eq!(rebuilt.code, 0, "{}", rebuilt.stderr);
    assert_eq!(sb.take_calls(), Vec::<String>::new(), "podman was run");
    let (bytes, new_digest) = sb.bench.landed("myimg:dev");
    let manifest: Value = serde_json::from_slice(&bytes).unwrap();
    let sizes = blob_sizes(&manifest);
    assert_eq!(
        counts(&rebuilt.json()),
        [2, sizes[0] + sizes[3], 2, sizes[1] + sizes[2]]
    );
    node.pull(&format!("{RUNTIME_HOST}/myimg:dev@{new_digest}"), &[]);
    assert_eq!(
        node.layer_diff_ids(&new_digest),
        sb.podman.diff_ids("localhost/myimg:dev")
    );
}

#[test]
fn a_layer_without_its_tar_split_record_is_left_to_the_export() {
    let sb = StoreBench::new(Podman::new());
    let dirs = sb.podman.dir();
    let base = layer_dir(dirs, "base", 71, &[1_200_000]);
    let app = layer_dir(dirs, "app", 72, &[600_000]);
    sb.podman.build("localhost/myimg:dev", &[&base, &app]);
    let top = sb.podman.top_layer("localhost/myimg:dev");
    let record = sb.podman.tar_split(&top);
    std::fs::remove_file(&record).unwrap();

    let run = sb.push(&["myimg:dev", "-v"]);
    assert!(run.stderr.contains(&top), "{}", run.stderr);
    assert_eq!(
        sb.take_calls(),
        [
            "podman image inspect myimg:dev",
            "podman image save myimg:dev"
        ]
    );
    // podman needs the record too: its export cannot rebuild the layer either, and says so.
    assert_eq!(run.code, 4, "{}", run.stderr);
    run.assert_stderr(str![[r#"
asking the podman CLI for myimg:dev
the podman CLI has myimg:dev (image sha256:[DIGEST])
not reading podman's store: layer [..]'s tar-split record cannot be read ([ROOT]/storage/vfs-layers/[..].tar-split.gz: No such file or directory (os error 2)); exporting
exporting myimg:dev from the podman CLI
error: exporting myimg:dev from the podman CLI
caused by: `podman image save` failed (exit status: 125): [..]Digest did not match[..]

"#]]);
    sb.bench.assert_not_tagged("myimg", "dev");
}

/// The files a tar-split record reads from the layer's directory, in order.
fn files_read(record: &Path) -> Vec<String> {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(record).unwrap());
    std::io::BufReader::new(gz)
        .lines()
        .map(|line| serde_json::from_str::<Value>(&line.unwrap()).unwrap())
        .filter(|entry| entry["type"] == 1 && entry["size"].as_u64().unwrap_or(0) > 0)
        .map(|entry| entry["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_layer_removed_while_it_is_read_is_a_clear_error_and_nothing_is_tagged() {
    let sb = StoreBench::new(Podman::new());
    let dirs = sb.podman.dir();
    let layer = layer_dir(dirs, "layer", 81, &[1_500_000, 1_500_000]);
    sb.podman.build("localhost/myimg:dev", &[&layer]);
    let top = sb.podman.top_layer("localhost/myimg:dev");
    let files = sb.podman.layer_files(&top);
    let read = files_read(&sb.podman.tar_split(&top));
    let [first, second] = read.as_slice() else {
        panic!("two files expected in the layer: {read:?}");
    };
    // The first file becomes a pipe: the push, once it is reading the layer, waits on it.
    let content = std::fs::read(files.join(first)).unwrap();
    std::fs::remove_file(files.join(first)).unwrap();
    let made = Command::new("mkfifo")
        .arg(files.join(first))
        .status()
        .unwrap();
    assert!(made.success());

    let child = sb
        .bench
        .cmd()
        .envs(sb.podman.envs())
        .env("KUBECTL_REGISTRY_ENGINE", "podman")
        .args(["push", "myimg:dev"])
        .spawn();
    // O_NONBLOCK: opening the pipe for writing succeeds once the push has opened it to read.
    let deadline = Instant::now() + Duration::from_secs(60);
    let waiting = loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(0o4000)
            .open(files.join(first))
        {
            Ok(pipe) => break pipe,
            Err(_) => {
                assert!(Instant::now() < deadline, "the push never read the layer");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    // podman's writers (`podman rmi`, a build committing a layer) lock layers.lock for writing
    // with fcntl: while the push reads, they wait.
    let layers_lock = sb.podman.dir().join("storage/vfs-layers/layers.lock");
    assert!(
        !writer_may_lock(&layers_lock),
        "layers.lock is not held for reading while a layer is read"
    );
    // Mid-read, the layer goes anyway (not through podman): its second file first.
    std::fs::remove_file(files.join(second)).unwrap();
    let mut pipe = std::fs::OpenOptions::new()
        .write(true)
        .open(files.join(first))
        .unwrap();
    drop(waiting);
    pipe.write_all(&content).unwrap();
    drop(pipe);

    let run = crate::support::run::finished(child);
    let stderr = &run.stderr;
    let said: Vec<&str> = stderr.lines().collect();
    assert_eq!(run.code, 4, "{stderr}");
    assert_eq!(
        said[0],
        format!("error: reading myimg:dev from {}", sb.store_words("vfs")),
        "{stderr}"
    );
    let short = &top[..12];
    assert_eq!(
        said[1],
        redact(&format!(
            "caused by: layer {short} in the store: {} is gone: the layer was removed from the store while it was read",
            files.join(second).display()
        )),
        "{stderr}"
    );
    sb.bench.assert_not_tagged("myimg", "dev");
    assert!(writer_may_lock(&layers_lock), "the lock outlived the push");
}

/// Whether a writer may lock `path` now, as containers-storage's writers do (fcntl F_SETLK,
/// F_WRLCK, the whole file), asked from another process.
fn writer_may_lock(path: &Path) -> bool {
    let probe = Command::new("python3")
        .args([
            "-c",
            "import fcntl, sys\nwith open(sys.argv[1], 'r+') as f:\n    try:\n        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n    except OSError:\n        sys.exit(3)",
        ])
        .arg(path)
        .status()
        .expect("python3 (scripts/install-test-deps)");
    match probe.code() {
        Some(0) => true,
        Some(3) => false,
        other => panic!("the lock probe failed: {other:?}"),
    }
}

/// Rootless podman keeps files it reads only inside its user namespace: mode 000 (Fedora's and
/// UBI's /etc/shadow), or owned by a mapped uid with owner-only modes. Our process cannot read
/// them; podman's export can. Here the push runs without CAP_DAC_OVERRIDE and
/// CAP_DAC_READ_SEARCH (what root would read them with), and the podman it falls back to answers
/// with what the real podman printed and exported for this image beforehand, with its capabilities.
#[test]
fn a_store_file_we_may_not_read_is_left_to_podmans_export() {
    let sb = StoreBench::new(Podman::overlay());
    let dirs = sb.podman.dir();
    let base = layer_dir(dirs, "base", 91, &[1_000_000]);
    let app = layer_dir(dirs, "app", 92, &[500_000]);
    let shadow = app.join("shadow");
    std::fs::write(&shadow, b"root:!locked::0:99999:7:::\n").unwrap();
    std::fs::set_permissions(&shadow, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    sb.podman.build("localhost/myimg:dev", &[&base, &app]);
    let top = sb.podman.top_layer("localhost/myimg:dev");
    let unreadable = sb.podman.layer_files(&top).join("layer1/shadow");
    assert_eq!(
        std::fs::metadata(&unreadable).unwrap().permissions().mode() & 0o777,
        0,
        "the store keeps the file's mode"
    );

    let answers = sb.bench.path("podman-answers");
    std::fs::create_dir(&answers).unwrap();
    std::fs::write(
        answers.join("inspect.json"),
        sb.podman.tool("podman", &["image", "inspect", "myimg:dev"]),
    )
    .unwrap();
    let saved = Command::new("podman")
        .envs(sb.podman.envs())
        .args(["image", "save", "myimg:dev"])
        .stdout(std::fs::File::create(answers.join("save.tar")).unwrap())
        .status()
        .unwrap();
    assert!(saved.success());
    std::fs::write(
        sb.bin.join("podman"),
        format!(
            "#!/bin/sh\necho \"podman $*\" >> '{calls}'\ncase \"$1 $2\" in\n\
             'image inspect') exec cat '{answers}/inspect.json' ;;\n\
             'image save') exec cat '{answers}/save.tar' ;;\nesac\nexit 125\n",
            calls = sb.calls.display(),
            answers = answers.display()
        ),
    )
    .unwrap();

    let binary = assert_cmd::cargo::cargo_bin("kubectl-registry");
    let run = Run::program("setpriv", sb.bench.dir.path())
        .no_docker_config()
        .args(["--bounding-set", "-dac_override,-dac_read_search", "--"])
        .arg(&binary)
        .args(["push", "myimg:dev", "-v", "-o", "json"])
        .kubeconfig(&sb.bench.kubeconfig)
        .envs(sb.podman.envs())
        .env("KUBECTL_REGISTRY_ENGINE", "podman")
        .path(format!("{}:/usr/bin:/bin", sb.bin.display()))
        .output();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains(&top[..12]), "{}", run.stderr);
    run.assert_stderr(str![[r#"
podman's store has myimg:dev (image sha256:[DIGEST]): podman not asked
reading myimg:dev from the overlay store at [ROOT]/storage (CONTAINERS_STORAGE_CONF: [ROOT]/storage.conf)
not reading podman's store: layer [..] in the store: [ROOT]/storage/overlay/[..]/diff/layer1/shadow cannot be read: Permission denied (os error 13); podman reads such files in its user namespace: exporting
exporting myimg:dev from the podman CLI
pushed 2 blobs (503.8 KB), 1 blob already there, in [ELAPSED]s

"#]]);
    assert_eq!(sb.take_calls(), ["podman image save myimg:dev"]);
    let (bytes, digest) = sb.bench.landed("myimg:dev");
    let manifest: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        manifest["config"]["digest"],
        image_id(&sb.podman, "myimg:dev").as_str()
    );
    assert_eq!(
        run.json()["ref"],
        format!("{RUNTIME_HOST}/myimg:dev@{digest}").as_str()
    );
    let node = Node::start(&sb.bench.registry);
    node.pull(&format!("{RUNTIME_HOST}/myimg:dev@{digest}"), &[]);
    assert_eq!(
        node.layer_diff_ids(&digest),
        sb.podman.diff_ids("localhost/myimg:dev")
    );
}
