//! OpenShift's integrated registry as a client meets it: the real `docker-registry` behind a
//! small auth front on loopback that answers as OpenShift's registry does (no real one is
//! packaged here): 401 with a Bearer challenge whose realm is its own `/openshift/token`; that
//! endpoint takes Basic credentials whose password is a cluster token (any user name) and
//! hands the token back as the registry token; requests bearing it go through to the registry.
//! It can serve HTTPS, as a route does (or the registry's own serving certificate for its
//! Service's names), answering plain HTTP as Go's servers do; its realm is on the host the
//! request named, as OpenShift's registry builds it.

use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use base64::Engine as _;

use super::apiserver::tls_config;
use super::http1::{Head, copy_body, read_head};
use super::registry::{TestRegistry, make_certificates, make_certificates_naming};

/// Header lines a request may have before it is refused: keeps every loop bounded.
const IDLE: Duration = Duration::from_secs(30);

/// One request to `/openshift/token`, as the front saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TokenRequest {
    /// The Basic password (the cluster token offered), or None without Basic credentials.
    pub password: Option<String>,
    pub granted: bool,
}

/// The front and the registry behind it; both stop on Drop.
pub(crate) struct OpenshiftRegistry {
    pub registry: TestRegistry,
    port: u16,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    token_requests: Arc<Mutex<Vec<TokenRequest>>>,
    proxied: Arc<Mutex<Vec<String>>>,
    /// The CA that signed the route's certificate, when it serves HTTPS.
    ca_file: Option<PathBuf>,
}

struct Front {
    backend: u16,
    port: u16,
    accepted: Vec<String>,
    scheme: &'static str,
    token_requests: Arc<Mutex<Vec<TokenRequest>>>,
    proxied: Arc<Mutex<Vec<String>>>,
}

impl OpenshiftRegistry {
    /// Starts a registry whose token endpoint accepts any of `accepted_tokens`.
    pub(crate) fn start(accepted_tokens: &[&str]) -> Self {
        Self::start_with(accepted_tokens, None, None)
    }

    /// Like [`Self::start`], serving HTTPS with a certificate made in `certs` (as a route
    /// signed by the cluster's ingress CA).
    pub(crate) fn start_tls(accepted_tokens: &[&str], certs: &Path) -> Self {
        Self::start_with(accepted_tokens, Some(certs), None)
    }

    /// Like [`Self::start_tls`], its certificate for `names` (a subjectAltName), as the service
    /// CA signs the registry's own serving certificate for its Service's names.
    pub(crate) fn start_tls_naming(accepted_tokens: &[&str], certs: &Path, names: &str) -> Self {
        Self::start_with(accepted_tokens, Some(certs), Some(names))
    }

    fn start_with(accepted_tokens: &[&str], certs: Option<&Path>, names: Option<&str>) -> Self {
        let tls = certs.map(|dir| {
            match names {
                Some(names) => make_certificates_naming(dir, names),
                None => make_certificates(dir),
            }
            tls_config(&dir.join("server.crt"), &dir.join("server.key"))
        });
        let registry = TestRegistry::start();
        let backend = registry
            .host()
            .rsplit_once(':')
            .and_then(|(_, port)| port.parse().ok())
            .expect("the registry's port");
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
        let port = listener.local_addr().expect("local address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let token_requests = Arc::new(Mutex::new(Vec::new()));
        let proxied = Arc::new(Mutex::new(Vec::new()));
        let front = Arc::new(Front {
            backend,
            port,
            accepted: accepted_tokens.iter().map(|t| t.to_string()).collect(),
            scheme: if tls.is_some() { "https" } else { "http" },
            token_requests: Arc::clone(&token_requests),
            proxied: Arc::clone(&proxied),
        });
        let accept = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let front = Arc::clone(&front);
                    let tls = tls.clone();
                    std::thread::spawn(move || {
                        let _ = stream.set_read_timeout(Some(IDLE));
                        let _ = match tls {
                            None => front.serve(&stream),
                            Some(config) => serve_tls(&front, &stream, config),
                        };
                        let _ = stream.shutdown(Shutdown::Both);
                    });
                }
            })
        };
        Self {
            registry,
            port,
            stop,
            accept: Some(accept),
            token_requests,
            proxied,
            ca_file: certs.map(|dir| dir.join("certs/ca.crt")),
        }
    }

    /// The CA of an HTTPS front.
    pub(crate) fn ca_file(&self) -> PathBuf {
        self.ca_file.clone().expect("an HTTPS front")
    }

    /// `127.0.0.1:PORT`: the route users push to.
    pub(crate) fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub(crate) fn token_requests(&self) -> Vec<TokenRequest> {
        self.token_requests.lock().expect("token log").clone()
    }

    /// `METHOD /path` of every request let through to the registry.
    pub(crate) fn proxied(&self) -> Vec<String> {
        self.proxied.lock().expect("proxy log").clone()
    }
}

impl Drop for OpenshiftRegistry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

impl Front {
    /// One request per connection; the answer always closes it.
    fn serve(&self, stream: impl Read + Write) -> std::io::Result<()> {
        let mut client = BufReader::new(stream);
        let head = read_head(&mut client)?;
        if head.target().starts_with("/openshift/token") {
            copy_body(&head, &mut client, &mut std::io::sink())?;
            return self.token(&head, client.get_mut());
        }
        let bearer = head
            .header("authorization")
            .and_then(|value| value.strip_prefix("Bearer "));
        if !bearer.is_some_and(|token| self.accepted.iter().any(|t| t == token)) {
            copy_body(&head, &mut client, &mut std::io::sink())?;
            // As OpenShift's registry: the realm on the host the request named.
            let own = format!("127.0.0.1:{}", self.port);
            let host = head.header("host").unwrap_or(&own);
            let realm = format!("{}://{host}/openshift/token", self.scheme);
            return answer(
                client.get_mut(),
                "401 Unauthorized",
                &[("WWW-Authenticate", &format!("Bearer realm=\"{realm}\""))],
                r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}"#,
            );
        }
        self.proxied.lock().expect("proxy log").push(format!(
            "{} {}",
            head.start_line.split_whitespace().next().unwrap_or(""),
            head.target().split('?').next().unwrap_or("")
        ));
        self.forward(&head, &mut client)
    }

    /// OpenShift's `/openshift/token`: the Basic password is the token, handed back as is.
    fn token(&self, head: &Head, out: &mut impl Write) -> std::io::Result<()> {
        let password = head
            .header("authorization")
            .and_then(|value| value.strip_prefix("Basic "))
            .and_then(|encoded| {
                base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .ok()
            })
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .and_then(|pair| pair.split_once(':').map(|(_, p)| p.to_string()));
        let granted = password.as_ref().is_some_and(|p| self.accepted.contains(p));
        self.token_requests
            .lock()
            .expect("token log")
            .push(TokenRequest {
                password: password.clone(),
                granted,
            });
        match password.filter(|_| granted) {
            Some(token) => answer(
                out,
                "200 OK",
                &[],
                &serde_json::json!({"token": token}).to_string(),
            ),
            None => answer(
                out,
                "401 Unauthorized",
                &[],
                r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}"#,
            ),
        }
    }

    /// Sends the request on to the registry (Host and scheme kept, so its Locations name the
    /// front) and streams its answer back.
    fn forward<S: Read + Write>(
        &self,
        head: &Head,
        client: &mut BufReader<S>,
    ) -> std::io::Result<()> {
        let backend = TcpStream::connect(("127.0.0.1", self.backend))?;
        backend.set_read_timeout(Some(IDLE))?;
        let mut upstream = &backend;
        let mut text = format!("{}\r\n", head.start_line);
        for (name, value) in &head.headers {
            if ![
                "connection",
                "authorization",
                "keep-alive",
                "x-forwarded-proto",
            ]
            .contains(&name.to_ascii_lowercase().as_str())
            {
                text.push_str(&format!("{name}: {value}\r\n"));
            }
        }
        // As OpenShift's router does for a route it terminates TLS on: the registry then
        // builds its upload Locations on https.
        text.push_str(&format!("X-Forwarded-Proto: {}\r\n", self.scheme));
        text.push_str("Connection: close\r\n\r\n");
        upstream.write_all(text.as_bytes())?;
        copy_body(head, client, &mut upstream)?;
        upstream.flush()?;

        let mut answer_reader = BufReader::new(&backend);
        let answer_head = read_head(&mut answer_reader)?;
        let mut text = format!("{}\r\n", answer_head.start_line);
        for (name, value) in &answer_head.headers {
            if !name.eq_ignore_ascii_case("connection") {
                text.push_str(&format!("{name}: {value}\r\n"));
            }
        }
        text.push_str("Connection: close\r\n\r\n");
        let out = client.get_mut();
        out.write_all(text.as_bytes())?;
        // The registry closes after its answer (we asked it to): copy to the end.
        std::io::copy(&mut answer_reader, out)?;
        out.flush()
    }
}

fn answer(
    out: &mut impl Write,
    status: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<()> {
    let mut text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nDocker-Distribution-Api-Version: registry/2.0\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// TLS when the client speaks it; plain HTTP gets the 400 Go's servers answer it with.
fn serve_tls(
    front: &Front,
    stream: &TcpStream,
    config: Arc<rustls::ServerConfig>,
) -> std::io::Result<()> {
    let mut first = [0u8; 1];
    stream.peek(&mut first)?;
    const TLS_HANDSHAKE: u8 = 0x16;
    if first[0] != TLS_HANDSHAKE {
        let mut out = stream;
        return out.write_all(
            b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n",
        );
    }
    let connection = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut tls = rustls::StreamOwned::new(connection, stream);
    let served = front.serve(&mut tls);
    tls.conn.send_close_notify();
    let _ = tls.flush();
    served
}
