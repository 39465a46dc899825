//! Every reading and defaulting rule of KEP-1755 hosting, and host validation.

use std::collections::BTreeMap;

use super::*;
use crate::image::reference::{HostProblem, RegistryHost};
use crate::plumbing::error::{Error, ExitCode};

fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn host(raw: &str) -> RegistryHost {
    RegistryHost::parse(raw).unwrap()
}

fn problem(raw: &str) -> HostProblem {
    RegistryHost::parse(raw).unwrap_err().problem
}

fn read(pairs: &[(&str, &str)]) -> (Result<Option<LocalRegistry>, Error>, Vec<Note>) {
    let mut notes = Vec::new();
    let result = registry_from_configmap(&data(pairs), &mut notes);
    (result.map(|read| read.registry), notes)
}

fn read_ok(pairs: &[(&str, &str)]) -> (Option<LocalRegistry>, Vec<Note>) {
    let (result, notes) = read(pairs);
    (result.unwrap(), notes)
}

fn read_err(pairs: &[(&str, &str)]) -> Error {
    read(pairs).0.unwrap_err()
}

fn warnings(notes: &[Note]) -> Vec<&str> {
    notes
        .iter()
        .filter_map(|n| match n {
            Note::Warning(text) => Some(text.as_str()),
            Note::Debug(_) => None,
        })
        .collect()
}

#[test]
fn accepts_names_ipv4_and_bracketed_ipv6_with_or_without_port() {
    for raw in [
        "localhost",
        "localhost:5001",
        "kind-registry:5000",
        "registry.local",
        "my-registry.example.com:443",
        "127.0.0.1:5000",
        "[::1]",
        "[::1]:5000",
        "[fe80::1:2]:65535",
        "a:1",
    ] {
        assert_eq!(host(raw).as_str(), raw);
    }
}

#[test]
fn hostname_and_port_split_at_the_last_colon_outside_brackets() {
    assert_eq!(host("localhost:5001").hostname(), "localhost");
    assert_eq!(host("localhost:5001").port(), Some(5001));
    assert_eq!(host("localhost").port(), None);
    assert_eq!(host("[::1]:5000").hostname(), "[::1]");
    assert_eq!(host("[::1]:5000").port(), Some(5000));
    assert_eq!(host("[::1]").hostname(), "[::1]");
    assert_eq!(host("[::1]").port(), None);
}

#[test]
fn rejects_hostile_hosts_naming_the_problem() {
    assert_eq!(problem(""), HostProblem::Empty);
    assert_eq!(
        problem("localhost:5000/v2"),
        HostProblem::Path("/v2".into())
    );
    assert_eq!(
        problem("localhost:5000?x=1"),
        HostProblem::Query("?x=1".into())
    );
    assert_eq!(
        problem("localhost:5000#top"),
        HostProblem::Fragment("#top".into())
    );
    assert_eq!(problem("user:pass@localhost:5000"), HostProblem::UserInfo);
    assert_eq!(problem("local host:5000"), HostProblem::Whitespace);
    assert_eq!(problem("localhost:5000 "), HostProblem::Whitespace);
    assert_eq!(problem("localhost\n:5000"), HostProblem::ControlCharacter);
    assert_eq!(problem("localhost\x1b[31m"), HostProblem::ControlCharacter);
    assert_eq!(problem("localhost:0"), HostProblem::BadPort("0".into()));
    assert_eq!(
        problem("localhost:65536"),
        HostProblem::BadPort("65536".into())
    );
    assert_eq!(problem("localhost:"), HostProblem::BadPort("".into()));
    assert_eq!(problem("localhost:+80"), HostProblem::BadPort("+80".into()));
    assert_eq!(
        problem("localhost:http"),
        HostProblem::BadPort("http".into())
    );
    assert_eq!(problem("::1"), HostProblem::UnbracketedIpv6);
    assert_eq!(problem("fe80::1:5000"), HostProblem::UnbracketedIpv6);
    assert_eq!(problem("[::1"), HostProblem::BadIpv6("::1".into()));
    assert_eq!(
        problem("[localhost]:5000"),
        HostProblem::BadIpv6("localhost".into())
    );
    assert_eq!(problem("[::1]5000"), HostProblem::BadPort("5000".into()));
    assert_eq!(
        problem("-bad.example"),
        HostProblem::BadName("-bad.example".into())
    );
    assert_eq!(
        problem("bad..example"),
        HostProblem::BadName("bad..example".into())
    );
    assert_eq!(
        problem("under_score"),
        HostProblem::BadName("under_score".into())
    );
    assert_eq!(problem(":5000"), HostProblem::BadName("".into()));
    assert_eq!(
        problem("http://localhost:5000"),
        HostProblem::Scheme("http".into())
    );
}

#[test]
fn a_refused_host_is_shown_with_its_password_redacted_and_non_ascii_escaped() {
    let shown = |raw: &str| {
        RegistryHost::parse_allowing_scheme(raw)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        shown("http://admin:s3cret@registry.local:5000/"),
        r#""http://admin:xxxxx@registry.local:5000/" is not a registry host[:port]: it has user info (…@); registry credentials belong in ~/.docker/config.json"#
    );
    assert_eq!(
        shown("token@registry.local"),
        r#""token@registry.local" is not a registry host[:port]: it has user info (…@); registry credentials belong in ~/.docker/config.json"#
    );
    // A Cyrillic о (U+043E) in place of a Latin o, and a zero-width space.
    assert_eq!(
        shown("l\u{43e}calhost:5000"),
        r#""l\u{43e}calhost:5000" is not a registry host[:port]: "l\u{43e}calhost" is neither a DNS name nor an IP address (it holds characters other than ASCII, shown escaped)"#
    );
    assert!(shown("reg\u{200b}.local").contains(r#""reg\u{200b}.local""#));
}

#[test]
fn bad_host_message_quotes_the_input_and_the_problem() {
    let err = RegistryHost::parse("localhost:5000/v2").unwrap_err();
    assert_eq!(
        err.to_string(),
        r#""localhost:5000/v2" is not a registry host[:port]: it has a path (/v2)"#
    );
}

#[test]
fn strips_an_http_scheme_and_a_trailing_slash_only_when_asked() {
    let (h, scheme) = RegistryHost::parse_allowing_scheme("http://localhost:5000").unwrap();
    assert_eq!(
        (h.as_str(), scheme.as_deref()),
        ("localhost:5000", Some("http"))
    );
    let (h, scheme) = RegistryHost::parse_allowing_scheme("HTTPS://registry.local/").unwrap();
    assert_eq!(
        (h.as_str(), scheme.as_deref()),
        ("registry.local", Some("HTTPS"))
    );
    let (h, scheme) = RegistryHost::parse_allowing_scheme("localhost:5000").unwrap();
    assert_eq!((h.as_str(), scheme), ("localhost:5000", None));
    let err = RegistryHost::parse_allowing_scheme("http://localhost:5000/v2/").unwrap_err();
    assert_eq!(err.raw, "http://localhost:5000/v2/");
    assert_eq!(err.problem, HostProblem::Path("/v2".into()));
    assert_eq!(
        RegistryHost::parse_allowing_scheme("oci://localhost:5000")
            .unwrap_err()
            .problem,
        HostProblem::Scheme("oci".into())
    );
    assert_eq!(
        RegistryHost::parse_allowing_scheme("http://u@localhost")
            .unwrap_err()
            .problem,
        HostProblem::UserInfo
    );
}

#[test]
fn loopback_covers_localhost_names_127_8_and_ipv6_loopback() {
    for raw in [
        "localhost:5000",
        "LocalHost",
        "registry.localhost:5000",
        "127.0.0.1:5000",
        "127.1.2.3",
        "[::1]:5000",
        "[::ffff:127.0.0.1]:5000",
    ] {
        assert!(host(raw).is_loopback(), "{raw} is loopback");
    }
    for raw in [
        "kind-registry:5000",
        "localhost.example.com",
        "notlocalhost",
        "10.0.0.1:5000",
        "[::2]:5000",
        "[::ffff:10.0.0.1]",
    ] {
        assert!(!host(raw).is_loopback(), "{raw} is not loopback");
    }
}

#[test]
fn reads_kinds_script_and_defaults_the_runtime_host_to_host() {
    let (registry, notes) = read_ok(&[(
        "localRegistryHosting.v1",
        "host: \"localhost:5001\"\nhelp: \"https://kind.sigs.k8s.io/docs/user/local-registry/\"\n",
    )]);
    assert_eq!(
        registry,
        Some(LocalRegistry {
            host: host("localhost:5001"),
            host_from_container_runtime: host("localhost:5001"),
            host_from_cluster_network: None,
            service: None,
            host_advertised: true,
            help: Some("https://kind.sigs.k8s.io/docs/user/local-registry/".into()),
            source: RegistrySource::Configmap,
        })
    );
    assert_eq!(notes, vec![]);
}

#[test]
fn reads_every_field_and_ignores_unknown_ones() {
    let (registry, notes) = read_ok(&[(
        "localRegistryHosting.v1",
        "host: localhost:5000\nhostFromContainerRuntime: registry:5000\nhostFromClusterNetwork: kind-registry:5000\nhelp: https://example.com/help\nsomethingNew: {nested: [1, 2]}\n",
    )]);
    let registry = registry.unwrap();
    assert_eq!(registry.host, host("localhost:5000"));
    assert_eq!(registry.host_from_container_runtime, host("registry:5000"));
    assert_eq!(
        registry.host_from_cluster_network,
        Some(host("kind-registry:5000"))
    );
    assert_eq!(registry.help.as_deref(), Some("https://example.com/help"));
    assert_eq!(notes, vec![]);
}

#[test]
fn reads_a_json_value() {
    let (registry, _) = read_ok(&[(
        "localRegistryHosting.v1",
        r#"{"host": "[::1]:5000", "hostFromContainerRuntime": "registry.local:5000"}"#,
    )]);
    let registry = registry.unwrap();
    assert_eq!(registry.host, host("[::1]:5000"));
    assert_eq!(
        registry.host_from_container_runtime,
        host("registry.local:5000")
    );
}

#[test]
fn empty_optional_fields_mean_unset() {
    let (registry, _) = read_ok(&[(
        "localRegistryHosting.v1",
        "host: localhost:5000\nhostFromContainerRuntime: \"\"\nhostFromClusterNetwork: \"\"\nhelp: ~\n",
    )]);
    let registry = registry.unwrap();
    assert_eq!(registry.host_from_container_runtime, host("localhost:5000"));
    assert_eq!(registry.host_from_cluster_network, None);
    assert_eq!(registry.help, None);
}

#[test]
fn a_v2_key_beside_v1_is_ignored_with_a_debug_note() {
    let (registry, notes) = read_ok(&[
        ("localRegistryHosting.v1", "host: localhost:5000\n"),
        ("localRegistryHosting.v2", "endpoints: [{url: oci://x}]\n"),
    ]);
    assert_eq!(registry.unwrap().host, host("localhost:5000"));
    assert_eq!(warnings(&notes), Vec::<&str>::new());
    assert!(matches!(&notes[..], [Note::Debug(text)] if text.contains("localRegistryHosting.v2")));
}

#[test]
fn a_v2_key_alone_means_none_understood_with_a_warning() {
    let (registry, notes) = read_ok(&[("localRegistryHosting.v2", "host: localhost:5000\n")]);
    assert_eq!(registry, None);
    assert_eq!(
        warnings(&notes),
        vec![
            "ConfigMap kube-public/local-registry-hosting only has localRegistryHosting.v2, a version this kubectl-registry does not understand (it reads localRegistryHosting.v1); treating the registry as not advertised"
        ]
    );
}

#[test]
fn no_hosting_key_at_all_is_none_with_a_warning() {
    let (registry, notes) = read_ok(&[("unrelated", "x"), ("localRegistryHosting.vNext", "x")]);
    assert_eq!(registry, None);
    assert_eq!(
        warnings(&notes),
        vec![
            "ConfigMap kube-public/local-registry-hosting has no localRegistryHosting.v1 key; treating the registry as not advertised"
        ]
    );
    assert!(
        notes
            .iter()
            .any(|n| matches!(n, Note::Debug(t) if t.contains("localRegistryHosting.vNext")))
    );
}

#[test]
fn an_empty_value_names_no_host_and_is_none_with_a_warning() {
    for value in ["", "{}", "host: \"\"\n"] {
        let (registry, notes) = read_ok(&[("localRegistryHosting.v1", value)]);
        assert_eq!(registry, None, "{value:?}");
        assert_eq!(
            warnings(&notes),
            vec![
                "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1 names no host; treating the registry as not advertised"
            ]
        );
    }
}

#[test]
fn malformed_yaml_is_an_error_naming_the_configmap_and_key() {
    let err = read_err(&[(
        "localRegistryHosting.v1",
        "host: [localhost:5000\nhelp: x\n",
    )]);
    assert_eq!(
        err.message(),
        "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: the value is not valid YAML"
    );
    assert_eq!(err.exit_code(), ExitCode::Cluster);
    assert_eq!(
        err.causes(),
        vec!["illegal placement of ':' indicator at line 2, column 5"]
    );
}

#[test]
fn a_value_that_is_not_a_mapping_is_an_error() {
    let err = read_err(&[("localRegistryHosting.v1", "localhost:5000")]);
    assert_eq!(
        err.message(),
        "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: the value is a string, not a mapping of host, hostFromContainerRuntime, hostFromClusterNetwork, help"
    );
}

#[test]
fn a_field_of_the_wrong_type_is_blamed_by_name_with_the_help_link() {
    let err = read_err(&[(
        "localRegistryHosting.v1",
        "host: [localhost, 5000]\nhelp: https://example.com/registry\n",
    )]);
    assert_eq!(
        err.message(),
        "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field host is a list, not a string"
    );
    assert_eq!(
        err.hints(),
        vec![
            "this cluster's registry guide: https://example.com/registry (or skip discovery with --registry HOST[:PORT])"
        ]
    );
}

#[test]
fn an_empty_host_with_other_fields_set_is_none_with_a_warning() {
    let (registry, notes) = read_ok(&[(
        "localRegistryHosting.v1",
        "host: \"\"\nhostFromClusterNetwork: kind-registry:5000\nhelp: https://kind.sigs.k8s.io/docs/user/local-registry/\n",
    )]);
    assert_eq!(registry, None);
    assert_eq!(
        warnings(&notes),
        vec![
            "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1 sets hostFromClusterNetwork but no host, which pushing from outside the cluster needs; treating the registry as not advertised"
        ]
    );
}

#[test]
fn microk8s_help_only_configmap_advertises_no_registry_but_keeps_its_guide() {
    let mut notes = Vec::new();
    let read = registry_from_configmap(
        &data(&[(
            "localRegistryHosting.v1",
            "help: \"https://microk8s.io/docs/registry-built-in\"\n",
        )]),
        &mut notes,
    )
    .unwrap();
    assert_eq!(
        read,
        HostingConfigMap {
            registry: None,
            help: Some("https://microk8s.io/docs/registry-built-in".to_string()),
        }
    );
    assert!(warnings(&notes).is_empty(), "{notes:?}");
}

#[test]
fn a_present_malformed_host_is_an_error_with_the_help_link() {
    let err = read_err(&[(
        "localRegistryHosting.v1",
        "host: localhost:5000/path\nhelp: https://kind.sigs.k8s.io/docs/user/local-registry/\n",
    )]);
    assert_eq!(
        err.message(),
        "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field host is not a registry host"
    );
    assert_eq!(
        err.hints(),
        vec![
            "this cluster's registry guide: https://kind.sigs.k8s.io/docs/user/local-registry/ (or skip discovery with --registry HOST[:PORT])"
        ]
    );
}

#[test]
fn a_scheme_in_any_host_field_is_stripped_with_a_warning() {
    let (registry, notes) = read_ok(&[(
        "localRegistryHosting.v1",
        "host: http://localhost:5000\nhostFromClusterNetwork: https://kind-registry:5000/\n",
    )]);
    let registry = registry.unwrap();
    assert_eq!(registry.host, host("localhost:5000"));
    assert_eq!(registry.host_from_container_runtime, host("localhost:5000"));
    assert_eq!(
        registry.host_from_cluster_network,
        Some(host("kind-registry:5000"))
    );
    assert_eq!(
        warnings(&notes),
        vec![
            r#"ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1, field host "http://localhost:5000" has a scheme (http://); using localhost:5000"#,
            r#"ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1, field hostFromClusterNetwork "https://kind-registry:5000/" has a scheme (https://); using kind-registry:5000"#,
        ]
    );
}

#[test]
fn a_hostile_host_field_is_an_error_naming_the_field_with_the_cause() {
    for (field, value, cause) in [
        (
            "host",
            "localhost:5000/v2",
            r#""localhost:5000/v2" is not a registry host[:port]: it has a path (/v2)"#,
        ),
        (
            "host",
            "admin:secret@localhost:5000",
            r#""admin:xxxxx@localhost:5000" is not a registry host[:port]: it has user info (…@); registry credentials belong in ~/.docker/config.json"#,
        ),
        (
            "hostFromContainerRuntime",
            "::1:5000",
            r#""::1:5000" is not a registry host[:port]: an IPv6 address needs brackets, as in [::1]:5000"#,
        ),
        (
            "hostFromClusterNetwork",
            "registry:99999",
            r#""registry:99999" is not a registry host[:port]: port "99999" is not a number from 1 to 65535"#,
        ),
    ] {
        let yaml = if field == "host" {
            format!("host: \"{value}\"\nhelp: https://example.com/h\n")
        } else {
            format!("host: localhost:5000\n{field}: \"{value}\"\nhelp: https://example.com/h\n")
        };
        let err = read_err(&[("localRegistryHosting.v1", &yaml)]);
        assert_eq!(
            err.message(),
            format!(
                "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field {field} is not a registry host"
            )
        );
        assert_eq!(err.causes(), vec![cause.to_string()]);
        assert_eq!(
            err.hints(),
            vec![
                "this cluster's registry guide: https://example.com/h (or skip discovery with --registry HOST[:PORT])"
            ]
        );
    }
}

#[test]
fn a_control_character_in_the_host_is_an_error_and_in_help_drops_help_alone() {
    let err = read_err(&[("localRegistryHosting.v1", "host: \"localhost\\t:5000\"\n")]);
    assert_eq!(
        err.causes(),
        vec![
            r#""localhost\t:5000" is not a registry host[:port]: it contains a control character"#
        ]
    );
    for help in ["\"see \\e[31mthis\"", "[not, text]"] {
        let (registry, notes) = read_ok(&[(
            "localRegistryHosting.v1",
            &format!("host: localhost:5000\nhelp: {help}\n"),
        )]);
        let registry = registry.expect("the rest of the ConfigMap is read");
        assert_eq!(registry.host, host("localhost:5000"));
        assert_eq!(registry.help, None);
        let warnings = warnings(&notes);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with(
                "ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field help "
            ) && warnings[0].ends_with("; ignoring it"),
            "{warnings:?}"
        );
    }
    let (_, notes) = read_ok(&[(
        "localRegistryHosting.v1",
        "host: localhost:5000\nhelp: \"see \\e[31mthis\"\n",
    )]);
    assert_eq!(
        warnings(&notes),
        vec![
            r#"ConfigMap kube-public/local-registry-hosting, key localRegistryHosting.v1: field help "see \u{1b}[31mthis" contains a control character; ignoring it"#
        ]
    );
}

#[test]
fn annotations_prefer_tilt_then_kind_with_the_runtime_name_from_tilt() {
    let mut notes = Vec::new();
    let annotations = data(&[
        ("kind.x-k8s.io/registry", "localhost:5002"),
        ("tilt.dev/registry", "localhost:5001"),
        ("tilt.dev/registry-from-cluster", "registry:5000"),
    ]);
    let registry = registry_from_node_annotations("n1", &annotations, &mut notes)
        .unwrap()
        .unwrap();
    assert_eq!(registry.host, host("localhost:5001"));
    assert_eq!(registry.host_from_container_runtime, host("registry:5000"));
    assert_eq!(registry.source, RegistrySource::Annotation);

    let annotations = data(&[("kind.x-k8s.io/registry", "localhost:5002")]);
    let registry = registry_from_node_annotations("n1", &annotations, &mut notes)
        .unwrap()
        .unwrap();
    assert_eq!(registry.host, host("localhost:5002"));
    assert_eq!(registry.host_from_container_runtime, host("localhost:5002"));
    assert_eq!(notes, vec![]);
}

#[test]
fn a_runtime_annotation_alone_names_no_registry() {
    let mut notes = Vec::new();
    let annotations = data(&[("tilt.dev/registry-from-cluster", "registry:5000")]);
    assert_eq!(
        registry_from_node_annotations("n1", &annotations, &mut notes).unwrap(),
        None
    );
    assert!(matches!(&notes[..], [Note::Debug(_)]));
    assert_eq!(
        registry_from_node_annotations("n1", &BTreeMap::new(), &mut notes).unwrap(),
        None
    );
}

#[test]
fn a_bad_annotation_is_an_error_naming_node_and_annotation() {
    let annotations = data(&[("tilt.dev/registry", "localhost:5000/path")]);
    let err = registry_from_node_annotations("kind-control-plane", &annotations, &mut Vec::new())
        .unwrap_err();
    assert_eq!(
        err.message(),
        "node kind-control-plane: annotation tilt.dev/registry is not a registry host"
    );
    assert_eq!(err.exit_code(), ExitCode::Cluster);
}

#[test]
fn microk8s_node_port_is_reached_on_localhost() {
    let registry = registry_from_microk8s_node_port(32000).unwrap();
    assert_eq!(registry.host, host("localhost:32000"));
    assert_eq!(
        registry.host_from_container_runtime,
        host("localhost:32000")
    );
    assert_eq!(registry.source, RegistrySource::Microk8sService);
    assert!(registry_from_microk8s_node_port(0).is_err());
    assert!(registry_from_microk8s_node_port(70000).is_err());
}

#[test]
fn overrides_default_the_runtime_host_and_name_the_flag_in_errors() {
    let mut notes = Vec::new();
    let origin = ("--registry", "--registry-from-runtime");
    let registry = registry_from_override(
        "localhost:5000",
        None,
        RegistrySource::Flag,
        origin,
        &mut notes,
    )
    .unwrap();
    assert_eq!(registry.host_from_container_runtime, host("localhost:5000"));
    let registry = registry_from_override(
        "http://localhost:5000",
        Some("registry:5000"),
        RegistrySource::Env,
        ("KUBECTL_REGISTRY_HOST", "KUBECTL_REGISTRY_RUNTIME_HOST"),
        &mut notes,
    )
    .unwrap();
    assert_eq!(registry.host, host("localhost:5000"));
    assert_eq!(registry.host_from_container_runtime, host("registry:5000"));
    assert_eq!(registry.source, RegistrySource::Env);
    assert_eq!(
        warnings(&notes),
        vec![
            r#"KUBECTL_REGISTRY_HOST "http://localhost:5000" has a scheme (http://); using localhost:5000"#
        ]
    );
    let err = registry_from_override(
        "localhost",
        Some("a b"),
        RegistrySource::Flag,
        origin,
        &mut notes,
    )
    .unwrap_err();
    assert_eq!(
        err.message(),
        r#"--registry-from-runtime "a b" is not a registry host"#
    );
    assert_eq!(err.exit_code(), ExitCode::Usage);
}

#[test]
fn a_registry_is_logged_in_to_by_its_host_then_its_name_in_the_cluster_each_once() {
    let (registry, _) = read_ok(&[(
        "localRegistryHosting.v1",
        "host: \"registry.example:5000\"\nhostFromClusterNetwork: \"registry.dev.svc:5000\"\n",
    )]);
    assert_eq!(
        registry.unwrap().login_names(),
        [host("registry.example:5000"), host("registry.dev.svc:5000")]
    );
    let (registry, _) = read_ok(&[(
        "localRegistryHosting.v1",
        "host: \"registry.dev.svc:5000\"\nhostFromClusterNetwork: \"registry.dev.svc:5000\"\n",
    )]);
    assert_eq!(
        registry.unwrap().login_names(),
        [host("registry.dev.svc:5000")]
    );
}
