//! The few protobuf messages of containerd's images and content services we use, written and
//! read by hand (proto3 wire format: varints and length-delimited fields; unknown fields skipped).

use bytes::Bytes;

/// `containerd.types.Descriptor`: what an image name points at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
}

/// `GetImageRequest { string name = 1; }`
pub(super) fn get_image_request(name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    put_bytes(&mut out, 1, name.as_bytes());
    out
}

/// `GetImageResponse { Image image = 1; }` where `Image { string name = 1; Descriptor target = 3; }`
/// and `Descriptor { string media_type = 1; string digest = 2; int64 size = 3; }`.
pub(super) fn get_image_response(message: &[u8]) -> Result<Descriptor, String> {
    let image = field(message, 1)?.ok_or("containerd's answer holds no image")?;
    let target = field(&image, 3)?.ok_or("containerd's image has no target")?;
    let mut descriptor = Descriptor::default();
    for (number, value) in Fields(&target) {
        match (number, value?) {
            (1, Value::Bytes(text)) => descriptor.media_type = utf8(text)?,
            (2, Value::Bytes(text)) => descriptor.digest = utf8(text)?,
            (3, Value::Varint(size)) => descriptor.size = size,
            _ => {}
        }
    }
    Ok(descriptor)
}

/// `InfoRequest { string digest = 1; }`
pub(super) fn info_request(digest: &str) -> Vec<u8> {
    let mut out = Vec::new();
    put_bytes(&mut out, 1, digest.as_bytes());
    out
}

/// `InfoResponse { Info info = 1; }` where `Info { string digest = 1; int64 size = 2; }`: the size.
pub(super) fn info_response(message: &[u8]) -> Result<u64, String> {
    let info = field(message, 1)?.ok_or("containerd's answer holds no content info")?;
    for (number, value) in Fields(&info) {
        if let (2, Value::Varint(size)) = (number, value?) {
            return Ok(size);
        }
    }
    Ok(0)
}

/// `ReadContentRequest { string digest = 1; int64 offset = 2; int64 size = 3; }`; size 0 reads
/// to the end.
pub(super) fn read_request(digest: &str, offset: u64) -> Vec<u8> {
    let mut out = Vec::new();
    put_bytes(&mut out, 1, digest.as_bytes());
    if offset > 0 {
        put_varint(&mut out, 2 << 3);
        put_varint(&mut out, offset);
    }
    out
}

/// `ReadContentResponse { int64 offset = 1; bytes data = 2; }`: the offset and the data.
pub(super) fn read_response(message: &Bytes) -> Result<(u64, Bytes), String> {
    let (mut offset, mut data) = (0, Bytes::new());
    let mut at = 0;
    while at < message.len() {
        let (number, value, next) = next_field(message, at)?;
        match (number, value) {
            (1, Value::Varint(value)) => offset = value,
            // A slice of the message, not a copy: these are the bulk of every layer.
            (2, Value::Bytes(bytes)) => {
                let start = bytes.as_ptr() as usize - message.as_ptr() as usize;
                data = message.slice(start..start + bytes.len());
            }
            _ => {}
        }
        at = next;
    }
    Ok((offset, data))
}

enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// The fields of a message in order, each `(number, value)`.
struct Fields<'a>(&'a [u8]);

impl<'a> Iterator for Fields<'a> {
    type Item = (u64, Result<Value<'a>, String>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        Some(match next_field(self.0, 0) {
            Ok((number, value, next)) => {
                self.0 = &self.0[next..];
                (number, Ok(value))
            }
            Err(err) => {
                self.0 = &[];
                (0, Err(err))
            }
        })
    }
}

/// The last length-delimited field `number` (protobuf's rule for a repeated singular field).
fn field(message: &[u8], number: u64) -> Result<Option<Vec<u8>>, String> {
    let mut found = None;
    for (n, value) in Fields(message) {
        if let (true, Value::Bytes(bytes)) = (n == number, value?) {
            found = Some(bytes.to_vec());
        }
    }
    Ok(found)
}

fn next_field(message: &[u8], at: usize) -> Result<(u64, Value<'_>, usize), String> {
    let (key, mut at) = varint(message, at)?;
    let value = match key & 7 {
        0 => {
            let (value, next) = varint(message, at)?;
            at = next;
            Value::Varint(value)
        }
        2 => {
            let (len, start) = varint(message, at)?;
            let end = usize::try_from(len)
                .ok()
                .and_then(|len| start.checked_add(len))
                .filter(|&end| end <= message.len())
                .ok_or("a protobuf field runs past its message")?;
            at = end;
            Value::Bytes(&message[start..end])
        }
        1 => {
            at += 8;
            Value::Fixed
        }
        5 => {
            at += 4;
            Value::Fixed
        }
        other => {
            return Err(format!(
                "protobuf wire type {other} is not one containerd sends"
            ));
        }
    };
    if at > message.len() {
        return Err("a protobuf field runs past its message".to_string());
    }
    Ok((key >> 3, value, at))
}

fn varint(message: &[u8], mut at: usize) -> Result<(u64, usize), String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *message
            .get(at)
            .ok_or("a protobuf varint runs past its message")?;
        at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((value, at));
        }
    }
    Err("a protobuf varint is longer than 64 bits".to_string())
}

fn utf8(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "containerd sent a name that is not UTF-8".into())
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_bytes(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    put_varint(out, number << 3 | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_answer_gives_its_target() {
        // Image { name = "n"; labels = {"a": "b"}; target = { media_type, digest, size = 300 } }
        let mut target = Vec::new();
        put_bytes(&mut target, 1, b"application/vnd.oci.image.index.v1+json");
        put_bytes(&mut target, 2, b"sha256:abc");
        put_varint(&mut target, 3 << 3);
        put_varint(&mut target, 300);
        let mut label = Vec::new();
        put_bytes(&mut label, 1, b"a");
        put_bytes(&mut label, 2, b"b");
        let mut image = Vec::new();
        put_bytes(&mut image, 1, b"n");
        put_bytes(&mut image, 2, &label);
        put_bytes(&mut image, 3, &target);
        let mut answer = Vec::new();
        put_bytes(&mut answer, 1, &image);
        assert_eq!(
            get_image_response(&answer).unwrap(),
            Descriptor {
                media_type: "application/vnd.oci.image.index.v1+json".into(),
                digest: "sha256:abc".into(),
                size: 300,
            }
        );
    }

    #[test]
    fn a_read_answer_gives_its_offset_and_data() {
        let mut answer = Vec::new();
        put_varint(&mut answer, 1 << 3);
        put_varint(&mut answer, 1 << 20);
        put_bytes(&mut answer, 2, b"layer bytes");
        let (offset, data) = read_response(&Bytes::from(answer)).unwrap();
        assert_eq!((offset, &data[..]), (1 << 20, &b"layer bytes"[..]));
    }

    #[test]
    fn a_field_running_past_its_message_is_refused() {
        let mut answer = Vec::new();
        put_varint(&mut answer, 2 << 3 | 2);
        put_varint(&mut answer, 100);
        answer.extend_from_slice(b"short");
        assert!(read_response(&Bytes::from(answer)).is_err());
    }
}
