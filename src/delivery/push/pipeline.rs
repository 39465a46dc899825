//! Bytes to a registry: one uploader (HEAD, mount, streamed verified PUTs), the commit (children by digest, the tag last), what was sent (records), progress.

pub(crate) mod attachments;
pub(crate) mod commit;
pub(crate) mod manifest;
pub(crate) mod progress;
pub(crate) mod record_file;
pub(crate) mod records;
pub(crate) mod stream;
pub(crate) mod to_registry;
pub(crate) mod upload;
