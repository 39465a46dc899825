//! The real CNCF distribution registry (`docker-registry`) for tests: a free loopback port, data in
//! a temp dir, optional htpasswd Basic auth, token auth or TLS; read back what landed; stopped on Drop.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;

use super::token_server::{self, TokenAuth, TokenServer};

/// What the registry is started with.
#[derive(Debug, Clone, Default)]
pub(crate) struct RegistryConfig {
    /// htpasswd Basic auth with this one user.
    pub basic_auth: Option<(String, String)>,
    /// Serve HTTPS with a certificate signed by a CA made for this registry.
    pub tls: bool,
    /// With `tls`: the registry's certificate expired on 2020-01-02 (its CA is still valid).
    pub expired_certificate: bool,
    /// With `tls`: the certificate's subjectAltName (`DNS:registry.dev.svc`), instead of
    /// 127.0.0.1 and localhost; skopeo then reads it back without checking the name.
    pub certificate_names: Option<String>,
    /// Bearer token auth, with tokens from a stand-in token server.
    pub token_auth: Option<TokenAuth>,
    /// Refuse DELETE (distribution's default: `storage.delete.enabled: false`).
    pub deletes_disabled: bool,
    /// `http.host`: the URL the registry believes it is reached at, which it builds the
    /// `Location` of uploads from.
    pub external_url: Option<String>,
}

/// A running registry; killed and its files removed on Drop.
pub(crate) struct TestRegistry {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
    config: RegistryConfig,
    token_server: Option<TokenServer>,
}

/// A plain HTTP answer.
#[derive(Debug)]
pub(crate) struct HttpAnswer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpAnswer {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

impl TestRegistry {
    pub(crate) fn start() -> Self {
        Self::start_with(RegistryConfig::default())
    }

    pub(crate) fn with_basic_auth(user: &str, password: &str) -> Self {
        Self::start_with(RegistryConfig {
            basic_auth: Some((user.to_string(), password.to_string())),
            ..RegistryConfig::default()
        })
    }

    pub(crate) fn with_tls() -> Self {
        Self::start_with(RegistryConfig {
            tls: true,
            ..RegistryConfig::default()
        })
    }

    pub(crate) fn with_token_auth(auth: TokenAuth) -> Self {
        Self::start_with(RegistryConfig {
            token_auth: Some(auth),
            ..RegistryConfig::default()
        })
    }

    pub(crate) fn start_with(config: RegistryConfig) -> Self {
        let dir = tempfile::tempdir().expect("temp dir for the registry");
        let mut extra = String::new();
        if let Some((user, password)) = &config.basic_auth {
            let htpasswd = dir.path().join("htpasswd");
            write_htpasswd(&htpasswd, user, password);
            extra.push_str(&format!(
                "auth: {{htpasswd: {{realm: test-registry, path: {}}}}}\n",
                htpasswd.display()
            ));
        }
        let token_server = config.token_auth.clone().map(|auth| {
            let server = TokenServer::start(dir.path(), auth);
            extra.push_str(&format!(
                "auth: {{token: {{realm: \"{}\", service: {}, issuer: {}, rootcertbundle: {}}}}}\n",
                server.realm(),
                token_server::SERVICE,
                token_server::ISSUER,
                TokenServer::certificate(dir.path()).display()
            ));
            server
        });
        let tls = if config.tls {
            let names = config.certificate_names.as_deref();
            make_certificates_naming(dir.path(), names.unwrap_or(LOOPBACK_NAMES));
            if config.expired_certificate {
                reissue_expired(dir.path());
            }
            format!(
                ", tls: {{certificate: {}, key: {}}}",
                dir.path().join("server.crt").display(),
                dir.path().join("server.key").display()
            )
        } else {
            String::new()
        };
        // Another process may take the free port before the registry binds it: try a few.
        let mut last_log = String::new();
        let deletes = !config.deletes_disabled;
        let external_url = config
            .external_url
            .as_ref()
            .map(|url| format!(", host: \"{url}\""))
            .unwrap_or_default();
        for _ in 0..5 {
            let port = free_port();
            let config_file = dir.path().join("registry.yml");
            std::fs::write(
                &config_file,
                format!(
                    "version: 0.1\n\
                     log: {{level: error, accesslog: {{disabled: true}}}}\n\
                     storage: {{filesystem: {{rootdirectory: {}}}, delete: {{enabled: {deletes}}}}}\n\
                     http: {{addr: 127.0.0.1:{port}{tls}{external_url}}}\n\
                     {extra}",
                    dir.path().join("data").display()
                ),
            )
            .expect("writing the registry config");
            let log_path = dir.path().join("registry.log");
            let log = std::fs::File::create(&log_path).expect("registry log file");
            let child = Command::new("docker-registry")
                .arg("serve")
                .arg(&config_file)
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log file handle"))
                .stderr(log)
                .spawn()
                .expect("starting docker-registry (run scripts/install-test-deps)");
            let mut child = child;
            if wait_until_ready(&mut child, port, &config) {
                return TestRegistry {
                    child,
                    dir,
                    port,
                    config,
                    token_server,
                };
            }
            let _ = child.kill();
            let _ = child.wait();
            last_log = std::fs::read_to_string(&log_path).unwrap_or_default();
        }
        panic!("docker-registry did not start; its log:\n{last_log}");
    }

    /// The registry's config file (`docker-registry garbage-collect` reads it too).
    pub(crate) fn config_file(&self) -> PathBuf {
        self.dir.path().join("registry.yml")
    }

    /// The registry's process id (to kill it in the middle of something).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `127.0.0.1:PORT`.
    pub(crate) fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub(crate) fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// What the token server was asked, in order.
    pub(crate) fn token_requests(&self) -> Vec<token_server::TokenRequest> {
        self.token_server
            .as_ref()
            .expect("a token-auth registry")
            .requests()
    }

    /// The PEM CA that signed a TLS registry's certificate.
    pub(crate) fn ca_file(&self) -> PathBuf {
        assert!(self.config.tls, "only a TLS registry has a CA");
        self.dir.path().join("certs/ca.crt")
    }

    /// A plain HTTP request without a body, with the registry's own credentials when it has auth.
    pub(crate) fn request(&self, method: &str, path: &str) -> HttpAnswer {
        self.request_with(method, path, &[])
    }

    /// Like [`Self::request`], with extra headers (`Accept` for OCI manifests).
    pub(crate) fn request_with(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
    ) -> HttpAnswer {
        assert!(
            !self.config.tls,
            "raw HTTP requests only for plain-HTTP registries"
        );
        raw_request(self.port, &self.config, method, path, headers)
    }

    /// Like [`Self::request_with`], sending `body` (a manifest PUT, say).
    pub(crate) fn request_with_body(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> HttpAnswer {
        assert!(
            !self.config.tls,
            "raw HTTP requests only for plain-HTTP registries"
        );
        try_raw_request(self.port, &self.config, method, path, headers, body)
            .expect("talking to the registry")
    }

    /// A way to write to this registry from another thread (a plain-HTTP one, no auth): a
    /// request with a body, its status.
    pub(crate) fn writer(&self) -> impl Fn(&str, &str, &[(&str, &str)], &[u8]) -> u16 + use<> {
        let (port, config) = (self.port, self.config.clone());
        move |method, path, headers, body| {
            try_raw_request(port, &config, method, path, headers, body)
                .expect("talking to the registry")
                .status
        }
    }

    pub(crate) fn get(&self, path: &str) -> HttpAnswer {
        self.request("GET", path)
    }

    /// The HTTP status of `HEAD /v2/<repo>/blobs/<digest>`.
    pub(crate) fn blob_status(&self, repo: &str, digest: &str) -> u16 {
        self.request("HEAD", &format!("/v2/{repo}/blobs/{digest}"))
            .status
    }

    /// The registry's own `tags/list` of `repo`, sorted (empty when it has no such repository).
    pub(crate) fn tags(&self, repo: &str) -> Vec<String> {
        let answer = self.get(&format!("/v2/{repo}/tags/list"));
        let listed: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_default();
        let mut tags: Vec<String> = listed["tags"]
            .as_array()
            .map(|tags| {
                tags.iter()
                    .filter_map(|t| t.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        tags.sort();
        tags
    }

    /// `skopeo copy` of the OCI layout's `tag` (plain HTTP) into `repo:tag`; the manifest digest
    /// skopeo reads back.
    pub(crate) fn skopeo_put_layout(&self, layout: &Path, repo: &str, tag: &str) -> String {
        let output = Command::new("skopeo")
            .args(["copy", "--quiet", "--dest-tls-verify=false"])
            .arg(format!("oci:{}:{tag}", layout.display()))
            .arg(format!("docker://{}/{repo}:{tag}", self.host()))
            .output()
            .expect("running skopeo");
        assert!(
            output.status.success(),
            "skopeo copy: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        crate::support::fixtures::sha256(&self.skopeo_raw_manifest(&format!("{repo}:{tag}")))
    }

    /// `skopeo inspect --raw`: the manifest bytes stored under `repo:tag`, as another client sees them.
    pub(crate) fn skopeo_raw_manifest(&self, repo_and_tag: &str) -> Vec<u8> {
        let mut command = Command::new("skopeo");
        command.args(["inspect", "--raw"]);
        if self.config.tls && self.config.certificate_names.is_none() {
            command.arg(format!(
                "--cert-dir={}",
                self.dir.path().join("certs").display()
            ));
        } else {
            command.arg("--tls-verify=false");
        }
        if let Some((user, password)) = &self.config.basic_auth {
            command.arg(format!("--creds={user}:{password}"));
        }
        if let Some(auth) = &self.config.token_auth {
            command.arg(format!("--creds={}:{}", auth.user, auth.password));
        }
        command.arg(format!("docker://{}/{repo_and_tag}", self.host()));
        let output = command.output().expect("running skopeo");
        assert!(
            output.status.success(),
            "skopeo inspect failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_until_ready(child: &mut Child, port: u16, config: &RegistryConfig) -> bool {
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            if config.tls {
                return true;
            }
            // With auth configured, the answer is a 401 challenge; use no credentials to see it.
            let anonymous = RegistryConfig::default();
            let has_auth = config.basic_auth.is_some() || config.token_auth.is_some();
            let expected = if has_auth { 401 } else { 200 };
            // A connection reset while it starts (or a port taken by another process) is "not yet".
            if try_raw_request(port, &anonymous, "GET", "/v2/", &[], &[])
                .is_ok_and(|answer| answer.status == expected)
            {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn raw_request(
    port: u16,
    config: &RegistryConfig,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> HttpAnswer {
    try_raw_request(port, config, method, path, headers, &[]).expect("talking to the registry")
}

fn try_raw_request(
    port: u16,
    config: &RegistryConfig,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<HttpAnswer> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let authorization = match &config.basic_auth {
        Some((user, password)) => format!(
            "Authorization: Basic {}\r\n",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        ),
        None => String::new(),
    };
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{authorization}{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(body)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    Ok(parse_answer(&raw, method == "HEAD"))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

fn write_htpasswd(path: &Path, user: &str, password: &str) {
    let output = Command::new("htpasswd")
        .args(["-Bbn", user, password])
        .output()
        .expect("running htpasswd (apache2-utils; run scripts/install-test-deps)");
    assert!(output.status.success(), "htpasswd failed");
    std::fs::write(path, output.stdout).expect("writing htpasswd");
}

/// What a test registry's certificate names unless told otherwise.
const LOOPBACK_NAMES: &str = "IP:127.0.0.1,DNS:localhost";

/// A CA, and a server certificate it signs for 127.0.0.1 and localhost, made with openssl.
pub(crate) fn make_certificates(dir: &Path) {
    make_certificates_naming(dir, LOOPBACK_NAMES);
}

/// A CA, and a server certificate it signs with `names` as its subjectAltName.
pub(crate) fn make_certificates_naming(dir: &Path, names: &str) {
    let certs = dir.join("certs");
    std::fs::create_dir_all(&certs).expect("certs dir");
    let run = |args: &[&str]| {
        let output = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("running openssl (run scripts/install-test-deps)");
        assert!(
            output.status.success(),
            "openssl {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    run(&[
        &["req", "-x509"][..],
        &ec[..],
        &[
            "-keyout",
            "ca.key",
            "-out",
            "certs/ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=kubectl-registry test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ][..],
    ]
    .concat());
    run(&[
        &["req"][..],
        &ec[..],
        &[
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ][..],
    ]
    .concat());
    std::fs::write(
        dir.join("server.ext"),
        format!(
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n\
             subjectAltName={names}\n"
        ),
    )
    .expect("writing server.ext");
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "certs/ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "2",
        "-extfile",
        "server.ext",
    ]);
}

/// Signs `server.csr` again with `make_certificates`' CA, valid only from 2020-01-01 to
/// 2020-01-02: `openssl ca`, since `openssl x509` of OpenSSL 3.0 cannot set past dates.
pub(crate) fn reissue_expired(dir: &Path) {
    std::fs::write(
        dir.join("ca.cnf"),
        "[ca]\ndefault_ca = test\n[test]\ndatabase = index.txt\nnew_certs_dir = .\n\
         serial = serial\ndefault_md = sha256\npolicy = any\n[any]\ncommonName = supplied\n",
    )
    .expect("writing ca.cnf");
    std::fs::write(dir.join("index.txt"), "").expect("writing index.txt");
    std::fs::write(dir.join("serial"), "1000\n").expect("writing serial");
    let output = Command::new("openssl")
        .args([
            "ca",
            "-batch",
            "-config",
            "ca.cnf",
            "-in",
            "server.csr",
            "-out",
            "server.crt",
            "-keyfile",
            "ca.key",
            "-cert",
            "certs/ca.crt",
            "-extfile",
            "server.ext",
            "-startdate",
            "20200101000000Z",
            "-enddate",
            "20200102000000Z",
            "-notext",
        ])
        .current_dir(dir)
        .output()
        .expect("running openssl");
    assert!(
        output.status.success(),
        "openssl ca failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn parse_answer(raw: &[u8], head: bool) -> HttpAnswer {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP answer with a header block");
    let head_text = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head_text.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .expect("an HTTP status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let rest = &raw[split + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if head {
        Vec::new()
    } else if chunked {
        decode_chunked(rest)
    } else {
        rest.to_vec()
    };
    HttpAnswer {
        status,
        headers,
        body,
    }
}

fn decode_chunked(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a chunk size line");
        let size_text = String::from_utf8_lossy(&rest[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("0").trim(), 16)
            .expect("a hex chunk size");
        if size == 0 {
            return body;
        }
        let start = line_end + 2;
        body.extend_from_slice(&rest[start..start + size]);
        rest = &rest[start + size + 2..];
    }
}
