//! The interop runner's test cases (`anchors-verification.md` §1.3) as this harness runs
//! them: files, network (relay arguments), what the client and server are asked to do.

use std::time::Duration;

/// How the client fetches the files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// One connection, every URL.
    Single,
    /// Two connections sharing a session file: the first file, then the rest resumed.
    Resume,
    /// As `Resume`, the second connection sending its requests in 0-RTT.
    ZeroRtt,
    /// One connection per file, one after the other (the runner's `multiconnect`).
    Multiconnect,
}

/// One test case.
#[derive(Clone, Debug)]
pub struct Case {
    /// The runner's test name.
    pub name: &'static str,
    /// File sizes to serve and fetch.
    pub files: Vec<usize>,
    /// Length of the random file names (the zerortt case asks for 250).
    pub name_len: usize,
    /// Relay arguments beyond the default network.
    pub relay: Vec<String>,
    /// Whether to replace the default network (15 ms each way, 10 Mbit/s) entirely.
    pub own_network: bool,
    /// How the client fetches.
    pub plan: Plan,
    /// ALPN of the requests.
    pub alpn: &'static str,
    /// Client options.
    pub chacha20: bool,
    /// Client starts in v1 and offers v2.
    pub v2: bool,
    /// Client updates its keys early.
    pub key_update: bool,
    /// The server offers a preferred address (RFC 9000 §9.6), reached through the relay's
    /// second listening address; the client is expected to move there on its own.
    pub preferred_address: bool,
    /// Server validates addresses with Retry.
    pub retry: bool,
    /// Server uses the long certificate chain (amplificationlimit).
    pub long_chain: bool,
    /// Server on `[::1]`.
    pub ipv6: bool,
    /// How long the whole case may take.
    pub timeout: Duration,
    /// Why the case cannot run in this harness at all, if so.
    pub not_reproducible: Option<&'static str>,
}

const KB: usize = 1000;
const MB: usize = 1000 * 1000;

impl Case {
    fn new(name: &'static str, files: Vec<usize>) -> Self {
        Case {
            name,
            files,
            name_len: 12,
            relay: Vec::new(),
            own_network: false,
            plan: Plan::Single,
            alpn: "hq-interop",
            chacha20: false,
            v2: false,
            key_update: false,
            preferred_address: false,
            retry: false,
            long_chain: false,
            ipv6: false,
            timeout: Duration::from_secs(60),
            not_reproducible: None,
        }
    }

    fn relay(mut self, args: &[&str]) -> Self {
        self.relay.extend(args.iter().map(|s| s.to_string()));
        self
    }
}

/// Every test case, in the runner's order.
pub fn all() -> Vec<Case> {
    let rebind = |name, kind: &str| {
        let mut c =
            Case::new(name, vec![10 * MB]).relay(&[kind, "5000", "--first-rebind-ms", "1000"]);
        c.timeout = Duration::from_secs(90);
        c
    };
    vec![
        Case::new("handshake", vec![KB]),
        Case::new("transfer", vec![2 * MB, 3 * MB, 5 * MB]),
        {
            let mut c = Case::new("longrtt", vec![KB]).relay(&[
                "--delay-ms",
                "750",
                "--rate-kbit",
                "10000",
            ]);
            c.own_network = true;
            c
        },
        Case { chacha20: true, ..Case::new("chacha20", vec![3 * MB]) },
        Case::new("multiplexing", vec![32; 1999]),
        Case { retry: true, ..Case::new("retry", vec![10 * KB]) },
        Case { plan: Plan::Resume, ..Case::new("resumption", vec![5 * KB, 10 * KB]) },
        Case { plan: Plan::ZeroRtt, name_len: 250, ..Case::new("zerortt", vec![32; 40]) },
        // Not a runner case: zerortt with one request in the resumed connection, the share
        // of it a one-request-at-a-time client (`mote get --device`) can send in 0-RTT;
        // judged by the zerortt criteria.
        Case { plan: Plan::ZeroRtt, name_len: 250, ..Case::new("zerortt-1", vec![32; 2]) },
        Case { alpn: "h3", ..Case::new("http3", vec![5 * KB, 10 * KB, 500 * KB]) },
        Case::new("blackhole", vec![10 * MB]).relay(&[
            "--blackhole",
            "5000:2000",
            "--blackhole",
            "12000:2000",
            "--blackhole",
            "19000:2000",
            "--blackhole",
            "26000:2000",
        ]),
        Case { key_update: true, ..Case::new("keyupdate", vec![3 * MB]) },
        Case::new("ecn", vec![100 * KB]),
        Case { long_chain: true, ..Case::new("amplificationlimit", vec![5 * KB]) }
            .relay(&["--drop-to-server", "2,3,4,5,6,7"]),
        Case {
            plan: Plan::Multiconnect,
            timeout: Duration::from_secs(300),
            ..Case::new("handshakeloss", vec![KB; 50])
        }
        .relay(&["--loss", "0.3", "--max-burst", "3"]),
        Case::new("transferloss", vec![2 * MB]).relay(&["--loss", "0.02", "--max-burst", "3"]),
        Case {
            plan: Plan::Multiconnect,
            timeout: Duration::from_secs(300),
            ..Case::new("handshakecorruption", vec![KB; 50])
        }
        .relay(&["--corrupt", "0.3"]),
        Case::new("transfercorruption", vec![2 * MB]).relay(&["--corrupt", "0.02"]),
        Case { ipv6: true, ..Case::new("ipv6", vec![5 * KB, 10 * KB]) },
        Case { v2: true, ..Case::new("v2", vec![KB]) },
        rebind("rebind-port", "--rebind-port-every"),
        rebind("rebind-addr", "--rebind-addr-every"),
        Case { preferred_address: true, ..Case::new("connectionmigration", vec![2 * MB]) },
    ]
}

/// The cases `cargo xtask test` runs against aioquic and quic-go.
pub const CI_SUBSET: &[&str] = &[
    "handshake",
    "transfer",
    "retry",
    "resumption",
    "zerortt",
    "zerortt-1",
    "http3",
    "keyupdate",
    "v2",
    "ecn",
];
