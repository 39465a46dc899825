//! `kubectl registry push NAME` from a local engine, end to end with the real parts: podman and
//! buildah (images built from real directories), the real docker CLI and Engine API clients
//! against podman's Docker-compatible service, the real registry, and a real containerd pulling
//! what landed. nerdctl's images: push_nerdctl.
//!
//! Unchanged re-push: inspect only, no export. Changed: one streamed pass, only the missing
//! layers sent; podman's own store, when we can read it, is read directly instead of exported.
//! Nothing of the image is left in TMPDIR, whatever happens.

use snapbox::str;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::fault_proxy::{Action, FaultProxy};
use crate::support::fixtures::{self, Format, Image};
use crate::support::podman::{Podman, layer_dir};
use crate::support::push::{Bench, Node, Outcome, RUNTIME_HOST, blob_sizes, counts};
use crate::support::registry::TestRegistry;
use crate::support::run::{Run, finished, redact};
use serde_json::{Value, json};

/// A bench with a private podman storage, a `bin` dir for the PATH the binary gets, a TMPDIR
/// that must stay empty, and a log of every engine CLI call.
struct EngineBench {
    bench: Bench,
    podman: Podman,
    bin: PathBuf,
    tmp: PathBuf,
    calls: PathBuf,
}

impl EngineBench {
    fn new() -> Self {
        Self::on(Bench::new())
    }

    fn on(bench: Bench) -> Self {
        let bin = bench.path("bin");
        let tmp = bench.path("tmp");
        std::fs::create_dir(&bin).unwrap();
        std::fs::create_dir(&tmp).unwrap();
        let calls = bench.path("engine-calls");
        Self {
            bench,
            podman: Podman::new(),
            bin,
            tmp,
            calls,
        }
    }

    /// Puts `program` on the binary's PATH as a spy: it logs its arguments, then runs `real`.
    fn spy(&self, program: &str, real: &str) {
        crate::support::standins::spy(&self.bin, program, real, &self.calls);
    }

    fn script(&self, program: &str, body: &str) {
        let path = self.bin.join(program);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The binary with podman's storage, only `bin` (then the system's own dirs, without
    /// /usr/local/bin where the docker CLI is) on PATH, and the watched TMPDIR.
    fn cmd(&self) -> Run {
        self.bench
            .cmd()
            .envs(self.podman.envs())
            .path(format!("{}:/usr/bin:/bin", self.bin.display()))
            .env("TMPDIR", &self.tmp)
    }

    /// The binary with an empty image store of podman's own: as when the engine runs on
    /// another machine, only its API or CLI can hand the image over (its export).
    fn cmd_store_elsewhere(&self) -> Run {
        let empty = self.bench.path("empty-store");
        let conf = self.bench.path("empty-storage.conf");
        std::fs::write(
            &conf,
            format!(
                "[storage]\ndriver = \"vfs\"\ngraphroot = \"{}\"\nrunroot = \"{}\"\n",
                empty.display(),
                self.bench.path("empty-run").display()
            ),
        )
        .unwrap();
        self.cmd().env("CONTAINERS_STORAGE_CONF", conf)
    }

    fn push(&self, run: Run, args: &[&str]) -> Outcome {
        run.arg("push").args(args).output()
    }

    /// The engine CLI calls since the last look.
    fn take_calls(&self) -> Vec<String> {
        let calls = std::fs::read_to_string(&self.calls).unwrap_or_default();
        let _ = std::fs::remove_file(&self.calls);
        calls.lines().map(str::to_string).collect()
    }

    fn assert_nothing_left(&self) {
        let left: Vec<_> = std::fs::read_dir(&self.tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "left in TMPDIR: {left:?}");
    }

    /// The JSON report of a clean push of `repo:dev`, checked against what landed.
    fn pushed(&self, run: &Outcome, repo: &str) -> (String, Value) {
        let (bytes, digest) = self.bench.landed(&format!("{repo}:dev"));
        let manifest: Value = serde_json::from_slice(&bytes).unwrap();
        self.bench.assert_blobs_present(repo, &manifest);
        run.assert_clean_success();
        let report = run.json();
        assert_eq!(
            report["ref"],
            json!(format!("{RUNTIME_HOST}/{repo}:dev@{digest}"))
        );
        (digest, report)
    }
}

/// A node pulls `reference` and unpacks the layers podman's `localhost/myimg:dev` has.
fn assert_node_pulls_podmans_image(eb: &EngineBench, reference: &str) {
    let node = Node::start(&eb.bench.registry);
    node.pull(reference, &[]);
    assert_eq!(
        node.layer_diff_ids(reference.rsplit_once('@').unwrap().1),
        eb.podman.diff_ids("localhost/myimg:dev")
    );
}

// podman's CLI

#[test]
fn a_podman_image_is_read_from_its_store_then_repushed_with_nothing_read_then_only_its_changed_layer_sent()
 {
    let eb = EngineBench::new();
    eb.spy("podman", "/usr/bin/podman");
    let dirs = eb.podman.dir();
    let base = layer_dir(dirs, "base", 1, &[1_500_000, 700_000]);
    let small = layer_dir(dirs, "small", 2, &[4_000]);
    let app = layer_dir(dirs, "app", 3, &[1_200_000]);
    eb.podman
        .build("localhost/myimg:dev", &[&base, &small, &app]);

    let first = eb.push(
        eb.cmd().env("KUBECTL_REGISTRY_ENGINE", "podman"),
        &["myimg:dev", "-o", "json"],
    );
    let (digest, report) = eb.pushed(&first, "myimg");
    let manifest = eb.bench.manifest_by_digest("myimg", &digest);
    let sizes = blob_sizes(&serde_json::from_slice(&manifest).unwrap());
    let total: u64 = sizes.iter().sum();
    assert_eq!(counts(&report), [4, total, 0, 0]);
    // Read from podman's store: podman not even asked.
    assert_eq!(eb.take_calls(), Vec::<String>::new());
    assert_eq!(
        serde_json::from_slice::<Value>(&manifest).unwrap()["config"]["digest"],
        format!(
            "sha256:{}",
            eb.podman.tool(
                "podman",
                &["image", "inspect", "--format", "{{.Id}}", "myimg:dev"]
            )
        )
    );
    let reference = report["ref"].as_str().unwrap().to_string();
    assert_node_pulls_podmans_image(&eb, &reference);
    eb.assert_nothing_left();

    let again = eb.push(
        eb.cmd().env("KUBECTL_REGISTRY_ENGINE", "podman"),
        &["myimg:dev", "-o", "json"],
    );
    let (same, report) = eb.pushed(&again, "myimg");
    assert_eq!(same, digest);
    assert_eq!(counts(&report), [0, 0, 4, total]);
    assert_eq!(eb.take_calls(), Vec::<String>::new(), "podman was run");

    // What a rebuild with a changed last COPY makes: the same base layers, a new top one.
    let app2 = layer_dir(dirs, "app2", 4, &[1_100_000]);
    eb.podman
        .build_on("localhost/myimg:dev-base1", "localhost/myimg:dev", &[&app2]);
    let changed = eb.push(
        eb.cmd().env("KUBECTL_REGISTRY_ENGINE", "podman"),
        &["myimg:dev", "-o", "json"],
    );
    let (new_digest, report) = eb.pushed(&changed, "myimg");
    assert_ne!(new_digest, digest);
    let manifest: Value =
        serde_json::from_slice(&eb.bench.manifest_by_digest("myimg", &new_digest)).unwrap();
    let new_sizes = blob_sizes(&manifest);
    assert_eq!(
        counts(&report),
        [
            2,
            new_sizes[0] + new_sizes[3],
            2,
            new_sizes[1] + new_sizes[2]
        ]
    );
    assert_eq!(eb.take_calls(), Vec::<String>::new());
    let reference = report["ref"].as_str().unwrap().to_string();
    assert_node_pulls_podmans_image(&eb, &reference);
    eb.assert_nothing_left();
}

// The Engine API over a socket: DOCKER_HOST, a docker context, podman's CONTAINER_HOST

#[test]
fn the_engine_api_answers_through_docker_host_a_docker_context_and_container_host() {
    let eb = EngineBench::new();
    let dirs = eb.podman.dir();
    let base = layer_dir(dirs, "base", 11, &[1_300_000]);
    let app = layer_dir(dirs, "app", 12, &[600_000, 600_000]);
    let id = eb.podman.build("localhost/myimg:dev", &[&base, &app]);
    let socket = eb.podman.socket_path();
    let _service = eb.podman.serve(&format!("unix://{}", socket.display()));
    let socket = socket.display().to_string();

    // The engine's store out of reach: only the API can hand the image over.
    let run = eb.push(
        eb.cmd_store_elsewhere()
            .env("DOCKER_HOST", format!("unix://{socket}"))
            .arg("-v"),
        &["myimg:dev"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains(&id), "{}", run.stderr);
    run.assert_stderr(str![[r#"
asking docker engine API at unix://[ROOT]/docker.sock (DOCKER_HOST) for myimg:dev
docker engine API at unix://[ROOT]/docker.sock (DOCKER_HOST) has myimg:dev (image sha256:[DIGEST])
not reading podman's store: the store at [ROOT]/empty-store (CONTAINERS_STORAGE_CONF: [ROOT]/empty-storage.conf) does not hold image sha256:[DIGEST]; exporting
exporting myimg:dev from docker engine API at unix://[ROOT]/docker.sock (DOCKER_HOST)
pushed 3 blobs (2.5 MB), 0 blobs already there, in [ELAPSED]s

"#]]);
    let (reference, _) = eb.bench.assert_landed(&run, "myimg", "dev");
    assert_node_pulls_podmans_image(&eb, &reference);

    // The current context of the docker config names the same socket.
    let config = eb.bench.path("docker-config");
    let meta = config
        .join("contexts/meta")
        .join(fixtures::sha256(b"podman").trim_start_matches("sha256:"));
    std::fs::create_dir_all(&meta).unwrap();
    std::fs::write(
        meta.join("meta.json"),
        json!({"Name": "podman", "Metadata": {}, "Endpoints": {"docker": {"Host": format!("unix://{socket}"), "SkipTLSVerify": false}}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        config.join("config.json"),
        r#"{"currentContext": "podman"}"#,
    )
    .unwrap();
    let again = eb.push(
        eb.cmd().env("DOCKER_CONFIG", &config).arg("-v"),
        &["myimg:dev"],
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stderr.contains(&id), "{}", again.stderr);
    again.assert_stderr(str![[r#"
asking docker engine API at unix://[ROOT]/docker.sock (docker context podman) for myimg:dev
docker engine API at unix://[ROOT]/docker.sock (docker context podman) has myimg:dev (image sha256:[DIGEST])
the registry has every blob of sha256:[DIGEST]: sent only its manifest, nothing exported
pushed 0 blobs (0 B), 3 blobs already there, in [ELAPSED]s

"#]]);
    assert_eq!(again.stdout, format!("{reference}\n"));

    // podman's own variable; a new repository gets the blobs mounted, still without an export.
    let other = eb.push(
        eb.cmd()
            .env("KUBECTL_REGISTRY_ENGINE", "podman")
            .env("CONTAINER_HOST", format!("unix://{socket}"))
            .arg("-v"),
        &["myimg:dev", "--tag", "other:dev", "-o", "json"],
    );
    assert_eq!(other.code, 0, "{}", other.stderr);
    assert!(other.stderr.contains(&id), "{}", other.stderr);
    other.assert_stderr(str![[r#"
asking podman engine API at unix://[ROOT]/docker.sock (CONTAINER_HOST) for myimg:dev
podman engine API at unix://[ROOT]/docker.sock (CONTAINER_HOST) has myimg:dev (image sha256:[DIGEST])
the registry has every blob of sha256:[DIGEST]: sent only its manifest, nothing exported
pushed 0 blobs (0 B), 3 blobs already there, in [ELAPSED]s

"#]]);
    let (_, other_digest) = eb.bench.landed("other:dev");
    assert!(
        reference.ends_with(&format!("@{other_digest}")),
        "{reference}"
    );
    assert_eq!(
        counts(&other.json())[..3],
        [0, 0, 3],
        "pushed, bytes pushed, skipped"
    );
    eb.assert_nothing_left();
}

// podman whose store is not here (a podman machine's VM, a remote service): podman pushes

/// Blobs pushed and blobs already there, as `-o json` reports them.
fn report_counts(report: &Value) -> [u64; 2] {
    ["blobsPushed", "blobsSkipped"].map(|k| report[k].as_u64().unwrap())
}

#[test]
fn podman_pushes_from_its_own_store_when_it_is_not_here_with_our_credentials() {
    let eb = EngineBench::on(Bench::with_registry(TestRegistry::with_basic_auth(
        "kind", "s3cret",
    )));
    let dirs = eb.podman.dir();
    let base = layer_dir(dirs, "base", 31, &[1_300_000]);
    let app = layer_dir(dirs, "app", 32, &[400_000]);
    let id = eb.podman.build("localhost/myimg:dev", &[&base, &app]);
    let socket = eb.podman.socket_path();
    let _service = eb.podman.serve(&format!("unix://{}", socket.display()));
    eb.spy("podman", "/usr/bin/podman");
    let host = eb.bench.registry.host();
    let credentials = crate::support::push::docker_config(&eb.bench, &host, "kind", "s3cret");
    let cmd = || {
        eb.cmd_store_elsewhere()
            .env("KUBECTL_REGISTRY_ENGINE", "podman")
            .env("CONTAINER_HOST", format!("unix://{}", socket.display()))
            .env("DOCKER_CONFIG", &credentials)
            .arg("-v")
    };

    let first = eb.push(cmd(), &["myimg:dev", "-o", "json"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    first.assert_stderr(str![[r#"
asking podman engine API at unix://[ROOT]/docker.sock (CONTAINER_HOST) for myimg:dev
podman engine API at unix://[ROOT]/docker.sock (CONTAINER_HOST) has myimg:dev (image sha256:[DIGEST])
not reading podman's store: the store at [ROOT]/empty-store (CONTAINERS_STORAGE_CONF: [ROOT]/empty-storage.conf) does not hold image sha256:[DIGEST]
podman pushes myimg:dev to 127.0.0.1:[PORT]/myimg:dev from its own store
pushed 3 blobs (1.7 MB), 0 blobs already there, in [ELAPSED]s

"#]]);
    assert!(!first.stderr.contains("s3cret"), "{}", first.stderr);
    let calls = eb.take_calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert!(
        calls[0].starts_with("podman push --quiet --digestfile ")
            && calls[0].ends_with(&format!(" --tls-verify=false {id} {host}/myimg:dev")),
        "{calls:?}"
    );
    let (bytes, digest) = eb.bench.landed("myimg:dev");
    let manifest: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        manifest["config"]["digest"],
        format!("sha256:{id}").as_str()
    );
    let report = first.json();
    let reference = format!("{RUNTIME_HOST}/myimg:dev@{digest}");
    assert_eq!(report["ref"], reference.as_str());
    assert_eq!(report_counts(&report), [3, 0]);
    let node = Node::start(&eb.bench.registry);
    let pulled = |reference: &str| {
        node.pull(reference, &["--user", "kind:s3cret"]);
        node.layer_diff_ids(reference.rsplit_once('@').unwrap().1)
    };
    assert_eq!(
        pulled(&reference),
        eb.podman.diff_ids("localhost/myimg:dev")
    );
    eb.assert_nothing_left();

    // Unchanged: only the manifest again, podman not asked.
    let again = eb.push(cmd(), &["myimg:dev"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(eb.take_calls(), Vec::<String>::new());
    assert_eq!(again.stdout, format!("{reference}\n"));

    // Rebuilt on the same base: podman pushes again, and the base is reported as already there.
    let app2 = layer_dir(dirs, "app2", 33, &[500_000]);
    eb.podman
        .build_on("localhost/myimg:dev-base0", "localhost/myimg:dev", &[&app2]);
    let rebuilt = eb.push(cmd(), &["myimg:dev", "-o", "json"]);
    assert_eq!(rebuilt.code, 0, "{}", rebuilt.stderr);
    assert_eq!(eb.take_calls().len(), 1);
    let (_, new_digest) = eb.bench.landed("myimg:dev");
    assert_eq!(report_counts(&rebuilt.json()), [2, 1], "{}", rebuilt.stdout);
    let reference = format!("{RUNTIME_HOST}/myimg:dev@{new_digest}");
    assert_eq!(
        pulled(&reference),
        eb.podman.diff_ids("localhost/myimg:dev")
    );
    eb.assert_nothing_left();
}

#[test]
fn a_digest_file_podman_filled_with_garbage_is_a_clear_error_and_leaves_nothing_here() {
    let eb = EngineBench::new();
    let dirs = eb.podman.dir();
    let layer = layer_dir(dirs, "layer", 42, &[300_000]);
    eb.podman.build("localhost/myimg:dev", &[&layer]);
    let socket = eb.podman.socket_path();
    let _service = eb.podman.serve(&format!("unix://{}", socket.display()));
    // The real podman pushes; then its --digestfile is overwritten with GARBAGE's contents.
    eb.script(
        "podman",
        "for arg; do [ \"$previous\" = --digestfile ] && file=$arg; previous=$arg; done\n\
         /usr/bin/podman \"$@\"; status=$?\n\
         cat \"$GARBAGE\" > \"$file\"\n\
         exit $status",
    );
    let garbage = eb.bench.path("garbage");
    let push = || {
        eb.push(
            eb.cmd_store_elsewhere()
                .env("KUBECTL_REGISTRY_ENGINE", "podman")
                .env("CONTAINER_HOST", format!("unix://{}", socket.display()))
                .env("GARBAGE", &garbage),
            &["myimg:dev"],
        )
    };
    let host = redact(&eb.bench.registry.host());
    let error = format!("error: podman's push of myimg:dev to {host}/myimg:dev");

    // An escape sequence reaches the terminal escaped.
    std::fs::write(&garbage, "sha256:nope\u{1b}[2J\n").unwrap();
    let run = push();
    assert_eq!((run.code, run.stdout.as_str()), (5, ""), "{}", run.stderr);
    assert_eq!(
        run.stderr_lines()[..2],
        [
            error.as_str(),
            "caused by: `podman push` wrote in its --digestfile: \"sha256:nope\\u{1b}[2J\" is not \
             a sha256 digest (expected sha256: followed by 64 lowercase hex digits)",
        ],
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains('\u{1b}'), "{}", run.stderr);
    // The auth file with our credentials and podman's scratch dir are gone.
    eb.assert_nothing_left();

    // A megabyte of it: only its start is read and shown.
    std::fs::write(&garbage, "a".repeat(1 << 20)).unwrap();
    let run = push();
    assert_eq!(run.code, 5, "{}", run.stderr);
    let cause = run.stderr_lines()[1];
    assert_eq!(
        cause,
        format!(
            "caused by: `podman push` wrote in its --digestfile: \"{}\"... (8 more characters) is not a sha256 digest \
             (expected sha256: followed by 64 lowercase hex digits)",
            "a".repeat(120)
        ),
    );
    eb.assert_nothing_left();
}

#[test]
fn podman_that_cannot_reach_the_registry_leaves_the_push_to_its_export() {
    let eb = EngineBench::new();
    let dirs = eb.podman.dir();
    let layer = layer_dir(dirs, "layer", 41, &[800_000]);
    let id = eb.podman.build("localhost/myimg:dev", &[&layer]);
    let socket = eb.podman.socket_path();
    let _service = eb
        .podman
        .serve_isolated(&format!("unix://{}", socket.display()));
    eb.spy("podman", "/usr/bin/podman");

    let run = eb.push(
        eb.cmd_store_elsewhere()
            .env("KUBECTL_REGISTRY_ENGINE", "podman")
            .env("CONTAINER_HOST", format!("unix://{}", socket.display()))
            .arg("-v"),
        &["myimg:dev"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    run.assert_stderr(str![[r#"
asking podman engine API at unix://[ROOT]/docker.sock (CONTAINER_HOST) for myimg:dev
podman engine API at unix://[ROOT]/docker.sock (CONTAINER_HOST) has myimg:dev (image sha256:[DIGEST])
not reading podman's store: the store at [ROOT]/empty-store (CONTAINERS_STORAGE_CONF: [ROOT]/empty-storage.conf) does not hold image sha256:[DIGEST]
podman pushes myimg:dev to 127.0.0.1:[PORT]/myimg:dev from its own store
podman cannot reach 127.0.0.1:[PORT] (`podman push` failed [..]: dial tcp [..]): exporting instead
exporting myimg:dev from podman engine API at unix://[ROOT]/docker.sock (CONTAINER_HOST)
pushed 2 blobs (802.6 KB), 0 blobs already there, in [ELAPSED]s

"#]]);
    let (bytes, digest) = eb.bench.landed("myimg:dev");
    let manifest: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        manifest["config"]["digest"],
        format!("sha256:{id}").as_str()
    );
    assert_eq!(run.stdout, format!("{RUNTIME_HOST}/myimg:dev@{digest}\n"));
    eb.assert_nothing_left();
}

// The docker CLI, when DOCKER_HOST is not a socket we can speak to

#[test]
fn the_docker_cli_answers_when_docker_host_is_tcp() {
    let eb = EngineBench::new();
    let dirs = eb.podman.dir();
    let base = layer_dir(dirs, "base", 21, &[1_400_000]);
    let app = layer_dir(dirs, "app", 22, &[300_000]);
    let id = eb.podman.build("localhost/myimg:dev", &[&base, &app]);
    let address = format!(
        "tcp://127.0.0.1:{}",
        crate::support::apiserver::unused_port()
    );
    let _service = eb.podman.serve(&address);
    let docker = crate::support::standins::find_on_path("docker")
        .expect("the docker CLI (scripts/install-test-deps)");
    eb.spy("docker", docker.to_str().unwrap());

    let run = eb.push(
        eb.cmd_store_elsewhere()
            .env("DOCKER_HOST", &address)
            .arg("-v"),
        &["myimg:dev"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains(&id), "{}", run.stderr);
    run.assert_stderr(str![[r#"
asking the docker CLI for myimg:dev
the docker CLI has myimg:dev (image sha256:[DIGEST])
not reading podman's store: the store at [ROOT]/empty-store (CONTAINERS_STORAGE_CONF: [ROOT]/empty-storage.conf) does not hold image sha256:[DIGEST]; exporting
exporting myimg:dev from the docker CLI
pushed 3 blobs (1.7 MB), 0 blobs already there, in [ELAPSED]s

"#]]);
    assert_eq!(
        eb.take_calls(),
        [
            "docker image inspect myimg:dev",
            "docker image save myimg:dev"
        ]
    );
    let (reference, _) = eb.bench.assert_landed(&run, "myimg", "dev");
    assert_node_pulls_podmans_image(&eb, &reference);
    eb.assert_nothing_left();
}

// docker save's legacy shape, failures, and Ctrl-C

/// A docker stand-in whose inspect prints what docker would for `image`, and whose save runs
/// `save_body` (a shell snippet) for `myimg:dev`; there `$saved` is `image` written as `format`
/// and `$pid_file` the file `engine-pid` in the bench.
fn docker_stand_in(eb: &EngineBench, image: &Image, format: Format, save_body: &str) {
    let saved = eb.bench.path("saved.tar");
    image.write(format, &saved, &["myimg:dev"]);
    let inspect = eb.bench.path("inspect.json");
    let id = image.config_digest();
    std::fs::write(&inspect, image.engine_inspect(&id, "myimg:dev")).unwrap();
    eb.script(
        "docker",
        &format!(
            "echo \"docker $*\" >> '{calls}'\n\
             saved='{saved}'; pid_file='{pid_file}'\n\
             if [ \"$1 $2 $3\" = 'image inspect myimg:dev' ]; then exec cat '{inspect}'; fi\n\
             if [ \"$1 $2 $3\" = 'image save myimg:dev' ]; then {save_body}; fi\n\
             echo \"Error response from daemon: No such image: $3\" >&2\nexit 1",
            calls = eb.calls.display(),
            saved = saved.display(),
            pid_file = eb.bench.path("engine-pid").display(),
            inspect = inspect.display(),
        ),
    );
}

#[test]
fn an_export_that_pads_after_its_tar_ends_is_read_to_its_end() {
    // A tar ends at two zero blocks, but its writer may still be writing padding after them
    // (podman did, under load): stopping to read there kills the engine with SIGPIPE.
    let eb = EngineBench::new();
    let image = Image::with_layers(44, "linux/amd64", &[1_500_000, 50_000]);
    docker_stand_in(
        &eb,
        &image,
        Format::DockerLegacy,
        "cat \"$saved\"; sleep 0.5; exec head -c 10240 /dev/zero",
    );
    let run = eb.push(eb.cmd(), &["myimg:dev"]);
    let (reference, _) = eb.bench.assert_pushed(&run, "myimg", "dev");
    Node::start(&eb.bench.registry).assert_pulls(&reference, &image);
    eb.assert_nothing_left();
}

#[test]
fn a_legacy_docker_save_streams_layers_named_by_v1_ids() {
    let eb = EngineBench::new();
    let image = Image::with_layers(41, "linux/amd64", &[1_500_000, 1_200_000, 50_000]);
    docker_stand_in(&eb, &image, Format::DockerLegacy, "exec cat \"$saved\"");
    let run = eb.push(eb.cmd(), &["myimg:dev"]);
    let (reference, _) = eb.bench.assert_pushed(&run, "myimg", "dev");
    assert_eq!(
        eb.take_calls(),
        [
            "docker image inspect myimg:dev",
            "docker image save myimg:dev"
        ]
    );
    Node::start(&eb.bench.registry).assert_pulls(&reference, &image);
    eb.assert_nothing_left();

    let missing = eb.push(eb.cmd(), &["nothere:dev"]);
    assert_eq!((missing.code, missing.stdout.as_str()), (4, ""));
    missing.assert_stderr(str![[r#"
error: "nothere:dev" is not a file, and no local engine has it:
  docker: Error response from daemon: No such image: nothere:dev
  podman: Error: inspecting object: nothere:dev: image not known
hint: pass an archive (`docker save IMAGE -o image.tar`), `-` for stdin, or an image your engine has

"#]]);
}

#[test]
fn an_export_that_dies_midway_tags_nothing_and_leaves_nothing() {
    let eb = EngineBench::new();
    let image = Image::with_layers(42, "linux/amd64", &[1_500_000, 1_200_000]);
    docker_stand_in(
        &eb,
        &image,
        Format::DockerLegacy,
        "head -c 2000000 \"$saved\"; echo 'write /dev/stdout: disk quota exceeded' >&2; exit 1",
    );
    let run = eb.push(eb.cmd(), &["myimg:dev"]);
    assert_eq!((run.code, run.stdout.as_str()), (4, ""));
    run.assert_stderr(str![[r#"
error: exporting myimg:dev from the docker CLI
caused by: `docker image save` failed (exit status: 1): write /dev/stdout: disk quota exceeded

"#]]);
    eb.bench.assert_not_tagged("myimg", "dev");
    eb.assert_nothing_left();
}

#[test]
fn a_stalled_export_is_stopped_at_the_stall_bound() {
    // Cut inside a layer: docker's is uploaded as it is hashed, podman's (named by its digest)
    // in one PUT that the cut leaves short; either way the stall is what the user is told.
    stalled_export(Format::DockerLegacy, 45);
    stalled_export(Format::Podman, 46);
}

fn stalled_export(format: Format, seed: u64) {
    let eb = EngineBench::new();
    let image = Image::with_layers(seed, "linux/amd64", &[1_500_000, 1_200_000]);
    let engine_pid = eb.bench.path("engine-pid");
    docker_stand_in(
        &eb,
        &image,
        format,
        "echo $$ > \"$pid_file\"; head -c 1600000 \"$saved\"; exec sleep 30",
    );
    let run = eb.push(
        eb.cmd().env("KUBECTL_REGISTRY_STALL_TIMEOUT", "1"),
        &["myimg:dev"],
    );
    assert_eq!((run.code, run.stdout.as_str()), (4, ""));
    assert_eq!(
        run.stderr_lines(),
        [
            "error: exporting myimg:dev from the docker CLI",
            "caused by: no bytes came for 1s (KUBECTL_REGISTRY_STALL_TIMEOUT)",
        ]
    );
    let engine_pid = std::fs::read_to_string(&engine_pid).unwrap();
    assert!(
        !Path::new(&format!("/proc/{}", engine_pid.trim())).exists(),
        "the stalled export outlived the push"
    );
    eb.bench.assert_not_tagged("myimg", "dev");
    eb.assert_nothing_left();
}

#[test]
fn an_engine_whose_inspect_hangs_is_given_up_at_the_request_bound() {
    let eb = EngineBench::new();
    eb.script("docker", "exec sleep 30");
    let run = eb.push(
        eb.cmd()
            .env("KUBECTL_REGISTRY_REQUEST_TIMEOUT", "0.5")
            .env("KUBECTL_REGISTRY_ENGINE", "docker"),
        &["myimg:dev"],
    );
    assert_eq!((run.code, run.stdout.as_str()), (4, ""));
    run.assert_stderr(str![[r#"
error: "myimg:dev" is not a file, and no local engine has it:
  docker: `docker image inspect` did not answer within 0.5s (KUBECTL_REGISTRY_REQUEST_TIMEOUT)
  podman: Error: inspecting object: myimg:dev: image not known
hint: pass an archive (`docker save IMAGE -o image.tar`), `-` for stdin, or an image your engine has

"#]]);

    // The same bound on its API: a socket that takes the request and never answers.
    let socket = eb.bench.path("docker.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let held = std::thread::spawn(move || {
        // Holds the one connection open, unanswered, until the push gives up on it; both
        // waits are bounded so that a push that never comes cannot hang the test.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut connection = loop {
            match listener.accept() {
                Ok((connection, _)) => break connection,
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                Err(err) => panic!("the push never asked the engine API: {err}"),
            }
        };
        connection.set_nonblocking(false).unwrap();
        connection
            .set_read_timeout(Some(std::time::Duration::from_secs(60)))
            .unwrap();
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut connection, &mut sink);
    });
    let run = eb.push(
        eb.cmd()
            .env("KUBECTL_REGISTRY_REQUEST_TIMEOUT", "0.5")
            .env("KUBECTL_REGISTRY_ENGINE", "docker")
            .env("DOCKER_HOST", format!("unix://{}", socket.display())),
        &["myimg:dev"],
    );
    held.join().unwrap();
    assert_eq!((run.code, run.stdout.as_str()), (4, ""));
    run.assert_stderr(str![[r#"
error: "myimg:dev" is not a file, and no local engine has it:
  docker: its API did not answer within 0.5s (KUBECTL_REGISTRY_REQUEST_TIMEOUT)
  podman: Error: inspecting object: myimg:dev: image not known
hint: pass an archive (`docker save IMAGE -o image.tar`), `-` for stdin, or an image your engine has

"#]]);
}

/// An engine bench whose registry sits behind a proxy resetting the first `resets` blob PUTs
/// after 200 KB, and whose docker stand-in exports a two-layer image (its calls logged).
fn behind_resets(resets: usize, seed: u64) -> (EngineBench, FaultProxy) {
    let registry = TestRegistry::start();
    let proxy = FaultProxy::on_uploads(&registry.host(), resets, Action::ResetAfter(200_000));
    let eb = EngineBench::on(Bench::advertising(registry, &proxy.host()));
    let image = Image::with_layers(seed, "linux/amd64", &[1_500_000, 4_000_000]);
    docker_stand_in(&eb, &image, Format::Podman, "exec cat \"$saved\"");
    (eb, proxy)
}

/// How many times the docker stand-in was asked to export since the last look.
fn exports(eb: &EngineBench) -> usize {
    eb.take_calls()
        .iter()
        .filter(|call| call.starts_with("docker image save"))
        .count()
}

/// Retries a test can wait for.
const FAST_RETRIES: [(&str, &str); 2] = [
    ("KUBECTL_REGISTRY_RETRY_DELAY", "0.05"),
    ("KUBECTL_REGISTRY_ATTEMPTS", "3"),
];

#[test]
fn a_reset_mid_layer_is_met_by_exporting_again_and_the_push_lands() {
    let (eb, _proxy) = behind_resets(1, 48);
    let run = eb.push(eb.cmd().envs(FAST_RETRIES).arg("-v"), &["myimg:dev"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let saves = exports(&eb);
    assert_eq!(saves, 2, "{}", run.stderr);
    run.assert_stderr(str![[r#"
asking the docker CLI for myimg:dev
the docker CLI has myimg:dev (image sha256:[DIGEST])
not reading podman's store: the store at [ROOT]/storage (CONTAINERS_STORAGE_CONF: [ROOT]/storage.conf) does not hold image sha256:[DIGEST]; exporting
exporting myimg:dev from the docker CLI
the upload of docker's export failed ([..]); exporting again in [ELAPSED]s (attempt 2 of 3)
exporting myimg:dev from the docker CLI
pushed [..] already there, in [ELAPSED]s

"#]]);
    let (_, digest) = eb.bench.landed("myimg:dev");
    assert!(
        run.stdout.ends_with(&format!("/myimg:dev@{digest}\n")),
        "{}",
        run.stdout
    );
    eb.assert_nothing_left();
}

#[test]
fn a_registry_that_fails_mid_layer_every_attempt_is_the_reason_given_not_the_engine() {
    // The upload breaks, so we stop reading the export; the engine then dies of SIGPIPE, which
    // only followed from it.
    let (eb, _proxy) = behind_resets(10, 47);
    let run = eb.push(eb.cmd().envs(FAST_RETRIES), &["myimg:dev"]);
    assert_eq!((run.code, run.stdout.as_str()), (5, ""));
    assert!(!run.stderr.contains("image save"), "{}", run.stderr);
    run.assert_stderr(str![[r#"
error: pushing blob sha256:[DIGEST]… to 127.0.0.1:[PORT]/myimg
caused by: [..]
caused by: [..]
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/

"#]]);
    let saves = exports(&eb);
    assert_eq!(saves, 3, "one export per attempt");
    eb.bench.assert_not_tagged("myimg", "dev");
    eb.assert_nothing_left();
}

#[test]
fn ctrl_c_during_the_export_stops_the_engine_and_leaves_nothing() {
    stopped_during_the_export("-INT", "SIGINT", 130, 43);
}

#[test]
fn sigterm_during_the_export_stops_the_engine_and_leaves_nothing() {
    stopped_during_the_export("-TERM", "SIGTERM", 143, 48);
}

fn stopped_during_the_export(signal: &str, name: &str, code: i32, seed: u64) {
    let eb = EngineBench::new();
    let image = Image::with_layers(seed, "linux/amd64", &[1_500_000, 1_200_000]);
    let started = eb.bench.path("export-started");
    let engine_pid = eb.bench.path("engine-pid");
    // Like podman: a layer spooled into $TMPDIR, half the archive, then the export stalls
    // (bounded) until it is stopped; `exec` keeps the pid the one we were given.
    docker_stand_in(
        &eb,
        &image,
        Format::DockerLegacy,
        &format!(
            "echo $$ > \"$pid_file\"; head -c 1000000 /dev/zero > \"$TMPDIR/spooled-layer\"; \
             head -c 1600000 \"$saved\"; touch '{started}'; exec sleep 20",
            started = started.display()
        ),
    );
    let child = eb
        .bench
        .cmd()
        .path(format!("{}:/usr/bin:/bin", eb.bin.display()))
        .env("TMPDIR", &eb.tmp)
        .args(["push", "myimg:dev"])
        .spawn();
    wait_for(&started);
    crate::support::run::signal(child.id(), signal);
    let run = finished(child);
    assert_eq!(
        (run.code, run.stdout, run.stderr),
        (
            code,
            String::new(),
            format!(
                "error: interrupted by {name} while pushing to 127.0.0.1:[PORT]/myimg:dev; nothing was tagged\n"
            ),
        )
    );
    let engine_pid = std::fs::read_to_string(&engine_pid).unwrap();
    assert!(
        !Path::new(&format!("/proc/{}", engine_pid.trim())).exists(),
        "the engine's export outlived the push"
    );
    eb.bench.assert_not_tagged("myimg", "dev");
    eb.assert_nothing_left();
}

/// Waits until `path` exists; the bound only stops a hang.
fn wait_for(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
