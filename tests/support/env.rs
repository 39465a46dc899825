//! A clean environment for the programs the tests run: a private HOME, no colour, and none of
//! the machine's cluster, registry, engine, cache or proxy variables.

use std::path::Path;
use std::process::Command;

/// Variables a run may keep: where programs are found, and where temporary files go.
const KEPT: [&str; 2] = ["PATH", "TMPDIR"];

/// Scrubs from `cmd`'s environment every variable the tool reads or hands on (the settings'
/// one table: the machine's cluster, registry, engines, cache and proxies), but `PATH` and
/// `TMPDIR`; gives it `home` as HOME; `NO_COLOR` is set.
pub(crate) fn clean_env<'a>(cmd: &'a mut Command, home: &Path) -> &'a mut Command {
    for var in kubectl_registry::environment::all_names().filter(|name| !KEPT.contains(name)) {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home).env("NO_COLOR", "1")
}
