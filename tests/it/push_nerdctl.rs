//! `kubectl registry push NAME` of a nerdctl image: read from a real containerd's content store
//! over its socket (`CONTAINERD_ADDRESS`, `CONTAINERD_NAMESPACE`), nerdctl not asked; only the
//! blobs the real registry lacks are sent, the manifest byte for byte (containerd's digest);
//! a real containerd pulls what landed. Where containerd has no such image, nerdctl's CLI goes.

use snapbox::str;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::containerd::{Containerd, K8S_NAMESPACE};
use crate::support::fixtures::{self, Format, Image, LayerCompression};
use crate::support::push::{Bench, Node, Outcome, RUNTIME_HOST};
use crate::support::run::redact;
use serde_json::Value;

/// A bench, a containerd holding nerdctl's images, and a `nerdctl` on PATH that logs its calls.
struct NerdctlBench {
    bench: Bench,
    containerd: Containerd,
    bin: PathBuf,
    calls: PathBuf,
}

impl NerdctlBench {
    /// `nerdctl_body`: what the stand-in does after logging its arguments (a shell snippet).
    fn new(nerdctl_body: &str) -> Self {
        let bench = Bench::new();
        let containerd = Containerd::start();
        let bin = bench.path("bin");
        let calls = bench.path("nerdctl-calls");
        std::fs::create_dir(&bin).unwrap();
        let script = bin.join("nerdctl");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho \"nerdctl $*\" >> '{}'\n{nerdctl_body}\n",
                calls.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self {
            bench,
            containerd,
            bin,
            calls,
        }
    }

    /// `ctr images import` of `archive` into the namespace the kubelet's and nerdctl `-n k8s.io`
    /// use, for the host's platform only (as `nerdctl load` does). Not unpacked: a push reads
    /// content only, and re-importing a name lets containerd's GC take the snapshots the old
    /// image held while the new one unpacks onto them ("parent snapshot does not exist").
    fn import(&self, archive: &Path) {
        let out =
            self.containerd
                .ctr(&["images", "import", "--no-unpack", archive.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "ctr import: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn push(&self, namespace: &str, args: &[&str]) -> Outcome {
        self.bench
            .cmd()
            .env("KUBECTL_REGISTRY_ENGINE", "nerdctl")
            .env("CONTAINERD_ADDRESS", self.containerd.socket())
            .env("CONTAINERD_NAMESPACE", namespace)
            .path(format!("{}:/usr/bin:/bin", self.bin.display()))
            .arg("push")
            .args(args)
            .output()
    }

    fn take_calls(&self) -> Vec<String> {
        let calls = std::fs::read_to_string(&self.calls).unwrap_or_default();
        let _ = std::fs::remove_file(&self.calls);
        calls.lines().map(str::to_string).collect()
    }
}

/// A push with `-o json` (and maybe `-v`): exit 0, the report's ref pinned to what landed.
fn pushed(bench: &Bench, run: &Outcome, repo_and_tag: &str) -> (String, [u64; 2]) {
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (bytes, digest) = bench.landed(repo_and_tag);
    let repo = repo_and_tag.split(':').next().unwrap();
    bench.assert_blobs_present(repo, &serde_json::from_slice(&bytes).unwrap());
    let report = run.json();
    let reference = format!("{RUNTIME_HOST}/{repo_and_tag}@{digest}");
    assert_eq!(report["ref"], Value::from(reference.clone()));
    (reference, counts(&report))
}

fn counts(report: &Value) -> [u64; 2] {
    [
        report["blobsPushed"].as_u64().unwrap(),
        report["bytesPushed"].as_u64().unwrap(),
    ]
}

#[test]
fn a_nerdctl_loop_sends_only_what_the_registry_lacks_straight_from_containerd() {
    let nb = NerdctlBench::new("exit 1");
    let base = Image::with_layers(61, "linux/amd64", &[1_500_000, 400_000]);
    let archive = nb.bench.path("v1.tar");
    base.write(
        Format::ContainerdExport(LayerCompression::Gzip),
        &archive,
        &["myimg:dev"],
    );
    nb.import(&archive);

    let first = nb.push(K8S_NAMESPACE, &["myimg:dev", "-o", "json", "-v"]);
    let (reference, sent) = pushed(&nb.bench, &first, "myimg:dev");
    // containerd's manifest, byte for byte: the digest nerdctl shows is the one pushed.
    assert_eq!(
        nb.bench.landed("myimg:dev").0,
        base.manifest(LayerCompression::Gzip)
    );
    assert_eq!(sent[0], 3, "two layers and the config");
    first.assert_stderr(str![[r#"
containerd at unix://[ROOT]/c.sock (namespace k8s.io) has myimg:dev (image sha256:[DIGEST]): nerdctl not asked
reading myimg:dev from containerd at unix://[ROOT]/c.sock (namespace k8s.io)
pushed 3 blobs (1.0 MB), 0 blobs already there, in [ELAPSED]s

"#]]);
    Node::start(&nb.bench.registry).assert_pulls(&reference, &base);

    let again = nb.push(K8S_NAMESPACE, &["myimg:dev", "-o", "json", "-v"]);
    assert_eq!(pushed(&nb.bench, &again, "myimg:dev").1, [0, 0]);
    again.assert_stderr(str![[r#"
containerd at unix://[ROOT]/c.sock (namespace k8s.io) has myimg:dev (image sha256:[DIGEST]): nerdctl not asked
127.0.0.1:[PORT]/myimg:dev already is sha256:[DIGEST]: nothing sent
pushed 0 blobs (0 B), 3 blobs already there, in [ELAPSED]s

"#]]);

    // A rebuild: the same two layers and one more on top, under the same name.
    let rebuilt = Image::with_layers(61, "linux/amd64", &[1_500_000, 400_000, 90_000]);
    assert_eq!(rebuilt.diff_ids()[..2], base.diff_ids()[..]);
    let archive = nb.bench.path("v2.tar");
    rebuilt.write(
        Format::ContainerdExport(LayerCompression::Gzip),
        &archive,
        &["myimg:dev"],
    );
    nb.import(&archive);
    let third = nb.push(K8S_NAMESPACE, &["myimg:dev", "-o", "json"]);
    let (reference, sent) = pushed(&nb.bench, &third, "myimg:dev");
    assert_eq!(
        nb.bench.landed("myimg:dev").0,
        rebuilt.manifest(LayerCompression::Gzip)
    );
    let manifest: Value =
        serde_json::from_slice(&rebuilt.manifest(LayerCompression::Gzip)).unwrap();
    let new_bytes = manifest["layers"][2]["size"].as_u64().unwrap()
        + manifest["config"]["size"].as_u64().unwrap();
    assert_eq!(sent, [2, new_bytes], "only the new layer and config");
    Node::start(&nb.bench.registry).assert_pulls(&reference, &rebuilt);
    assert_eq!(nb.take_calls(), Vec::<String>::new(), "nerdctl was asked");
}

#[test]
fn of_an_index_whose_other_platforms_were_never_pulled_this_platforms_image_is_pushed() {
    let nb = NerdctlBench::new("exit 1");
    let amd64 = Image::sample_for(62, "linux/amd64");
    let arm64 = Image::sample_for(63, "linux/arm64");
    let archive = nb.bench.path("multi.tar");
    fixtures::write_multi_platform(
        &archive,
        "docker.io/library/multi:dev",
        &[&amd64],
        &[&arm64],
        LayerCompression::Zstd,
    );
    nb.import(&archive);
    let run = nb.push(K8S_NAMESPACE, &["multi:dev"]);
    let (reference, _) = nb.bench.assert_pushed(&run, "multi", "dev");
    assert_eq!(
        nb.bench.landed("multi:dev").0,
        amd64.manifest(LayerCompression::Zstd)
    );
    Node::start(&nb.bench.registry).assert_pulls(&reference, &amd64);

    // Both platforms held whole: the index goes as it is, each platform's manifest with it.
    let both = nb.bench.path("both.tar");
    fixtures::write_multi_platform(
        &both,
        "docker.io/library/multi:both",
        &[&amd64, &arm64],
        &[],
        LayerCompression::Zstd,
    );
    let out = nb.containerd.ctr(&[
        "images",
        "import",
        "--all-platforms",
        both.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = nb.push(K8S_NAMESPACE, &["multi:both"]);
    nb.bench.assert_pushed(&run, "multi", "both");
    assert_eq!(
        nb.bench.landed("multi:both").0,
        fixtures::multi_platform_index(&[&amd64, &arm64], &[], LayerCompression::Zstd)
    );
    let arm_manifest = arm64.manifest(LayerCompression::Zstd);
    assert_eq!(
        nb.bench
            .manifest_by_digest("multi", &fixtures::sha256(&arm_manifest)),
        arm_manifest
    );
    assert_eq!(nb.take_calls(), Vec::<String>::new(), "nerdctl was asked");
}

#[test]
fn where_containerd_has_no_such_image_nerdctls_export_goes_and_v_says_why() {
    // The stand-in exports what the real containerd holds, as `nerdctl save` would.
    let nb = NerdctlBench::new("");
    let image = Image::with_layers(64, "linux/amd64", &[1_600_000, 90_000]);
    let archive = nb.bench.path("import.tar");
    image.write(
        Format::ContainerdExport(LayerCompression::Zstd),
        &archive,
        &["myimg:dev"],
    );
    nb.import(&archive);
    let inspect = nb.bench.path("inspect.json");
    let id = fixtures::sha256(&image.manifest(LayerCompression::Zstd));
    std::fs::write(&inspect, image.engine_inspect(&id, "myimg:dev")).unwrap();
    std::fs::write(
        nb.bin.join("nerdctl"),
        format!(
            "#!/bin/sh\necho \"nerdctl $*\" >> '{calls}'\n\
             case \"$1 $2\" in\n\
             'image inspect') exec cat '{inspect}' ;;\n\
             'image save') exec ctr -a '{socket}' -n k8s.io images export - \"docker.io/library/$3\" ;;\n\
             esac\nexit 1\n",
            calls = nb.calls.display(),
            inspect = inspect.display(),
            socket = nb.containerd.socket().display(),
        ),
    )
    .unwrap();
    // nerdctl's default namespace holds nothing here.
    let run = nb.push("default", &["myimg:dev", "-v"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let reference = format!(
        "{RUNTIME_HOST}/myimg:dev@{}",
        nb.bench.landed("myimg:dev").1
    );
    assert_eq!(run.stdout, format!("{reference}\n"));
    assert!(
        run.stderr.contains(&redact(&format!(
            "not reading containerd: containerd at unix://{} (namespace default) has no image docker.io/library/myimg:dev",
            nb.containerd.socket().display()
        ))),
        "{}",
        run.stderr
    );
    // The export's layers go as stored (zstd), under containerd's own manifest.
    assert_eq!(
        nb.bench.landed("myimg:dev").0,
        image.manifest(LayerCompression::Zstd)
    );
    assert_eq!(
        nb.take_calls(),
        [
            "nerdctl image inspect myimg:dev",
            "nerdctl image save myimg:dev"
        ]
    );
    Node::start(&nb.bench.registry).assert_pulls(&reference, &image);

    // Unchanged: nerdctl is asked what the image is, nothing is exported.
    let again = nb.push("default", &["myimg:dev"]);
    assert_eq!((again.code, again.stdout), (0, format!("{reference}\n")));
    assert_eq!(nb.take_calls(), ["nerdctl image inspect myimg:dev"]);
}
