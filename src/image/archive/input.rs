//! How an archive's bytes are reached: the input opened and recognised by its first bytes (`open`, `spool`),
//! a tar indexed once (`tar_index`) and read at offsets (`positioned`), its members by path (`members`),
//! where each blob lives (`blob`), and an engine's export read in one pass as it is produced (`one_pass`).

pub(super) mod blob;
pub(super) mod members;
pub(super) mod one_pass;
pub(super) mod open;
pub(super) mod positioned;
pub(super) mod spool;
pub(super) mod tar_index;
