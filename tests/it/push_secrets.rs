//! What a push shows when credentials and hosts come from outside (issue 21): a credential
//! helper that fails is reported by its stdout message as docker reports it, never by a stderr
//! that echoes the password; a ConfigMap host with `user:password@` is refused with the password
//! redacted as Go redacts it; a host with a look-alike letter shows that letter escaped. Every
//! check runs with `-v` too, and no secret appears on stdout or stderr.

use crate::support::fixtures::{Format, Image};
use crate::support::push::Bench;
use crate::support::registry::TestRegistry;
use snapbox::str;

const PASSWORD: &str = "hunter2-do-not-show";

fn assert_no_secret(run: &crate::support::push::Outcome) {
    assert!(
        !run.stdout.contains(PASSWORD) && !run.stderr.contains(PASSWORD),
        "{run:?}"
    );
}

#[test]
fn a_failing_helper_shows_its_stdout_reason_and_never_its_stderr() {
    let bench = Bench::with_registry(TestRegistry::with_basic_auth("kind", PASSWORD));
    let path = bench.path("img.tar");
    Image::sample(111).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    let config = bench.path("docker-config");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.json"), r#"{"credsStore": "leaky"}"#).unwrap();
    let bin = bench.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let helper = bin.join("docker-credential-leaky");
    // The docker-credential-helpers way: the reason on stdout, exit 1; and a careless debug line
    // on stderr that echoes what it read from the keychain.
    std::fs::write(
        &helper,
        format!(
            "#!/bin/sh\ncat >/dev/null\necho 'error getting credentials: the keychain is locked'\n\
             echo 'debug: read kind:{PASSWORD} from the keychain' >&2\nexit 1\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&helper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path_var = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    for verbose in [&[][..], &["-v"][..]] {
        let run = bench.run(
            bench
                .cmd()
                .env("DOCKER_CONFIG", &config)
                .env("PATH", &path_var)
                .args(verbose)
                .args(["push", path.to_str().unwrap()]),
        );
        assert_eq!((run.code, run.stdout.as_str()), (5, ""), "{run:?}");
        run.assert_stderr(str![[r#"
error: reaching the registry 127.0.0.1:[PORT]
caused by: getting credentials for 127.0.0.1:[PORT] from the credential helper docker-credential-leaky (credsStore in [ROOT]/docker-config/config.json): docker-credential-leaky failed (exit status: 1): error getting credentials: the keychain is locked
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/

"#]]);
        assert_no_secret(&run);
    }
    bench.assert_not_tagged("myimg", "dev");
}

#[test]
fn a_configmap_host_with_a_password_is_refused_with_the_password_redacted() {
    let registry = TestRegistry::start();
    let host = format!("kind:{PASSWORD}@{}", registry.host());
    let bench = Bench::advertising(registry, &host);
    let path = bench.path("img.tar");
    Image::sample(112).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    for verbose in [&[][..], &["-v"][..]] {
        let run = bench.run(
            bench
                .cmd()
                .args(verbose)
                .args(["push", path.to_str().unwrap()]),
        );
        assert_ne!(run.code, 0, "{run:?}");
        run.assert_stderr(str![[r#"
error: ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field host is not a registry host
caused by: "kind:xxxxx@127.0.0.1:[PORT]" is not a registry host[:port]: it has user info (…@); registry credentials belong in ~/.docker/config.json
hint: this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/ (or skip discovery with --registry HOST[:PORT])

"#]]);
        assert_no_secret(&run);
    }
}

#[test]
fn a_host_with_a_look_alike_letter_shows_it_escaped() {
    let bench = Bench::new();
    let path = bench.path("img.tar");
    Image::sample(113).write(Format::DockerLegacy, &path, &["myimg:dev"]);
    // A Cyrillic і (U+0456) where a Latin i belongs.
    let run = bench.run(bench.cmd().args([
        "--registry",
        "reg\u{456}stry.local:5000",
        "push",
        path.to_str().unwrap(),
    ]));
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains(r#""reg\u{456}stry.local:5000" is not a registry host[:port]"#),
        "{}",
        run.stderr
    );
    run.assert_stderr(str![[r#"
error: --registry "reg\u{456}stry.local:5000" is not a registry host
caused by: "reg\u{456}stry.local:5000" is not a registry host[:port]: "reg\u{456}stry.local" is neither a DNS name nor an IP address (it holds characters other than ASCII, shown escaped)
hint: give host[:port], for example localhost:5001 or [::1]:5001

"#]]);
    assert!(!run.stderr.contains('\u{456}'), "{}", run.stderr);
}
