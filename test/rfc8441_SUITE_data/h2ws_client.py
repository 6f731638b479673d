"""WebSocket over HTTP/2 (RFC 8441) client for rfc8441_SUITE, on Python's
h2 library: the extended CONNECT, masked WebSocket frames both ways,
permessage-deflate (RFC 7692), resets and flow control as a scenario asks.

Usage: h2ws_client.py PORT SCENARIO. One JSON object per line on stdout:
what the client saw, for the suite to check. A line "ready" means the
scenario waits for a line on stdin (the suite acts on the server first).
"""
import json
import os
import socket
import struct
import sys
import time
import zlib

import h2.config
import h2.connection
import h2.errors
import h2.events

TIMEOUT = 10.0


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def ready():
    sys.stdout.write("ready\n")
    sys.stdout.flush()


def ws_frame(opcode, payload, fin=True, rsv1=False):
    """A masked client frame (RFC 6455 §5.2, §5.3)."""
    head = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode
    n = len(payload)
    if n < 126:
        hdr = struct.pack("!BB", head, 0x80 | n)
    elif n < 65536:
        hdr = struct.pack("!BBH", head, 0x80 | 126, n)
    else:
        hdr = struct.pack("!BBQ", head, 0x80 | 127, n)
    key = os.urandom(4)
    masked = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
    return hdr + key + masked


def ws_parse(buf):
    """Unmasked server frames from buf: (frames, rest)."""
    frames = []
    while len(buf) >= 2:
        b0, b1 = buf[0], buf[1]
        if b1 & 0x80:
            raise ValueError("masked server frame")
        n = b1 & 0x7F
        off = 2
        if n == 126:
            if len(buf) < 4:
                break
            n = struct.unpack("!H", buf[2:4])[0]
            off = 4
        elif n == 127:
            if len(buf) < 10:
                break
            n = struct.unpack("!Q", buf[2:10])[0]
            off = 10
        if len(buf) < off + n:
            break
        frames.append((bool(b0 & 0x80), bool(b0 & 0x40), b0 & 0x0F, buf[off:off + n]))
        buf = buf[off + n:]
    return frames, buf


class Stream:
    def __init__(self):
        self.status = None
        self.headers = {}
        self.buf = b""
        self.messages = []
        self.close = None
        self.ended = False
        self.reset = None
        self.partial = None
        self.inflate = None
        self.pings = 0


class Client:
    def __init__(self, port, validate=True, ack=True):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        cfg = h2.config.H2Configuration(client_side=True,
                                        validate_outbound_headers=validate,
                                        normalize_outbound_headers=validate,
                                        validate_inbound_headers=False)
        self.conn = h2.connection.H2Connection(config=cfg)
        self.conn.initiate_connection()
        self.flush()
        self.ack = ack
        self.streams = {}
        self.settings = None
        self.goaway = None
        self.goaways = []
        self.reopen = False
        # python-h2 takes any GOAWAY for the end of the connection and
        # refuses every frame after it; a graceful one (RFC 9113 §6.8) lets
        # open streams go on: with `reopen', frames are taken after it
        sm = self.conn.state_machine
        process = sm.process_input

        def process_input(input_):
            if self.reopen and sm.state == h2.connection.ConnectionState.CLOSED:
                sm.state = h2.connection.ConnectionState.CLIENT_OPEN
            return process(input_)
        sm.process_input = process_input
        self.closed = False
        self.until(lambda: self.settings is not None)

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def pump(self, timeout):
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        except ConnectionError:
            data = b""
        if not data:
            self.closed = True
            return False
        for ev in self.conn.receive_data(data):
            self.event(ev)
        self.flush()
        return True

    def until(self, pred, timeout=TIMEOUT):
        deadline = time.time() + timeout
        while not pred():
            left = deadline - time.time()
            if left <= 0 or self.closed:
                return False
            self.pump(left)
        return True

    def event(self, ev):
        s = self.streams.get(getattr(ev, "stream_id", None))
        if isinstance(ev, h2.events.RemoteSettingsChanged):
            if self.settings is None:
                self.settings = {int(k): v.new_value for k, v in ev.changed_settings.items()}
        elif isinstance(ev, h2.events.ResponseReceived) and s:
            s.headers = {k.decode(): v.decode() for k, v in ev.headers}
            s.status = int(s.headers[":status"])
        elif isinstance(ev, h2.events.DataReceived) and s:
            if self.ack and ev.flow_controlled_length:
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            s.buf += ev.data
            self.frames(s)
        elif isinstance(ev, h2.events.StreamEnded) and s:
            s.ended = True
        elif isinstance(ev, h2.events.StreamReset) and s:
            s.reset = int(ev.error_code)
        elif isinstance(ev, h2.events.ConnectionTerminated):
            self.goaway = int(ev.error_code)
            self.goaways.append(ev.last_stream_id)


    def frames(self, s):
        if s.status != 200:
            return
        frames, s.buf = ws_parse(s.buf)
        for fin, rsv1, op, payload in frames:
            if op == 8:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                s.close = code
            elif op == 9:
                s.pings += 1
            elif op == 10:
                continue
            else:
                if op != 0:
                    s.partial = (op, rsv1, payload)
                else:
                    s.partial = (s.partial[0], s.partial[1], s.partial[2] + payload)
                if fin:
                    op0, comp, data = s.partial
                    if comp:
                        data = s.inflate.decompress(data + b"\x00\x00\xff\xff")
                    kind = "text" if op0 == 1 else "binary"
                    s.messages.append([kind, data.decode() if kind == "text" else data.hex()])

    def request(self, method, path, extra=(), protocol=None, end=False):
        sid = self.conn.get_next_available_stream_id()
        headers = [(":method", method)]
        if protocol:
            headers.append((":protocol", protocol))
        headers += [(":scheme", "http"), (":path", path), (":authority", "127.0.0.1")]
        headers += list(extra)
        self.streams[sid] = Stream()
        self.conn.send_headers(sid, headers, end_stream=end)
        self.flush()
        return sid

    def websocket(self, path="/ws", extra=(("sec-websocket-version", "13"),), deflate=False):
        extra = list(extra)
        if deflate:
            extra.append(("sec-websocket-extensions", "permessage-deflate"))
        sid = self.request("CONNECT", path, extra, protocol="websocket")
        self.until(lambda: self.streams[sid].status is not None or self.streams[sid].reset is not None)
        s = self.streams[sid]
        if deflate:
            s.inflate = zlib.decompressobj(-15)
            s.deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
        return sid

    def send(self, sid, data, end=False):
        self.conn.send_data(sid, data, end_stream=end)
        self.flush()

    def send_message(self, sid, kind, data, compressed=False):
        s = self.streams[sid]
        payload = data.encode() if kind == "text" else data
        if compressed:
            payload = s.deflate.compress(payload) + s.deflate.flush(zlib.Z_SYNC_FLUSH)
            payload = payload[:-4]
        self.send(sid, ws_frame(1 if kind == "text" else 2, payload, rsv1=compressed))

    def wait_messages(self, sid, n):
        return self.until(lambda: len(self.streams[sid].messages) >= n)

    def report(self, sid, **more):
        s = self.streams[sid]
        obj = {"status": s.status, "messages": s.messages, "close": s.close,
               "ended": s.ended, "reset": s.reset, "pings": s.pings,
               "extensions": s.headers.get("sec-websocket-extensions")}
        obj.update(more)
        out(obj)


def close_frame(code):
    return ws_frame(8, struct.pack("!H", code))


def scenario(c, name):
    if name == "settings":
        out({"settings": {str(k): v for k, v in c.settings.items()}})
    elif name == "echo":
        sid = c.websocket()
        c.send_message(sid, "text", "hello")
        c.send_message(sid, "binary", b"\x00\x01\xfe\xff")
        # a text message in two fragments, a ping between them (§5.4, §5.5)
        c.send(sid, ws_frame(1, b"frag", fin=False))
        c.send(sid, ws_frame(9, b"p"))
        c.send(sid, ws_frame(0, "mented \u00e9".encode()))
        c.wait_messages(sid, 3)
        c.send(sid, close_frame(1000))
        c.until(lambda: c.streams[sid].ended)
        c.report(sid)
    elif name == "echo_deflate":
        sid = c.websocket(deflate=True)
        for text in ["compressed hello", "compressed hello", "x" * 5000]:
            c.send_message(sid, "text", text, compressed=True)
        c.wait_messages(sid, 3)
        c.send(sid, close_frame(1000))
        c.until(lambda: c.streams[sid].ended)
        c.report(sid)
    elif name == "server_close":
        sid = c.websocket()
        c.send_message(sid, "text", "stop")
        c.until(lambda: c.streams[sid].close is not None)
        closed_first = c.streams[sid].close
        c.send(sid, close_frame(1000), end=True)
        c.until(lambda: c.streams[sid].ended)
        c.report(sid, server_close=closed_first)
    elif name == "peer_end":
        # END_STREAM without a close frame: the tunnel's TCP close
        sid = c.websocket()
        c.send_message(sid, "text", "hi")
        c.wait_messages(sid, 1)
        c.send(sid, b"", end=True)
        c.until(lambda: c.streams[sid].ended)
        c.report(sid)
    elif name == "reset":
        sid = c.websocket()
        c.send_message(sid, "text", "before reset")
        c.wait_messages(sid, 1)
        c.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
        c.flush()
        # the connection goes on: an ordinary request on it
        plain = c.request("GET", "/plain", end=True)
        c.until(lambda: c.streams[plain].ended)
        c.report(sid, plain=c.streams[plain].status)
    elif name == "many":
        socks = [c.websocket("/ws") for _ in range(5)]
        plains = []
        for i, sid in enumerate(socks):
            c.send_message(sid, "text", "stream %d" % i)
            plains.append(c.request("GET", "/plain", end=True))
        for sid in socks:
            c.wait_messages(sid, 1)
        c.until(lambda: all(c.streams[p].ended for p in plains))
        for sid in socks:
            c.send(sid, close_frame(1000))
        c.until(lambda: all(c.streams[s].ended for s in socks))
        out({"ws": [[c.streams[s].status, c.streams[s].messages, c.streams[s].close]
                    for s in socks],
             "plain": [c.streams[p].status for p in plains]})
    elif name == "refused":
        # each: the extended CONNECT, and what came back
        cases = [("/ws", [], "connect-udp"),
                 ("/ws", [], "websocket"),
                 ("/deny", [("sec-websocket-version", "13")], "websocket"),
                 ("/plain", [("sec-websocket-version", "13")], "websocket"),
                 ("/missing", [("sec-websocket-version", "13")], "websocket")]
        result = []
        for path, extra, proto in cases:
            sid = c.request("CONNECT", path, extra, protocol=proto)
            c.until(lambda: c.streams[sid].status is not None or c.streams[sid].reset is not None)
            s = c.streams[sid]
            result.append([path, proto, s.status, s.reset])
        out({"refused": result})
    elif name in ("protocol_on_get", "protocol_unannounced"):
        method = "GET" if name == "protocol_on_get" else "CONNECT"
        sid = c.request(method, "/ws", [("sec-websocket-version", "13")], protocol="websocket")
        c.until(lambda: c.streams[sid].reset is not None or c.streams[sid].status is not None)
        plain = c.request("GET", "/plain", end=True)
        c.until(lambda: c.streams[plain].ended)
        out({"reset": c.streams[sid].reset, "status": c.streams[sid].status,
             "plain": c.streams[plain].status,
             "setting": c.settings.get(8)})
    elif name == "connect_without_path":
        sid = c.conn.get_next_available_stream_id()
        c.streams[sid] = Stream()
        c.conn.send_headers(sid, [(":method", "CONNECT"), (":protocol", "websocket"),
                                  (":authority", "127.0.0.1"),
                                  ("sec-websocket-version", "13")])
        c.flush()
        c.until(lambda: c.streams[sid].reset is not None or c.streams[sid].status is not None)
        out({"reset": c.streams[sid].reset, "status": c.streams[sid].status})
    elif name == "listener_stop":
        sid = c.websocket()
        c.send_message(sid, "text", "up")
        c.wait_messages(sid, 1)
        ready()
        sys.stdin.readline()
        c.until(lambda: c.streams[sid].ended and c.goaway is not None)
        c.report(sid, goaway=c.goaway)
    elif name == "drain":
        # a drain: the session closes with 1001, we answer the close
        # handshake, the stream ends and the connection says GOAWAY
        c.reopen = True
        sid = c.websocket()
        c.send_message(sid, "text", "up")
        c.wait_messages(sid, 1)
        ready()
        c.until(lambda: c.streams[sid].close is not None)
        closed_first = c.streams[sid].close
        c.send(sid, close_frame(1000), end=True)
        c.until(lambda: c.streams[sid].ended and len(c.goaways) == 2)
        c.report(sid, server_close=closed_first, goaway=c.goaway, goaways=c.goaways)
    elif name == "no_ack":
        # the client never gives window back: the server's sends block
        sid = c.websocket()
        c.send_message(sid, "text", "flood:8")
        c.until(lambda: c.streams[sid].reset is not None, timeout=20)
        c.report(sid, received=len(c.streams[sid].buf))
    elif name == "not_reading":
        # the handler blocks: how much can the client send before the
        # window runs out?
        sid = c.websocket()
        c.send_message(sid, "text", "block")
        ready()
        sys.stdin.readline()
        sent = 0
        chunk = ws_frame(2, b"z" * 8000)
        while True:
            window = c.conn.local_flow_control_window(sid)
            if window >= len(chunk):
                c.send(sid, chunk)
                sent += len(chunk)
                continue
            if not c.pump(1.0):
                if c.conn.local_flow_control_window(sid) < len(chunk):
                    break
        out({"sent": sent})
        sys.stdin.readline()
        # released: everything sent is echoed
        c.until(lambda: len(c.streams[sid].messages) >= sent // len(chunk), timeout=20)
        c.report(sid, echoed=len(c.streams[sid].messages))
    elif name == "idle":
        # silent: the server pings, then closes for idleness
        sid = c.websocket()
        c.until(lambda: c.streams[sid].ended, timeout=20)
        c.report(sid)
    elif name == "quiet":
        # quiet longer than the listener's body deadlines, then an echo
        sid = c.websocket()
        c.pump(1.5)
        time.sleep(1.0)
        c.send_message(sid, "text", "still here")
        c.wait_messages(sid, 1)
        c.send(sid, close_frame(1000))
        c.until(lambda: c.streams[sid].ended)
        c.report(sid)
    elif name == "oversize":
        sid = c.websocket()
        c.send_message(sid, "text", "small")
        c.send_message(sid, "text", "y" * 2000)
        c.until(lambda: c.streams[sid].ended)
        c.report(sid)
    elif name == "conn_error":
        # a connection error (WINDOW_UPDATE of 0 on stream 0, RFC 9113
        # §6.9): GOAWAY, and the sessions on the connection end
        sid = c.websocket()
        c.send_message(sid, "text", "up")
        c.wait_messages(sid, 1)
        c.sock.sendall(struct.pack("!HBBBI", 0, 4, 8, 0, 0) + b"\x00\x00\x00\x00")
        c.until(lambda: c.goaway is not None)
        c.report(sid, goaway=c.goaway)
    elif name == "bench":
        n = int(os.environ.get("N", "1000"))
        sid = c.websocket()
        t0 = time.time()
        for i in range(n):
            c.send_message(sid, "text", "m")
            c.wait_messages(sid, i + 1)
        out({"n": n, "seconds": time.time() - t0})
    else:
        raise SystemExit("unknown scenario " + name)


def main():
    port, name = int(sys.argv[1]), sys.argv[2]
    validate = name not in ("protocol_on_get", "protocol_unannounced", "connect_without_path")
    c = Client(port, validate=validate, ack=name != "no_ack")
    scenario(c, name)


if __name__ == "__main__":
    main()
