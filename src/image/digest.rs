//! Content digests (`sha256:<hex>`): parsing, computing, serialising.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

/// A validated `sha256:<64 lowercase hex>` digest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

#[derive(Debug, thiserror::Error)]
#[error("{} is not a sha256 digest (expected sha256: followed by 64 lowercase hex digits)", crate::plumbing::output::shown(.0))]
pub struct BadDigest(pub String);

impl Digest {
    /// The digest of a finished hash.
    pub fn from_sha256(hasher: Sha256) -> Self {
        Self(format!("sha256:{}", hex::encode(hasher.finalize())))
    }

    pub fn of_bytes(bytes: &[u8]) -> Self {
        Self::from_sha256(Sha256::new_with_prefix(bytes))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The 64 hex digits without the `sha256:` prefix.
    pub fn hex(&self) -> &str {
        &self.0["sha256:".len()..]
    }

    /// `sha256:0123456789ab…`: enough to tell blobs apart in a message.
    pub fn short(&self) -> String {
        format!("sha256:{}…", &self.hex()[..12])
    }
}

impl FromStr for Digest {
    type Err = BadDigest;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = s
            .strip_prefix("sha256:")
            .ok_or_else(|| BadDigest(s.into()))?;
        let valid = hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if valid {
            Ok(Self(s.to_string()))
        } else {
            Err(BadDigest(s.into()))
        }
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_digests_keep_twelve_hex_digits() {
        assert_eq!(Digest::of_bytes(b"").short(), "sha256:e3b0c44298fc…");
    }

    #[test]
    fn parses_only_sha256_with_64_lowercase_hex() {
        let good = format!("sha256:{}", "a".repeat(64));
        assert_eq!(good.parse::<Digest>().unwrap().hex(), "a".repeat(64));
        assert!(
            format!("sha256:{}", "A".repeat(64))
                .parse::<Digest>()
                .is_err()
        );
        assert!(
            format!("sha512:{}", "a".repeat(64))
                .parse::<Digest>()
                .is_err()
        );
        assert!("sha256:abc".parse::<Digest>().is_err());
    }

    #[test]
    fn of_bytes_matches_the_known_empty_digest() {
        assert_eq!(
            Digest::of_bytes(b"").as_str(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
