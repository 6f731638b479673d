"""One WebSocket tunnel over HTTP/3 (RFC 9220) for the Erlang tests, on aioquic.

Run as an Erlang port by test/falco_test_ws_tunnel_h3.erl: every message
both ways is a packet with a 4-byte big-endian length ({packet, 4}).

In, from Erlang:
  the first packet  JSON {"port": N, "path": "/ws", "fields": [[name, value], ...],
                    "timeout": seconds}: connect to 127.0.0.1:port (ALPN h3, the
                    certificate not verified), check that the server's SETTINGS
                    enable the extended CONNECT, and send it on a new request
                    stream: :method CONNECT, :protocol websocket, :scheme https,
                    :path, :authority localhost, then the fields
  b"D" + bytes      the bytes as one DATA frame on the stream; answered b"K" once
                    they are queued and less than 1 MB of the stream is
                    unacknowledged (so a server that stops reading stops the
                    sender, as TCP's window would)
  b"M" + count:32 + bytes
                    the bytes as `count' DATA frames of their own, one after
                    the other; answered b"K" as b"D" is
  b"E"              the end of our side of the stream (FIN)
  b"Q"              close the connection (H3_NO_ERROR) and exit

Out, to Erlang:
  b"R" + JSON       {"status": N, "headers": [[name, value], ...]}: the response
  b"D" + bytes      the DATA of the stream, as it comes
  b"E"              the server ended the stream
  b"X" + JSON       {"code": N}: the server reset the stream
  b"C" + JSON       {"code": N, "reason": "..."}: the connection is gone; the
                    script exits after it
  b"K"              the answer to each b"D"
  b"F" + JSON       {"error": "..."}: the tunnel could not be opened
"""

import asyncio
import json
import ssl
import struct
import sys

from aioquic.asyncio import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, StreamReset

MAX_UNACKED = 1 << 20
OUT = sys.stdout.buffer


def emit(tag, payload=b""):
    OUT.write(struct.pack(">I", len(payload) + 1) + tag + payload)
    OUT.flush()


def emit_json(tag, obj):
    emit(tag, json.dumps(obj).encode())


class Tunnel(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.stream_id = None
        self.responded = False
        self.settings = asyncio.get_running_loop().create_future()
        self.gone = asyncio.get_running_loop().create_future()

    def quic_event_received(self, event):
        if isinstance(event, ConnectionTerminated):
            if not self.gone.done():
                self.gone.set_result((event.error_code, event.reason_phrase))
            return
        if isinstance(event, StreamReset) and event.stream_id == self.stream_id:
            emit_json(b"X", {"code": event.error_code})
        for h3_event in self.h3.handle_event(event):
            self.h3_event(h3_event)
        if not self.settings.done() and self.h3.received_settings is not None:
            self.settings.set_result(self.h3.received_settings)

    def h3_event(self, event):
        if getattr(event, "stream_id", None) != self.stream_id:
            return
        if isinstance(event, HeadersReceived) and not self.responded:
            self.responded = True
            fields = [[k.decode(), v.decode()] for k, v in event.headers]
            status = int(dict(fields).get(":status", "0"))
            emit_json(b"R", {"status": status,
                             "headers": [f for f in fields if not f[0].startswith(":")]})
        elif isinstance(event, DataReceived) and event.data:
            emit(b"D", event.data)
        if getattr(event, "stream_ended", False):
            emit(b"E")

    def unacked(self):
        stream = self._quic._streams.get(self.stream_id)
        return len(stream.sender._buffer) if stream else 0

    async def sent(self):
        """Transmits, then waits while more than MAX_UNACKED is unacknowledged."""
        self.transmit()
        while self.unacked() > MAX_UNACKED and not self.gone.done():
            await asyncio.sleep(0.002)


async def read_packet(reader):
    head = await reader.readexactly(4)
    (n,) = struct.unpack(">I", head)
    return await reader.readexactly(n)


async def run(reader):
    spec = json.loads(await read_packet(reader))
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN,
                               server_name="localhost", verify_mode=ssl.CERT_NONE,
                               max_data=1 << 24, max_stream_data=1 << 22)
    timeout = spec.get("timeout", 5)
    async with connect("127.0.0.1", spec["port"], configuration=config,
                       create_protocol=Tunnel, wait_connected=True) as t:
        try:
            settings = await asyncio.wait_for(t.settings, timeout)
        except asyncio.TimeoutError:
            emit_json(b"F", {"error": "no SETTINGS from the server"})
            return
        # RFC 9220 §3: SETTINGS_ENABLE_CONNECT_PROTOCOL (0x08)
        if settings.get(0x08) != 1:
            emit_json(b"F", {"error": "SETTINGS_ENABLE_CONNECT_PROTOCOL not sent"})
            return
        t.stream_id = t._quic.get_next_available_stream_id()
        head = [(b":method", b"CONNECT"), (b":protocol", b"websocket"),
                (b":scheme", b"https"), (b":path", spec["path"].encode()),
                (b":authority", b"localhost")]
        head += [(n.encode(), v.encode()) for n, v in spec["fields"]]
        t.h3.send_headers(t.stream_id, head, end_stream=False)
        t.transmit()
        gone = asyncio.ensure_future(asyncio.shield(t.gone))
        while True:
            packet = asyncio.ensure_future(read_packet(reader))
            done, _ = await asyncio.wait([packet, gone], return_when=asyncio.FIRST_COMPLETED)
            if gone in done:
                packet.cancel()
                code, reason = gone.result()
                emit_json(b"C", {"code": code, "reason": reason})
                return
            try:
                p = packet.result()
            except asyncio.IncompleteReadError:
                return  # Erlang closed the port
            tag, body = p[:1], p[1:]
            if tag == b"D":
                try:
                    t.h3.send_data(t.stream_id, body, end_stream=False)
                except Exception as e:  # the stream is gone: told by X/E/C
                    emit(b"K")
                    continue
                await t.sent()
                emit(b"K")
            elif tag == b"M":
                (count,) = struct.unpack(">I", body[:4])
                frame = body[4:]
                try:
                    for i in range(count):
                        t.h3.send_data(t.stream_id, frame, end_stream=False)
                        if i % 1000 == 999:
                            await t.sent()
                except Exception:
                    pass
                await t.sent()
                emit(b"K")
            elif tag == b"E":
                try:
                    t.h3.send_data(t.stream_id, b"", end_stream=True)
                    t.transmit()
                except Exception:
                    pass
            elif tag == b"Q":
                t.close()
                return


async def main():
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    try:
        await run(reader)
    except ConnectionError as e:
        emit_json(b"F", {"error": "connect: %s" % e})
    except asyncio.IncompleteReadError:
        pass


if __name__ == "__main__":
    asyncio.run(main())
