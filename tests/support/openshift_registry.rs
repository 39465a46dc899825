//! OpenShift's integrated registry as a client meets it: the real `docker-registry` behind a
//! small auth front on loopback that answers as OpenShift's registry does (no real one is
//! packaged here): 401 with a Bearer challenge whose realm is its own `/openshift/token`; that
//! endpoint takes Basic credentials whose password is a cluster token (any user name) and
//! hands the token back as the registry token; requests bearing it go through to the registry.
#![allow(dead_code)] // each test binary uses its own part of the support code

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use base64::Engine as _;

use super::registry::TestRegistry;

/// Header lines a request may have before it is refused: keeps every loop bounded.
const MAX_HEADERS: usize = 100;
const IDLE: Duration = Duration::from_secs(30);

/// One request to `/openshift/token`, as the front saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequest {
    /// The Basic password (the cluster token offered), or None without Basic credentials.
    pub password: Option<String>,
    pub granted: bool,
}

/// The front and the registry behind it; both stop on Drop.
pub struct OpenshiftRegistry {
    pub registry: TestRegistry,
    port: u16,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    token_requests: Arc<Mutex<Vec<TokenRequest>>>,
    proxied: Arc<Mutex<Vec<String>>>,
}

struct Front {
    backend: u16,
    port: u16,
    accepted: Vec<String>,
    token_requests: Arc<Mutex<Vec<TokenRequest>>>,
    proxied: Arc<Mutex<Vec<String>>>,
}

impl OpenshiftRegistry {
    /// Starts a registry whose token endpoint accepts any of `accepted_tokens`.
    pub fn start(accepted_tokens: &[&str]) -> Self {
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
                    std::thread::spawn(move || {
                        let _ = stream.set_read_timeout(Some(IDLE));
                        let _ = front.serve(&stream);
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
        }
    }

    /// `127.0.0.1:PORT`: the route users push to.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn token_requests(&self) -> Vec<TokenRequest> {
        self.token_requests.lock().expect("token log").clone()
    }

    /// `METHOD /path` of every request let through to the registry.
    pub fn proxied(&self) -> Vec<String> {
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

/// A request's head: the request line and its header lines, as sent.
struct Head {
    request_line: String,
    headers: Vec<(String, String)>,
}

impl Head {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    fn path(&self) -> &str {
        self.request_line.split_whitespace().nth(1).unwrap_or("")
    }
}

impl Front {
    /// One request per connection; the answer always closes it.
    fn serve(&self, stream: &TcpStream) -> std::io::Result<()> {
        let mut client = BufReader::new(stream);
        let head = read_head(&mut client)?;
        let mut out = stream;
        if head.path().starts_with("/openshift/token") {
            copy_body(&head, &mut client, &mut std::io::sink())?;
            return self.token(&head, &mut out);
        }
        let bearer = head
            .header("authorization")
            .and_then(|value| value.strip_prefix("Bearer "));
        if !bearer.is_some_and(|token| self.accepted.iter().any(|t| t == token)) {
            copy_body(&head, &mut client, &mut std::io::sink())?;
            let realm = format!("http://127.0.0.1:{}/openshift/token", self.port);
            return answer(
                &mut out,
                "401 Unauthorized",
                &[("WWW-Authenticate", &format!("Bearer realm=\"{realm}\""))],
                r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required","detail":null}]}"#,
            );
        }
        self.proxied.lock().expect("proxy log").push(format!(
            "{} {}",
            head.request_line.split_whitespace().next().unwrap_or(""),
            head.path().split('?').next().unwrap_or("")
        ));
        self.forward(&head, &mut client, &mut out)
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

    /// Sends the request on to the registry (Host kept, so its Locations name the front) and
    /// streams its answer back.
    fn forward(
        &self,
        head: &Head,
        client: &mut BufReader<&TcpStream>,
        out: &mut impl Write,
    ) -> std::io::Result<()> {
        let backend = TcpStream::connect(("127.0.0.1", self.backend))?;
        backend.set_read_timeout(Some(IDLE))?;
        let mut upstream = &backend;
        let mut text = format!("{}\r\n", head.request_line);
        for (name, value) in &head.headers {
            if !["connection", "authorization", "keep-alive"]
                .contains(&name.to_ascii_lowercase().as_str())
            {
                text.push_str(&format!("{name}: {value}\r\n"));
            }
        }
        text.push_str("Connection: close\r\n\r\n");
        upstream.write_all(text.as_bytes())?;
        copy_body(head, client, &mut upstream)?;
        upstream.flush()?;

        let mut answer_reader = BufReader::new(&backend);
        let answer_head = read_head(&mut answer_reader)?;
        let mut text = format!("{}\r\n", answer_head.request_line);
        for (name, value) in &answer_head.headers {
            if !name.eq_ignore_ascii_case("connection") {
                text.push_str(&format!("{name}: {value}\r\n"));
            }
        }
        text.push_str("Connection: close\r\n\r\n");
        out.write_all(text.as_bytes())?;
        // The registry closes after its answer (we asked it to): copy to the end.
        std::io::copy(&mut answer_reader, out)?;
        out.flush()
    }
}

fn read_head(reader: &mut impl BufRead) -> std::io::Result<Head> {
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut headers = Vec::new();
    for _ in 0..MAX_HEADERS {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            return Ok(Head {
                request_line: request_line.trim_end().to_string(),
                headers,
            });
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    Err(std::io::Error::other("no end to the header block"))
}

/// Copies a request body framed by Content-Length or chunked encoding, framing included.
fn copy_body(head: &Head, from: &mut impl BufRead, to: &mut impl Write) -> std::io::Result<()> {
    let chunked = head
        .header("transfer-encoding")
        .is_some_and(|value| value.to_ascii_lowercase().contains("chunked"));
    if !chunked {
        let length: u64 = head
            .header("content-length")
            .and_then(|value| value.parse().ok())
            .unwrap_or(0);
        let copied = std::io::copy(&mut from.take(length), to)?;
        return if copied == length {
            Ok(())
        } else {
            Err(std::io::Error::other("the body ended early"))
        };
    }
    loop {
        let mut size_line = String::new();
        if from.read_line(&mut size_line)? == 0 {
            return Err(std::io::Error::other("the chunked body ended early"));
        }
        to.write_all(size_line.as_bytes())?;
        let size_text = size_line.trim().split(';').next().unwrap_or("");
        let size = u64::from_str_radix(size_text, 16)
            .map_err(|_| std::io::Error::other("a bad chunk size"))?;
        if size == 0 {
            // Trailers, then the blank line that ends the body.
            for _ in 0..MAX_HEADERS {
                let mut line = String::new();
                if from.read_line(&mut line)? == 0 {
                    return Ok(());
                }
                to.write_all(line.as_bytes())?;
                if line.trim().is_empty() {
                    return Ok(());
                }
            }
            return Err(std::io::Error::other("no end to the trailers"));
        }
        // The chunk and its CRLF.
        let copied = std::io::copy(&mut from.take(size + 2), to)?;
        if copied != size + 2 {
            return Err(std::io::Error::other("a chunk ended early"));
        }
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
