//! The commands: each parses its arguments, calls the library layers, and prints the result.

pub mod advertise;
pub mod completion;
pub mod doctor;
pub mod info;
pub mod ls;
pub mod prune;
pub mod push;
pub mod why;
