//! The one crate that opens outbound connections to sites. So far: the address guard that
//! decides which addresses may be connected to (interpretation §9). Discovery, limits, tool
//! calls and OAuth follow (see the client issue).
#![deny(missing_docs)]

pub mod guard;

pub use guard::{Policy, Refusal, Rule};
