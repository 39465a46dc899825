//! Reading an HTTP answer's body into memory, never past a cap: a server that streams without
//! end (a broken token endpoint, a hostile engine socket) costs at most the cap, not all memory.

use bytes::{Bytes, BytesMut};

/// The most a token endpoint's answer may hold: a token is a few KiB, a JWT with many claims a
/// few tens of KiB.
pub const TOKEN_BODY_LIMIT: usize = 1 << 20;
/// The most an engine's `GET /images/{name}/json` answer may hold.
pub const INSPECT_BODY_LIMIT: usize = 4 << 20;
/// The most of an engine's error answer we read (its `message` is one line).
pub const ENGINE_ERROR_BODY_LIMIT: usize = 64 << 10;

/// Why a capped body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CappedBodyError {
    #[error("the answer is larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error(transparent)]
    Read(#[from] reqwest::Error),
}

/// The whole body of `response`, or `TooLarge` as soon as it passes `limit` bytes (checked
/// against `Content-Length` first, then as chunks arrive).
pub async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Bytes, CappedBodyError> {
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Err(CappedBodyError::TooLarge { limit });
    }
    let mut body = BytesMut::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Err(CappedBodyError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// Up to `limit` bytes of the start of `response`'s body; what follows is not read, and a
/// body that breaks off keeps what came.
pub async fn read_start(mut response: reqwest::Response, limit: usize) -> Bytes {
    let mut body = BytesMut::new();
    while body.len() < limit
        && let Ok(Some(chunk)) = response.chunk().await
    {
        let room = limit - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    body.freeze()
}
