//! What a push says when the registry's answer is not the usual one (issue 21): a registry asking
//! for Kerberos (`WWW-Authenticate: Negotiate`) is named as such, not sent to `docker login`; an
//! expired certificate is called expired (with its date), not untrusted, also with --ca-file;
//! credentials saved for `HOST:80` are sent to `--registry HOST`, and the reverse, through a proxy
//! listening on a real port 80 in front of the real registry.

use snapbox::str;
use std::net::TcpListener;

use crate::support::fault_proxy::{Action, FaultProxy, Rule};
use crate::support::fixtures::{Format, Image};
use crate::support::push::{Bench, docker_config};
use crate::support::registry::{RegistryConfig, TestRegistry};

fn archive(bench: &Bench, seed: u64) -> String {
    let path = bench.path("img.tar");
    Image::sample(seed).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    path.to_str().unwrap().to_string()
}

#[test]
fn a_registry_asking_for_kerberos_is_named_not_sent_to_docker_login() {
    let registry = TestRegistry::start();
    // As IIS or a corporate gateway in front of a registry answers: SPNEGO, and NTLM beside it.
    let rules = vec![Rule::new(
        "GET",
        "/v2/",
        usize::MAX,
        Action::Status {
            status: 401,
            headers: vec![
                ("WWW-Authenticate".into(), "Negotiate".into()),
                ("WWW-Authenticate".into(), "NTLM".into()),
                ("Content-Type".into(), "text/html".into()),
            ],
            body: b"<html><body>401 - Unauthorized</body></html>".to_vec(),
        },
    )];
    let proxy = FaultProxy::start(&registry.host(), rules);
    let bench = Bench::advertising(registry, &proxy.host());
    let path = archive(&bench, 131);
    // Even with credentials saved for it: a password is not what it asks for.
    let config = docker_config(&bench, &proxy.host(), "kind", "secret");
    for verbose in [&[][..], &["-v"][..]] {
        let run = bench.run(
            bench
                .cmd()
                .env("DOCKER_CONFIG", &config)
                .args(verbose)
                .args(["push", &path]),
        );
        assert_eq!((run.code, run.stdout.as_str()), (5, ""), "{run:?}");
        run.assert_stderr(str![[r#"
error: reaching the registry 127.0.0.1:[PORT]
caused by: 127.0.0.1:[PORT] asks for Kerberos (SPNEGO) authentication (`WWW-Authenticate: Negotiate`), which kubectl-registry does not speak
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
hint: we speak Basic and Bearer (token) auth: get a username and password or a token for 127.0.0.1:[PORT] from whoever runs it, then run `docker login 127.0.0.1:[PORT]`

"#]]);
        assert!(
            !run.stderr.contains("wrong or missing credentials"),
            "{}",
            run.stderr
        );
        assert!(!run.stderr.contains("secret"), "{}", run.stderr);
    }
    assert!(proxy.seen().iter().all(|seen| seen.authorization.is_none()));
    bench.assert_not_tagged("myimg", "dev");
}

#[test]
fn an_expired_certificate_is_called_expired_even_with_a_ca_file() {
    let registry = TestRegistry::start_with(RegistryConfig {
        tls: true,
        expired_certificate: true,
        ..RegistryConfig::default()
    });
    let ca_file = registry.ca_file();
    let bench = Bench::with_registry(registry);
    let path = archive(&bench, 132);
    let run = bench.push(&[&path, "--ca-file", ca_file.to_str().unwrap()]);
    assert_eq!((run.code, run.stdout.as_str()), (5, ""), "{run:?}");
    run.assert_stderr(str![[r#"
error: reaching the registry 127.0.0.1:[PORT]
caused by: the TLS certificate of 127.0.0.1:[PORT] expired on 2020-01-02 00:00:00 UTC
caused by: invalid peer certificate: certificate expired: verification time [..] (UNIX), but certificate is not valid after 1577923200 ([..] seconds ago)
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/
hint: renew the registry's certificate (whoever runs 127.0.0.1:[PORT] can); check this machine's clock too: the --ca-file given is not the problem

"#]]);
    assert!(!run.stderr.contains("not trusted"), "{}", run.stderr);
    assert!(!run.stderr.contains("pass --ca-file"), "{}", run.stderr);
}

/// A listener on port 80 of a loopback address of our own (127.0.0.0/8 is all loopback), so
/// that tests running at once do not meet there.
fn port_80() -> (TcpListener, String) {
    let pid = std::process::id();
    for n in 0..200u32 {
        let address = format!("127.{}.{}.{}", 100 + pid % 150, (pid / 150 + n) % 250, 80);
        if let Ok(listener) = TcpListener::bind((address.as_str(), 80)) {
            return (listener, address);
        }
    }
    panic!("no loopback address has port 80 free");
}

#[test]
fn credentials_saved_for_the_default_port_are_sent_to_the_bare_host_and_back() {
    let registry = TestRegistry::with_basic_auth("kind", "right");
    let upstream = registry.host();
    let (listener, address) = port_80();
    let proxy = FaultProxy::start_on(listener, &upstream, Vec::new());
    let bench = Bench::with_registry(registry);
    let path = archive(&bench, 133);
    for (saved, flag, tag) in [
        (format!("{address}:80"), address.clone(), "one"),
        (address.clone(), format!("{address}:80"), "two"),
        (
            format!("http://{address}"),
            format!("{address}:80"),
            "three",
        ),
    ] {
        let config = docker_config(&bench, &saved, "kind", "right");
        let before = proxy.seen().len();
        let run = bench.run(bench.cmd().env("DOCKER_CONFIG", &config).args([
            "--registry",
            &flag,
            "push",
            &path,
            "--tag",
            &format!("myimg:{tag}"),
        ]));
        assert_eq!(run.code, 0, "saved for {saved}, --registry {flag}: {run:?}");
        assert_eq!(bench.tag_status("myimg", tag), 200, "{run:?}");
        let basic = proxy.seen()[before..]
            .iter()
            .filter(|seen| {
                seen.authorization
                    .as_deref()
                    .is_some_and(|value| value.starts_with("Basic "))
            })
            .count();
        assert!(
            basic > 0,
            "no credentials went to {flag} (saved for {saved})"
        );
    }
}
