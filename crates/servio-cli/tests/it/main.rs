//! The `servio` binary's integration tests: each module runs the real binary, or a real
//! `servio serve`, over real sockets. One binary for the crate, so the platform is linked once.

mod abuse;
mod balancer;
mod browser;
mod cli;
mod common;
mod demo;
mod fetch;
mod login;
mod mcp;
mod openapi;
mod operations;
mod owners;
mod readme;
mod secret_key;
mod unreachable;
mod worker;
