//! The real podman with a private store (vfs, in a temp dir), to write archives as podman does.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use tempfile::TempDir;

pub struct Podman {
    store: TempDir,
}

impl Podman {
    pub fn new() -> Self {
        Self {
            store: tempfile::tempdir().expect("a temp dir for podman's store"),
        }
    }

    /// `podman ARGS` against the private store; panics with podman's words on failure.
    pub fn run(&self, args: &[&str]) -> Output {
        let root = self.store.path().join("storage");
        let runroot = self.store.path().join("run");
        let output = Command::new("podman")
            .arg("--root")
            .arg(&root)
            .arg("--runroot")
            .arg(&runroot)
            .args(["--storage-driver", "vfs", "--events-backend", "none"])
            .args(args)
            .output()
            .expect("running podman (scripts/install-test-deps installs it)");
        assert!(
            output.status.success(),
            "podman {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// `podman load -i ARCHIVE`
    pub fn load(&self, archive: &Path) {
        self.run(&["load", "-q", "-i", archive.to_str().expect("UTF-8 path")]);
    }

    /// `podman save --format FORMAT -o OUT NAME` (`docker-dir`, `oci-dir`, `docker-archive`...)
    pub fn save(&self, format: &str, name: &str, out: &Path) {
        let out = out.to_str().expect("UTF-8 path");
        self.run(&["save", "--format", format, "-o", out, name]);
    }
}
