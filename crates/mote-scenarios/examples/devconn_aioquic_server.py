"""An aioquic HTTP/3 server for the `devconn_udp` example (mote's device connection over real
UDP against a third-party stack).

Writes a fresh Ed25519 test CA and server certificate (SAN `localhost`) into DIR, the CA
as `ca.der` for the client to pin, then serves HTTP/3 on 127.0.0.1:PORT: `GET /N` answers N
bytes of the repeating alphabet, any other request (a POST) the count of body bytes read.

    python devconn_aioquic_server.py DIR PORT
"""

import asyncio
import datetime
import sys
from pathlib import Path

from aioquic.asyncio import QuicConnectionProtocol, serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.x509.oid import NameOID


def certificates(out: Path) -> tuple[Path, Path]:
    """A test CA and a server certificate for `localhost` signed by it (both Ed25519)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ed25519.Ed25519PrivateKey.generate()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "devconn test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, None)
    )
    key = ed25519.Ed25519PrivateKey.generate()
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, None)
    )
    (out / "ca.der").write_bytes(ca.public_bytes(serialization.Encoding.DER))
    cert = out / "server.pem"
    cert.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file = out / "server-key.pem"
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert, key_file


class Server(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = None
        self.bodies = {}

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self.h3 = H3Connection(self._quic)
        if self.h3 is None:
            return
        for e in self.h3.handle_event(event):
            if isinstance(e, HeadersReceived):
                fields = dict(e.headers)
                self.bodies[e.stream_id] = [fields.get(b":method"), fields.get(b":path"), 0]
                if e.stream_ended:
                    self.answer(e.stream_id)
            elif isinstance(e, DataReceived):
                request = self.bodies.get(e.stream_id)
                if request is not None:
                    request[2] += len(e.data)
                    if e.stream_ended:
                        self.answer(e.stream_id)

    def answer(self, stream_id):
        method, path, received = self.bodies.pop(stream_id)
        if method == b"GET" and path[1:].isdigit():
            n = int(path[1:])
            body = bytes(ord("a") + i % 26 for i in range(n))
        else:
            body = str(received).encode()
        self.h3.send_headers(
            stream_id,
            [(b":status", b"200"), (b"content-length", str(len(body)).encode())],
        )
        self.h3.send_data(stream_id, body, end_stream=True)
        self.transmit()


async def main(out: Path, port: int):
    cert, key = certificates(out)
    config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    config.load_cert_chain(cert, key)
    await serve("127.0.0.1", port, configuration=config, create_protocol=Server)
    print("ready", flush=True)
    await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
