//! ring vs aws-lc-rs vs RustCrypto, measured through the same `mote_crypto::CryptoProvider`
//! calls, interleaved in one run so that machine noise hits all three alike.
//!
//! `cargo run --release -- [--rounds N] [--sample-ms MS]`
//!
//! Method: each (operation, library) case is calibrated to an iteration count that takes about
//! `--sample-ms`; then for each of `--rounds` rounds every case is timed once, libraries in a
//! rotating order. Reported: the median time per operation over the rounds, and the median over
//! rounds of the per-round ratio to ring (both numbers of a ratio come from the same round).

mod awslc;

use std::hint::black_box;
use std::time::{Duration, Instant};

use mote_crypto::fast::{Ring, SystemRng};
use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::{
    hkdf, AeadAlgorithm, AeadKey as _, CryptoProvider, HashAlgorithm, HeaderProtectionKey as _,
    KeyExchange as _, NamedGroup, SignatureScheme, SigningKey as _, MAX_SIGNATURE_LEN,
};

/// `openssl genpkey -algorithm ed25519` (PKCS#8 v1).
const ED25519_PKCS8: &[u8] = &hex::<48>(
    "302e020100300506032b65700422042060aa26063942dd0f17ffcd3982173e2c65e7721d4d5793bb02be19674f04c8dd",
);
/// `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 | openssl pkcs8 -topk8`.
const P256_PKCS8: &[u8] = &hex::<138>(concat!(
    "308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420",
    "f2fcd0f59762e67b5cf536c65823cd7288ae88754d2e0625e5dff4b10486d0bc",
    "a144034200",
    "0429276f03eb4037b96a4921c23319715b75065ebbf2bc8414edba286036c1156a",
    "f323dd46c3f23a9df28118fd11b4f513c9483dbe28048a4f350a69d39825b9c0"
));
/// RFC 7748 §6.1 Bob's public key: the peer share for X25519 key agreement.
const X25519_PEER: [u8; 32] =
    hex("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
/// RFC 6979 A.2.5 public key: the peer share for P-256 ECDH.
const P256_PEER: [u8; 65] = hex(concat!(
    "0460fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6",
    "7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299"
));

const fn hex<const N: usize>(s: &str) -> [u8; N] {
    const fn nibble(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => panic!("bad hex"),
        }
    }
    let b = s.as_bytes();
    assert!(b.len() == 2 * N);
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        out[i] = nibble(b[2 * i]) << 4 | nibble(b[2 * i + 1]);
        i += 1;
    }
    out
}

type Op = Box<dyn FnMut()>;

const OPS: &[&str] = &[
    "AES-128-GCM seal 1200 B",
    "AES-128-GCM seal 64 B",
    "ChaCha20-Poly1305 seal 1200 B",
    "HP mask AES-128",
    "HP mask ChaCha20",
    "HKDF-Expand-Label SHA-256 (16 B)",
    "X25519 keygen + agree",
    "P-256 ECDH keygen + agree",
    "ECDSA-P256-SHA256 sign",
    "ECDSA-P256-SHA256 verify",
    "Ed25519 sign",
    "Ed25519 verify",
];

/// The operations of `OPS`, in order, for one provider.
fn ops<P: CryptoProvider + Copy + 'static>(p: P) -> Vec<Op> {
    let nonce = [3u8; 12];
    let aad = [0x40u8; 20]; // a short-header QUIC packet's header
    let seal = |alg: AeadAlgorithm, len: usize| -> Op {
        let key = p.aead_key(alg, &vec![7u8; alg.key_len()]).unwrap();
        let mut buf = vec![0x5au8; len];
        Box::new(move || {
            black_box(key.seal_in_place(&nonce, &aad, &mut buf).unwrap());
        })
    };
    let mask = |alg: AeadAlgorithm| -> Op {
        let key = p.header_key(alg, &vec![9u8; alg.key_len()]).unwrap();
        let sample = [0x11u8; 16];
        Box::new(move || {
            black_box(key.mask(black_box(&sample)).unwrap());
        })
    };
    let kx = |group: NamedGroup, peer: &'static [u8]| -> Op {
        let mut rng = SystemRng::new();
        Box::new(move || {
            let k = p.start_key_exchange(group, &mut rng).unwrap();
            black_box(k.complete(peer).unwrap());
        })
    };
    let msg: &'static [u8] = &[0x20; 130]; // TLS 1.3 CertificateVerify content is 130 bytes
    let sign = |scheme: SignatureScheme, pkcs8: &[u8]| -> Op {
        let key = p.signing_key(scheme, pkcs8).unwrap();
        let mut rng = SystemRng::new();
        Box::new(move || {
            let mut out = [0u8; MAX_SIGNATURE_LEN];
            black_box(key.sign(&mut rng, msg, &mut out).unwrap());
        })
    };
    let verify = |scheme: SignatureScheme, pkcs8: &[u8]| -> Op {
        let key = p.signing_key(scheme, pkcs8).unwrap();
        let mut out = [0u8; MAX_SIGNATURE_LEN];
        let n = key.sign(&mut SystemRng::new(), msg, &mut out).unwrap();
        let sig = out[..n].to_vec();
        let public = key.public_key().to_vec();
        Box::new(move || {
            p.verify(scheme, &public, msg, &sig).unwrap();
        })
    };
    vec![
        seal(AeadAlgorithm::Aes128Gcm, 1200),
        seal(AeadAlgorithm::Aes128Gcm, 64),
        seal(AeadAlgorithm::ChaCha20Poly1305, 1200),
        mask(AeadAlgorithm::Aes128Gcm),
        mask(AeadAlgorithm::ChaCha20Poly1305),
        Box::new(move || {
            let mut out = [0u8; 16];
            hkdf::expand_label(
                &p,
                HashAlgorithm::Sha256,
                &[1; 32],
                b"quic key",
                b"",
                &mut out,
            )
            .unwrap();
            black_box(out);
        }),
        kx(NamedGroup::X25519, &X25519_PEER),
        kx(NamedGroup::Secp256r1, &P256_PEER),
        sign(SignatureScheme::EcdsaSecp256r1Sha256, P256_PKCS8),
        verify(SignatureScheme::EcdsaSecp256r1Sha256, P256_PKCS8),
        sign(SignatureScheme::Ed25519, ED25519_PKCS8),
        verify(SignatureScheme::Ed25519, ED25519_PKCS8),
    ]
}

/// Before timing anything: the three providers must agree with each other, so the numbers
/// are for correct implementations. Panics on a mismatch. Returns notes on behaviour that
/// differs between libraries.
fn cross_check() -> Vec<String> {
    // Same AEAD and header-protection output (ring's output is checked against the RFC and
    // GCM-spec vectors by mote-crypto's test suite).
    for alg in [
        AeadAlgorithm::Aes128Gcm,
        AeadAlgorithm::Aes256Gcm,
        AeadAlgorithm::ChaCha20Poly1305,
    ] {
        let key = vec![0x42u8; alg.key_len()];
        let seal = |k: &dyn Fn(&mut [u8]) -> [u8; 16]| {
            let mut buf = (0..1200u32).map(|i| i as u8).collect::<Vec<_>>();
            let tag = k(&mut buf);
            (buf, tag)
        };
        let n = [1u8; 12];
        let r = Ring.aead_key(alg, &key).unwrap();
        let a = awslc::AwsLc.aead_key(alg, &key).unwrap();
        let c = RustCrypto.aead_key(alg, &key).unwrap();
        let out_r = seal(&|b| r.seal_in_place(&n, b"aad", b).unwrap());
        assert!(
            out_r == seal(&|b| a.seal_in_place(&n, b"aad", b).unwrap()),
            "{alg:?} aws-lc-rs"
        );
        assert!(
            out_r == seal(&|b| c.seal_in_place(&n, b"aad", b).unwrap()),
            "{alg:?} RustCrypto"
        );
        let (mut ct, tag) = out_r;
        a.open_in_place(&n, b"aad", &mut ct, &tag).unwrap();
        let sample = [0x77u8; 16];
        let m = Ring.header_key(alg, &key).unwrap().mask(&sample).unwrap();
        assert_eq!(
            m,
            awslc::AwsLc
                .header_key(alg, &key)
                .unwrap()
                .mask(&sample)
                .unwrap()
        );
        assert_eq!(
            m,
            RustCrypto
                .header_key(alg, &key)
                .unwrap()
                .mask(&sample)
                .unwrap()
        );
    }
    // Key agreement across libraries, and signatures verified by another library.
    let mut rng = SystemRng::new();
    for group in [NamedGroup::X25519, NamedGroup::Secp256r1] {
        let r = Ring.start_key_exchange(group, &mut rng).unwrap();
        let a = awslc::AwsLc.start_key_exchange(group, &mut rng).unwrap();
        let (pr, pa) = (r.public_key().to_vec(), a.public_key().to_vec());
        assert_eq!(
            r.complete(&pa).unwrap().as_ref(),
            a.complete(&pr).unwrap().as_ref()
        );
    }
    for (scheme, pkcs8) in [
        (SignatureScheme::Ed25519, ED25519_PKCS8),
        (SignatureScheme::EcdsaSecp256r1Sha256, P256_PKCS8),
    ] {
        let mut out = [0u8; MAX_SIGNATURE_LEN];
        let k = awslc::AwsLc.signing_key(scheme, pkcs8).unwrap();
        let n = k.sign(&mut rng, b"m", &mut out).unwrap();
        Ring.verify(scheme, k.public_key(), b"m", &out[..n])
            .unwrap();
        RustCrypto
            .verify(scheme, k.public_key(), b"m", &out[..n])
            .unwrap();
        let k = Ring.signing_key(scheme, pkcs8).unwrap();
        let n = k.sign(&mut rng, b"m", &mut out).unwrap();
        awslc::AwsLc
            .verify(scheme, k.public_key(), b"m", &out[..n])
            .unwrap();
    }

    // RFC 8446 §4.2.8.2 allows only uncompressed P-256 key shares.
    let mut compressed = vec![0x02 | (P256_PEER[64] & 1)];
    compressed.extend_from_slice(&P256_PEER[1..33]);
    let accepts = |ok: bool| if ok { "accepts" } else { "rejects" };
    let mut notes = Vec::new();
    let r = Ring
        .start_key_exchange(NamedGroup::Secp256r1, &mut rng)
        .unwrap()
        .complete(&compressed)
        .is_ok();
    let a = awslc::AwsLc
        .start_key_exchange(NamedGroup::Secp256r1, &mut rng)
        .unwrap()
        .complete(&compressed)
        .is_ok();
    let c = RustCrypto
        .start_key_exchange(NamedGroup::Secp256r1, &mut rng)
        .unwrap()
        .complete(&compressed)
        .is_ok();
    notes.push(format!(
        "compressed P-256 key share (RFC 8446 forbids it): ring {}, aws-lc-rs {}, RustCrypto provider {}",
        accepts(r),
        accepts(a),
        accepts(c)
    ));
    notes
}

struct Case {
    f: Op,
    iters: u32,
    /// ns per operation, one per round.
    samples: Vec<f64>,
}

impl Case {
    fn run(&mut self) -> f64 {
        let start = Instant::now();
        for _ in 0..self.iters {
            (self.f)();
        }
        start.elapsed().as_nanos() as f64 / f64::from(self.iters)
    }

    fn calibrate(&mut self, target: Duration) {
        self.iters = 1;
        loop {
            let start = Instant::now();
            for _ in 0..self.iters {
                (self.f)();
            }
            if start.elapsed() >= target / 2 || self.iters >= 1 << 24 {
                let per = start.elapsed().as_secs_f64() / f64::from(self.iters);
                self.iters = ((target.as_secs_f64() / per).ceil() as u32).max(1);
                return;
            }
            self.iters *= 2;
        }
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 10_000.0 {
        format!("{:.1} µs", ns / 1000.0)
    } else {
        format!("{ns:.0} ns")
    }
}

fn cpu_info() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .unwrap_or("?")
        .trim()
        .to_string();
    let flags: Vec<&str> = info
        .lines()
        .find(|l| l.starts_with("flags"))
        .map(|l| l.split_whitespace().collect())
        .unwrap_or_default();
    let wanted = [
        "aes",
        "pclmulqdq",
        "avx",
        "avx2",
        "bmi2",
        "adx",
        "sha_ni",
        "vaes",
        "vpclmulqdq",
        "avx512f",
    ];
    let have: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|f| flags.contains(f))
        .collect();
    format!(
        "{model}; {} logical CPUs; flags: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        have.join(" ")
    )
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let mut rounds = 41usize;
    let mut sample_ms = 3u64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--rounds N")
            }
            "--sample-ms" => {
                sample_ms = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .expect("--sample-ms MS")
            }
            _ => {
                eprintln!("usage: crypto-choice [--rounds N] [--sample-ms MS]");
                std::process::exit(2);
            }
        }
    }

    const LIBS: [&str; 3] = ["ring 0.17", "aws-lc-rs 1", "RustCrypto"];
    let mut cases: Vec<Vec<Case>> = Vec::new(); // [op][lib]
    let per_lib = [ops(Ring), ops(awslc::AwsLc), ops(RustCrypto)];
    let mut per_lib: Vec<std::vec::IntoIter<Op>> =
        per_lib.into_iter().map(Vec::into_iter).collect();
    for _ in OPS {
        cases.push(
            per_lib
                .iter_mut()
                .map(|it| Case {
                    f: it.next().unwrap(),
                    iters: 1,
                    samples: Vec::with_capacity(rounds),
                })
                .collect(),
        );
    }

    let notes = cross_check();
    let target = Duration::from_millis(sample_ms);
    let load_before = loadavg();
    let started = Instant::now();
    for op in cases.iter_mut() {
        for case in op.iter_mut() {
            case.calibrate(target);
        }
    }
    for round in 0..rounds {
        for op in cases.iter_mut() {
            for i in 0..LIBS.len() {
                let lib = (i + round) % LIBS.len();
                let ns = op[lib].run();
                op[lib].samples.push(ns);
            }
        }
    }
    let took = started.elapsed();

    println!("CPU: {}", cpu_info());
    println!(
        "{rounds} rounds x ~{sample_ms} ms per sample, {:.1} s; load average before: {load_before}, after: {}",
        took.as_secs_f64(),
        loadavg()
    );
    println!();
    println!(
        "| operation | {} | {} | {} | aws-lc-rs / ring | RustCrypto / ring |",
        LIBS[0], LIBS[1], LIBS[2]
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, op) in OPS.iter().zip(&cases) {
        let med: Vec<f64> = op.iter().map(|c| median(&c.samples)).collect();
        let ratio = |lib: usize| {
            let r: Vec<f64> = op[lib]
                .samples
                .iter()
                .zip(&op[0].samples)
                .map(|(x, r)| x / r)
                .collect();
            median(&r)
        };
        println!(
            "| {name} | {} | {} | {} | {:.2} | {:.2} |",
            fmt_ns(med[0]),
            fmt_ns(med[1]),
            fmt_ns(med[2]),
            ratio(1),
            ratio(2)
        );
    }
    println!();
    println!("Ratios are medians of same-round ratios (>1 = slower than ring).");
    println!();
    println!(
        "Cross-check passed: identical AEAD/HP output, key agreement and signatures interoperate."
    );
    for n in notes {
        println!("Note: {n}");
    }
}
