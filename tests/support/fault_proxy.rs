//! A fault-injecting HTTP proxy on loopback, between the plugin and the real registry: per rule it
//! answers a status, cuts the connection after N body bytes, stalls, rewrites the registry's
//! answer, or (in front of an auth-less registry) demands Bearer tokens it hands out itself.
//! One request per connection (it asks the registry to close after answering); every loop is bounded.

use std::io::{BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::http1::{Head, copy_body, read_head};

/// How long the proxy lives at most, whatever the test does: its loops end by then.
const LIFETIME: Duration = Duration::from_secs(600);

/// The registry's answer as a rewrite rule sees it.
#[derive(Debug, Clone)]
pub(crate) struct Answer {
    pub status: u16,
    pub reason: String,
    pub headers: Vec<(String, String)>,
}

/// Rewrites the registry's answer head in place.
pub(crate) type Rewriter = Arc<dyn Fn(&mut Answer) + Send + Sync>;

/// What a rule does to a request it matches.
#[derive(Clone)]
pub(crate) enum Action {
    /// Reads the request's body, then answers this status, extra headers and body, never
    /// forwarding it.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Forwards the request, and cuts both connections once this many body bytes went through.
    ResetAfter(u64),
    /// Reads the whole request and never answers.
    StallAfterBody,
    /// Forwards the request and rewrites the registry's answer head.
    Rewrite(Rewriter),
    /// Answers 200 with a JSON body (chunked, no length) that goes on until the client hangs
    /// up, the proxy stops, or this many bytes went out.
    EndlessBody(u64),
    /// Runs this first (another client's write landing just before), then forwards the request.
    Before(Arc<dyn Fn() + Send + Sync>),
}

/// Applies `action` to the first `times` requests of `method` whose path and query contain `path`.
#[derive(Clone)]
pub(crate) struct Rule {
    pub method: &'static str,
    pub path: String,
    pub times: usize,
    pub action: Action,
}

impl Rule {
    pub(crate) fn new(method: &'static str, path: &str, times: usize, action: Action) -> Self {
        Self {
            method,
            path: path.to_string(),
            times,
            action,
        }
    }

    /// Answers `status` with an empty body.
    pub(crate) fn status(method: &'static str, path: &str, times: usize, status: u16) -> Self {
        Self::new(
            method,
            path,
            times,
            Action::Status {
                status,
                headers: Vec::new(),
                body: Vec::new(),
            },
        )
    }
}

/// One request as the proxy saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    pub method: String,
    /// Path and query.
    pub target: String,
    pub authorization: Option<String>,
    /// Whether a rule acted on it.
    pub faulted: bool,
}

impl Seen {
    /// `PUT /v2/app/blobs/uploads/<id>` without the id and query: what tests compare.
    pub(crate) fn short(&self) -> String {
        let path = self.target.split('?').next().unwrap_or_default();
        let path = match path.find("/blobs/uploads/") {
            Some(at) => &path[..at + "/blobs/uploads/".len()],
            None => path,
        };
        format!("{} {path}", self.method)
    }
}

/// Bearer tokens the proxy demands and hands out at `/token`, each good for `uses` requests.
struct Bearer {
    uses: usize,
    /// Every token issued, with the uses it has left.
    tokens: std::collections::HashMap<String, usize>,
    issued: usize,
}

struct Shared {
    upstream: String,
    rules: Mutex<Vec<Rule>>,
    seen: Mutex<Vec<Seen>>,
    bearer: Mutex<Option<Bearer>>,
    stop: AtomicBool,
    /// Requests a stall rule is holding right now.
    stalled: Mutex<usize>,
    address: std::net::SocketAddr,
}

pub(crate) struct FaultProxy {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl FaultProxy {
    /// A proxy in front of `upstream` (`127.0.0.1:PORT`) applying `rules` in order.
    pub(crate) fn start(upstream: &str, rules: Vec<Rule>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("fault proxy port");
        Self::start_on(listener, upstream, rules)
    }

    /// A proxy in front of `upstream` doing `action` to the first `count` blob upload PUTs.
    pub(crate) fn on_uploads(upstream: &str, count: usize, action: Action) -> Self {
        Self::start(
            upstream,
            vec![Rule::new("PUT", "/blobs/uploads/", count, action)],
        )
    }

    /// The same, listening on `listener` (another loopback address, or port 80).
    pub(crate) fn start_on(listener: TcpListener, upstream: &str, rules: Vec<Rule>) -> Self {
        assert!(
            upstream.starts_with("127.0.0.1:"),
            "the fault proxy only forwards to loopback"
        );
        let address = listener.local_addr().expect("fault proxy address");
        assert!(
            address.ip().is_loopback(),
            "the fault proxy listens on loopback"
        );
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let shared = Arc::new(Shared {
            upstream: upstream.to_string(),
            rules: Mutex::new(rules),
            seen: Mutex::new(Vec::new()),
            bearer: Mutex::new(None),
            stop: AtomicBool::new(false),
            stalled: Mutex::new(0),
            address,
        });
        let accepting = Arc::clone(&shared);
        let thread = std::thread::spawn(move || accept_loop(&listener, &accepting));
        Self {
            shared,
            thread: Some(thread),
        }
    }

    /// Also demands a Bearer token on every request, handing them out at `/token`, each
    /// accepted for `uses` requests (then refused, as an expired token is; 0: never taken).
    pub(crate) fn demanding_bearer(self, uses: usize) -> Self {
        *self.shared.bearer.lock().unwrap() = Some(Bearer {
            uses,
            tokens: std::collections::HashMap::new(),
            issued: 0,
        });
        self
    }

    pub(crate) fn host(&self) -> String {
        self.shared.address.to_string()
    }

    /// Every request so far, in arrival order.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// The requests so far as `METHOD /path` (see [`Seen::short`]).
    pub(crate) fn seen_short(&self) -> Vec<String> {
        self.seen().iter().map(Seen::short).collect()
    }

    pub(crate) fn tokens_issued(&self) -> usize {
        self.shared
            .bearer
            .lock()
            .unwrap()
            .as_ref()
            .map_or(0, |bearer| bearer.issued)
    }

    /// Waits (at most `limit`) until a stall rule holds a request; false if none came.
    pub(crate) fn wait_for_stall(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if *self.shared.stalled.lock().unwrap() > 0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let started = Instant::now();
    while !shared.stop.load(Ordering::SeqCst) && started.elapsed() < LIFETIME {
        match listener.accept() {
            Ok((client, _)) => {
                let shared = Arc::clone(shared);
                std::thread::spawn(move || {
                    let _ = handle(client, &shared);
                });
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

fn handle(client: TcpStream, shared: &Shared) -> std::io::Result<()> {
    client.set_nonblocking(false)?;
    client.set_read_timeout(Some(LIFETIME))?;
    let mut reader = BufReader::new(client.try_clone()?);
    let head = read_head(&mut reader)?;
    let rule = take_rule(shared, &head);
    shared.seen.lock().unwrap().push(Seen {
        method: head.method().to_string(),
        target: head.target().to_string(),
        authorization: head.header("authorization").map(str::to_string),
        faulted: rule.is_some(),
    });
    let mut client = client;
    match rule.map(|rule| rule.action) {
        Some(Action::Status {
            status,
            headers,
            body,
        }) => {
            copy_body(&head, &mut reader, &mut std::io::sink())?;
            respond(&mut client, status, &headers, &body)
        }
        Some(Action::StallAfterBody) => {
            copy_body(&head, &mut reader, &mut std::io::sink())?;
            stall(shared);
            Ok(())
        }
        Some(Action::ResetAfter(bytes)) => {
            forward(reader, client, &head, shared, Some(bytes), None)
        }
        Some(Action::Rewrite(rewrite)) => {
            forward(reader, client, &head, shared, None, Some(rewrite))
        }
        Some(Action::EndlessBody(most)) => {
            copy_body(&head, &mut reader, &mut std::io::sink())?;
            endless(&mut client, shared, most)
        }
        Some(Action::Before(hook)) => {
            hook();
            forward(reader, client, &head, shared, None, None)
        }
        None => {
            if let Some(refusal) = bearer_check(shared, &head) {
                copy_body(&head, &mut reader, &mut std::io::sink())?;
                return match refusal {
                    BearerAnswer::Token(token) => respond(
                        &mut client,
                        200,
                        &[("Content-Type".into(), "application/json".into())],
                        format!("{{\"token\":\"{token}\"}}").as_bytes(),
                    ),
                    BearerAnswer::Challenge(offered) => respond(
                        &mut client,
                        401,
                        &[(
                            "WWW-Authenticate".into(),
                            format!(
                                "Bearer realm=\"http://{}/token\",service=\"fault-proxy\"{}",
                                shared.address,
                                if offered { ",error=\"invalid_token\"" } else { "" }
                            ),
                        )],
                        br#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#,
                    ),
                };
            }
            forward(reader, client, &head, shared, None, None)
        }
    }
}

fn take_rule(shared: &Shared, head: &Head) -> Option<Rule> {
    let mut rules = shared.rules.lock().unwrap();
    let rule = rules.iter_mut().find(|rule| {
        rule.times > 0 && rule.method == head.method() && head.target().contains(&rule.path)
    })?;
    rule.times -= 1;
    Some(rule.clone())
}

enum BearerAnswer {
    Token(String),
    /// 401; `true` when a token was offered and refused (distribution then adds
    /// `error="invalid_token"` to its challenge).
    Challenge(bool),
}

/// `None`: let the request through (no bearer demanded, or its token is good for one more use).
fn bearer_check(shared: &Shared, head: &Head) -> Option<BearerAnswer> {
    let mut bearer = shared.bearer.lock().unwrap();
    let bearer = bearer.as_mut()?;
    if head.target().starts_with("/token") {
        bearer.issued += 1;
        let token = format!("token-{}", bearer.issued);
        bearer.tokens.insert(token.clone(), bearer.uses);
        return Some(BearerAnswer::Token(token));
    }
    let offered = head
        .header("authorization")
        .and_then(|value| value.strip_prefix("Bearer "));
    let left = offered
        .and_then(|offered| bearer.tokens.get_mut(offered))
        .filter(|left| **left > 0);
    match left {
        Some(left) => {
            *left -= 1;
            None
        }
        None => Some(BearerAnswer::Challenge(offered.is_some())),
    }
}

fn respond(
    client: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} Fault\r\n");
    for (key, value) in headers {
        head.push_str(&format!("{key}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    client.write_all(head.as_bytes())?;
    client.write_all(body)?;
    client.flush()?;
    client.shutdown(Shutdown::Both)
}

/// `{"token":"aaaa...` in 64 KiB chunks, never closed, until the client goes away.
fn endless(client: &mut TcpStream, shared: &Shared, most: u64) -> std::io::Result<()> {
    client.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
    )?;
    let opening = b"{\"token\":\"";
    client.write_all(format!("{:x}\r\n", opening.len()).as_bytes())?;
    client.write_all(opening)?;
    client.write_all(b"\r\n")?;
    let chunk = vec![b'a'; 64 << 10];
    let mut sent = 0u64;
    let started = Instant::now();
    while sent < most && !shared.stop.load(Ordering::SeqCst) && started.elapsed() < LIFETIME {
        client.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())?;
        client.write_all(&chunk)?;
        client.write_all(b"\r\n")?;
        sent += chunk.len() as u64;
    }
    Ok(())
}

/// Holds the connection open, answering nothing, until the proxy stops.
fn stall(shared: &Shared) {
    *shared.stalled.lock().unwrap() += 1;
    let started = Instant::now();
    while !shared.stop.load(Ordering::SeqCst) && started.elapsed() < LIFETIME {
        std::thread::sleep(Duration::from_millis(20));
    }
    *shared.stalled.lock().unwrap() -= 1;
}

/// Sends the request on to the registry (asking it to close after answering) and its answer
/// back, cutting both connections after `cut_after` body bytes or rewriting the answer's head.
fn forward(
    mut reader: BufReader<TcpStream>,
    mut client: TcpStream,
    head: &Head,
    shared: &Shared,
    cut_after: Option<u64>,
    rewrite: Option<Rewriter>,
) -> std::io::Result<()> {
    let mut upstream = TcpStream::connect(&shared.upstream)?;
    let mut request = format!("{}\r\n", head.start_line);
    let bearer_mode = shared.bearer.lock().unwrap().is_some();
    for (key, value) in &head.headers {
        let dropped = key.eq_ignore_ascii_case("connection")
            || (bearer_mode && key.eq_ignore_ascii_case("authorization"));
        if !dropped {
            request.push_str(&format!("{key}: {value}\r\n"));
        }
    }
    request.push_str("Connection: close\r\n\r\n");
    upstream.write_all(request.as_bytes())?;

    // The body, as it comes: the registry reads its own framing; the copy ends when either side closes.
    let mut to_upstream = upstream.try_clone()?;
    let client_side = client.try_clone()?;
    let upstream_side = upstream.try_clone()?;
    let body = std::thread::spawn(move || {
        let mut sent = 0u64;
        let mut buffer = vec![0u8; 64 * 1024];
        for _ in 0..10_000_000 {
            let read = match reader.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            let allowed = match cut_after {
                Some(limit) => (limit.saturating_sub(sent) as usize).min(read),
                None => read,
            };
            if to_upstream.write_all(&buffer[..allowed]).is_err() {
                break;
            }
            sent += allowed as u64;
            if cut_after.is_some_and(|limit| sent >= limit) {
                let _ = client_side.shutdown(Shutdown::Both);
                let _ = upstream_side.shutdown(Shutdown::Both);
                break;
            }
        }
    });

    let mut answer_reader = BufReader::new(upstream.try_clone()?);
    let result = (|| -> std::io::Result<()> {
        let answer_head = read_head(&mut answer_reader)?;
        let mut parts = answer_head.start_line.splitn(3, ' ');
        let _version = parts.next();
        let status = parts.next().and_then(|s| s.parse().ok()).unwrap_or(502);
        let reason = parts.next().unwrap_or_default().to_string();
        let headers = answer_head.headers;
        let mut answer = Answer {
            status,
            reason,
            headers,
        };
        if let Some(rewrite) = &rewrite {
            rewrite(&mut answer);
        }
        let mut out = format!("HTTP/1.1 {} {}\r\n", answer.status, answer.reason);
        for (key, value) in &answer.headers {
            out.push_str(&format!("{key}: {value}\r\n"));
        }
        out.push_str("\r\n");
        client.write_all(out.as_bytes())?;
        std::io::copy(&mut answer_reader, &mut client)?;
        client.flush()
    })();
    let _ = client.shutdown(Shutdown::Both);
    let _ = upstream.shutdown(Shutdown::Both);
    let _ = body.join();
    result
}
