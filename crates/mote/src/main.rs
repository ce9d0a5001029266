//! `mote`: secure IoT messaging over QUIC — the command-line tool.
//!
//! Today it runs `mote demo`; `get`, `serve`, `relay`, `broker`, `pub`, `sub` and `agent`
//! arrive with their issues.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod demo;

/// mote: secure IoT messaging over QUIC, end to end.
#[derive(Parser, Debug)]
#[command(name = "mote", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The main job: the first round trip of a device's QUIC handshake, built and parsed by
    /// mote's wire layer (v1 and v2), plus Retry and Version Negotiation.
    Demo(demo::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Demo(args) => demo::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mote: {e:#}");
            ExitCode::FAILURE
        }
    }
}
