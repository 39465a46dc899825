//! The stand-in API server's wire: one connection read, routed (controllers, port-forward, watch,
//! objects, pods, discovery, writes) and answered; TLS; GETs of what discovery reads.

use super::*;

pub(super) fn serve_connection(
    stream: impl Read + Write,
    state: &Served,
    requests: &Mutex<Vec<Logged>>,
    raw: Option<&TcpStream>,
) {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return; // the Drop wake-up, or a client that gave up
    }
    let mut content_length = 0usize;
    let mut authorization = None;
    let mut content_type = String::new();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" || header == "\n" {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            continue;
        };
        headers.push((name.trim().to_string(), value.trim().to_string()));
        if name.eq_ignore_ascii_case("content-length") {
            content_length = value.trim().parse().unwrap_or(0);
        } else if name.eq_ignore_ascii_case("authorization") {
            authorization = Some(value.trim().to_string());
        } else if name.eq_ignore_ascii_case("content-type") {
            content_type = value.trim().to_string();
        }
    }
    let mut body = vec![0; content_length];
    let _ = reader.read_exact(&mut body);

    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("");
    let path = target.split('?').next().unwrap_or("").to_string();
    let authorized = match &state.spec.token {
        Some(token) => authorization.as_deref() == Some(format!("Bearer {token}").as_str()),
        None => true,
    };
    requests.lock().expect("request log").push(Logged {
        request: format!("{method} {path}"),
        target: format!("{method} {target}"),
        authorization,
    });

    if authorized
        && let Some(controllers) = &state.spec.controllers
        && controllers.serve(&method, target, (&headers, &body), reader.get_mut())
    {
        return;
    }
    let query = target.split_once('?').map_or("", |(_, query)| query);
    if let (true, Some(raw), Some((namespace, pod))) = (
        authorized,
        raw,
        crate::support::portforward::portforward_path(&path),
    ) {
        let refusal = refusal(
            &state.spec,
            "pods/portforward",
            "create",
            Some(namespace),
            Some(pod),
        );
        let request = crate::support::portforward::Upgrade {
            namespace,
            pod,
            query,
            headers: &headers,
        };
        return crate::support::portforward::serve(&state.spec.extra, raw, request, refusal);
    }
    if authorized
        && method == "GET"
        && path == "/api/v1/namespaces/default/pods"
        && query
            .split('&')
            .any(|pair| pair == "watch=true" || pair == "watch=1")
    {
        return watch_pods(state, query, reader.get_mut());
    }
    let (code, body) = if !authorized {
        (401, status(401, "Unauthorized", "Unauthorized", json!({})))
    } else if let Some(answer) = crate::support::cluster_objects::respond(
        &state.spec.extra,
        (&method, &path, query, &body),
        &|resource, verb, namespace, name| {
            refusal(&state.spec, resource, verb, Some(namespace), name)
        },
    ) {
        answer
    } else if let Some(answer) = respond_for_pods(state, &method, &path, query, &body) {
        answer
    } else if method == "GET" {
        respond(state, &method, &path)
    } else {
        respond_to_write(state, &method, &path, &content_type, &body)
    };
    // A group the server does not serve is a bare mux 404, not a Status.
    let (content_type, body) = match body {
        Value::Null => (
            "text/plain; charset=utf-8",
            "404 page not found\n".to_string(),
        ),
        body => ("application/json", body.to_string()),
    };
    let reason = match code {
        200 => "OK",
        201 => "Created",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        500 => "Internal Server Error",
        _ => "Error",
    };
    let response = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\nCache-Control: no-cache, private\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let stream = reader.get_mut();
    let _ = stream.write_all(response.as_bytes());
    let _ = stream.flush();
}

/// A rustls server config for the PEM chain and key.
pub(crate) fn tls_config(certificate: &Path, key: &Path) -> Arc<rustls::ServerConfig> {
    let chain = CertificateDer::pem_file_iter(certificate)
        .expect("reading the certificate")
        .collect::<Result<Vec<_>, _>>()
        .expect("PEM certificates");
    let key = PrivateKeyDer::from_pem_file(key).expect("reading the key");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .expect("a TLS server config");
    Arc::new(config)
}

/// Routes one GET like the API server: discovery, then the few objects discovery reads.
pub(super) fn respond(state: &Served, method: &str, path: &str) -> (u16, Value) {
    if method != "GET" {
        return method_not_allowed();
    }
    let spec = &state.spec;
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        ["version"] => (200, version()),
        ["api"] => (200, api_versions(state.port)),
        ["apis"] => (200, api_groups(spec.openshift.is_some(), false)),
        ["apis", "config.openshift.io"] if spec.openshift.is_some() => {
            (200, openshift_config_group())
        }
        ["apis", "config.openshift.io", "v1"] if spec.openshift.is_some() => {
            (200, openshift_config_resources())
        }
        ["apis", "config.openshift.io", "v1", "images", name] if spec.openshift.is_some() => {
            let found = (*name == "cluster")
                .then_some(spec.openshift.as_ref())
                .flatten()
                .map(openshift_image_config);
            lookup(spec, "images", "get", None, Some(name), found)
        }
        ["apis", group @ ("apps" | "batch"), "v1", resource] => {
            workload_list(spec, group, resource)
        }
        [
            "apis",
            "apps",
            "v1",
            "namespaces",
            namespace,
            "deployments",
            name,
        ] => {
            let found = spec
                .workloads
                .iter()
                .find(|(resource, object)| {
                    resource == "deployments"
                        && object["metadata"]["name"] == *name
                        && object["metadata"]["namespace"] == *namespace
                })
                .map(|(_, object)| {
                    let mut object = object.clone();
                    object["kind"] = json!("Deployment");
                    object["apiVersion"] = json!("apps/v1");
                    object
                });
            lookup(
                spec,
                "deployments",
                "get",
                Some(namespace),
                Some(name),
                found,
            )
        }
        ["apis", ..] => (404, Value::Null),
        ["api", "v1"] => (200, core_v1_resources()),
        ["api", "v1", "pods"] => workload_list(spec, "", "pods"),
        ["api", "v1", "namespaces", name] => {
            // kubectl asks after a 404 whether the namespace itself exists.
            let exists = ["default", "kube-system", "kube-public", "kube-node-lease"]
                .contains(name)
                || (*name == "container-registry" && spec.microk8s_node_port.is_some());
            lookup(
                spec,
                "namespaces",
                "get",
                None,
                Some(name),
                exists.then(|| namespace(name)),
            )
        }
        ["api", "v1", "namespaces", namespace, "configmaps", name] => {
            let found = (*namespace == HOSTING_NAMESPACE && *name == HOSTING_NAME)
                .then(|| state.store.lock().expect("store").hosting.clone())
                .flatten();
            lookup(
                spec,
                "configmaps",
                "get",
                Some(namespace),
                Some(name),
                found,
            )
        }
        ["api", "v1", "nodes"] => lookup(
            spec,
            "nodes",
            "list",
            None,
            None,
            Some(node_list(&spec.nodes)),
        ),
        ["api", "v1", "nodes", name] => {
            let found = spec.nodes.iter().find(|n| n.name == *name).map(|n| {
                let mut node = node(n);
                node["kind"] = json!("Node");
                node["apiVersion"] = json!("v1");
                node
            });
            lookup(spec, "nodes", "get", None, Some(name), found)
        }
        ["api", "v1", "namespaces", namespace, "services", name] => {
            let found = (*namespace == "container-registry" && *name == "registry")
                .then_some(spec.microk8s_node_port)
                .flatten()
                .map(microk8s_registry_service);
            lookup(spec, "services", "get", Some(namespace), Some(name), found)
        }
        _ => (
            404,
            status(
                404,
                "NotFound",
                "the server could not find the requested resource",
                json!({}),
            ),
        ),
    }
}

/// 403 when the resource is forbidden, else the object or a 404 naming it.
pub(super) fn lookup(
    spec: &ApiServerBuilder,
    resource: &str,
    verb: &str,
    namespace: Option<&str>,
    name: Option<&str>,
    found: Option<Value>,
) -> (u16, Value) {
    if let Some(refusal) = refusal(spec, resource, verb, namespace, name) {
        return refusal;
    }
    let mut details = json!({"kind": resource});
    if let Some(name) = name {
        details["name"] = json!(name);
    }
    if let Some((code, message)) = spec.failing.get(resource) {
        return (*code, status(*code, "InternalError", message, details));
    }
    match found {
        Some(object) => (200, object),
        None => {
            let message = format!("{resource} {:?} not found", name.unwrap_or_default());
            (404, status(404, "NotFound", &message, details))
        }
    }
}
