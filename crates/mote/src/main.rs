//! `mote`: secure IoT messaging over QUIC — the command-line tool.
//!
//! `mote demo` runs the simulated transaction; `mote serve` and `mote get` are the file
//! server and client on real UDP sockets. `relay`, `broker`, `pub`, `sub` and `agent`
//! arrive with their issues.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod demo;
mod net;
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
    /// Serve files over QUIC (hq-interop and HTTP/3) on a real UDP socket.
    Serve(net::ServeArgs),
    /// Fetch files over one QUIC connection (hq-interop or HTTP/3); exits 0 only when every
    /// file arrived complete.
    Get(net::GetArgs),
    /// A UDP link emulator between one QUIC client and one server (delay, rate, loss, drop
    /// lists, corruption, blackholes, NAT rebinding) that logs every datagram as JSON.
    Relay(mote_relay::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Demo(args) => demo::run_demo(args),
        Command::Serve(args) => net::serve(args),
        Command::Get(args) => net::get(args),
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
