//! `mote`: secure IoT messaging over QUIC — the command-line tool.
//!
//! Today it runs `mote demo`; `get`, `serve`, `relay`, `broker`, `pub`, `sub` and `agent`
//! arrive with their issues.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod demo;
mod wire;

/// mote: secure IoT messaging over QUIC, end to end.
#[derive(Parser, Debug)]
#[command(name = "mote", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The main job: Eggert's transaction in simulation — a device fetches a 5 KiB object
    /// from a server over QUIC on the wlan and nbiot link profiles (1-RTT, resumed, 0-RTT).
    /// `--wire` shows the wire-layer walkthrough of the first round trip instead.
    Demo(demo::Args),
    /// A UDP link emulator between one QUIC client and one server (delay, rate, loss, drop
    /// lists, corruption, blackholes, NAT rebinding) that logs every datagram as JSON.
    Relay(mote_relay::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Demo(args) => demo::run_demo(args),
        Command::Relay(args) => mote_relay::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mote: {e:#}");
            ExitCode::FAILURE
        }
    }
}
