//! The manifest crate's integration tests. One binary for the crate, so it is linked once.

mod properties;
mod rules;
