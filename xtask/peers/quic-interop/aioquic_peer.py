"""aioquic as an interop peer for `cargo xtask interop`, with mote's command line.

    aioquic_peer.py serve --listen HOST:PORT --www DIR --cert PEM --key PEM [--retry] [--v2]
                          [--alpn hq-interop,h3] [--keylog FILE] [--qlog-dir DIR]
    aioquic_peer.py get URL... --output DIR --ca PEM [--alpn hq-interop|h3]
                          [--session-file FILE] [--0rtt] [--chacha20] [--v2]
                          [--key-update] [--keylog FILE] [--qlog-dir DIR] [--timeout-ms N]

The aioquic wheel ships no example programs, so this is written on its API (asyncio
`serve`/`connect`, `H3Connection` for h3, HTTP/0.9 for hq-interop as the interop runner
defines it: "GET /path\\r\\n", the response is the file's bytes, then FIN).

`get` fetches all URLs over one connection, in parallel, and exits 0 only when every
response arrived complete (status 200 for h3); 127 for an option it cannot honour.
"""

import argparse
import asyncio
import os
import pickle
import sys
from urllib.parse import urlparse

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import (
    ConnectionTerminated,
    HandshakeCompleted,
    ProtocolNegotiated,
    StreamDataReceived,
)
from aioquic.quic.logger import QuicFileLogger
from aioquic.quic.packet import QuicProtocolVersion
from aioquic.tls import CipherSuite, SessionTicket

HQ = "hq-interop"
# Largest HTTP/0.9 request line accepted (a peer cannot make the server buffer more).
MAX_REQUEST = 4096


def safe_path(www, path):
    """The file under `www` for request path `path`, or None if it escapes `www`."""
    full = os.path.realpath(os.path.join(www, path.lstrip("/")))
    root = os.path.realpath(www)
    if full != root and full.startswith(root + os.sep) and os.path.isfile(full):
        return full
    return None


class ServerProtocol(QuicConnectionProtocol):
    www = "."

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None
        self.requests = {}

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self.h3 = H3Connection(self._quic)
        if isinstance(event, StreamDataReceived) and self.h3 is None:
            buf = self.requests.get(event.stream_id, b"") + event.data
            if len(buf) > MAX_REQUEST:
                self._quic.reset_stream(event.stream_id, 0x10C)
                return
            self.requests[event.stream_id] = buf
            if event.end_stream:
                del self.requests[event.stream_id]
                line = buf.split(b"\r\n")[0].split(b"\n")[0].decode("latin-1")
                parts = line.split()
                path = safe_path(self.www, parts[1]) if len(parts) >= 2 and parts[0] == "GET" else None
                if path is None:
                    self._quic.reset_stream(event.stream_id, 0x10C)
                else:
                    with open(path, "rb") as f:
                        self._quic.send_stream_data(event.stream_id, f.read(), end_stream=True)
                self.transmit()
            return
        if self.h3 is not None:
            for h3_event in self.h3.handle_event(event):
                if isinstance(h3_event, HeadersReceived):
                    headers = dict(h3_event.headers)
                    path = safe_path(self.www, headers.get(b":path", b"/").decode("latin-1"))
                    if headers.get(b":method") != b"GET" or path is None:
                        self.h3.send_headers(h3_event.stream_id, [(b":status", b"404")], end_stream=True)
                    else:
                        with open(path, "rb") as f:
                            body = f.read()
                        self.h3.send_headers(
                            h3_event.stream_id,
                            [(b":status", b"200"), (b"content-length", str(len(body)).encode())],
                        )
                        self.h3.send_data(h3_event.stream_id, body, end_stream=True)
            self.transmit()


class TicketStore:
    """Session tickets the server issued, for resumption and 0-RTT."""

    def __init__(self):
        self.tickets = {}

    def add(self, ticket):
        self.tickets[ticket.ticket] = ticket

    def pop(self, label):
        return self.tickets.pop(label, None)


def split_addr(addr):
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


def configure_logs(config, args):
    if args.keylog:
        config.secrets_log_file = open(args.keylog, "a")
    if args.qlog_dir:
        os.makedirs(args.qlog_dir, exist_ok=True)
        config.quic_logger = QuicFileLogger(args.qlog_dir)


async def run_server(args):
    alpns = args.alpn.split(",")
    config = QuicConfiguration(is_client=False, alpn_protocols=alpns, max_datagram_frame_size=None)
    config.load_cert_chain(args.cert, args.key)
    if args.v2:
        # Prefer v2: a v1 client offering it is upgraded (RFC 9368), as `mote serve --v2`.
        config.supported_versions = [QuicProtocolVersion.VERSION_2, QuicProtocolVersion.VERSION_1]
    configure_logs(config, args)
    ServerProtocol.www = args.www
    tickets = TicketStore()
    host, port = split_addr(args.listen)
    await serve(
        host,
        port,
        configuration=config,
        create_protocol=ServerProtocol,
        session_ticket_fetcher=tickets.pop,
        session_ticket_handler=tickets.add,
        retry=args.retry,
    )
    print(f"aioquic server listening on {args.listen}", flush=True)
    await asyncio.Future()


class ClientProtocol(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None
        self.waiters = {}
        self.bodies = {}
        self.status = {}
        self.terminated = None

    def start_h3(self):
        self.h3 = H3Connection(self._quic)

    def get(self, authority, path):
        stream_id = self._quic.get_next_available_stream_id()
        if self.h3 is not None:
            self.h3.send_headers(
                stream_id,
                [
                    (b":method", b"GET"),
                    (b":scheme", b"https"),
                    (b":authority", authority.encode()),
                    (b":path", path.encode()),
                ],
                end_stream=True,
            )
        else:
            self._quic.send_stream_data(stream_id, f"GET {path}\r\n".encode(), end_stream=True)
        waiter = self._loop.create_future()
        self.waiters[stream_id] = waiter
        self.bodies[stream_id] = bytearray()
        self.transmit()
        return waiter

    def finish(self, stream_id):
        waiter = self.waiters.pop(stream_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(bytes(self.bodies.pop(stream_id)))

    def quic_event_received(self, event):
        if isinstance(event, ConnectionTerminated):
            self.terminated = event
            for waiter in self.waiters.values():
                if not waiter.done():
                    waiter.set_exception(ConnectionError(f"connection closed: {event.reason_phrase!r} (0x{event.error_code:x})"))
            self.waiters.clear()
        if self.h3 is None:
            if isinstance(event, StreamDataReceived) and event.stream_id in self.bodies:
                self.bodies[event.stream_id] += event.data
                if event.end_stream:
                    self.finish(event.stream_id)
            return
        for h3_event in self.h3.handle_event(event):
            sid = getattr(h3_event, "stream_id", None)
            if sid not in self.bodies:
                continue
            if isinstance(h3_event, HeadersReceived):
                self.status[sid] = dict(h3_event.headers).get(b":status")
            elif isinstance(h3_event, DataReceived):
                self.bodies[sid] += h3_event.data
            if getattr(h3_event, "stream_ended", False):
                if self.status.get(sid) != b"200":
                    waiter = self.waiters.pop(sid, None)
                    if waiter is not None and not waiter.done():
                        waiter.set_exception(ConnectionError(f"status {self.status.get(sid)!r}"))
                else:
                    self.finish(sid)


async def run_client(args):
    alpn = args.alpn
    config = QuicConfiguration(is_client=True, alpn_protocols=[alpn])
    config.load_verify_locations(args.ca)
    configure_logs(config, args)
    if args.chacha20:
        config.cipher_suites = [CipherSuite.CHACHA20_POLY1305_SHA256]
    if args.v2:
        # Start in v1 and offer v2 first (compatible version negotiation, RFC 9368).
        config.original_version = QuicProtocolVersion.VERSION_1
        config.supported_versions = [QuicProtocolVersion.VERSION_2, QuicProtocolVersion.VERSION_1]
    else:
        config.supported_versions = [QuicProtocolVersion.VERSION_1]
    if args.session_file and os.path.exists(args.session_file):
        with open(args.session_file, "rb") as f:
            config.session_ticket = pickle.load(f)

    def save_ticket(ticket: SessionTicket):
        if args.session_file:
            with open(args.session_file, "wb") as f:
                pickle.dump(ticket, f)

    urls = [urlparse(u) for u in args.urls]
    host, port = urls[0].hostname, urls[0].port or 443
    zero_rtt = args.zero_rtt and config.session_ticket is not None
    os.makedirs(args.output, exist_ok=True)
    async with connect(
        host,
        port,
        configuration=config,
        create_protocol=ClientProtocol,
        session_ticket_handler=save_ticket,
        wait_connected=not zero_rtt,
    ) as client:
        if alpn in H3_ALPN:
            client.start_h3()
        if args.key_update:
            # Deferred by aioquic until the handshake is confirmed; the interop runner wants
            # it within the first MB.
            if not zero_rtt:
                client._quic.request_key_update()
            else:
                await client.wait_connected()
                client._quic.request_key_update()
        waiters = [client.get(u.netloc, u.path or "/") for u in urls]
        bodies = await asyncio.gather(*waiters)
        for u, body in zip(urls, bodies):
            with open(os.path.join(args.output, os.path.basename(u.path)), "wb") as f:
                f.write(body)
        if args.session_file and not os.path.exists(args.session_file):
            # A ticket normally arrives with the handshake; give a late one a moment.
            for _ in range(20):
                await asyncio.sleep(0.05)
                if os.path.exists(args.session_file):
                    break
        client.close()
        await client.wait_closed()


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--listen", required=True)
    s.add_argument("--www", required=True)
    s.add_argument("--cert", required=True)
    s.add_argument("--key", required=True)
    s.add_argument("--retry", action="store_true")
    s.add_argument("--v2", action="store_true")
    s.add_argument("--alpn", default=f"{HQ},h3")
    s.add_argument("--keylog")
    s.add_argument("--qlog-dir")
    g = sub.add_parser("get")
    g.add_argument("urls", nargs="+")
    g.add_argument("--output", required=True)
    g.add_argument("--ca", required=True)
    g.add_argument("--alpn", default=HQ)
    g.add_argument("--session-file")
    g.add_argument("--0rtt", dest="zero_rtt", action="store_true")
    g.add_argument("--chacha20", action="store_true")
    g.add_argument("--v2", action="store_true")
    g.add_argument("--key-update", action="store_true")
    g.add_argument("--keylog")
    g.add_argument("--qlog-dir")
    g.add_argument("--timeout-ms", type=int, default=60000)
    g.add_argument("--migrate", action="store_true")
    args = p.parse_args()
    if args.cmd == "serve":
        asyncio.run(run_server(args))
        return 0
    if args.migrate:
        print("aioquic peer: active migration is not implemented", file=sys.stderr)
        return 127
    try:
        asyncio.run(asyncio.wait_for(run_client(args), args.timeout_ms / 1000))
    except Exception as e:  # noqa: BLE001 - any failure is a failed download
        print(f"aioquic client failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
