//! The krew manifest and the release archive, checked the way krew reads them (its
//! pkg/index/validation, cmd/validate-krew-manifest and installer), on `scripts/release`'s real
//! output for the debug binary.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde::Deserialize;
use sha2::{Digest, Sha256};

const DEBUG_BINARY: &str = env!("CARGO_BIN_EXE_kubectl-registry");
const RELEASES: &str = "https://github.com/kubectl-registry/kubectl-registry/releases/download";

// krew decodes manifests strictly (yaml.UnmarshalStrict): unknown fields are errors.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Plugin {
    api_version: String,
    kind: String,
    metadata: Metadata,
    spec: Spec,
}

#[derive(Debug, Clone, Deserialize)]
struct Metadata {
    name: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Spec {
    version: String,
    #[serde(default)]
    homepage: String,
    #[serde(default)]
    short_description: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    caveats: String,
    #[serde(default)]
    platforms: Vec<Platform>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Platform {
    selector: Option<Selector>,
    #[serde(default)]
    uri: String,
    #[serde(default)]
    sha256: String,
    #[serde(default)]
    bin: String,
    #[serde(default)]
    files: Vec<FileOperation>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Selector {
    match_labels: Option<BTreeMap<String, String>>,
    match_expressions: Option<Vec<serde_json::Value>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileOperation {
    from: String,
    to: String,
}

impl Platform {
    fn label(&self, key: &str) -> Option<&str> {
        self.selector
            .as_ref()?
            .match_labels
            .as_ref()?
            .get(key)
            .map(String::as_str)
    }

    fn os_arch(&self) -> (String, String) {
        (
            self.label("os").unwrap_or_default().to_string(),
            self.label("arch").unwrap_or_default().to_string(),
        )
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read_manifest(path: &Path) -> Plugin {
    let text = std::fs::read_to_string(path).unwrap();
    parse_as_krew(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// krew reads manifests with sigs.k8s.io/yaml: go-yaml v2 (YAML 1.1) turns each plain scalar into
/// the type YAML 1.1 resolves it to, then a strict JSON decode refuses a number or boolean where a
/// string belongs. An unquoted run of digits (`sha256: 000...`) is such a number; so are `0o17`,
/// `1e5` and `.inf`, and `yes`/`on` are booleans. Read the same way here: a plain scalar that
/// YAML 1.1 would not read as a string never fills a string field.
fn parse_as_krew(text: &str) -> Result<Plugin, serde_saphyr::Error> {
    let yaml_1_1 = serde_saphyr::options! {
        no_schema: true,
        legacy_octal_numbers: true,
        strict_booleans: false,
    };
    serde_saphyr::from_str_with_options(text, yaml_1_1)
}

/// Every <os, arch> pair krew runs on.
fn krew_platforms() -> Vec<(&'static str, &'static str)> {
    let mut pairs = Vec::new();
    for os in ["linux", "darwin", "windows"] {
        for arch in ["386", "amd64", "arm", "arm64", "ppc64le", "s390x"] {
            pairs.push((os, arch));
        }
    }
    pairs
}

/// krew's rules for a manifest stored as `plugins/<name>.yaml` in an index.
fn validate(name: &str, plugin: &Plugin) -> Result<(), String> {
    if plugin.api_version != "krew.googlecontainertools.github.com/v1alpha2" {
        return Err(format!("unsupported apiVersion {:?}", plugin.api_version));
    }
    if plugin.kind != "Plugin" {
        return Err(format!("kind {:?} is not Plugin", plugin.kind));
    }
    let windows_reserved = ["con", "prn", "aux", "nul", "com1", "lpt1"];
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        || windows_reserved.contains(&name.to_lowercase().as_str())
    {
        return Err(format!("plugin name {name:?} is not allowed"));
    }
    if plugin.metadata.name != name {
        return Err(format!(
            "plugin should be named {name:?}, not {:?}",
            plugin.metadata.name
        ));
    }
    let spec = &plugin.spec;
    if spec.short_description.is_empty() {
        return Err("should have a short description".into());
    }
    if spec.platforms.is_empty() {
        return Err("should have a platform specified".into());
    }
    check_semver(&spec.version)?;
    for (field, text, max) in [
        ("shortDescription", &spec.short_description, 70),
        ("description", &spec.description, 80),
        ("caveats", &spec.caveats, 80),
    ] {
        if let Some(line) = text
            .lines()
            .find(|line| line.len() > max && line.trim().contains(' '))
        {
            return Err(format!(
                "{field} has a line over {max} characters: {line:?}"
            ));
        }
    }
    for (index, platform) in spec.platforms.iter().enumerate() {
        validate_platform(platform).map_err(|err| format!("platforms[{index}]: {err}"))?;
    }
    for (os, arch) in krew_platforms() {
        let matching: Vec<usize> = (0..spec.platforms.len())
            .filter(|&index| spec.platforms[index].os_arch() == (os.into(), arch.into()))
            .collect();
        if matching.len() > 1 {
            return Err(format!(
                "platforms {matching:?} overlap: all select {os}/{arch}"
            ));
        }
    }
    Ok(())
}

fn validate_platform(platform: &Platform) -> Result<(), String> {
    if !platform.uri.starts_with("https://") {
        return Err(format!("uri {:?} is not https", platform.uri));
    }
    let sha = &platform.sha256;
    if sha.len() != 64 || !sha.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')) {
        return Err(format!("sha256 {sha:?} is not 64 lowercase hex digits"));
    }
    if platform.bin.is_empty() {
        return Err("bin has to be set".into());
    }
    if platform.files.is_empty() {
        return Err("can't have a plugin without file operations".into());
    }
    if let Some(file) = platform
        .files
        .iter()
        .find(|file| file.from.is_empty() || file.to.is_empty())
    {
        return Err(format!("file operation {file:?} needs from and to"));
    }
    let Some(selector) = &platform.selector else {
        return Err("nil selector is not supported".into());
    };
    if selector.match_expressions.is_some() {
        return Err("matchExpressions: this check reads matchLabels only".into());
    }
    let labels = selector
        .match_labels
        .as_ref()
        .filter(|labels| !labels.is_empty())
        .ok_or("empty selector is not supported")?;
    if let Some(key) = labels.keys().find(|key| *key != "os" && *key != "arch") {
        return Err(format!("selector key {key:?} not supported"));
    }
    let (os, arch) = platform.os_arch();
    if !krew_platforms().contains(&(os.as_str(), arch.as_str())) {
        return Err(format!(
            "selector {labels:?} matches no platform krew runs on"
        ));
    }
    Ok(())
}

/// krew's installation/semver: a `v`, then strict semantic versioning.
fn check_semver(version: &str) -> Result<(), String> {
    let bad = || Err(format!("version {version:?} is not v<semver>"));
    let Some(rest) = version.strip_prefix('v') else {
        return bad();
    };
    let (rest, build) = rest
        .split_once('+')
        .map_or((rest, None), |(r, b)| (r, Some(b)));
    let (core, pre) = rest
        .split_once('-')
        .map_or((rest, None), |(c, p)| (c, Some(p)));
    let numbers: Vec<&str> = core.split('.').collect();
    let number_ok = |n: &&str| {
        !n.is_empty()
            && n.chars().all(|c| c.is_ascii_digit())
            && (n.len() == 1 || !n.starts_with('0'))
    };
    let idents_ok = |text: Option<&str>| {
        text.is_none_or(|text| {
            text.split('.').all(|id| {
                !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            })
        })
    };
    if numbers.len() != 3 || !numbers.iter().all(number_ok) || !idents_ok(pre) || !idents_ok(build)
    {
        return bad();
    }
    Ok(())
}

/// What krew would put in the plugin's install directory, per `files` (from: archive path,
/// to: directory or new name), given the archive's file names.
fn installed_files(
    platform: &Platform,
    archive_files: &BTreeSet<String>,
) -> Result<BTreeSet<String>, String> {
    let mut installed = BTreeSet::new();
    for file in &platform.files {
        if file.from.contains(['*', '?', '[']) {
            return Err(format!(
                "{:?}: this check reads literal paths only",
                file.from
            ));
        }
        if !archive_files.contains(&file.from) {
            return Err(format!(
                "files.from {:?} is not in the archive {archive_files:?}",
                file.from
            ));
        }
        let base = file.from.rsplit('/').next().unwrap_or(&file.from);
        installed.insert(match file.to.trim_end_matches('/') {
            "." | "" => base.to_string(),
            dir if file.to.ends_with('/') => format!("{dir}/{base}"),
            name => name.to_string(),
        });
    }
    Ok(installed)
}

fn sha256_file(path: &Path) -> String {
    let mut hasher = Sha256::new();
    io::copy(&mut File::open(path).unwrap(), &mut hasher).unwrap();
    hex::encode(hasher.finalize())
}

/// One member of a release archive.
struct Entry {
    name: String,
    regular: bool,
    executable: bool,
    content: Vec<u8>,
}

/// The archive's members in order. gzip does the inflating: flate2 unoptimised (tests build
/// without optimisation) takes seconds for a debug binary.
fn archive_entries(path: &Path) -> Vec<Entry> {
    let mut gunzip = Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut archive = tar::Archive::new(gunzip.stdout.take().unwrap());
    let mut entries = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let mut content = Vec::new();
        entry.read_to_end(&mut content).unwrap();
        entries.push(Entry {
            name: entry.path().unwrap().to_string_lossy().into_owned(),
            regular: entry.header().entry_type() == tar::EntryType::Regular,
            executable: entry.header().mode().unwrap() & 0o111 == 0o111,
            content,
        });
    }
    assert!(
        gunzip.wait().unwrap().success(),
        "gzip -dc {}",
        path.display()
    );
    entries
}

/// The krew platform of the machine running the tests.
fn host_platform() -> (String, String) {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    (os.to_string(), arch.to_string())
}

fn release(args: &[&str]) -> Output {
    Command::new(repo().join("scripts/release"))
        .args(args)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap()
}

/// `scripts/release`: packs `binary` for `platform` (the host's when `None`) into `out_dir`, its
/// manifest entry written to `manifest_out`.
fn pack(
    binary: &str,
    platform: Option<(&str, &str)>,
    out_dir: &Path,
    manifest_out: &Path,
) -> Output {
    let mut args = vec!["--binary", binary];
    if let Some((os, arch)) = platform {
        args.extend(["--os", os, "--arch", arch]);
    }
    args.extend(["--out-dir", out_dir.to_str().unwrap()]);
    args.extend(["--manifest-out", manifest_out.to_str().unwrap()]);
    release(&args)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn platform_for<'p>(plugin: &'p Plugin, os: &str, arch: &str) -> &'p Platform {
    plugin
        .spec
        .platforms
        .iter()
        .find(|platform| platform.os_arch() == (os.into(), arch.into()))
        .unwrap_or_else(|| panic!("no platform {os}/{arch} in {plugin:?}"))
}

#[test]
fn manifest_is_what_krew_accepts_for_this_plugin() {
    let plugin = read_manifest(&repo().join("plugin.yaml"));
    // kubectl runs `kubectl-NAME` for `kubectl NAME`: the manifest name follows the binary.
    let name = env!("CARGO_PKG_NAME").strip_prefix("kubectl-").unwrap();
    validate(name, &plugin).unwrap();

    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(plugin.spec.version, format!("v{version}"));
    assert_eq!(
        plugin.spec.homepage,
        "https://github.com/kubectl-registry/kubectl-registry"
    );
    for needed in [
        "KEP-1755",
        "kind",
        "k3d",
        "minikube",
        "microk8s",
        "kubectl_complete-registry",
    ] {
        assert!(
            plugin.spec.caveats.contains(needed),
            "caveats lack {needed}"
        );
    }
    let mut covered = BTreeSet::new();
    for platform in &plugin.spec.platforms {
        let (os, arch) = platform.os_arch();
        let exe = if os == "windows" {
            "kubectl-registry.exe"
        } else {
            "kubectl-registry"
        };
        assert_eq!(
            platform.uri,
            format!("{RELEASES}/v{version}/kubectl-registry_{version}_{os}_{arch}.tar.gz")
        );
        assert_eq!(platform.bin, exe);
        let archive: BTreeSet<String> = [exe, "LICENSE"].map(String::from).into();
        let installed = installed_files(platform, &archive).unwrap();
        assert!(
            installed.contains(exe) && installed.contains("LICENSE"),
            "{installed:?}"
        );
        covered.insert(format!("{os}/{arch}"));
    }
    assert_eq!(
        covered,
        [
            "darwin/amd64",
            "darwin/arm64",
            "linux/amd64",
            "linux/arm64",
            "windows/amd64"
        ]
        .map(String::from)
        .into()
    );
}

#[test]
fn the_validation_here_rejects_what_krew_rejects() {
    let good = read_manifest(&repo().join("plugin.yaml"));
    type Breakage = Box<dyn Fn(&mut Plugin)>;
    let broken: Vec<(&str, Breakage)> = vec![
        (
            "version without v",
            Box::new(|p| p.spec.version = "0.1.0".into()),
        ),
        (
            "version not semver",
            Box::new(|p| p.spec.version = "v0.1".into()),
        ),
        (
            "leading zero",
            Box::new(|p| p.spec.version = "v0.01.0".into()),
        ),
        (
            "no short description",
            Box::new(|p| p.spec.short_description.clear()),
        ),
        (
            "long caveats line",
            Box::new(|p| p.spec.caveats = "word ".repeat(20)),
        ),
        ("other name", Box::new(|p| p.metadata.name = "reg".into())),
        (
            "plain http",
            Box::new(|p| p.spec.platforms[0].uri = "http://example.com/a.tar.gz".into()),
        ),
        (
            "short sha",
            Box::new(|p| p.spec.platforms[0].sha256 = "abc".into()),
        ),
        (
            "upper-case sha",
            Box::new(|p| p.spec.platforms[0].sha256 = "A".repeat(64)),
        ),
        ("no bin", Box::new(|p| p.spec.platforms[0].bin.clear())),
        ("no files", Box::new(|p| p.spec.platforms[0].files.clear())),
        (
            "no selector",
            Box::new(|p| p.spec.platforms[0].selector = None),
        ),
        ("no platforms", Box::new(|p| p.spec.platforms.clear())),
        (
            "unknown selector key",
            Box::new(|p| {
                if let Some(labels) = p.spec.platforms[0]
                    .selector
                    .as_mut()
                    .and_then(|s| s.match_labels.as_mut())
                {
                    labels.insert("distro".into(), "debian".into());
                }
            }),
        ),
        (
            "overlapping selectors",
            Box::new(|p| {
                let copy = p.spec.platforms[0].clone();
                p.spec.platforms.push(copy);
            }),
        ),
    ];
    validate("registry", &good).unwrap();
    for (what, breaks) in broken {
        let mut plugin = good.clone();
        breaks(&mut plugin);
        assert!(validate("registry", &plugin).is_err(), "accepted: {what}");
    }
    let unknown_field = std::fs::read_to_string(repo().join("plugin.yaml"))
        .unwrap()
        .replace("  homepage:", "  homePage:");
    assert!(parse_as_krew(&unknown_field).is_err());
}

#[test]
fn a_plain_scalar_yaml_1_1_reads_as_a_number_or_boolean_is_refused_where_krew_wants_a_string() {
    let committed = std::fs::read_to_string(repo().join("plugin.yaml")).unwrap();
    let quoted_zeros = format!("\"{}\"", "0".repeat(64));
    assert!(
        committed.contains(&format!("sha256: {quoted_zeros}")),
        "the placeholders must stay quoted"
    );
    parse_as_krew(&committed).unwrap();
    // All digits; digits with one `e` (a float, as any sha256 may be); a YAML 1.1 boolean.
    for plain in [
        "0".repeat(64),
        format!("{}e123", "1".repeat(60)),
        "yes".into(),
    ] {
        let manifest = committed.replacen(&quoted_zeros, &plain, 1);
        assert!(
            parse_as_krew(&manifest).is_err(),
            "accepted sha256: {plain}"
        );
    }
    // A quoted digit run, and hex that only YAML 1.2 could misread, stay strings.
    let hex = format!("a{}", "0".repeat(63));
    parse_as_krew(&committed.replacen(&quoted_zeros, &hex, 1)).unwrap();
}

#[test]
fn release_packs_regular_files_and_records_their_sha256_in_the_manifest_copy() {
    let out = tempfile::tempdir().unwrap();
    let manifest_out = out.path().join("plugin.yaml");
    let repo_manifest_before = std::fs::read(repo().join("plugin.yaml")).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    let (os, arch) = host_platform();
    let archive = out
        .path()
        .join(format!("kubectl-registry_{version}_{os}_{arch}.tar.gz"));
    let pack_host = || pack(DEBUG_BINARY, None, out.path(), &manifest_out);

    let first = pack_host();
    assert!(first.status.success(), "{}", text(&first.stderr));
    let sha = sha256_file(&archive);
    assert_eq!(
        text(&first.stdout),
        format!("{sha}  {}\n", archive.display())
    );
    assert_eq!(
        std::fs::read(repo().join("plugin.yaml")).unwrap(),
        repo_manifest_before,
        "the repo's manifest must stay as it was"
    );

    let entries = archive_entries(&archive);
    let mut expected = vec!["kubectl-registry", "LICENSE"];
    if repo().join("README.md").exists() {
        expected.push("README.md");
    }
    let names: BTreeSet<&str> = entries.iter().map(|entry| entry.name.as_str()).collect();
    assert_eq!(names, expected.iter().copied().collect::<BTreeSet<_>>());
    for entry in &entries {
        assert!(entry.regular, "{} is not a regular file", entry.name);
    }
    let content_of = |name: &str| {
        &entries
            .iter()
            .find(|entry| entry.name == name)
            .unwrap()
            .content
    };
    let binary = entries
        .iter()
        .find(|entry| entry.name == "kubectl-registry")
        .unwrap();
    assert!(binary.executable, "the binary is not executable");
    assert!(
        *content_of("kubectl-registry") == std::fs::read(DEBUG_BINARY).unwrap(),
        "the archive's binary is not the one given with --binary"
    );
    assert!(*content_of("LICENSE") == std::fs::read(repo().join("LICENSE")).unwrap());

    let written = read_manifest(&manifest_out);
    validate("registry", &written).unwrap();
    let platform = platform_for(&written, &os, &arch);
    assert_eq!(platform.sha256, sha);
    assert!(platform.uri.ends_with(&format!(
        "/v{version}/{}",
        archive.file_name().unwrap().to_string_lossy()
    )));
    let archive_files: BTreeSet<String> = names.iter().map(|name| name.to_string()).collect();
    let installed = installed_files(platform, &archive_files).unwrap();
    assert!(
        installed.contains(&platform.bin),
        "bin {} not installed",
        platform.bin
    );
    let original = read_manifest(&repo().join("plugin.yaml"));
    for other in &written.spec.platforms {
        if other.os_arch() != (os.clone(), arch.clone()) {
            let (o, a) = other.os_arch();
            assert_eq!(other.sha256, platform_for(&original, &o, &a).sha256);
        }
    }

    let manifest_after_first = std::fs::read(&manifest_out).unwrap();
    let second = pack_host();
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert_eq!(
        text(&second.stdout),
        text(&first.stdout),
        "same archive again"
    );
    assert_eq!(std::fs::read(&manifest_out).unwrap(), manifest_after_first);
}

#[test]
fn release_for_windows_packs_the_exe_its_manifest_entry_installs() {
    let out = tempfile::tempdir().unwrap();
    let manifest_out = out.path().join("plugin.yaml");
    let output = pack(
        DEBUG_BINARY,
        Some(("windows", "amd64")),
        out.path(),
        &manifest_out,
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let version = env!("CARGO_PKG_VERSION");
    let archive = out
        .path()
        .join(format!("kubectl-registry_{version}_windows_amd64.tar.gz"));
    let written = read_manifest(&manifest_out);
    validate("registry", &written).unwrap();
    let platform = platform_for(&written, "windows", "amd64");
    assert_eq!(platform.sha256, sha256_file(&archive));
    let entries = archive_entries(&archive);
    let names: BTreeSet<String> = entries.iter().map(|entry| entry.name.clone()).collect();
    assert!(names.contains("kubectl-registry.exe"), "{names:?}");
    assert!(entries.iter().all(|entry| entry.regular));
    let installed = installed_files(platform, &names).unwrap();
    assert!(installed.contains(&platform.bin), "{installed:?}");
}

#[test]
fn release_refuses_a_platform_the_manifest_lacks_and_writes_nothing() {
    let out = tempfile::tempdir().unwrap();
    let manifest_out = out.path().join("plugin.yaml");
    let dist = out.path().join("dist");
    let output = pack(DEBUG_BINARY, Some(("plan9", "amd64")), &dist, &manifest_out);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(text(&output.stdout), "");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("has no platform for plan9/amd64"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: its platforms: linux/amd64"),
        "{stderr}"
    );
    assert!(!out.path().join("dist").exists());
    assert!(!manifest_out.exists());
}

#[test]
fn release_refuses_a_host_binary_of_another_version() {
    let out = tempfile::tempdir().unwrap();
    let stale = out.path().join("kubectl-registry");
    std::fs::write(&stale, "#!/bin/sh\necho 'kubectl registry 0.0.1'\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&stale, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let manifest_out = out.path().join("plugin.yaml");
    let dist = out.path().join("dist");
    let output = pack(stale.to_str().unwrap(), None, &dist, &manifest_out);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "is 'kubectl registry 0.0.1' but Cargo.toml says {}",
            env!("CARGO_PKG_VERSION")
        )),
        "{stderr}"
    );
    assert!(!manifest_out.exists());
}

/// `plugin.yaml` with only the platforms named (`os/arch`), as a release of fewer platforms has it.
fn manifest_with_platforms(keep: &[&str]) -> String {
    let text = std::fs::read_to_string(repo().join("plugin.yaml")).unwrap();
    let (head, platforms) = text.split_once("  platforms:\n").unwrap();
    let mut kept = String::new();
    for block in platforms
        .split_inclusive('\n')
        .fold(Vec::<String>::new(), |mut blocks, line| {
            if line.starts_with("  - selector:") || blocks.is_empty() {
                blocks.push(String::new());
            }
            blocks.last_mut().unwrap().push_str(line);
            blocks
        })
    {
        let os = block.lines().find_map(|l| l.trim().strip_prefix("os: "));
        let arch = block.lines().find_map(|l| l.trim().strip_prefix("arch: "));
        if let (Some(os), Some(arch)) = (os, arch)
            && keep.contains(&format!("{os}/{arch}").as_str())
        {
            kept.push_str(&block);
        }
    }
    format!("{head}  platforms:\n{kept}")
}

/// `scripts/release merge` of the archives in `dist` into `merged`, from `manifest` (the
/// repository's plugin.yaml when `None`), as the workflow's last step runs it.
fn merge(dist: &Path, manifest: Option<&Path>, merged: &Path) -> Output {
    let mut args = vec!["merge", "--from", dist.to_str().unwrap()];
    if let Some(manifest) = manifest {
        args.extend(["--manifest", manifest.to_str().unwrap()]);
    }
    args.extend(["--manifest-out", merged.to_str().unwrap()]);
    release(&args)
}

/// Packs a stand-in binary (distinct per platform, so the archives differ) as one release runner
/// of the workflow would, into `dist`.
fn pack_fake_platform(dist: &Path, os: &str, arch: &str) -> PathBuf {
    let binary = dist.parent().unwrap().join(format!("bin-{os}-{arch}"));
    std::fs::write(&binary, format!("built for {os}/{arch}\n")).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let manifest_out = scratch.path().join("plugin.yaml");
    let output = pack(
        binary.to_str().unwrap(),
        Some((os, arch)),
        dist,
        &manifest_out,
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let version = env!("CARGO_PKG_VERSION");
    dist.join(format!("kubectl-registry_{version}_{os}_{arch}.tar.gz"))
}

#[test]
fn merge_writes_each_platforms_archive_sha256_into_the_manifest() {
    let out = tempfile::tempdir().unwrap();
    let dist = out.path().join("dist");
    let linux = pack_fake_platform(&dist, "linux", "arm64");
    let darwin = pack_fake_platform(&dist, "darwin", "amd64");
    let (linux_sha, darwin_sha) = (sha256_file(&linux), sha256_file(&darwin));
    assert_ne!(linux_sha, darwin_sha);
    let manifest = out.path().join("two.yaml");
    std::fs::write(
        &manifest,
        manifest_with_platforms(&["linux/arm64", "darwin/amd64"]),
    )
    .unwrap();
    let merged = out.path().join("plugin.yaml");

    let output = merge(&dist, Some(&manifest), &merged);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        format!("linux/arm64 {linux_sha}\ndarwin/amd64 {darwin_sha}\n")
    );
    let written = read_manifest(&merged);
    validate("registry", &written).unwrap();
    assert_eq!(written.spec.platforms.len(), 2);
    for (os, arch, archive, sha) in [
        ("linux", "arm64", &linux, &linux_sha),
        ("darwin", "amd64", &darwin, &darwin_sha),
    ] {
        let platform = platform_for(&written, os, arch);
        assert_eq!(&platform.sha256, sha);
        let name = archive.file_name().unwrap().to_string_lossy();
        assert_eq!(
            platform.uri,
            format!("{RELEASES}/v{}/{name}", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn merge_publishes_the_platforms_that_were_built_and_leaves_out_the_rest() {
    let out = tempfile::tempdir().unwrap();
    let dist = out.path().join("dist");
    // Not this machine's platform: a fake binary is packed without running it.
    let linux = pack_fake_platform(&dist, "linux", "arm64");
    let darwin = pack_fake_platform(&dist, "darwin", "arm64");
    let merged = out.path().join("plugin.yaml");
    let output = merge(&dist, None, &merged);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let (linux_sha, darwin_sha) = (sha256_file(&linux), sha256_file(&darwin));
    assert_eq!(
        text(&output.stdout),
        format!("linux/arm64 {linux_sha}\ndarwin/arm64 {darwin_sha}\n")
    );
    let stderr = text(&output.stderr);
    let version = env!("CARGO_PKG_VERSION");
    for missing in ["linux_amd64", "darwin_amd64", "windows_amd64"] {
        assert!(
            stderr.contains(&format!(
                "warning: no archive {}/kubectl-registry_{version}_{missing}.tar.gz: its platform is left out of {}",
                dist.display(),
                merged.display()
            )),
            "{stderr}"
        );
    }
    // What krew reads lists exactly the two platforms built, each with its archive's sha256.
    let written = read_manifest(&merged);
    validate("registry", &written).unwrap();
    assert_eq!(written.spec.platforms.len(), 2);
    assert_eq!(platform_for(&written, "linux", "arm64").sha256, linux_sha);
    assert_eq!(platform_for(&written, "darwin", "arm64").sha256, darwin_sha);
}

#[test]
fn merge_refuses_a_release_with_no_platform_built_and_writes_nothing() {
    let out = tempfile::tempdir().unwrap();
    let dist = out.path().join("dist");
    std::fs::create_dir_all(&dist).unwrap();
    let merged = out.path().join("plugin.yaml");
    let output = merge(&dist, None, &merged);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(text(&output.stdout), "");
    let stderr = text(&output.stderr);
    let version = env!("CARGO_PKG_VERSION");
    assert!(stderr.starts_with("error: no platform of "), "{stderr}");
    for missing in [
        "linux_amd64",
        "linux_arm64",
        "darwin_amd64",
        "darwin_arm64",
        "windows_amd64",
    ] {
        assert!(
            stderr.contains(&format!("kubectl-registry_{version}_{missing}.tar.gz")),
            "{stderr}"
        );
    }
    assert!(!merged.exists());
}
