//! A clean environment for the programs the tests run: a private HOME, no colour, and none of
//! the machine's cluster, registry, engine, cache or proxy variables; or a network of their own.

use std::path::Path;
use std::process::Command;

/// Variables a run may keep: where programs are found, and where temporary files go.
const KEPT: [&str; 2] = ["PATH", "TMPDIR"];

/// Scrubs from `cmd`'s environment every variable the tool reads or hands on (the settings'
/// one table: the machine's cluster, registry, engines, cache and proxies), but `PATH` and
/// `TMPDIR`; gives it `home` as HOME; `NO_COLOR` is set.
pub(crate) fn clean_env<'a>(cmd: &'a mut Command, home: &Path) -> &'a mut Command {
    for var in
        kubectl_registry::plumbing::environment::all_names().filter(|name| !KEPT.contains(name))
    {
        cmd.env_remove(var);
    }
    cmd.env("HOME", home).env("NO_COLOR", "1")
}

/// `program`, in a network namespace of its own (`unshare --net`) when `own_network`: as an
/// engine in a VM or a node's runtime, it cannot reach this machine's loopback.
pub(crate) fn command_in(program: &str, own_network: bool) -> Command {
    if own_network {
        let mut command = Command::new("unshare");
        command.args(["--net", program]);
        command
    } else {
        Command::new(program)
    }
}
