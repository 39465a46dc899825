//! How this binary runs the Windows build: Wine's loader and the `.exe` from the environment
//! `scripts/windows` sets (or by `cmd` with a `%TEMP%` of its own, and its Linux pid found), a
//! path as Windows names it, the prefix's C: drive and user profile.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::run::Run;

/// The Windows build to run; `scripts/windows` sets it.
pub(crate) const EXE_ENV: &str = "KUBECTL_REGISTRY_WINE_EXE";
/// Wine's 64-bit loader (Debian's `wine64` package), unless `WINE` names another.
const LOADER: &str = "/usr/lib/wine/wine64";

fn exe() -> PathBuf {
    let exe = std::env::var_os(EXE_ENV).unwrap_or_else(|| {
        panic!("{EXE_ENV} names no .exe: run scripts/windows, which builds it and runs this binary")
    });
    let exe = PathBuf::from(exe);
    assert!(exe.is_file(), "{} is not a file", exe.display());
    exe
}

fn loader() -> PathBuf {
    std::env::var_os("WINE").map_or_else(|| PathBuf::from(LOADER), PathBuf::from)
}

/// The Windows build under Wine with the Linux tests' clean environment (`home` as HOME, which
/// Windows programs do not read: their home is `%USERPROFILE%`).
pub(crate) fn windows(home: &Path) -> Run {
    Run::program(loader(), home).arg(exe())
}

/// The Linux build of the same sources, with the same clean environment.
pub(crate) fn linux(home: &Path) -> Run {
    Run::plugin(home)
}

/// `path` as a Windows program names it through Wine's `Z:` drive (the whole unix tree), with
/// backslashes: `/tmp/x/img.tar` is `Z:\tmp\x\img.tar`.
pub(crate) fn z_path(path: &Path) -> String {
    let path = path.to_str().expect("a UTF-8 path");
    assert!(path.starts_with('/'), "{path} is not absolute");
    format!("Z:{}", path.replace('/', "\\"))
}

/// The prefix's `C:` drive, on the unix side.
pub(crate) fn c_drive() -> PathBuf {
    let prefix = std::env::var_os("WINEPREFIX").expect("WINEPREFIX: scripts/windows sets it");
    PathBuf::from(prefix).join("drive_c")
}

/// `%USERPROFILE%` as the Windows build sees it (`C:\users\NAME`), and where that is on the unix
/// side: asked of Wine once.
pub(crate) fn user_profile() -> &'static (String, PathBuf) {
    static PROFILE: OnceLock<(String, PathBuf)> = OnceLock::new();
    PROFILE.get_or_init(|| {
        let out = Command::new(loader())
            .args(["cmd", "/c", "echo", "%USERPROFILE%"])
            .output()
            .expect("running cmd under Wine");
        let windows = String::from_utf8(out.stdout)
            .expect("UTF-8")
            .trim()
            .to_string();
        let rest = windows
            .strip_prefix("C:\\")
            .unwrap_or_else(|| panic!("%USERPROFILE% is {windows:?}, not on C:"));
        let unix = c_drive().join(rest.replace('\\', "/"));
        assert!(unix.is_dir(), "{} is not a folder", unix.display());
        (windows, unix)
    })
}

/// A folder on the prefix's `C:` drive for one test, removed on drop; `.1` names it as Windows does.
pub(crate) fn c_folder(name: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::Builder::new()
        .prefix(name)
        .tempdir_in(c_drive())
        .expect("a folder on C:");
    let leaf = dir
        .path()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    (dir, format!("C:\\{leaf}"))
}

/// The Windows build started by `cmd /c` after `set TMP=TEMP_DIR` and `set TEMP=TEMP_DIR`, as a
/// user sets them in a console: Wine gives a program started from Linux the prefix's own
/// (`HKCU\Environment`), whatever the Linux side sets, so this is the way to give one run a
/// spool folder of its own. `args` go on cmd's command line as they are: none may hold a space
/// or a character cmd reads.
pub(crate) fn windows_with_temp(home: &Path, temp_dir: &str, args: &[&str]) -> Run {
    let exe = z_path(&exe());
    let words: Vec<&str> = std::iter::once(exe.as_str())
        .chain(args.iter().copied())
        .collect();
    for word in &words {
        assert!(
            !word.contains(|c: char| c.is_whitespace() || "&|<>^\"%()".contains(c)),
            "{word:?} would need quoting on cmd's command line"
        );
    }
    let line = format!(
        "set TMP={temp_dir}&& set TEMP={temp_dir}&& {}",
        words.join(" ")
    );
    Run::program(loader(), home).args(["cmd", "/c", &line])
}

/// The Linux pid of the process running the Windows build with `marker` on its command line:
/// Wine shows a program's Windows command line as the process's, the `.exe`'s path first
/// (which leaves out `cmd`, whose command line holds the `.exe`'s too).
pub(crate) fn windows_pid(marker: &str) -> Option<u32> {
    let exe = z_path(&exe());
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let line = String::from_utf8_lossy(&line);
        (line.starts_with(&exe) && line.contains(marker)).then_some(pid)
    })
}
