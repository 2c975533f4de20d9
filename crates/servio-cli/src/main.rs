//! The `servio` command: glue between the Servio libraries and the terminal.
//!
//! Exit codes, stable for scripts and CI: 0 everything is fine, 1 the input is invalid (an
//! invalid manifest, an ignored brief, a dropped value), 2 something could not be done (a file
//! that cannot be read, bad arguments).

mod auth;
mod brief_cmd;
mod brief_test_cmd;
mod call_cmd;
mod check_cmd;
mod cli;
mod credentials;
mod demo_cmd;
mod demo_site_cmd;
mod explain_cmd;
mod fetch;
mod init_cmd;
mod logging;
mod login_cmd;
mod mcp_cmd;
mod platform;
mod render;
mod running;
mod serve_cmd;
mod worker_cmd;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc rather than glibc's malloc: a worker's collection and a request's answer allocate
/// and free many small buffers across threads (HTTP, TLS, JSON), where glibc's arenas took a
/// seventh of a worker's CPU (BENCHMARKS.md, "Cost per collection").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use cli::{BriefCommand, Cli, Command};

/// How a command ended; maps to the documented exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0.
    Ok,
    /// Exit 1: the input is invalid.
    Invalid,
}

/// An error that ends the command with exit code 2.
#[derive(Debug)]
pub struct Failure(pub anyhow::Error);

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(error: E) -> Failure {
        Failure(error.into())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match try_main(cli) {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Invalid) => ExitCode::from(1),
        Err(Failure(error)) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn try_main(cli: Cli) -> Result<Outcome, Failure> {
    // The long-running commands log; the others answer on stdout and stderr themselves.
    if let Some(log) = cli.command.log_args() {
        logging::init(log.log_format);
    }
    match cli.command {
        Command::Check(args) => check_cmd::run(&args),
        Command::Init(args) => init_cmd::run(&args),
        Command::Explain(args) => explain_cmd::run(&args),
        Command::Brief { command: BriefCommand::Resolve(args) } => brief_cmd::resolve(&args),
        Command::Brief { command: BriefCommand::Extract(args) } => brief_cmd::extract(&args),
        Command::Brief { command: BriefCommand::Test(args) } => brief_test_cmd::run(&args),
        Command::Call(args) => call_cmd::run(&args),
        Command::Login(args) => login_cmd::run(&args),
        Command::Serve(args) => serve_cmd::run(&args),
        Command::Worker(args) => worker_cmd::run(&args),
        Command::DemoSite(args) => demo_site_cmd::run(&args),
        Command::Demo(args) => demo_cmd::run(&args),
        Command::Mcp(args) => mcp_cmd::run(&args),
        Command::Address(args) => {
            let site = servio_manifest::Site::parse(&args.site)?;
            println!("{}", site.prefixed_name(&args.tool));
            Ok(Outcome::Ok)
        }
    }
}
