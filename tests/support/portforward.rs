//! The pod `portforward` subresource as a real API server serves it over WebSocket (the kubelet's
//! `portforward` websocket handler, which the API server proxies to): subprotocol
//! `v4.channel.k8s.io` (or none), per port a data channel `2i` and an error channel `2i+1`,
//! the first frame of each carrying the port as 2 bytes little-endian, every later frame one
//! channel byte then data; the kubelet dials the pod's port and relays until either side
//! closes. Frames are RFC 6455's, written here (server side: unmasked out, masked in).
//! Faults: streams cut mid-way, and an API server that does not upgrade. `kubectl port-forward`'s
//! SPDY upgrade is served by `spdy.rs`.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::cluster_objects::{Extra, forward_target, has_pod, pod_forward};

/// How the subresource misbehaves, shared by every connection.
#[derive(Debug, Clone, Default)]
pub(crate) struct Faults {
    /// The first this many streams are cut (no close frame) after `cut_after` bytes came
    /// from the client, as a dropped API server connection or a restarted kubelet does.
    pub(crate) cut_streams: usize,
    pub(crate) cut_after: u64,
    /// Answer every upgrade with 400 "Upgrade request required", as a server (or a proxy in
    /// front of it) that does not pass the protocol on.
    pub(crate) no_upgrade: bool,
    /// Streams opened so far (each a WebSocket connection).
    pub(crate) opened: Arc<AtomicUsize>,
    /// The pod replaced mid-way, as a registry Deployment's rollout or a drain replaces it.
    pub(crate) replace: Option<Replacement>,
}

/// Once this many bytes came from clients through port-forwards to pod `old` in all, the pod
/// is deleted: its open streams are cut, a new port-forward to it answers 404, and `new` (with
/// its port forwarding to `to`) takes its place in the lists.
#[derive(Debug, Clone)]
pub(crate) struct Replacement {
    pub(crate) after: u64,
    pub(crate) old: String,
    pub(crate) new: Value,
    pub(crate) to: SocketAddr,
    forwarded: Arc<std::sync::atomic::AtomicU64>,
}

impl Replacement {
    pub(crate) fn new(after: u64, old: &str, new: Value, to: SocketAddr) -> Self {
        Self {
            after,
            old: old.to_string(),
            new,
            to,
            forwarded: Arc::default(),
        }
    }

    pub(crate) fn happened(&self) -> bool {
        self.forwarded.load(Ordering::SeqCst) >= self.after
    }

    fn new_name(&self) -> &str {
        self.new["metadata"]["name"].as_str().unwrap_or_default()
    }

    /// `object` is the pod it replaced, and that has happened.
    pub(crate) fn hides(&self, object: &Value) -> bool {
        self.happened()
            && object["kind"] == "Pod"
            && object["metadata"]["name"] == self.old.as_str()
    }

    /// The new pod, once it is there.
    pub(crate) fn added(&self) -> Option<&Value> {
        self.happened().then_some(&self.new)
    }

    /// Where a port-forward to `pod` connects, once the new pod is there.
    pub(crate) fn forward(&self, pod: &str) -> Option<SocketAddr> {
        (self.happened() && pod == self.new_name()).then_some(self.to)
    }
}

/// `GUID` of RFC 6455, appended to the key for `Sec-WebSocket-Accept`.
const WEBSOCKET_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// What the request asked, from its line and headers.
pub(crate) struct Upgrade<'a> {
    pub(crate) namespace: &'a str,
    pub(crate) pod: &'a str,
    pub(crate) query: &'a str,
    pub(crate) headers: &'a [(String, String)],
}

/// `/api/v1/namespaces/NS/pods/NAME/portforward` -> (NS, NAME).
pub(crate) fn portforward_path(path: &str) -> Option<(&str, &str)> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        [
            "api",
            "v1",
            "namespaces",
            namespace,
            "pods",
            pod,
            "portforward",
        ] => Some((namespace, pod)),
        _ => None,
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

/// Answers the request on `client` (the raw connection, after its headers were read): an error
/// `Status`, or the upgrade and then the relay until the stream ends. `refusal` is the
/// stand-in's RBAC for `create pods/portforward`.
pub(crate) fn serve(
    extra: &Extra,
    client: &TcpStream,
    request: Upgrade,
    refusal: Option<(u16, Value)>,
) {
    let ports: Vec<u16> = request
        .query
        .split('&')
        .find_map(|pair| pair.strip_prefix("ports="))
        .map(|ports| {
            ports
                .replace("%2C", ",")
                .split(',')
                .filter_map(|port| port.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let upgrade = header(request.headers, "upgrade").unwrap_or_default();
    let answer = |code: u16, body: Value| write_status(client, code, &body);
    if let Some((code, body)) = refusal {
        return answer(code, body);
    }
    if !has_pod(extra, request.namespace, request.pod) {
        let message = format!("pods {:?} not found", request.pod);
        return answer(404, status(404, "NotFound", &message));
    }
    if upgrade.eq_ignore_ascii_case("SPDY/3.1") && !extra.faults.no_upgrade {
        // kubectl's way (its ports travel in each stream's headers).
        let Some(target) = pod_forward(extra, request.namespace, request.pod) else {
            return answer(400, status(400, "BadRequest", "the pod forwards no port"));
        };
        return super::spdy::serve(client, target);
    }
    if ports.is_empty() {
        return answer(
            400,
            status(400, "BadRequest", "at least one port must be specified"),
        );
    }
    let protocols = header(request.headers, "sec-websocket-protocol").unwrap_or_default();
    let offered: Vec<&str> = protocols
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let chosen = if offered.is_empty() {
        Some("")
    } else {
        offered.iter().copied().find(|p| *p == "v4.channel.k8s.io")
    };
    let (false, true, Some(protocol), Some(key)) = (
        extra.faults.no_upgrade,
        upgrade.eq_ignore_ascii_case("websocket"),
        chosen,
        header(request.headers, "sec-websocket-key"),
    ) else {
        return answer(400, status(400, "BadRequest", "Upgrade request required"));
    };
    let mut response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n",
        accept_key(key)
    );
    if !protocol.is_empty() {
        response.push_str(&format!("Sec-WebSocket-Protocol: {protocol}\r\n"));
    }
    response.push_str("\r\n");
    let writer = Arc::new(Mutex::new(
        client.try_clone().expect("cloning the connection"),
    ));
    if writer
        .lock()
        .unwrap()
        .write_all(response.as_bytes())
        .is_err()
    {
        return;
    }
    let number = extra.faults.opened.fetch_add(1, Ordering::SeqCst);
    let cut_after = (number < extra.faults.cut_streams).then_some(extra.faults.cut_after);
    let replaced = extra
        .faults
        .replace
        .as_ref()
        .filter(|replace| replace.old == request.pod);
    relay(
        extra,
        client,
        &writer,
        &request,
        &ports,
        (cut_after, replaced),
    );
}

/// Each port's first frames, the kubelet's dial, then data both ways until one side ends.
fn relay(
    extra: &Extra,
    client: &TcpStream,
    writer: &Arc<Mutex<TcpStream>>,
    request: &Upgrade,
    ports: &[u16],
    cuts: (Option<u64>, Option<&Replacement>),
) {
    let mut targets = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let data = 2 * i as u8;
        for channel in [data, data + 1] {
            let mut first = vec![channel];
            first.extend_from_slice(&port.to_le_bytes());
            let _ = send(writer, 2, &first);
        }
        let dialled = forward_target(extra, request.namespace, request.pod, *port)
            .ok_or_else(|| format!("port {port} is not open in the pod"))
            .and_then(|to: SocketAddr| TcpStream::connect(to).map_err(|err| err.to_string()));
        match dialled {
            Ok(target) => targets.push(Some(target)),
            Err(err) => {
                let mut frame = vec![data + 1];
                frame.extend_from_slice(format!(
                    "error forwarding port {port} to pod {}, uid : failed to connect to localhost:{port} inside namespace: {err}",
                    request.pod
                ).as_bytes());
                let _ = send(writer, 2, &frame);
                targets.push(None);
            }
        }
    }
    // Pod -> client: one thread per port.
    let mut pumps = Vec::new();
    for (i, target) in targets.iter().enumerate() {
        let Some(target) = target else { continue };
        let mut from_pod = target.try_clone().expect("cloning the pod connection");
        let writer = Arc::clone(writer);
        pumps.push(std::thread::spawn(move || {
            let mut buffer = vec![0u8; 64 * 1024 + 1];
            loop {
                buffer[0] = 2 * i as u8;
                match from_pod.read(&mut buffer[1..]) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if send(&writer, 2, &buffer[..n + 1]).is_err() {
                            break;
                        }
                    }
                }
            }
            // The pod side ended: v4 has no half-close, so the whole connection closes.
            let _ = send(&writer, 8, &[]);
        }));
    }
    from_client(client, writer, &targets, cuts);
    for target in targets.iter().flatten() {
        let _ = target.shutdown(Shutdown::Both);
    }
    for pump in pumps {
        let _ = pump.join();
    }
}

/// Client -> pod until a close frame, the connection's end, or the cut.
fn from_client(
    client: &TcpStream,
    writer: &Arc<Mutex<TcpStream>>,
    targets: &[Option<TcpStream>],
    (cut_after, replaced): (Option<u64>, Option<&Replacement>),
) {
    let mut reader = client.try_clone().expect("cloning the connection");
    let _ = reader.set_read_timeout(None);
    let mut forwarded = 0u64;
    while let Some((opcode, payload)) = read_frame(&mut reader) {
        match opcode {
            8 => {
                let _ = send(writer, 8, &[]);
                break;
            }
            9 => {
                let _ = send(writer, 10, &payload);
            }
            0 | 2 if payload.len() > 1 => {
                let port_index = usize::from(payload[0] / 2);
                let Some(Some(target)) = targets.get(port_index) else {
                    continue;
                };
                let mut target = target;
                if target.write_all(&payload[1..]).is_err() {
                    break;
                }
                forwarded += payload.len() as u64 - 1;
                if let Some(replace) = replaced {
                    replace
                        .forwarded
                        .fetch_add(payload.len() as u64 - 1, Ordering::SeqCst);
                }
                let deleted = replaced.is_some_and(Replacement::happened);
                if deleted || cut_after.is_some_and(|limit| forwarded >= limit) {
                    // Cut: no close frame, the connection simply ends.
                    let _ = client.shutdown(Shutdown::Both);
                    break;
                }
            }
            _ => {}
        }
    }
}

/// One client frame: (opcode, unmasked payload); `None` at the end of the connection.
fn read_frame(reader: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 2];
    reader.read_exact(&mut head).ok()?;
    let opcode = head[0] & 0x0f;
    let masked = head[1] & 0x80 != 0;
    let length = match head[1] & 0x7f {
        126 => {
            let mut bytes = [0u8; 2];
            reader.read_exact(&mut bytes).ok()?;
            u64::from(u16::from_be_bytes(bytes))
        }
        127 => {
            let mut bytes = [0u8; 8];
            reader.read_exact(&mut bytes).ok()?;
            u64::from_be_bytes(bytes)
        }
        short => u64::from(short),
    };
    let mut mask = [0u8; 4];
    if masked {
        reader.read_exact(&mut mask).ok()?;
    }
    let mut payload = vec![0u8; usize::try_from(length).ok()?];
    reader.read_exact(&mut payload).ok()?;
    if masked {
        for (i, byte) in payload.iter_mut().enumerate() {
            *byte ^= mask[i % 4];
        }
    }
    Some((opcode, payload))
}

/// One unmasked, final frame.
fn send(writer: &Mutex<TcpStream>, opcode: u8, payload: &[u8]) -> std::io::Result<()> {
    let mut frame = Vec::with_capacity(payload.len() + 10);
    frame.push(0x80 | opcode);
    match payload.len() {
        n if n < 126 => frame.push(n as u8),
        n if n <= 0xffff => {
            frame.push(126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    frame.extend_from_slice(payload);
    writer
        .lock()
        .expect("the connection's writer")
        .write_all(&frame)
}

/// `base64(sha1(key + GUID))`.
fn accept_key(key: &str) -> String {
    use base64::Engine;
    use sha1::Digest;
    let digest = sha1::Sha1::digest(format!("{key}{WEBSOCKET_GUID}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(digest)
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

fn write_status(mut client: &TcpStream, code: u16, body: &Value) {
    let body = body.to_string();
    let reason = match code {
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        _ => "Error",
    };
    let _ = write!(
        client,
        "HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

#[test]
fn the_accept_key_is_rfc_6455s() {
    // RFC 6455 section 1.3's example.
    assert_eq!(
        accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    );
}
