#!/usr/bin/env python3
"""Interop harness: mote-tls (through the `tls-interop` driver) against aioquic's TLS 1.3 engine.

aioquic's `tls.Context` is a handshake engine for QUIC with no record layer, like mote-tls, so
the two can be joined in memory: this script runs aioquic in-process and the mote session in
the `tls-interop` driver (a child process speaking the framed protocol described in its
`src/main.rs`), shuttles handshake bytes between them turn by turn, and then compares what
both sides derived:

* the handshake and 1-RTT traffic secrets in both directions, and the 0-RTT secret, byte for
  byte (aioquic's `update_traffic_key_cb` against mote's `QuicHooks::install_secrets`);
* the cipher suite, the ALPN protocol both sides settled on, and each side's
  quic_transport_parameters as received by the other (must arrive intact);
* the level every mote handshake message was sent at (aioquic's receive path does not look
  at levels, so the harness does), resumption and 0-RTT verdicts on both sides, and which
  messages the server sent (no Certificate when resuming).

Negative cases check that mote fails with the right alert. A case aioquic cannot do
(HelloRetryRequest, raw public keys, external PSKs, ...) is reported as "unsupported" with the
reason, never as passed.

Usage: aioquic_peer.py --driver PATH [--case SUBSTRING]... [--json] [--list] [--keep DIR]
Exit status: 0 if no case failed, 1 otherwise. `cargo xtask interop-tls` runs it in a venv
with a pinned aioquic.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

from aioquic import tls
from aioquic.buffer import Buffer
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Frame types of the driver protocol (see src/main.rs).
TURN, FINISH, REPORT = 0x10, 0x11, 0x12
# mote's levels on the wire, and aioquic's epochs for them.
LEVEL_EPOCH = {0: tls.Epoch.INITIAL, 1: tls.Epoch.HANDSHAKE, 2: tls.Epoch.ONE_RTT}
# RFC 9001 §4: the level each handshake message type must travel at.
MESSAGE_LEVEL = {1: 0, 2: 0, 8: 1, 11: 1, 13: 1, 15: 1, 20: 1, 4: 2}
MESSAGE_NAME = {
    1: "ClientHello", 2: "ServerHello", 4: "NewSessionTicket", 8: "EncryptedExtensions",
    11: "Certificate", 13: "CertificateRequest", 15: "CertificateVerify", 20: "Finished",
}
SUITES = {
    "aes128": tls.CipherSuite.AES_128_GCM_SHA256,
    "aes256": tls.CipherSuite.AES_256_GCM_SHA384,
    "chacha20": tls.CipherSuite.CHACHA20_POLY1305_SHA256,
}
GROUPS = {"x25519": tls.Group.X25519, "p256": tls.Group.SECP256R1}
ALERT = {a.value: a.name for a in tls.AlertDescription}
SERVER_NAME = "mote.example"
# Transport parameters are opaque to TLS; these are shaped like real ones (RFC 9000 §18.2:
# initial_source_connection_id, initial_max_data, max_idle_timeout, ...) and differ per side.
CLIENT_TP = bytes.fromhex("0f08c1c2c3c4c5c6c7c8" "0504801000000104800075300304450000c0" "0e0104")
SERVER_TP = bytes.fromhex(
    "0008d1d2d3d4d5d6d7d8" "0f08e1e2e3e4e5e6e7e8" "0504802000000104800061a80e0108"
    "0210" + "5a" * 16
)
# A 1 KB reserved (greased) transport parameter, for a ClientHello/EncryptedExtensions
# bigger than one QUIC packet.
LARGE_TP_EXTRA = bytes.fromhex("4b1b") + bytes.fromhex("43e8") + bytes(range(256)) * 4


# ----------------------------------------------------------------------------------- PKI


@dataclass
class Identity:
    """A certificate (DER and PEM), its PKCS#8 key, and the key object."""

    cert: x509.Certificate
    key: object
    der_path: str
    pem_path: str
    key_path: str
    spki_path: str


class Pki:
    """Test PKI made fresh for each run: P-256 and Ed25519 CAs with leaves for
    mote.example, a P-256 intermediate with its own leaf, and an unrelated CA."""

    def __init__(self, directory: str):
        self.dir = directory
        now = datetime.datetime.now(datetime.timezone.utc)
        self.not_before = now - datetime.timedelta(days=1)
        self.not_after = now + datetime.timedelta(days=30)
        p256 = lambda: ec.generate_private_key(ec.SECP256R1())  # noqa: E731
        self.ca = self._make("ca", "mote interop CA", p256(), None, ca=True)
        self.leaf = self._make("leaf", SERVER_NAME, p256(), self.ca)
        self.ca_ed = self._make("ca-ed25519", "mote interop Ed25519 CA", ed25519.Ed25519PrivateKey.generate(), None, ca=True)
        self.leaf_ed = self._make("leaf-ed25519", SERVER_NAME, ed25519.Ed25519PrivateKey.generate(), self.ca_ed)
        self.inter = self._make("intermediate", "mote interop intermediate", p256(), self.ca, ca=True)
        self.leaf_inter = self._make("leaf-inter", SERVER_NAME, p256(), self.inter)
        self.other_ca = self._make("other-ca", "unrelated CA", p256(), None, ca=True)
        self.leaf_ip = self._make("leaf-ip", "127.0.0.1", p256(), self.ca)
        self.client = self._make("client", "mote client", p256(), self.ca)
        self.ca_p384 = self._make("ca-p384", "mote interop P-384 CA", ec.generate_private_key(ec.SECP384R1()), None, ca=True)
        self.leaf_p384_ca = self._make("leaf-p384-ca", SERVER_NAME, p256(), self.ca_p384)
        # 200 extra names make a ~5 KB certificate: a Certificate message beyond 4096 bytes.
        self.leaf_big = self._make("leaf-big", SERVER_NAME, p256(), self.ca,
                                   extra_names=[f"host-{i:03}.{SERVER_NAME}" for i in range(200)])

    def _make(self, name: str, cn: str, key, issuer: Identity | None, ca: bool = False,
              extra_names: list[str] | None = None) -> Identity:
        try:
            san = x509.IPAddress(ipaddress.ip_address(cn))
        except ValueError:
            san = x509.DNSName(cn)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer.cert.subject if issuer else subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self.not_before)
            .not_valid_after(self.not_after)
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        )
        if ca:
            builder = builder.add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
            )
        else:
            builder = (
                builder.add_extension(x509.SubjectAlternativeName([san] + [x509.DNSName(n) for n in extra_names or []]), critical=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .add_extension(
                    x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True
                )
            )
        if issuer:
            builder = builder.add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.key.public_key()), critical=False
            )
        signer = issuer.key if issuer else key
        if isinstance(signer, ed25519.Ed25519PrivateKey):
            algorithm = None
        elif isinstance(signer.curve, ec.SECP384R1):
            algorithm = hashes.SHA384()
        else:
            algorithm = hashes.SHA256()
        cert = builder.sign(signer, algorithm)
        base = os.path.join(self.dir, name)
        with open(base + ".der", "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.DER))
        with open(base + ".pem", "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
        with open(base + ".pk8", "wb") as f:
            f.write(
                key.private_bytes(
                    serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
                )
            )
        with open(base + ".spki", "wb") as f:
            f.write(
                key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
            )
        return Identity(cert, key, base + ".der", base + ".pem", base + ".pk8", base + ".spki")


# ------------------------------------------------------------------------------ the peers


class CaseFailure(Exception):
    """A check failed."""


class Unsupported(Exception):
    """aioquic cannot do what the case needs."""


def check(condition: bool, what: str) -> None:
    if not condition:
        raise CaseFailure(what)


def messages(data: bytes) -> list[tuple[int, bytes]]:
    """Splits a run of whole handshake messages into (type, bytes)."""
    out, i = [], 0
    while i + 4 <= len(data):
        n = 4 + int.from_bytes(data[i + 1 : i + 4], "big")
        out.append((data[i], data[i : i + n]))
        i += n
    return out


class AioPeer:
    """One aioquic `tls.Context` plus what it reported."""

    def __init__(
        self,
        is_client: bool,
        alpn: list[str] | None = None,
        tp: bytes | None = b"",
        suites: list[str] | None = None,
        groups: list[str] | None = None,
        identity: Identity | None = None,
        chain: list[Identity] | None = None,
        cafile: str | None = None,
        max_early_data: int | None = None,
        session_ticket: tls.SessionTicket | None = None,
        ticket_store: dict | None = None,
        request_client_certificate: bool = False,
        want_tickets: bool = True,
    ):
        self.ctx = tls.Context(
            is_client=is_client,
            alpn_protocols=alpn if alpn is not None else ["h3"],
            cafile=cafile,
            cipher_suites=[SUITES[s] for s in suites] if suites else None,
            max_early_data=max_early_data,
            server_name=SERVER_NAME if is_client else None,
        )
        self.is_client = is_client
        self.tp = tp
        if tp is not None:
            self.ctx.handshake_extensions = [(tls.ExtensionType.QUIC_TRANSPORT_PARAMETERS, tp)]
        if groups:
            self.ctx._supported_groups = [GROUPS[g] for g in groups]
        if identity:
            self.ctx.certificate = identity.cert
            self.ctx.certificate_private_key = identity.key
            self.ctx.certificate_chain = [c.cert for c in chain or []]
        self.ctx._request_client_certificate = request_client_certificate
        self.secrets: dict[str, dict[str, str]] = {}
        self.suites: dict[str, int] = {}
        self.ctx.update_traffic_key_cb = self._on_key
        self.tickets: list[tls.SessionTicket] = []
        if is_client:
            self.ctx.session_ticket = session_ticket
            if want_tickets:
                self.ctx.new_session_ticket_cb = self.tickets.append
        elif ticket_store is not None:
            self.ctx.new_session_ticket_cb = lambda t: ticket_store.__setitem__(t.ticket, t)
            self.ctx.get_session_ticket_cb = ticket_store.get
        self.error: tls.Alert | None = None
        self.started = False

    def _on_key(self, direction, epoch, suite, secret: bytes) -> None:
        name = {tls.Epoch.ZERO_RTT: "zero_rtt", tls.Epoch.HANDSHAKE: "handshake", tls.Epoch.ONE_RTT: "one_rtt"}[epoch]
        ours = direction == tls.Direction.ENCRYPT
        side = "client" if ours == self.is_client else "server"
        self.secrets.setdefault(name, {})[side] = secret.hex()
        self.suites[name] = int(suite)

    def turn(self, frames: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        """Feeds (level, bytes) frames; returns what aioquic wrote, by level."""
        bufs = {e: Buffer(capacity=1 << 16) for e in LEVEL_EPOCH.values()}
        try:
            if self.is_client and not self.started:
                self.ctx.handle_message(b"", bufs)
            for _, data in frames:
                if self.error is None:
                    self.ctx.handle_message(data, bufs)
        except tls.Alert as e:
            self.error = e
        self.started = True
        return [(level, bufs[e].data) for level, e in LEVEL_EPOCH.items() if bufs[e].data]

    def alert(self) -> int | None:
        return None if self.error is None else int(self.error.description)

    def peer_tp(self) -> bytes | None:
        for typ, value in self.ctx.received_extensions or []:
            if typ == tls.ExtensionType.QUIC_TRANSPORT_PARAMETERS:
                return value
        return None


class Driver:
    """The mote session in the `tls-interop` child process."""

    def __init__(self, path: str, args: list[str], timeout: float = 60.0):
        self.cmd = [path] + args
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.timer = threading.Timer(timeout, self.proc.kill)
        self.timer.start()
        self.report: dict | None = None

    def _write(self, typ: int, payload: bytes = b"") -> None:
        self.proc.stdin.write(struct.pack(">BI", typ, len(payload)) + payload)

    def _read(self) -> tuple[int, bytes]:
        head = self.proc.stdout.read(5)
        if len(head) < 5:
            raise CaseFailure(f"driver exited early: {self._stderr()}")
        typ, n = struct.unpack(">BI", head)
        return typ, self.proc.stdout.read(n)

    def _stderr(self) -> str:
        self.proc.wait()
        return self.proc.stderr.read().decode(errors="replace").strip() or f"exit status {self.proc.returncode}"

    def turn(self, frames: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        for level, data in frames:
            self._write(level, data)
        self._write(TURN)
        self.proc.stdin.flush()
        out = []
        while True:
            typ, payload = self._read()
            if typ == TURN:
                return out
            check(typ in LEVEL_EPOCH, f"driver sent frame type {typ:#x}")
            out.append((typ, payload))

    def finish(self) -> dict:
        self._write(FINISH)
        self.proc.stdin.flush()
        typ, payload = self._read()
        check(typ == REPORT, f"driver sent frame type {typ:#x} instead of its report")
        self.proc.stdin.close()
        self.proc.wait()
        self.timer.cancel()
        self.report = json.loads(payload)
        return self.report


Tamper = Callable[[str, int, int, bytes], bytes]


@dataclass
class Run:
    """One handshake: the mote report, the aioquic peer, and every frame that went by."""

    mote: dict
    aio: AioPeer
    mote_is_client: bool
    frames: list[tuple[str, int, bytes]] = field(default_factory=list)

    @property
    def client(self) -> str:
        return "mote" if self.mote_is_client else "aioquic"

    def sent_by(self, who: str) -> list[tuple[int, int]]:
        """(level, message type) of every message `who` sent."""
        return [(lvl, typ) for w, lvl, data in self.frames if w == who for typ, _ in messages(data)]


def handshake(
    driver: str,
    mote_args: list[str],
    aio: AioPeer,
    mote_is_client: bool,
    tamper: Tamper | None = None,
    chunk: int = 0,
) -> Run:
    """Runs one handshake between a fresh driver process and `aio`, client first, until a
    turn produces nothing. `tamper(sender, turn, level, bytes)` may alter bytes in flight;
    `chunk` > 0 delivers them in pieces of that size."""
    role = "client" if mote_is_client else "server"
    mote = Driver(driver, ["--role", role] + mote_args)
    run = Run(mote={}, aio=aio, mote_is_client=mote_is_client)
    try:
        sides = [("mote", mote.turn), ("aioquic", aio.turn)]
        if not mote_is_client:
            sides.reverse()
        inbound: list[tuple[int, bytes]] = []
        for n in range(16):
            who, step = sides[n % 2]
            out = step(inbound)
            run.frames += [(who, lvl, data) for lvl, data in out]
            if tamper:
                out = [(lvl, tamper(who, n // 2, lvl, data)) for lvl, data in out]
            if chunk:
                out = [(lvl, data[i : i + chunk]) for lvl, data in out for i in range(0, len(data), chunk)]
            inbound = out
            if not out and n > 0:
                break
        run.mote = mote.finish()
    finally:
        if mote.proc.poll() is None:
            mote.proc.kill()
        mote.timer.cancel()
    return run


# -------------------------------------------------------------------------------- checks


def check_levels(run: Run) -> None:
    """Every message mote sent went at its RFC 9001 level, and the driver's own record
    agrees with what crossed the wire."""
    wire = run.sent_by("mote")
    for level, typ in wire:
        expected = MESSAGE_LEVEL.get(typ)
        check(expected == level, f"mote sent {MESSAGE_NAME.get(typ, typ)} at level {level}, expected {expected}")
    check([tuple(x) for x in run.mote["sent"]] == wire, "driver's sent-message record differs from the wire")


def check_success(run: Run, alpn: str = "h3") -> None:
    """Both sides completed and agree on everything observable."""
    m, a = run.mote, run.aio
    check(m["error"] is None, f"mote failed: {m['error']}")
    check(a.error is None, f"aioquic failed: {a.error!r} ({ALERT.get(a.alert())})")
    check(m["complete"] and m["handshake_complete"], "mote did not complete")
    expected_state = tls.State.CLIENT_POST_HANDSHAKE if a.is_client else tls.State.SERVER_POST_HANDSHAKE
    check(a.ctx.state == expected_state, f"aioquic stopped in {a.ctx.state}")
    check_levels(run)
    suite = int(a.ctx.key_schedule.cipher_suite)
    check(m["suite"] == suite, f"suite: mote {m['suite']:#x}, aioquic {suite:#x}")
    for level in ("handshake", "one_rtt"):
        ms, asec = m["secrets"].get(level), a.secrets.get(level)
        check(ms is not None and asec is not None, f"{level} secrets missing (mote {ms}, aioquic {asec})")
        check(ms["suite"] == a.suites[level] == suite, f"{level} secret suites differ")
        for side in ("client", "server"):
            check(ms[side] == asec.get(side), f"{level} {side} secret differs:\n  mote    {ms[side]}\n  aioquic {asec.get(side)}")
    check(m["alpn"] == alpn, f"mote ALPN {m['alpn']!r}, expected {alpn!r}")
    check(a.ctx.alpn_negotiated == alpn, f"aioquic ALPN {a.ctx.alpn_negotiated!r}, expected {alpn!r}")
    check(m["peer_transport_parameters"] == a.tp.hex(), "mote received different transport parameters than aioquic sent")
    mote_tp = CLIENT_TP if run.mote_is_client else SERVER_TP
    check(a.peer_tp() is not None, "aioquic received no transport parameters")
    check(a.peer_tp() in (mote_tp, mote_tp + LARGE_TP_EXTRA), "aioquic received different transport parameters than mote sent")
    check(not m["hello_retry_request"], "unexpected HelloRetryRequest")


def check_full(run: Run) -> None:
    """A full (certificate) handshake, not resumed."""
    check(not run.mote["psk_accepted"] and not run.aio.ctx.session_resumed, "unexpectedly resumed")
    server = "aioquic" if run.mote_is_client else "mote"
    check((1, 11) in run.sent_by(server), "the server sent no Certificate in a full handshake")
    check((1, 15) in run.sent_by(server), "the server sent no CertificateVerify in a full handshake")


def check_resumed(run: Run) -> None:
    check(run.mote["psk_accepted"], "mote did not resume")
    check(run.aio.ctx.session_resumed, "aioquic did not resume")
    server = "aioquic" if run.mote_is_client else "mote"
    sent = {typ for _, typ in run.sent_by(server)}
    check(11 not in sent and 15 not in sent, "the server sent a Certificate/CertificateVerify when resuming")


def check_early(run: Run, accepted: bool) -> None:
    m, a = run.mote, run.aio
    check(m["early_data_accepted"] is accepted, f"mote 0-RTT verdict {m['early_data_accepted']}, expected {accepted}")
    check(m["early_data_hook"] is accepted, f"mote early_data hook {m['early_data_hook']}")
    check(a.ctx.early_data_accepted is accepted, f"aioquic 0-RTT verdict {a.ctx.early_data_accepted}")
    mz, az = m["secrets"].get("zero_rtt"), a.secrets.get("zero_rtt")
    check(mz is not None and az is not None, f"0-RTT secret missing (mote {mz}, aioquic {az})")
    check(mz["client"] == az.get("client"), f"0-RTT secret differs:\n  mote    {mz['client']}\n  aioquic {az.get('client')}")
    check(mz["suite"] == a.suites["zero_rtt"], "0-RTT suites differ")


def check_mote_transport_error(run: Run, code: int) -> None:
    err = run.mote["error"]
    check(err is not None, f"mote did not fail (expected transport error {code:#x})")
    check(err["quic_error_code"] == code, f"mote failed with {err}, expected QUIC error {code:#x}")


def check_mote_alert(run: Run, allowed: set[int]) -> None:
    err = run.mote["error"]
    names = "/".join(ALERT[a] for a in sorted(allowed))
    check(err is not None, f"mote did not fail (expected {names})")
    check(err["alert"] in allowed, f"mote failed with {ALERT.get(err['alert'])} ({err['debug']}), expected {names}")
    check(err["quic_error_code"] == 0x100 + err["alert"], f"QUIC error code {err['quic_error_code']:#x}")
    check(not run.mote["complete"], "mote completed despite the error")


# --------------------------------------------------------------------------------- cases


@dataclass
class Case:
    name: str
    role: str  # "mote-client" or "mote-server"
    what: str
    run: Callable[["Env"], str] | None = None  # returns a detail line
    unsupported: str | None = None


@dataclass
class Env:
    driver: str
    pki: Pki
    dir: str

    def client_args(self, ca: Identity | None = None, extra: list[str] | None = None) -> list[str]:
        ca = ca or self.pki.ca
        return ["--server-name", SERVER_NAME, "--ca", ca.der_path, "--tp", CLIENT_TP.hex()] + (extra or [])

    def server_args(self, leaf: Identity | None = None, chain: list[Identity] | None = None, extra: list[str] | None = None) -> list[str]:
        leaf = leaf or self.pki.leaf
        args = ["--cert", leaf.der_path]
        for c in chain or []:
            args += ["--cert", c.der_path]
        return args + ["--key", leaf.key_path, "--tp", SERVER_TP.hex()] + (extra or [])

    def aio_server(self, leaf: Identity | None = None, **kw) -> AioPeer:
        return AioPeer(is_client=False, tp=kw.pop("tp", SERVER_TP), identity=leaf or self.pki.leaf, **kw)

    def aio_client(self, ca: Identity | None = None, **kw) -> AioPeer:
        return AioPeer(is_client=True, tp=kw.pop("tp", CLIENT_TP), cafile=(ca or self.pki.ca).pem_path, **kw)


def summary(run: Run) -> str:
    m = run.mote
    suite = {int(v): k for k, v in SUITES.items()}.get(m["suite"], m["suite"])
    group = {0x1D: "x25519", 0x17: "p256"}.get(m["group"], m["group"])
    parts = [f"{suite}/{group}"]
    if m["psk_accepted"]:
        parts.append("resumed")
    if m["early_data_accepted"]:
        parts.append("0-RTT")
    return " ".join(parts)


def mote_client_case(name: str, what: str, mote: list[str] | None = None, aio=None,
                     ca=None, leaf=None, expect_suite: str | None = None, expect_group: str | None = None,
                     chunk: int = 0, alpn: str = "h3") -> Case:
    """A full handshake with mote as the client."""

    def run(env: Env) -> str:
        args = env.client_args(ca=ca(env) if ca else None, extra=mote)
        server = env.aio_server(leaf=leaf(env) if leaf else None, **aio_kw(aio, env))
        r = handshake(env.driver, args, server, mote_is_client=True, chunk=chunk)
        check_success(r, alpn)
        check_full(r)
        expect(r, expect_suite, expect_group)
        return summary(r)

    return Case(name, "mote-client", what, run)


def mote_server_case(name: str, what: str, mote: list[str] | None = None, aio=None,
                     leaf=None, chain=None, ca=None, expect_suite: str | None = None,
                     expect_group: str | None = None, chunk: int = 0, large_tp: bool = False,
                     alpn: str = "h3") -> Case:
    """A full handshake with mote as the server."""

    def run(env: Env) -> str:
        kw = aio_kw(aio, env)
        if large_tp:
            kw["tp"] = CLIENT_TP + LARGE_TP_EXTRA
        args = env.server_args(leaf=leaf(env) if leaf else None, chain=chain(env) if chain else None, extra=mote)
        client = env.aio_client(ca=ca(env) if ca else None, **kw)
        r = handshake(env.driver, args, client, mote_is_client=False, chunk=chunk)
        check_success(r, alpn)
        check_full(r)
        expect(r, expect_suite, expect_group)
        return summary(r)

    return Case(name, "mote-server", what, run)


def aio_kw(aio, env: Env) -> dict:
    """A case's aioquic keyword arguments: a dict, or a function of the environment."""
    return dict(aio(env) if callable(aio) else aio or {})


def expect(run: Run, suite: str | None, group: str | None) -> None:
    if suite:
        check(run.mote["suite"] == int(SUITES[suite]), f"negotiated {run.mote['suite']:#x}, expected {suite}")
    if group:
        check(run.mote["group"] == int(GROUPS[group]), f"negotiated group {run.mote['group']:#x}, expected {group}")


def resumption_case(role: str, early: bool, provider: str = "rustcrypto", reject_early: bool = False) -> Case:
    """A full handshake that yields a ticket, then a second one resuming with it (and 0-RTT)."""
    mote_is_client = role == "mote-client"
    name = "0rtt" if early else "resumption"
    if reject_early:
        name = "0rtt-rejected"
    if provider != "rustcrypto":
        name += f"-{provider}"
    what = {
        "resumption": "NewSessionTicket from a full handshake; second handshake resumes (psk_dhe_ke), no Certificate",
        "0rtt": "resumption with early_data: 0-RTT secret identical, accepted by both (max_early_data_size 0xffffffff)",
        "0rtt-rejected": "0-RTT offered but the resuming server no longer allows it: rejected, 1-RTT resumption",
    }[name.split("-ring")[0]]

    def run(env: Env) -> str:
        prov = ["--provider", provider]
        if mote_is_client:
            ticket = os.path.join(env.dir, f"ticket-{name}.bin")
            store: dict = {}
            first_srv = env.aio_server(ticket_store=store, max_early_data=0xFFFFFFFF if early else None)
            first = handshake(env.driver, env.client_args(extra=prov + ["--save-ticket", ticket]), first_srv, True)
            check_success(first)
            check_full(first)
            check(first.mote["tickets"] >= 1, "mote received no ticket")
            check(os.path.exists(ticket), "no ticket saved")
            second_srv = env.aio_server(ticket_store=store, max_early_data=0xFFFFFFFF if early else None)
            extra = prov + ["--resume", ticket] + (["--early-data"] if early else [])
            second = handshake(env.driver, env.client_args(extra=extra), second_srv, True)
        else:
            server_extra = prov + ["--tickets", "2"] + (["--early-data"] if early else [])
            first_cli = env.aio_client()
            first = handshake(env.driver, env.server_args(extra=server_extra), first_cli, False)
            check_success(first)
            check_full(first)
            check(len(first_cli.tickets) == 2, f"aioquic received {len(first_cli.tickets)} tickets, expected 2")
            # The second ticket (nonce 1) for plain resumption, the first (nonce 0) for 0-RTT.
            ticket = first_cli.tickets[0 if early else -1]
            if early:
                check(ticket.max_early_data_size == 0xFFFFFFFF, f"max_early_data_size {ticket.max_early_data_size}")
            if reject_early:
                server_extra = prov + ["--tickets", "2"]
            second_cli = env.aio_client(session_ticket=ticket)
            second = handshake(env.driver, env.server_args(extra=server_extra), second_cli, False)
        check_success(second)
        check_resumed(second)
        check(second.mote["suite"] == first.mote["suite"], "the resumed suite differs from the ticket's")
        if early and not reject_early:
            check_early(second, True)
        elif reject_early:
            m = second.mote
            check(m["early_data_accepted"] is False, f"mote 0-RTT verdict {m['early_data_accepted']}, expected rejection")
            check(second.aio.ctx.early_data_accepted is False, "aioquic thinks 0-RTT was accepted")
        else:
            check(second.mote["early_data_accepted"] is None, "0-RTT was offered")
            check("zero_rtt" not in second.mote["secrets"], "a 0-RTT secret was installed")
        return summary(second)

    return Case(name, role, what, run)


def negative_wrong_ca(env: Env) -> str:
    r = handshake(env.driver, env.client_args(ca=env.pki.other_ca), env.aio_server(), True)
    check_mote_alert(r, {42, 48})
    return f"mote: {ALERT[r.mote['error']['alert']]} ({r.mote['error']['debug']})"


def negative_wrong_name(env: Env) -> str:
    args = ["--server-name", "other.example", "--ca", env.pki.ca.der_path, "--tp", CLIENT_TP.hex()]
    r = handshake(env.driver, args, env.aio_server(), True)
    check_mote_alert(r, {42})
    return f"mote: {ALERT[r.mote['error']['alert']]} ({r.mote['error']['debug']})"


def flip_in(data: bytes, typ: int, offset_from_end: int = 1) -> bytes:
    """Flips one bit in the message of type `typ` (counting from its end)."""
    out, i = bytearray(data), 0
    for t, m in messages(data):
        if t == typ:
            out[i + len(m) - offset_from_end] ^= 0x01
            return bytes(out)
        i += len(m)
    return data


def tamper_case(role: str, name: str, what: str, sender_turn: int, typ: int, alerts: set[int], offset: int = 1) -> Case:
    mote_is_client = role == "mote-client"

    def run(env: Env) -> str:
        hit = []

        def tamper(who: str, turn: int, level: int, data: bytes) -> bytes:
            if who == "aioquic" and turn == sender_turn and level == 1:
                changed = flip_in(data, typ, offset)
                hit.append(changed != data)
                return changed
            return data

        if mote_is_client:
            r = handshake(env.driver, env.client_args(), env.aio_server(), True, tamper=tamper)
        else:
            r = handshake(env.driver, env.server_args(), env.aio_client(), False, tamper=tamper)
        check(any(hit), "the message to tamper with was not seen")
        check_mote_alert(r, alerts)
        return f"mote: {ALERT[r.mote['error']['alert']]} ({r.mote['error']['debug']})"

    return Case(name, role, what, run)


def negative_alpn(env: Env) -> str:
    r = handshake(env.driver, env.server_args(), env.aio_client(alpn=["hq-interop"]), False)
    check_mote_alert(r, {120})
    return f"mote: {ALERT[r.mote['error']['alert']]}"


def hrr_probe(env: Env) -> str:
    """mote offers an X25519 share and lists P-256 too; aioquic (P-256 only) would have to
    send a HelloRetryRequest."""
    server = env.aio_server(groups=["p256"])
    r = handshake(env.driver, env.client_args(extra=["--groups", "x25519,p256"]), server, True)
    if r.aio.error is None and r.mote["hello_retry_request"]:
        check_success(r)
        return summary(r) + " after HelloRetryRequest"
    raise Unsupported(
        "aioquic has no HelloRetryRequest: given only a share it does not take, its server "
        f"answers {ALERT.get(r.aio.alert())} ({r.aio.error})"
    )


def certificate_request(env: Env) -> str:
    server = env.aio_server(request_client_certificate=True)
    r = handshake(env.driver, env.client_args(), server, True)
    check_success(r)
    check((1, 13) in r.sent_by("aioquic"), "aioquic sent no CertificateRequest")
    sent = r.sent_by("mote")
    check(sent[-2:] == [(1, 11), (1, 20)], f"mote's second flight was {sent}")
    empty = [m for w, lvl, d in r.frames if w == "mote" for t, m in messages(d) if t == 11]
    check(empty == [bytes.fromhex("0b000004" "00" "000000")], "mote's Certificate is not empty")
    return summary(r) + ", empty client Certificate"


def client_hello_of(run: Run) -> tls.ClientHello:
    """The ClientHello the client sent (parsed with aioquic's strict parser)."""
    first = next(d for w, lvl, d in run.frames if w == run.client and lvl == 0)
    return tls.pull_client_hello(Buffer(data=messages(first)[0][1]))


def ip_address(env: Env) -> str:
    """X.509 for an IP address: the name to verify is 127.0.0.1, which must not go into
    server_name (RFC 6066 §3: "Literal IPv4 and IPv6 addresses are not permitted")."""
    args = ["--server-name", "127.0.0.1", "--ca", env.pki.ca.der_path, "--tp", CLIENT_TP.hex()]
    r = handshake(env.driver, args, env.aio_server(leaf=env.pki.leaf_ip), True)
    check_success(r)
    sni = client_hello_of(r).server_name
    check(sni is None, f"mote sent the IP literal {sni!r} as server_name")
    return summary(r) + ", no server_name sent"


def fqdn(env: Env) -> str:
    """A fully qualified name with its trailing dot: verified against the certificate, sent
    in server_name without the dot (RFC 6066 §3)."""
    args = ["--server-name", SERVER_NAME + ".", "--ca", env.pki.ca.der_path, "--tp", CLIENT_TP.hex()]
    r = handshake(env.driver, args, env.aio_server(), True)
    check_success(r)
    sni = client_hello_of(r).server_name
    check(sni == SERVER_NAME, f"mote sent server_name {sni!r}, expected {SERVER_NAME!r}")
    return summary(r) + f", server_name {sni}"


def mote_client_unknown_ticket(env: Env) -> str:
    """mote resumes (offering 0-RTT) with a ticket the server does not know: full handshake,
    0-RTT rejected."""
    ticket = os.path.join(env.dir, "ticket-unknown.bin")
    first = handshake(env.driver, env.client_args(extra=["--save-ticket", ticket]),
                      env.aio_server(ticket_store={}, max_early_data=0xFFFFFFFF), True)
    check_success(first)
    r = handshake(env.driver, env.client_args(extra=["--resume", ticket, "--early-data"]),
                  env.aio_server(ticket_store={}, max_early_data=0xFFFFFFFF), True)
    check(client_hello_of(r).early_data, "mote did not offer 0-RTT")
    check_success(r)
    check_full(r)
    check(r.mote["early_data_accepted"] is False and r.mote["early_data_hook"] is False, "0-RTT not rejected on mote's side")
    check(not r.aio.ctx.early_data_accepted, "aioquic accepted 0-RTT")
    return summary(r) + ", 0-RTT rejected, full handshake"


def mote_client_suite_mismatch(env: Env) -> str:
    """The ticket is for ChaCha20 (SHA-256); the resuming server picks AES-256 (SHA-384), so
    it cannot take the PSK: full handshake, 0-RTT rejected."""
    ticket = os.path.join(env.dir, "ticket-chacha.bin")
    store: dict = {}
    first = handshake(env.driver, env.client_args(extra=["--save-ticket", ticket]),
                      env.aio_server(ticket_store=store, max_early_data=0xFFFFFFFF, suites=["chacha20"]), True)
    check_success(first)
    expect(first, "chacha20", None)
    r = handshake(env.driver, env.client_args(extra=["--resume", ticket, "--early-data"]),
                  env.aio_server(ticket_store=store, max_early_data=0xFFFFFFFF), True)
    check(client_hello_of(r).pre_shared_key is not None, "mote did not offer the ticket")
    check_success(r)
    check_full(r)
    expect(r, "aes256", None)
    check(r.mote["early_data_accepted"] is False, "0-RTT not rejected on mote's side")
    return summary(r) + ", ticket not taken, 0-RTT rejected"


def mote_server_unknown_ticket(env: Env) -> str:
    """aioquic offers a ticket mote never issued (and 0-RTT): full handshake, 0-RTT rejected."""
    now = datetime.datetime.now(datetime.timezone.utc)
    forged = tls.SessionTicket(
        age_add=12345, cipher_suite=tls.CipherSuite.AES_128_GCM_SHA256,
        not_valid_after=now + datetime.timedelta(hours=1), not_valid_before=now,
        resumption_secret=os.urandom(32), server_name=SERVER_NAME,
        ticket=b"tk01" + os.urandom(80), max_early_data_size=0xFFFFFFFF,
    )
    r = handshake(env.driver, env.server_args(extra=["--tickets", "1", "--early-data"]),
                  env.aio_client(session_ticket=forged), False)
    check_success(r)
    check_full(r)
    check(r.mote["early_data_accepted"] is False, f"mote 0-RTT verdict {r.mote['early_data_accepted']}")
    check(not r.aio.ctx.early_data_accepted, "aioquic thinks 0-RTT was accepted")
    return summary(r) + ", 0-RTT rejected, full handshake"


def mote_server_ticket_suite(env: Env) -> str:
    """The ticket is for ChaCha20; the resuming ClientHello offers every suite (AES-256 first):
    mote keeps the ticket's suite, so the PSK and 0-RTT are usable."""
    args = env.server_args(extra=["--tickets", "1", "--early-data"])
    first_cli = env.aio_client(suites=["chacha20"])
    first = handshake(env.driver, args, first_cli, False)
    check_success(first)
    expect(first, "chacha20", None)
    r = handshake(env.driver, args, env.aio_client(session_ticket=first_cli.tickets[0]), False)
    check_success(r)
    check_resumed(r)
    expect(r, "chacha20", None)
    check_early(r, True)
    return summary(r)


def client_key_certificate_request(env: Env) -> str:
    """mote has a raw-public-key client key, but aioquic ignores client_certificate_type, so
    its CertificateRequest (X.509) gets an empty Certificate."""
    server = env.aio_server(request_client_certificate=True)
    r = handshake(env.driver, env.client_args(extra=["--client-key", env.pki.client.key_path]), server, True)
    check_success(r)
    empty = [m for w, lvl, d in r.frames if w == "mote" for t, m in messages(d) if t == 11]
    check(empty == [bytes.fromhex("0b000004" "00" "000000")], "mote's Certificate is not empty")
    check((1, 15) not in r.sent_by("mote"), "mote sent a CertificateVerify")
    return summary(r) + ", empty client Certificate"


def client_auth(required: bool):
    def run(env: Env) -> str:
        extra = ["--client-auth", "required" if required else "optional", "--client-allow", env.pki.client.spki_path]
        r = handshake(env.driver, env.server_args(extra=extra), env.aio_client(), False)
        if required:
            check_mote_alert(r, {43})
            return f"mote: {ALERT[r.mote['error']['alert']]}"
        check_success(r)
        check((1, 13) not in r.sent_by("mote"), "mote sent a CertificateRequest the client cannot answer")
        return summary(r) + ", client not authenticated"

    return run


def resumption_chain(mote_is_client: bool):
    """Three handshakes: full, then resumed with 0-RTT using the first ticket, then resumed
    with 0-RTT using a ticket issued on the resumed connection (whose resumption secret comes
    from a PSK key schedule)."""

    def run(env: Env) -> str:
        runs = []
        if mote_is_client:
            store: dict = {}
            for i in range(3):
                ticket = os.path.join(env.dir, f"ticket-chain-{i}.bin")
                extra = ["--save-ticket", ticket]
                if i:
                    extra += ["--resume", os.path.join(env.dir, f"ticket-chain-{i - 1}.bin"), "--early-data"]
                server = env.aio_server(ticket_store=store, max_early_data=0xFFFFFFFF)
                runs.append(handshake(env.driver, env.client_args(extra=extra), server, True))
                check_success(runs[-1])
                check(os.path.exists(ticket), f"handshake {i + 1} left no ticket")
        else:
            args = env.server_args(extra=["--tickets", "1", "--early-data"])
            ticket = None
            for i in range(3):
                client = env.aio_client(session_ticket=ticket)
                runs.append(handshake(env.driver, args, client, False))
                check_success(runs[-1])
                check(len(client.tickets) == 1, f"handshake {i + 1}: {len(client.tickets)} tickets")
                ticket = client.tickets[0]
        check_full(runs[0])
        for r in runs[1:]:
            check_resumed(r)
            check_early(r, True)
        return summary(runs[-1]) + " (third handshake)"

    return run


def nst_max_early_data(env: Env) -> str:
    """RFC 9001 §4.6.1: a NewSessionTicket whose max_early_data_size is not 0xffffffff is a
    PROTOCOL_VIOLATION, even after a complete handshake."""
    r = handshake(env.driver, env.client_args(), env.aio_server(ticket_store={}, max_early_data=16384), True)
    check(r.mote["complete"], "mote did not complete the handshake before the ticket")
    check((2, 4) in r.sent_by("aioquic"), "aioquic sent no NewSessionTicket")
    check_mote_transport_error(r, 0x0A)
    return f"mote: PROTOCOL_VIOLATION ({r.mote['error']['debug']})"


def missing_tp(mote_is_client: bool):
    """RFC 9001 §8.2: no quic_transport_parameters is missing_extension (0x16d)."""

    def run(env: Env) -> str:
        if mote_is_client:
            r = handshake(env.driver, env.client_args(), env.aio_server(tp=None), True)
        else:
            r = handshake(env.driver, env.server_args(), env.aio_client(tp=None), False)
        check_mote_alert(r, {109})
        return f"mote: {ALERT[109]} (QUIC {r.mote['error']['quic_error_code']:#x})"

    return run


def no_psk_modes(env: Env) -> str:
    """aioquic without a ticket handler sends no psk_key_exchange_modes: mote, configured
    for tickets, must not send any (RFC 8446 §4.2.9)."""
    client = env.aio_client(want_tickets=False)
    r = handshake(env.driver, env.server_args(extra=["--tickets", "2"]), client, False)
    check(client_hello_of(r).psk_key_exchange_modes is None, "aioquic sent psk_key_exchange_modes")
    check_success(r)
    check((2, 4) not in r.sent_by("mote"), "mote sent a NewSessionTicket")
    return summary(r) + ", no tickets"


def certificate_over_rx(env: Env) -> str:
    """A Certificate message larger than mote's 4096-byte receive buffer (mote's default RX,
    the RFC 9000 §7.5 minimum). Delivered whole it is parsed from the caller's slice and the
    handshake completes; delivered in packet-sized pieces, as QUIC would, the partial message
    cannot be buffered: CRYPTO_BUFFER_EXCEEDED, as §7.5 says."""
    whole = handshake(env.driver, env.client_args(), env.aio_server(leaf=env.pki.leaf_big), True)
    sizes = [len(m) for w, lvl, d in whole.frames if w == "aioquic" for t, m in messages(d) if t == 11]
    check(sizes and sizes[0] > 4096, f"the Certificate message is only {sizes} bytes")
    check_success(whole)
    pieces = handshake(env.driver, env.client_args(), env.aio_server(leaf=env.pki.leaf_big), True, chunk=1100)
    check_mote_transport_error(pieces, 0x0D)
    return f"{sizes[0]}-byte Certificate: whole, completes; in 1100-byte pieces, CRYPTO_BUFFER_EXCEEDED (RX = 4096)"


def p384_ca(env: Env) -> str:
    """A P-256 leaf under a P-384 CA: mote verifies only P-256 and Ed25519 signatures, so it
    must refuse the chain with a certificate alert (not internal_error)."""
    r = handshake(env.driver, env.client_args(ca=env.pki.ca_p384), env.aio_server(leaf=env.pki.leaf_p384_ca), True)
    check_mote_alert(r, {42, 43})
    return f"mote: {ALERT[r.mote['error']['alert']]} (limitation: no ECDSA P-384 verification)"


def cases() -> list[Case]:
    pki = lambda attr: (lambda env: getattr(env.pki, attr))  # noqa: E731
    out = [
        # --- mote as the client, aioquic as the server.
        mote_client_case("x509-p256", "full handshake, ECDSA P-256 CA + leaf, defaults on both sides"),
        mote_client_case("x509-ed25519", "full handshake, Ed25519 CA + leaf", ca=pki("ca_ed"), leaf=pki("leaf_ed")),
        mote_client_case("x509-chain", "leaf signed by an intermediate, chain sent by aioquic",
                         leaf=pki("leaf_inter"), aio=lambda env: {"chain": [env.pki.inter]}),
        *[mote_client_case(f"suite-{s}", f"{s} only on both sides", mote=["--suites", s], aio={"suites": [s]}, expect_suite=s)
          for s in SUITES],
        *[mote_client_case(f"group-{g}", f"mote offers {g} only", mote=["--groups", g], expect_group=g) for g in GROUPS],
        mote_client_case("group-p256-share", "mote shares p256 first, lists x25519 too",
                         mote=["--groups", "p256,x25519"], expect_group="p256"),
        mote_client_case("fragmented", "every CRYPTO run delivered in 1-byte pieces (both ways)", chunk=1),
        mote_client_case("ring", "full handshake with mote's ring provider", mote=["--provider", "ring"]),
        mote_client_case("ring-chacha20-p256", "ring provider, ChaCha20-Poly1305 + secp256r1",
                         mote=["--provider", "ring", "--suites", "chacha20", "--groups", "p256"],
                         expect_suite="chacha20", expect_group="p256"),
        Case("certificate-request", "mote-client", "aioquic requests a client certificate; mote has none and sends an empty one",
             certificate_request),
        mote_client_case("alpn-preference", "mote offers hq-interop, h3; aioquic prefers h3",
                         mote=["--alpn", "hq-interop,h3"], aio={"alpn": ["h3", "hq-interop"]}),
        Case("ip-address", "mote-client", "certificate for 127.0.0.1 (IP SAN): verified, no IP literal in server_name",
             ip_address),
        Case("fqdn", "mote-client", "server name with a trailing dot: verified, sent without the dot", fqdn),
        Case("client-key-certificate-request", "mote-client",
             "mote holds a raw-public-key client key; aioquic's CertificateRequest gets an empty Certificate",
             client_key_certificate_request),
        Case("hrr", "mote-client", "HelloRetryRequest: aioquic server takes only secp256r1, mote shares x25519", hrr_probe),
        resumption_case("mote-client", early=False),
        resumption_case("mote-client", early=True),
        Case("resumption-chain", "mote-client", "full, then 0-RTT with its ticket, then 0-RTT with the resumed connection's ticket",
             resumption_chain(True)),
        Case("unknown-ticket", "mote-client", "resuming (with 0-RTT) at a server that does not know the ticket",
             mote_client_unknown_ticket),
        Case("ticket-suite-mismatch", "mote-client", "ChaCha20 ticket, server picks AES-256: PSK not taken, 0-RTT rejected",
             mote_client_suite_mismatch),
        Case("nst-max-early-data", "mote-client", "ticket with max_early_data_size 16384: PROTOCOL_VIOLATION",
             nst_max_early_data),
        Case("missing-transport-parameters", "mote-client", "EncryptedExtensions without quic_transport_parameters",
             missing_tp(True)),
        Case("certificate-over-rx", "mote-client", "a 5 KB Certificate message against the default 4 KB RX",
             certificate_over_rx),
        Case("x509-p384-ca", "mote-client", "P-256 leaf under a P-384 CA: refused with a certificate alert", p384_ca),
        Case("wrong-ca", "mote-client", "mote pins an unrelated CA: must fail with bad_certificate/unknown_ca", negative_wrong_ca),
        Case("wrong-name", "mote-client", "server_name not in the certificate: must fail with bad_certificate", negative_wrong_name),
        tamper_case("mote-client", "tampered-server-finished", "a bit of aioquic's server Finished flipped: decrypt_error",
                    0, 20, {51}),
        tamper_case("mote-client", "tampered-certificate-verify", "a bit of aioquic's CertificateVerify signature flipped: decrypt_error",
                    0, 15, {51}, offset=5),
        # --- mote as the server, aioquic as the client.
        mote_server_case("x509-p256", "full handshake, ECDSA P-256 CA + leaf, defaults on both sides"),
        mote_server_case("x509-ed25519", "full handshake, Ed25519 CA + leaf", ca=pki("ca_ed"), leaf=pki("leaf_ed")),
        mote_server_case("x509-chain", "leaf signed by an intermediate, chain sent by mote",
                         leaf=pki("leaf_inter"), chain=lambda env: [env.pki.inter]),
        *[mote_server_case(f"suite-{s}", f"{s} only on both sides", mote=["--suites", s], aio={"suites": [s]}, expect_suite=s)
          for s in SUITES],
        *[mote_server_case(f"group-{g}", f"aioquic offers (and shares) {g} only", aio={"groups": [g]}, expect_group=g)
          for g in GROUPS],
        mote_server_case("group-pref-p256", "aioquic shares p256, p384, x25519, x448; mote prefers p256",
                         mote=["--groups", "p256,x25519"], expect_group="p256"),
        mote_server_case("alpn-preference", "aioquic offers hq-interop, h3; mote prefers h3",
                         mote=["--alpn", "h3,hq-interop"], aio={"alpn": ["hq-interop", "h3"]}),
        mote_server_case("fragmented", "every CRYPTO run delivered in 1-byte pieces (both ways)", chunk=1),
        mote_server_case("large-tp", "1 KB of extra transport parameters in the ClientHello", large_tp=True),
        mote_server_case("deferred-signature", "CertificateVerify signed through the offload API",
                         mote=["--defer-signatures"]),
        mote_server_case("ring", "full handshake with mote's ring provider", mote=["--provider", "ring"]),
        mote_server_case("ring-ed25519-aes256", "ring provider, Ed25519 certificate, AES-256-GCM",
                         mote=["--provider", "ring", "--suites", "aes256"], ca=pki("ca_ed"), leaf=pki("leaf_ed"),
                         expect_suite="aes256"),
        Case("hrr", "mote-server", "HelloRetryRequest", unsupported=(
            "aioquic's client sends a key share for every group it lists, so a server never needs "
            "to ask for another, and it cannot parse a HelloRetryRequest")),
        resumption_case("mote-server", early=False),
        resumption_case("mote-server", early=True),
        resumption_case("mote-server", early=True, reject_early=True),
        resumption_case("mote-server", early=True, provider="ring"),
        Case("resumption-chain", "mote-server", "full, then 0-RTT with its ticket, then 0-RTT with the resumed connection's ticket",
             resumption_chain(False)),
        Case("unknown-ticket", "mote-server", "aioquic offers a forged ticket with 0-RTT: full handshake, 0-RTT rejected",
             mote_server_unknown_ticket),
        Case("0rtt-ticket-suite", "mote-server", "ChaCha20 ticket, resuming ClientHello prefers AES-256: ticket's suite kept, 0-RTT",
             mote_server_ticket_suite),
        Case("client-auth-optional", "mote-server", "optional raw-public-key client auth, aioquic offers no RPK: no CertificateRequest",
             client_auth(False)),
        Case("client-auth-required", "mote-server", "required raw-public-key client auth, aioquic offers no RPK: unsupported_certificate",
             client_auth(True)),
        Case("no-psk-modes", "mote-server", "client sends no psk_key_exchange_modes: no NewSessionTicket", no_psk_modes),
        Case("missing-transport-parameters", "mote-server", "ClientHello without quic_transport_parameters",
             missing_tp(False)),
        Case("alpn-mismatch", "mote-server", "aioquic offers only hq-interop: no_application_protocol", negative_alpn),
        tamper_case("mote-server", "tampered-client-finished", "a bit of aioquic's client Finished flipped: decrypt_error",
                    1, 20, {51}),
        # --- mote modes aioquic does not implement.
        Case("raw-public-key", "both", "RFC 7250 raw public keys (server, and client authentication)",
             unsupported="aioquic has no server_certificate_type/client_certificate_type (RFC 7250)"),
        Case("external-psk", "both", "external PSK (RFC 8446 §4.2.11) with psk_dhe_ke",
             unsupported="aioquic only resumes with its own session tickets; it has no external PSKs"),
    ]
    return out


# ---------------------------------------------------------------------------------- main


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--driver", help="path to the tls-interop binary")
    p.add_argument("--case", action="append", default=[], help="run cases whose role/name contains this")
    p.add_argument("--json", action="store_true", help="one JSON object per case on stdout")
    p.add_argument("--list", action="store_true", help="list the cases")
    p.add_argument("--keep", help="write certificates and tickets here (default: a temporary directory)")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run each case N times (fresh keys each time), e.g. to hit rare encodings "
                   "such as short ECDSA integers or P-256 shared secrets with leading zeros")
    args = p.parse_args()

    selected = [c for c in cases() if not args.case or any(s in f"{c.role}/{c.name}" for s in args.case)]
    if args.list:
        for c in selected:
            print(f"{c.role}/{c.name}: {c.what}")
        return 0
    if not args.driver:
        p.error("--driver is required")

    with tempfile.TemporaryDirectory(prefix="mote-tls-interop-") as tmp:
        directory = args.keep or tmp
        os.makedirs(directory, exist_ok=True)
        env = Env(driver=os.path.abspath(args.driver), pki=Pki(directory), dir=directory)
        failed = 0
        for c in selected:
            start = time.monotonic()
            status, detail = "unsupported", c.unsupported or ""
            for i in range(args.repeat if c.run else 0):
                try:
                    status, detail = "pass", c.run(env)
                except Unsupported as e:
                    status, detail = "unsupported", str(e)
                except CaseFailure as e:
                    status, detail = "FAIL", str(e)
                except Exception:  # a harness bug is a failure too
                    status, detail = "FAIL", traceback.format_exc()
                if status != "pass":
                    if args.repeat > 1:
                        detail = f"(run {i + 1} of {args.repeat}) {detail}"
                    break
            if args.repeat > 1 and status == "pass":
                detail += f" (x{args.repeat})"
            failed += status == "FAIL"
            ms = int((time.monotonic() - start) * 1000)
            if args.json:
                print(json.dumps({"role": c.role, "case": c.name, "what": c.what, "status": status,
                                  "detail": detail, "ms": ms}), flush=True)
            else:
                print(f"{status:<12} {c.role + '/' + c.name:<45} {detail}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
