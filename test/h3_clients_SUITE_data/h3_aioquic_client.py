"""HTTP/3 test client on aioquic, for test/h3_clients_SUITE.

Opens one QUIC connection (ALPN h3) to the URL's host and port, sends
--requests requests on it at once (each on its own stream), and prints one
JSON object on standard output with what it saw, for the suite to assert on:

  {"client": "aioquic 1.7.2", "alpn": "h3", "http_version": "3",
   "cipher_suite": "AES_128_GCM_SHA256",
   "connections": 1, "elapsed_ms": 12.3,
   "sent": {"bytes": N, "sha256": "..."},        # the body of each request
   "statuses": {"200": 100},
   "responses": [{"stream_id": 0, "status": 200, "headers": {...},
                  "bytes": N, "sha256": "...", "trailers": {...}}, ...],
   "error": null}

A POST body (--body-size N) is made by a generator (the bytes
"0123456789" repeated, cut at N) and streamed in --chunk pieces, waiting
while more than 1 MB of it is unacknowledged, so a 10 MB body never sits
whole in memory. --trailer NAME:VALUE sends request trailers after it.
Exit status 0 when every response arrived, 1 otherwise (the JSON then
says why in "error"), 2 on bad arguments.

Usage:
  h3_aioquic_client.py [--insecure | --ca-certs F] [-X POST] [--body-size N]
                       [--requests N] [--header N:V] [--trailer N:V]
                       [--cipher-suite NAME ...] [--key-update]
                       [--token-file F]
                       [--timeout S] https://127.0.0.1:PORT/path

--key-update has the client update its 1-RTT keys once the handshake is
confirmed (RFC 9001 §6); "key_updates" in the summary counts the updates
each side began ({"local": N, "remote": N}, as aioquic's CryptoPair saw
them). --token-file F: the token in F (if any) goes in the client's first
Initial, and the NEW_TOKEN tokens the server sends are written there (the
last one wins); "retries" counts the Retry packets the client acted on and
"new_tokens" the NEW_TOKEN frames received.
"""

import argparse
import asyncio
import hashlib
import json
import ssl
import sys
import time
from urllib.parse import urlparse

import aioquic
from aioquic.asyncio import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic import crypto as quic_crypto
from aioquic.quic.configuration import QuicConfiguration
from aioquic.tls import CipherSuite
from aioquic.quic.events import ConnectionTerminated, ProtocolNegotiated

PATTERN = b"0123456789"
# Unacknowledged request body bytes we allow on one stream before waiting.
MAX_UNACKED = 1 << 20

# Key updates as aioquic's CryptoPair makes them: "local_update" (ours) or
# "remote_update" (the server's, or its answer to ours).
KEY_UPDATES = {"local_update": 0, "remote_update": 0}
_update_key = quic_crypto.CryptoPair._update_key


def _counted_update_key(self, trigger):
    KEY_UPDATES[trigger] = KEY_UPDATES.get(trigger, 0) + 1
    return _update_key(self, trigger)


quic_crypto.CryptoPair._update_key = _counted_update_key


def body_pieces(size, chunk):
    """The request body: PATTERN repeated up to `size' bytes, in chunks."""
    block = PATTERN * (chunk // len(PATTERN) + 2)
    sent = 0
    while sent < size:
        n = min(chunk, size - sent)
        # keep the pattern's phase across chunks
        start = sent % len(PATTERN)
        yield block[start:start + n]
        sent += n


def header_pairs(items):
    """["name:value", ...] as lower-case (bytes, bytes) pairs."""
    pairs = []
    for item in items:
        name, _, value = item.partition(":")
        pairs.append((name.strip().lower().encode(), value.strip().encode()))
    return pairs


class Response:
    """What one stream received: headers, body digest, trailers."""

    def __init__(self, stream_id):
        self.stream_id = stream_id
        self.status = None
        self.headers = {}
        self.trailers = {}
        self.bytes = 0
        self.digest = hashlib.sha256()
        self.done = asyncio.get_running_loop().create_future()

    def summary(self):
        return {"stream_id": self.stream_id, "status": self.status,
                "headers": self.headers, "bytes": self.bytes,
                "sha256": self.digest.hexdigest(), "trailers": self.trailers}


class Client(QuicConnectionProtocol):
    """A QUIC connection with an HTTP/3 layer that routes events by stream."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.streams = {}
        self.alpn = None
        self.terminated = None

    def quic_event_received(self, event):
        if isinstance(event, ProtocolNegotiated):
            self.alpn = event.alpn_protocol
        elif isinstance(event, ConnectionTerminated):
            self.terminated = "connection closed: error %s %s" % (
                event.error_code, event.reason_phrase)
            for r in self.streams.values():
                if not r.done.done():
                    r.done.set_exception(ConnectionError(self.terminated))
        for h3_event in self.h3.handle_event(event):
            self.h3_event_received(h3_event)

    def h3_event_received(self, event):
        r = self.streams.get(getattr(event, "stream_id", None))
        if r is None:
            return
        if isinstance(event, HeadersReceived):
            fields = {k.decode(): v.decode() for k, v in event.headers}
            if r.status is None:
                r.status = int(fields.pop(":status"))
                r.headers = fields
            else:
                r.trailers = fields
        elif isinstance(event, DataReceived):
            r.bytes += len(event.data)
            r.digest.update(event.data)
        if getattr(event, "stream_ended", False) and not r.done.done():
            r.done.set_result(r)

    def unacked(self, stream_id):
        # aioquic has no public send-buffer size: its stream sender keeps
        # the bytes not yet acknowledged in `_buffer'.
        stream = self._quic._streams.get(stream_id)
        return len(stream.sender._buffer) if stream else 0

    async def request(self, args, url, body_size):
        stream_id = self._quic.get_next_available_stream_id()
        r = self.streams[stream_id] = Response(stream_id)
        path = (url.path or "/") + ("?" + url.query if url.query else "")
        headers = [(b":method", args.method.encode()), (b":scheme", b"https"),
                   (b":authority", url.netloc.encode()), (b":path", path.encode()),
                   (b"user-agent", b"falco-h3-aioquic")] + header_pairs(args.header)
        has_body = body_size > 0 or args.trailer
        if body_size > 0:
            headers.append((b"content-length", str(body_size).encode()))
        self.h3.send_headers(stream_id, headers, end_stream=not has_body)
        self.transmit()
        for piece in body_pieces(body_size, args.chunk):
            self.h3.send_data(stream_id, piece, end_stream=False)
            self.transmit()
            while self.unacked(stream_id) > MAX_UNACKED and self.terminated is None:
                await asyncio.sleep(0.002)
        if args.trailer:
            self.h3.send_headers(stream_id, header_pairs(args.trailer), end_stream=True)
        elif has_body:
            self.h3.send_data(stream_id, b"", end_stream=True)
        self.transmit()
        return await r.done


def sent_summary(size, chunk):
    digest = hashlib.sha256()
    for piece in body_pieces(size, chunk):
        digest.update(piece)
    return {"bytes": size, "sha256": digest.hexdigest()}


async def run(args, out):
    url = urlparse(args.url)
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN,
                               server_name=args.server_name or url.hostname)
    if args.cipher_suite:
        config.cipher_suites = [CipherSuite[name] for name in args.cipher_suite]
    if args.insecure:
        config.verify_mode = ssl.CERT_NONE
    if args.ca_certs:
        config.load_verify_locations(args.ca_certs)
    if args.token_file:
        try:
            with open(args.token_file, "rb") as f:
                config.token = f.read()
        except FileNotFoundError:
            pass

    def new_token(token):
        out["new_tokens"] += 1
        if args.token_file:
            with open(args.token_file, "wb") as f:
                f.write(token)

    start = time.monotonic()
    async with connect(url.hostname, url.port or 443, configuration=config,
                       create_protocol=Client, token_handler=new_token) as client:
        out["retries"] = client._quic._retry_count
        if args.key_update:
            client._quic.request_key_update()
            client.transmit()
        out["alpn"] = client.alpn
        out["http_version"] = "3" if client.alpn in H3_ALPN else None
        schedule = client._quic.tls.key_schedule
        out["cipher_suite"] = schedule.cipher_suite.name if schedule else None
        tasks = [client.request(args, url, args.body_size) for _ in range(args.requests)]
        try:
            done = await asyncio.wait_for(asyncio.gather(*tasks), args.timeout)
        finally:
            out["responses"] = [r.summary() for r in client.streams.values()]
        out["elapsed_ms"] = round((time.monotonic() - start) * 1000, 1)
        out["key_updates"] = {"local": KEY_UPDATES["local_update"],
                              "remote": KEY_UPDATES["remote_update"]}
        for r in done:
            key = str(r.status)
            out["statuses"][key] = out["statuses"].get(key, 0) + 1


def main():
    p = argparse.ArgumentParser(description="HTTP/3 test client (aioquic)")
    p.add_argument("url")
    p.add_argument("-X", "--method", default=None)
    p.add_argument("--body-size", type=int, default=0)
    p.add_argument("--chunk", type=int, default=65536)
    p.add_argument("--requests", type=int, default=1, help="concurrent, one connection")
    p.add_argument("--header", action="append", default=[], metavar="NAME:VALUE")
    p.add_argument("--trailer", action="append", default=[], metavar="NAME:VALUE")
    p.add_argument("--insecure", action="store_true")
    p.add_argument("--cipher-suite", action="append", default=[],
                   help="offer only these (AES_128_GCM_SHA256, AES_256_GCM_SHA384, "
                        "CHACHA20_POLY1305_SHA256)")
    p.add_argument("--key-update", action="store_true")
    p.add_argument("--token-file")
    p.add_argument("--ca-certs")
    p.add_argument("--server-name")
    p.add_argument("--timeout", type=float, default=60.0)
    args = p.parse_args()
    args.method = args.method or ("POST" if args.body_size or args.trailer else "GET")
    out = {"client": "aioquic " + aioquic.__version__, "alpn": None,
           "http_version": None, "connections": 1, "elapsed_ms": None,
           "sent": sent_summary(args.body_size, args.chunk),
           "statuses": {}, "responses": [], "retries": None, "new_tokens": 0,
           "key_updates": None, "error": None}
    try:
        asyncio.run(run(args, out))
    except Exception as e:  # reported in the JSON, for the suite's log
        out["error"] = "%s: %s" % (type(e).__name__, e)
    json.dump(out, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    sys.exit(0 if out["error"] is None else 1)


if __name__ == "__main__":
    main()
