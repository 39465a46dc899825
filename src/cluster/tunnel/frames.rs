//! The port-forward protocol's frames on the WebSocket (`v4.channel.k8s.io`, as the kubelet
//! serves it): each binary message is one channel byte then bytes; for one port, channel 0
//! carries its data and channel 1 the kubelet's error text, and the first message on each
//! channel is the port number (two bytes, little-endian). Pure: what arrives is read here,
//! the I/O is the bridge's.

/// The data channel of the one port we forward.
pub(crate) const DATA: u8 = 0;
/// Its error channel: the kubelet's words when the pod's port cannot be reached.
pub(crate) const ERROR: u8 = 1;

/// What one message from the API server says.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame<'a> {
    /// Bytes the pod's port sent.
    Data(&'a [u8]),
    /// Text of the kubelet's error (it may come in several messages).
    Error(&'a [u8]),
    /// A channel's opening message, naming the port: nothing to pass on.
    Opened,
}

/// The most of the kubelet's error text we keep: its words are a line or two.
const ERROR_TEXT: usize = 4 << 10;

/// The kubelet's error text as we repeat it: cut to a bounded length, made text, trimmed.
pub(crate) fn kubelet_words(text: &[u8]) -> String {
    let text = &text[..text.len().min(ERROR_TEXT)];
    String::from_utf8_lossy(text).trim().to_string()
}

/// A message that breaks the protocol.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrameError {
    #[error("an empty port-forward message (no channel byte)")]
    Empty,
    #[error("a port-forward message on channel {0}, where only 0 and 1 (one port) exist")]
    Channel(u8),
    #[error("channel {channel} opened for port {got}, not the port {want} asked for")]
    Port { channel: u8, got: u16, want: u16 },
    #[error("channel {0} opened with {1} bytes, not the port's two")]
    Opening(u8, usize),
}

/// Reads the API server's messages for one forwarded port, in order.
#[derive(Debug)]
pub(crate) struct Reader {
    port: u16,
    /// Channels 0 and 1 have said their port.
    opened: [bool; 2],
}

impl Reader {
    pub(crate) fn new(port: u16) -> Self {
        Self {
            port,
            opened: [false; 2],
        }
    }

    /// One binary message, as it arrived.
    pub(crate) fn read<'a>(&mut self, message: &'a [u8]) -> Result<Frame<'a>, FrameError> {
        let (&channel, rest) = message.split_first().ok_or(FrameError::Empty)?;
        let index = match channel {
            DATA => 0,
            ERROR => 1,
            other => return Err(FrameError::Channel(other)),
        };
        if !self.opened[index] {
            let port: [u8; 2] = rest
                .try_into()
                .map_err(|_| FrameError::Opening(channel, rest.len()))?;
            let got = u16::from_le_bytes(port);
            if got != self.port {
                return Err(FrameError::Port {
                    channel,
                    got,
                    want: self.port,
                });
            }
            self.opened[index] = true;
            return Ok(Frame::Opened);
        }
        Ok(match channel {
            DATA => Frame::Data(rest),
            _ => Frame::Error(rest),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_channel_opens_with_its_port_then_carries_bytes() {
        let mut reader = Reader::new(5000);
        assert_eq!(reader.read(&[0, 0x88, 0x13]), Ok(Frame::Opened));
        assert_eq!(reader.read(&[1, 0x88, 0x13]), Ok(Frame::Opened));
        assert_eq!(reader.read(b"\0HTTP/1.1"), Ok(Frame::Data(b"HTTP/1.1")));
        // Two bytes after the opening are data, not a port.
        assert_eq!(
            reader.read(&[0, 0x88, 0x13]),
            Ok(Frame::Data(&[0x88, 0x13]))
        );
        assert_eq!(
            reader.read(b"\x01an error occurred forwarding 5000"),
            Ok(Frame::Error(b"an error occurred forwarding 5000"))
        );
        assert_eq!(reader.read(&[0]), Ok(Frame::Data(&[])));
    }

    #[test]
    fn what_breaks_the_protocol_is_named() {
        let mut reader = Reader::new(5000);
        assert_eq!(reader.read(&[]), Err(FrameError::Empty));
        assert_eq!(reader.read(&[2, 0x88, 0x13]), Err(FrameError::Channel(2)));
        assert_eq!(
            reader.read(&[0, 0x50, 0x00]),
            Err(FrameError::Port {
                channel: 0,
                got: 80,
                want: 5000
            })
        );
        assert_eq!(reader.read(b"\0GET"), Err(FrameError::Opening(0, 3)));
    }

    #[test]
    fn the_kubelets_words_are_kept_short_and_as_text() {
        assert_eq!(
            kubelet_words(b" dial tcp4 127.0.0.1:5000: connect: connection refused\n"),
            "dial tcp4 127.0.0.1:5000: connect: connection refused"
        );
        assert_eq!(kubelet_words(b"port \xff"), "port \u{fffd}");
        assert_eq!(kubelet_words(&[b'x'; 1 << 20]).len(), ERROR_TEXT);
    }
}
