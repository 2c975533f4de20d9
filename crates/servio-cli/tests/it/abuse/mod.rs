//! The abuse suite (issue 25): one hostile user, site or manifest tries to freeze, starve or
//! bloat a real `servio serve` process, in the shapes a hostile audit found, on every backend
//! this machine has. Each test asserts bounded time and memory while `/healthz` keeps
//! answering within a second (`harness::HealthWatch`).
//!
//! One module per point of the issue; `harness` starts the platform and the hostile site.

mod amplification;
mod backfills;
mod big_manifest;
mod call_log;
mod connections;
mod dead_sites;
mod fairness;
mod harness;
mod lockout;
mod many_tools;
mod memory;
mod nul;
mod patterns;
mod raw_values;
mod refreshes;
mod schema;
mod sessions;
mod signup;
mod smoke;
mod subscriptions;
mod texts;
