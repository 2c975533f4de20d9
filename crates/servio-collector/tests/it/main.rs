//! The collector's integration tests, on every backend. One binary for the crate, so it is
//! linked once.

mod collect;
mod common;
mod credentials;
mod in_flight;
