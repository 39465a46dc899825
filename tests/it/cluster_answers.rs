//! What reading the cluster says when the API server's address answers something else (issue 21):
//! a proxy's HTML login page or a redirect to one is named as a web page (with its title), an
//! answer that never comes is a timeout (not "cannot reach"), and an answer that never ends is
//! cut at the cap with memory bounded. The fault proxy stands between the binary and the
//! stand-in API server, as a corporate proxy or a VPN gateway would.

use snapbox::str;
use std::time::{Duration, Instant};

use crate::support::apiserver::{ApiServer, StandInNode, kubeconfig_yaml};
use crate::support::fault_proxy::{Action, FaultProxy, Rule};
use crate::support::push::hosting_yaml;
use crate::support::run::{Outcome, Run};

const CONFIGMAP: &str = "/api/v1/namespaces/kube-public/configmaps/local-registry-hosting";

/// `kubectl registry info`, the kubeconfig's server being the fault proxy in front of a
/// stand-in API server; with `/usr/bin/time` recording the peak RSS in `rss_file` when given.
fn info_through(rules: Vec<Rule>, rss_file: Option<&std::path::Path>) -> (Outcome, FaultProxy) {
    let server = ApiServer::builder()
        .hosting_v1(&hosting_yaml("127.0.0.1:5001"))
        .node(StandInNode::new("kind-control-plane"))
        .start();
    let upstream = format!("127.0.0.1:{}", server.port());
    let proxy = FaultProxy::start(&upstream, rules);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        kubeconfig_yaml(&format!("http://{}", proxy.host()), "kind-dev", "kind-dev"),
    )
    .unwrap();
    let run = match rss_file {
        Some(rss_file) => Run::plugin_timed(dir.path(), rss_file),
        None => Run::plugin(dir.path()).no_docker_config(),
    };
    let run = run
        .kubeconfig(&kubeconfig)
        .arg("info")
        .timeout(Duration::from_secs(90))
        .output();
    (run, proxy)
}

/// Every `GET /api` answered `status` with `headers` and `body`, by the proxy.
fn api_answers(status: u16, headers: Vec<(String, String)>, body: Vec<u8>) -> Vec<Rule> {
    vec![Rule::new(
        "GET",
        "/api",
        usize::MAX,
        Action::Status {
            status,
            headers,
            body,
        },
    )]
}

const LOGIN_PAGE: &str = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n\
    <title>\n  Sign in \u{2013} Corp Access\n</title></head>\n\
    <body><form action=\"/login\"><input name=\"user\"></form></body></html>\n";

#[test]
fn a_login_page_where_the_api_server_should_be_is_named_as_a_web_page() {
    let (run, _proxy) = info_through(
        api_answers(
            200,
            vec![("Content-Type".into(), "text/html; charset=utf-8".into())],
            LOGIN_PAGE.as_bytes().to_vec(),
        ),
        None,
    );
    assert_eq!((run.code, run.stdout.as_str()), (3, ""));
    run.assert_stderr(str![[r#"
error: reading ConfigMap kube-public/local-registry-hosting: context "kind-dev" (http://127.0.0.1:[PORT]) is not answered by a Kubernetes API server: it answered 200 OK with a web page titled "Sign in – Corp Access", not the Kubernetes API
hint: something else answers at that address (a login page of a proxy or VPN?): log in to it, or fix the server (or proxy-url) of the kubeconfig, then try `kubectl --context kind-dev get nodes`

"#]]
    );
}

#[test]
fn a_redirect_to_a_login_page_is_named_with_where_it_sends_us() {
    let (run, _proxy) = info_through(
        api_answers(
            302,
            vec![
                (
                    "Location".into(),
                    "https://sso.corp.example/login?next=%2Fapi".into(),
                ),
                ("Content-Type".into(), "text/html".into()),
            ],
            b"<html><head><title>Found</title></head></html>".to_vec(),
        ),
        None,
    );
    assert_eq!((run.code, run.stdout.as_str()), (3, ""));
    assert!(
        run.stderr.starts_with(
            "error: reading ConfigMap kube-public/local-registry-hosting: context \"kind-dev\" \
             (http://127.0.0.1:[PORT]) is not answered by a Kubernetes API server: it answered 302 \
             Found with a web page titled \"Found\" sending us to \
             https://sso.corp.example/login?next=%2Fapi, not the Kubernetes API\n"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("cannot reach"), "{}", run.stderr);
}

#[test]
fn an_api_server_that_never_answers_is_a_timeout_not_unreachable() {
    let started = Instant::now();
    let (run, proxy) = info_through(
        vec![Rule::new("GET", CONFIGMAP, 1, Action::StallAfterBody)],
        None,
    );
    let took = started.elapsed();
    assert_eq!((run.code, run.stdout.as_str()), (3, ""));
    run.assert_stderr(str![[r#"
error: reading ConfigMap kube-public/local-registry-hosting: the API server of context "kind-dev" (http://127.0.0.1:[PORT]) did not answer within 15s
hint: the connection was made but no answer came: is the cluster overloaded or stuck? `kubectl --context kind-dev get nodes` shows whether it answers

"#]]
    );
    assert!(took < Duration::from_secs(40), "took {took:?}");
    assert_eq!(proxy.seen_short()[0], format!("GET {CONFIGMAP}"));
}

#[test]
fn an_endless_answer_from_the_api_server_is_cut_at_the_cap_with_memory_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let rss_file = dir.path().join("peak-rss-kib");
    // 8 GiB at most: far past the cap, and past this machine's memory without one.
    let (run, _proxy) = info_through(
        vec![Rule::new("GET", CONFIGMAP, 1, Action::EndlessBody(8 << 30))],
        Some(&rss_file),
    );
    assert_eq!((run.code, run.stdout.as_str()), (3, ""), "{}", run.stderr);
    assert_eq!(
        run.stderr.lines().next(),
        Some(
            "error: reading ConfigMap kube-public/local-registry-hosting: the API server of \
             context \"kind-dev\" (http://127.0.0.1:[PORT]) sent more than 64 MiB; we stopped \
             reading there"
        ),
        "{}",
        run.stderr
    );
    // GNU time says "Command exited with non-zero status 3" first, then the figure.
    let report = std::fs::read_to_string(&rss_file).unwrap();
    let peak_kib: u64 = report.lines().last().unwrap().trim().parse().unwrap();
    eprintln!("peak RSS {peak_kib} KiB");
    assert!(peak_kib < 160 << 10, "peak RSS {peak_kib} KiB");
}
