//! The core crate's integration tests, on every backend. One binary for the crate, so it is
//! linked once.

mod key_check;
