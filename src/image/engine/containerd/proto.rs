//! The few protobuf messages of containerd's images and content services we use, as `prost`
//! messages (derived: no protoc, no build script; unknown fields skipped, the last of a repeated
//! singular field kept, as protobuf reads them).

use bytes::Bytes;
use prost::Message;

/// `containerd.types.Descriptor`: what an image name points at.
#[derive(Clone, PartialEq, Eq, Message)]
pub(crate) struct Descriptor {
    #[prost(string, tag = "1")]
    pub media_type: String,
    #[prost(string, tag = "2")]
    pub digest: String,
    #[prost(int64, tag = "3")]
    pub size: i64,
}

/// `GetImageRequest { string name = 1; }`
#[derive(Clone, PartialEq, Message)]
struct GetImageRequest {
    #[prost(string, tag = "1")]
    name: String,
}

/// `GetImageResponse { Image image = 1; }`
#[derive(Clone, PartialEq, Message)]
struct GetImageResponse {
    #[prost(message, optional, tag = "1")]
    image: Option<Image>,
}

/// `Image { string name = 1; map<string, string> labels = 2; Descriptor target = 3; }`: the
/// target is what we read.
#[derive(Clone, PartialEq, Message)]
struct Image {
    #[prost(message, optional, tag = "3")]
    target: Option<Descriptor>,
}

/// `InfoRequest { string digest = 1; }`, `ReadContentRequest { string digest = 1; int64 offset
/// = 2; int64 size = 3; }` (size 0 reads to the end).
#[derive(Clone, PartialEq, Message)]
struct ContentRequest {
    #[prost(string, tag = "1")]
    digest: String,
    #[prost(int64, tag = "2")]
    offset: i64,
}

/// `InfoResponse { Info info = 1; }`
#[derive(Clone, PartialEq, Message)]
struct InfoResponse {
    #[prost(message, optional, tag = "1")]
    info: Option<Info>,
}

/// `Info { string digest = 1; int64 size = 2; }`: the size is what we read.
#[derive(Clone, PartialEq, Message)]
struct Info {
    #[prost(int64, tag = "2")]
    size: i64,
}

/// `ReadContentResponse { int64 offset = 1; bytes data = 2; }`
#[derive(Clone, PartialEq, Message)]
struct ReadContentResponse {
    #[prost(int64, tag = "1")]
    offset: i64,
    #[prost(bytes = "bytes", tag = "2")]
    data: Bytes,
}

pub(super) fn get_image_request(name: &str) -> Vec<u8> {
    GetImageRequest {
        name: name.to_string(),
    }
    .encode_to_vec()
}

/// The image's target.
pub(crate) fn get_image_response(message: &[u8]) -> Result<Descriptor, String> {
    GetImageResponse::decode(message)
        .map_err(not_protobuf)?
        .image
        .ok_or("containerd's answer holds no image")?
        .target
        .ok_or_else(|| "containerd's image has no target".to_string())
}

pub(super) fn info_request(digest: &str) -> Vec<u8> {
    ContentRequest {
        digest: digest.to_string(),
        offset: 0,
    }
    .encode_to_vec()
}

/// The content's size.
pub(crate) fn info_response(message: &[u8]) -> Result<u64, String> {
    let info = InfoResponse::decode(message)
        .map_err(not_protobuf)?
        .info
        .ok_or("containerd's answer holds no content info")?;
    Ok(u64::try_from(info.size).unwrap_or(0))
}

pub(super) fn read_request(digest: &str, offset: u64) -> Vec<u8> {
    ContentRequest {
        digest: digest.to_string(),
        offset: i64::try_from(offset).unwrap_or(i64::MAX),
    }
    .encode_to_vec()
}

/// The offset and the data: a slice of the message, not a copy (these are the bulk of every
/// layer).
pub(crate) fn read_response(message: &Bytes) -> Result<(u64, Bytes), String> {
    let answer = ReadContentResponse::decode(message.clone()).map_err(not_protobuf)?;
    Ok((u64::try_from(answer.offset).unwrap_or(0), answer.data))
}

fn not_protobuf(err: prost::DecodeError) -> String {
    format!("containerd's answer is not the protobuf message we asked for: {err}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames built byte by byte, as a hostile or broken peer might send them.
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

    #[test]
    fn broken_framing_is_refused_and_the_last_of_a_repeated_field_kept() {
        // A varint that never ends.
        assert!(read_response(&Bytes::from(vec![0x08, 0xff, 0xff, 0xff])).is_err());
        // A varint longer than 64 bits.
        let mut long = vec![0x08];
        long.extend([0xff; 10]);
        long.push(0x01);
        assert!(read_response(&Bytes::from(long)).is_err());
        // Wire type 7 does not exist.
        assert!(info_response(&[0x0f]).is_err());
        // An unknown field is skipped; of two infos, the last one counts.
        let mut first = Vec::new();
        put_varint(&mut first, 2 << 3);
        put_varint(&mut first, 5);
        let mut last = Vec::new();
        put_varint(&mut last, 2 << 3);
        put_varint(&mut last, 7);
        let mut answer = Vec::new();
        put_bytes(&mut answer, 9, b"unknown");
        put_bytes(&mut answer, 1, &first);
        put_bytes(&mut answer, 1, &last);
        assert_eq!(info_response(&answer), Ok(7));
        assert_eq!(
            info_response(&[]),
            Err("containerd's answer holds no content info".to_string())
        );
    }

    #[test]
    fn requests_are_the_fields_containerd_reads() {
        let mut expected = Vec::new();
        put_bytes(&mut expected, 1, b"sha256:abc");
        assert_eq!(info_request("sha256:abc"), expected);
        assert_eq!(read_request("sha256:abc", 0), expected);
        put_varint(&mut expected, 2 << 3);
        put_varint(&mut expected, 1 << 20);
        assert_eq!(read_request("sha256:abc", 1 << 20), expected);
        let mut name = Vec::new();
        put_bytes(&mut name, 1, b"docker.io/library/a:b");
        assert_eq!(get_image_request("docker.io/library/a:b"), name);
    }
}
