//! HTTP/1.1 on the wire for the test proxies: read a message head, copy a body with its framing.

use std::io::{BufRead, Read, Write};

/// The most header lines a head may have before it counts as garbage.
const MAX_HEADERS: usize = 100;

/// A message head as sent: its start line (request or status line) and header lines.
pub(crate) struct Head {
    pub start_line: String,
    pub headers: Vec<(String, String)>,
}

impl Head {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// A request's method; a response's protocol version.
    pub(crate) fn method(&self) -> &str {
        self.start_part(0)
    }

    /// A request's target; a response's status code.
    pub(crate) fn target(&self) -> &str {
        self.start_part(1)
    }

    fn start_part(&self, index: usize) -> &str {
        self.start_line.split(' ').nth(index).unwrap_or_default()
    }

    pub(crate) fn content_length(&self) -> Option<u64> {
        self.header("content-length")?.trim().parse().ok()
    }

    pub(crate) fn is_chunked(&self) -> bool {
        self.header("transfer-encoding")
            .is_some_and(|value| value.to_ascii_lowercase().contains("chunked"))
    }
}

/// Reads a head up to its blank line.
pub(crate) fn read_head(reader: &mut impl BufRead) -> std::io::Result<Head> {
    let mut start_line = String::new();
    if reader.read_line(&mut start_line)? == 0 {
        return Err(std::io::Error::other("no request head"));
    }
    let mut headers = Vec::new();
    for _ in 0..MAX_HEADERS {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            return Ok(Head {
                start_line: start_line.trim_end().to_string(),
                headers,
            });
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    Err(std::io::Error::other("no end to the header block"))
}

/// Copies a body framed by Content-Length or chunked encoding, framing included.
pub(crate) fn copy_body(
    head: &Head,
    from: &mut impl BufRead,
    to: &mut impl Write,
) -> std::io::Result<()> {
    if !head.is_chunked() {
        let length = head.content_length().unwrap_or(0);
        let copied = std::io::copy(&mut from.take(length), to)?;
        return if copied == length {
            Ok(())
        } else {
            Err(std::io::Error::other("the body ended early"))
        };
    }
    // Bounded: a chunked body of a test is far fewer chunks than this.
    for _ in 0..10_000_000 {
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
    Err(std::io::Error::other("too many chunks"))
}
