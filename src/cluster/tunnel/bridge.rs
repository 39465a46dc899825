//! One accepted connection pumped through one port-forward WebSocket, both ways. Out: what the
//! connection has, up to [`FRAME`] bytes, as one message, in a buffer that is reused (no
//! allocation per message), flushed when the connection has nothing more for now. In: each
//! message's bytes written through as they come.

use bytes::{BufMut, BytesMut};
use futures_util::{Sink, SinkExt, Stream, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::frames::{self, Frame};

/// The most bytes one message carries: kubectl's SPDY streams copy 32 KiB at a time, and a
/// layer's bytes come faster than that.
pub(super) const FRAME: usize = 64 << 10;

/// How a bridged connection ended, when not cleanly.
#[derive(Debug)]
pub(super) enum Broke {
    /// The kubelet's words on the error channel (the pod's port refused, the pod is gone).
    KubeletSaid(String),
    /// The WebSocket or the connection failed, or the API server broke the protocol.
    Failed(String),
    /// Our own client closed its connection (reset, or a write found it gone): nothing of the
    /// pod's broke, so the pump ends cleanly and the pod is not distrusted.
    HungUp,
}

impl Broke {
    /// What went wrong with the stream to `forwarder`; `None` when nothing did (we hung up).
    pub(super) fn failure(self, forwarder: &str) -> Option<String> {
        match self {
            Broke::KubeletSaid(said) => Some(format!("the kubelet said of {forwarder}: {said}")),
            Broke::Failed(why) => Some(format!("{forwarder} broke off: {why}")),
            Broke::HungUp => None,
        }
    }
}

/// Whether `err` on our connection means our client closed it.
fn hung_up(err: &std::io::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset};
    matches!(err.kind(), BrokenPipe | ConnectionReset | ConnectionAborted)
}

/// `err` on our connection, while `doing`.
fn ours(doing: &str, err: std::io::Error) -> Broke {
    if hung_up(&err) {
        Broke::HungUp
    } else {
        Broke::Failed(format!("{doing} the connection: {err}"))
    }
}

/// Pumps `connection` through `socket` (a port-forward to `port`) until the pod's side ends, or
/// until ours ends and the API server has closed.
pub(super) async fn pump<S>(connection: TcpStream, socket: S, port: u16) -> Result<(), Broke>
where
    S: Stream<Item = Result<Message, WsError>> + Sink<Message, Error = WsError> + Unpin,
{
    let _ = connection.set_nodelay(true);
    let (from_us, to_us) = connection.into_split();
    let (sink, stream) = socket.split();
    let upstream = upstream(from_us, sink);
    let downstream = downstream(stream, to_us, port);
    tokio::pin!(upstream, downstream);
    tokio::select! {
        ended = &mut downstream => ended,
        ended = &mut upstream => match ended {
            // Our side is done sending: what the pod still says comes through, until it closes.
            Ok(()) => downstream.await,
            Err(failed) => Err(failed),
        },
    }
}

/// Our connection's bytes to the pod, as large messages on the data channel.
async fn upstream(
    mut from_us: OwnedReadHalf,
    mut sink: impl Sink<Message, Error = WsError> + Unpin,
) -> Result<(), Broke> {
    let failed = |err: std::io::Error| ours("reading", err);
    let sent = |err: WsError| Broke::Failed(format!("sending through the API server: {err}"));
    let mut buffer = BytesMut::with_capacity(FRAME + 1);
    loop {
        buffer.reserve(FRAME + 1);
        buffer.put_u8(frames::DATA);
        let read = from_us
            .read_buf(&mut (&mut buffer).limit(FRAME))
            .await
            .map_err(failed)?;
        if read == 0 {
            break;
        }
        // Take what else has already come, up to a whole frame, without waiting for more.
        let mut idle = false;
        while buffer.len() <= FRAME {
            let room = FRAME + 1 - buffer.len();
            match from_us.try_read_buf(&mut (&mut buffer).limit(room)) {
                Ok(0) => break,
                Ok(_) => {}
                Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {
                    idle = true;
                    break;
                }
                Err(err) => return Err(failed(err)),
            }
        }
        sink.feed(Message::Binary(buffer.split().freeze()))
            .await
            .map_err(sent)?;
        if idle {
            sink.flush().await.map_err(sent)?;
        }
    }
    sink.close().await.map_err(sent)
}

/// The pod's bytes to our connection; the kubelet's error text ends it.
async fn downstream(
    mut stream: impl Stream<Item = Result<Message, WsError>> + Unpin,
    mut to_us: OwnedWriteHalf,
    port: u16,
) -> Result<(), Broke> {
    let mut reader = frames::Reader::new(port);
    while let Some(message) = stream.next().await {
        let message = message
            .map_err(|err| Broke::Failed(format!("receiving through the API server: {err}")))?;
        let bytes = match message {
            Message::Binary(bytes) => bytes,
            Message::Close(_) => break,
            // Pings are answered by the WebSocket itself.
            _ => continue,
        };
        match reader.read(&bytes) {
            Ok(Frame::Data(data)) => to_us
                .write_all(data)
                .await
                .map_err(|err| ours("writing", err))?,
            Ok(Frame::Opened) => {}
            Ok(Frame::Error(text)) => {
                return Err(Broke::KubeletSaid(frames::kubelet_words(text)));
            }
            Err(broke) => return Err(Broke::Failed(broke.to_string())),
        }
    }
    let _ = to_us.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::{Error, ErrorKind};

    use super::*;

    #[test]
    fn our_client_hanging_up_is_no_failure_and_anything_else_is() {
        for kind in [
            ErrorKind::BrokenPipe,
            ErrorKind::ConnectionReset,
            ErrorKind::ConnectionAborted,
        ] {
            let broke = ours("writing", Error::from(kind));
            assert!(matches!(broke, Broke::HungUp), "{kind:?}: {broke:?}");
            assert_eq!(broke.failure("a port-forward to pod dev/registry-0"), None);
        }
        let broke = ours("reading", Error::other("the disk is on fire"));
        assert_eq!(
            broke
                .failure("a port-forward to pod dev/registry-0")
                .as_deref(),
            Some(
                "a port-forward to pod dev/registry-0 broke off: reading the connection: the disk is on fire"
            )
        );
        let said = Broke::KubeletSaid("connection refused".into());
        assert_eq!(
            said.failure("a port-forward to pod dev/registry-0")
                .as_deref(),
            Some("the kubelet said of a port-forward to pod dev/registry-0: connection refused")
        );
    }
}
