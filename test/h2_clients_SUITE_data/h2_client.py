"""A black-box HTTP/2 client for falco's h2_clients_SUITE, on the Python h2
library (python3-h2). Usage: h2_client.py PORT. Over h2c with prior
knowledge it sends, on one connection: three concurrent GETs, a POST
whose body goes out in two DATA frames followed by request trailers, and
a GET whose response is streamed with trailers. It prints one line per
check and exits non-zero at the first failure."""
import socket
import sys

import h2.config
import h2.connection
import h2.events


def main(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())

    def headers(method, path, extra=()):
        return [(":method", method), (":scheme", "http"), (":path", path),
                (":authority", "127.0.0.1:%d" % port)] + list(extra)

    ids = {}
    for path in ("/hello", "/hello?n=2", "/hello?n=3"):
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, headers("GET", path), end_stream=True)
        ids[sid] = path
    post = conn.get_next_available_stream_id()
    conn.send_headers(post, headers("POST", "/echo-trailers"))
    conn.send_data(post, b"first half, ")
    conn.send_data(post, b"second half")
    conn.send_headers(post, [("x-checksum", "42")], end_stream=True)
    stream = conn.get_next_available_stream_id()
    conn.send_headers(stream, headers("GET", "/stream"), end_stream=True)
    sock.sendall(conn.data_to_send())

    status, body, trailers, ended = {}, {}, {}, set()
    want = set(ids) | {post, stream}
    while ended != want:
        data = sock.recv(65536)
        if not data:
            raise SystemExit("connection closed early")
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                status[event.stream_id] = dict(event.headers)[b":status"]
            elif isinstance(event, h2.events.DataReceived):
                body[event.stream_id] = body.get(event.stream_id, b"") + event.data
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.TrailersReceived):
                trailers[event.stream_id] = dict(event.headers)
            elif isinstance(event, h2.events.StreamEnded):
                ended.add(event.stream_id)
            elif isinstance(event, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                raise SystemExit("unexpected %r" % event)
        sock.sendall(conn.data_to_send())

    for sid in ids:
        assert status[sid] == b"200", status
        assert body[sid] == b"hello world", body
    print("ok concurrent gets")
    assert status[post] == b"200", status
    assert body[post] == b"first half, second half|x-checksum=42", body[post]
    print("ok post with trailers")
    assert body[stream] == b"alpha beta", body[stream]
    assert trailers[stream] == {b"x-checksum": b"abc"}, trailers
    print("ok streamed response with trailers")
    conn.close_connection()
    sock.sendall(conn.data_to_send())
    sock.close()


if __name__ == "__main__":
    main(int(sys.argv[1]))
