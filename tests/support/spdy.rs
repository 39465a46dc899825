//! The pod `portforward` subresource over SPDY/3.1, as the API server serves `kubectl
//! port-forward` when its WebSocket upgrade (`SPDY/3.1+portforward.k8s.io`) is refused: the
//! upgrade (`Upgrade: SPDY/3.1`, `X-Stream-Protocol-Version: portforward.k8s.io`), then SPDY/3
//! frames. kubectl opens two streams per connection it accepts: an error stream it closes at
//! once, and a data stream. Their header blocks (`streamtype`, `port`, `requestid`) are zlib
//! with SPDY's preset dictionary, which is not here: streams are told apart by use instead (one
//! that carries data is the data stream, dialled to the pod's one forwarded port; one closed
//! empty is answered closed, as the kubelet closes an error stream with no error). Our replies'
//! header blocks are zlib without a dictionary (stored blocks), which SPDY readers take.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};

/// SPDY/3 control frame types (draft 3, section 2.6).
const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const PING: u16 = 6;
const FLAG_FIN: u8 = 1;

/// Answers the upgrade on `client`, then serves streams until the connection ends.
pub(crate) fn serve(client: &TcpStream, target: SocketAddr) {
    let mut writer = client.try_clone().expect("cloning the connection");
    let upgraded = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n";
    if writer.write_all(upgraded.as_bytes()).is_err() {
        return;
    }
    let writer = Arc::new(Mutex::new((writer, false)));
    let mut reader = client.try_clone().expect("cloning the connection");
    let _ = reader.set_read_timeout(None);
    let mut streams: BTreeMap<u32, Option<TcpStream>> = BTreeMap::new();
    while let Some((control, head, payload)) = read_frame(&mut reader) {
        if control {
            let kind = u16::from_be_bytes([head[2], head[3]]);
            match kind {
                SYN_STREAM if payload.len() >= 4 => {
                    let id = u32::from_be_bytes(payload[..4].try_into().unwrap()) & 0x7fff_ffff;
                    streams.insert(id, None);
                    let mut reply = id.to_be_bytes().to_vec();
                    reply.extend(empty_header_block(&writer));
                    send(&writer, &control_frame(SYN_REPLY, 0, &reply));
                }
                PING => send(&writer, &control_frame(PING, 0, &payload)),
                _ => {} // SETTINGS, WINDOW_UPDATE, RST_STREAM, GOAWAY: nothing to do here
            }
            continue;
        }
        let id = u32::from_be_bytes(head[..4].try_into().unwrap()) & 0x7fff_ffff;
        let fin = head[4] & FLAG_FIN != 0;
        let Some(stream) = streams.get_mut(&id) else {
            continue;
        };
        if stream.is_none() && !payload.is_empty() {
            // The data stream: the kubelet dials the pod's port.
            let Ok(pod) = TcpStream::connect(target) else {
                send(&writer, &data_frame(id, FLAG_FIN, &[]));
                continue;
            };
            let from_pod = pod.try_clone().expect("cloning the pod connection");
            let writer = Arc::clone(&writer);
            std::thread::spawn(move || pump(from_pod, id, &writer));
            *stream = Some(pod);
        }
        if let Some(pod) = stream {
            if !payload.is_empty() && pod.write_all(&payload).is_err() {
                send(&writer, &data_frame(id, FLAG_FIN, &[]));
            }
            if fin {
                let _ = pod.shutdown(Shutdown::Write);
            }
        } else if fin {
            // Closed empty: an error stream, answered with no error.
            send(&writer, &data_frame(id, FLAG_FIN, &[]));
        }
    }
    for pod in streams.values().flatten() {
        let _ = pod.shutdown(Shutdown::Both);
    }
}

/// Pod -> client as DATA frames on stream `id`, FIN at the pod's end.
fn pump(mut from_pod: TcpStream, id: u32, writer: &Mutex<(TcpStream, bool)>) {
    let mut buffer = vec![0u8; 32 * 1024];
    loop {
        match from_pod.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => send(writer, &data_frame(id, 0, &buffer[..n])),
        }
    }
    send(writer, &data_frame(id, FLAG_FIN, &[]));
}

/// One frame: (control?, its 8-byte head, payload); `None` at the connection's end.
fn read_frame(reader: &mut TcpStream) -> Option<(bool, [u8; 8], Vec<u8>)> {
    let mut head = [0u8; 8];
    reader.read_exact(&mut head).ok()?;
    let length = u32::from_be_bytes([0, head[5], head[6], head[7]]) as usize;
    let mut payload = vec![0u8; length];
    reader.read_exact(&mut payload).ok()?;
    Some((head[0] & 0x80 != 0, head, payload))
}

fn control_frame(kind: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x80, 3];
    frame.extend_from_slice(&kind.to_be_bytes());
    frame.push(flags);
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    frame.extend_from_slice(payload);
    frame
}

fn data_frame(id: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = id.to_be_bytes().to_vec();
    frame.push(flags);
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    frame.extend_from_slice(payload);
    frame
}

/// A header block of no headers: the next piece of this connection's one zlib stream (its
/// header first), a stored deflate block holding the 4-byte count 0, then a sync flush.
fn empty_header_block(writer: &Mutex<(TcpStream, bool)>) -> Vec<u8> {
    let mut started = writer.lock().expect("the connection's writer");
    let mut block = if started.1 {
        Vec::new()
    } else {
        vec![0x78, 0x01]
    };
    started.1 = true;
    block.extend_from_slice(&[0x00, 0x04, 0x00, 0xfb, 0xff, 0, 0, 0, 0]);
    // The sync flush's empty stored block, which makes a reader hand over what it holds.
    block.extend_from_slice(&[0x00, 0x00, 0x00, 0xff, 0xff]);
    block
}

fn send(writer: &Mutex<(TcpStream, bool)>, frame: &[u8]) {
    let _ = writer
        .lock()
        .expect("the connection's writer")
        .0
        .write_all(frame);
}
