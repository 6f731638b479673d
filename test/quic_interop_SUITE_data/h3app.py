# The ASGI application quic_interop_SUITE runs under aioquic's example
# HTTP/3 server: GET /echo-path answers the path, GET /size/N answers N
# bytes of "0123456789" repeated; anything else 404.
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    path = scope["path"]
    if path.startswith("/size/"):
        n = int(path[len("/size/"):])
        body = (b"0123456789" * (n // 10 + 1))[:n]
        status = 200
    elif path == "/echo-path":
        body = path.encode()
        status = 200
    else:
        body = b"not found"
        status = 404
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
