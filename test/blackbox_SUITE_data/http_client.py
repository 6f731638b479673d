"""Black-box scenarios for falco with Python's http.client.

Usage: http_client.py PORT SCENARIO
Prints one JSON object on its last line: what the client saw. The Common
Test suite (blackbox_SUITE) makes the assertions; this script only drives
the standard library client and reports.
"""
import http.client
import json
import socket
import sys

PORT = int(sys.argv[1])
SCENARIO = sys.argv[2]
TIMEOUT = 10


def conn():
    return http.client.HTTPConnection("127.0.0.1", PORT, timeout=TIMEOUT)


def summary(resp, body):
    return {"status": resp.status, "reason": resp.reason, "version": resp.version,
            "headers": {k.lower(): v for k, v in resp.getheaders()},
            "body_len": len(body), "body": body.decode("latin-1"),
            "will_close": resp.will_close}


def keep_alive():
    """Several requests, bodies and HEAD included, over one HTTPConnection."""
    c = conn()
    out = []
    sock = None
    for method, path, body in [("GET", "/peer", None), ("POST", "/echo", b"x" * 5000),
                               ("HEAD", "/hello", None), ("GET", "/stream", None),
                               ("PUT", "/echo", b""), ("GET", "/peer", None)]:
        c.request(method, path, body=body)
        r = c.getresponse()
        b = r.read()
        out.append(summary(r, b))
        # http.client keeps the same socket object while the connection persists.
        if sock is None:
            sock = c.sock
        out[-1]["same_socket"] = c.sock is sock
    c.close()
    return {"responses": out}


def chunked_upload():
    """encode_chunked=True: the body goes out chunked, in the pieces given."""
    c = conn()
    pieces = [b"alpha,", b"", b"beta,", bytes(range(256)) * 40, b"gamma"]
    c.request("POST", "/echo", body=iter(pieces), encode_chunked=True,
              headers={"Content-Type": "application/octet-stream"})
    r = c.getresponse()
    body = r.read()
    res = summary(r, b"")
    res["echo_ok"] = body == b"".join(pieces)
    res["sent_len"] = len(b"".join(pieces))
    # The connection stays usable after a chunked request.
    c.request("GET", "/hello")
    r2 = c.getresponse()
    res["after"] = summary(r2, r2.read())
    c.close()
    return res


def chunked_response():
    """A streamed reply is read whole, and also piece by piece."""
    c = conn()
    c.request("GET", "/stream")
    r = c.getresponse()
    whole = summary(r, r.read())
    c.request("GET", "/stream")
    r = c.getresponse()
    parts = []
    while True:
        p = r.read(7)
        if not p:
            break
        parts.append(p)
    c.close()
    return {"whole": whole, "pieces": b"".join(parts).decode("latin-1"),
            "piece_count": len(parts)}


def limits():
    """413, 431 and 414 as the client sees them: status, close, then a new
    connection works."""
    out = {}
    c = conn()
    # 413: Content-Length over max_body; the server answers without reading.
    c.putrequest("POST", "/echo")
    c.putheader("Content-Length", str(3 * 1024 * 1024))
    c.endheaders()
    r = c.getresponse()
    out["413"] = summary(r, r.read())
    c.close()
    c = conn()
    c.request("GET", "/hello", headers={"X-Big": "b" * 5000})
    r = c.getresponse()
    out["431"] = summary(r, r.read())
    c.close()
    c = conn()
    c.request("GET", "/" + "u" * 3000)
    r = c.getresponse()
    out["414"] = summary(r, r.read())
    c.close()
    c = conn()
    c.request("GET", "/hello")
    r = c.getresponse()
    out["after"] = summary(r, r.read())
    c.close()
    return out


def closed_by_server(c):
    """True if the server has closed the socket (EOF within a second)."""
    c.sock.settimeout(1)
    try:
        return c.sock.recv(1) == b""
    except (ConnectionResetError, socket.timeout):
        return False


def connection_close():
    """Connection: close from the client, from the handler, and HTTP/1.0."""
    out = {}
    c = conn()
    c.request("GET", "/hello", headers={"Connection": "close"})
    r = c.getresponse()
    out["client_close"] = summary(r, r.read())
    # http.client closes its side on will_close; check the server did too
    # with a raw socket.
    s = socket.create_connection(("127.0.0.1", PORT), timeout=TIMEOUT)
    s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    s.close()
    out["raw_closed_after"] = data.decode("latin-1")
    c = conn()
    c.request("GET", "/close")
    r = c.getresponse()
    out["handler_close"] = summary(r, r.read())
    c.close()

    class HTTP10(http.client.HTTPConnection):
        _http_vsn = 10
        _http_vsn_str = "HTTP/1.0"
    c = HTTP10("127.0.0.1", PORT, timeout=TIMEOUT)
    c.request("GET", "/stream")
    r = c.getresponse()
    out["http10_stream"] = summary(r, r.read())
    c.close()
    # Without Connection: close a 1.1 connection stays open after the reply.
    c = conn()
    c.request("GET", "/hello")
    r = c.getresponse()
    out["keep"] = summary(r, r.read())
    out["keep_closed_by_server"] = closed_by_server(c)
    c.close()
    return out


SCENARIOS = {"keep_alive": keep_alive, "chunked_upload": chunked_upload,
             "chunked_response": chunked_response, "limits": limits,
             "connection_close": connection_close}

if __name__ == "__main__":
    print(json.dumps(SCENARIOS[SCENARIO]()))
