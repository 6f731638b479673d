"""HTTP/3 test client on curl_cffi (libcurl with ngtcp2 and nghttp3), for
test/h3_clients_SUITE: curl's HTTP/3 stack, which Debian's curl lacks.

Sends --requests requests at once through one curl session (PIPEWAIT set:
libcurl multiplexes them on one connection when it can) with
http_version="v3only" (no fallback to TCP: a server without HTTP/3 fails
the run), and prints one JSON object on standard output:

  {"client": "curl_cffi 0.17.0", "alpn": "h3", "http_version": "3",
   "connections": 1, "elapsed_ms": 12.3,
   "sent": {"bytes": N, "sha256": "..."},
   "statuses": {"200": 100},
   "responses": [{"status": 200, "headers": {...}, "bytes": N,
                  "sha256": "...", "http_version": "3",
                  "local_port": 40000}, ...],
   "error": null}

"http_version" is what libcurl reports for each response; curl does not
report the ALPN it negotiated, so "alpn" is "h3" only when every response
came over HTTP/3 (libcurl's HTTP/3 always offers h3). "connections" counts
the distinct local ports the responses came to. A POST body (--body-size
N: "0123456789" repeated, cut at N) comes from a generator, which libcurl
reads as it sends. Exit status 0 when every request got a response over
HTTP/3, 1 otherwise, 2 on bad arguments.

Usage:
  h3_curl_client.py [--ca-certs F] [-X POST] [--body-size N] [--requests N]
                    [--header N:V] [--timeout S] https://127.0.0.1:PORT/path
"""

import argparse
import asyncio
import hashlib
import json
import sys
import time

import curl_cffi
from curl_cffi import CurlOpt
from curl_cffi.requests import AsyncSession

PATTERN = b"0123456789"
# libcurl's CURLINFO_HTTP_VERSION values
VERSIONS = {0: None, 1: "1.0", 2: "1.1", 3: "2", 30: "3"}


def body_pieces(size, chunk=65536):
    """The request body: PATTERN repeated up to `size' bytes, in chunks."""
    block = PATTERN * (chunk // len(PATTERN) + 2)
    sent = 0
    while sent < size:
        n = min(chunk, size - sent)
        start = sent % len(PATTERN)
        yield block[start:start + n]
        sent += n


def version(code):
    return VERSIONS.get(code, str(code))


async def one(session, args):
    kwargs = {"headers": dict(h.split(":", 1) for h in args.header)}
    if args.body_size:
        kwargs["content"] = body_pieces(args.body_size)
        kwargs["headers"]["content-length"] = str(args.body_size)
    r = await session.request(args.method, args.url, **kwargs)
    return {"status": r.status_code, "headers": dict(r.headers.items()),
            "bytes": len(r.content), "sha256": hashlib.sha256(r.content).hexdigest(),
            "http_version": version(r.http_version), "local_port": r.local_port}


async def run(args, out):
    verify = args.ca_certs or False
    start = time.monotonic()
    async with AsyncSession(http_version="v3only", verify=verify,
                            max_clients=args.requests, timeout=args.timeout,
                            # wait for the first connection and multiplex
                            # on it rather than open one per request
                            curl_options={CurlOpt.PIPEWAIT: 1}) as s:
        results = await asyncio.gather(*[one(s, args) for _ in range(args.requests)])
    out["elapsed_ms"] = round((time.monotonic() - start) * 1000, 1)
    out["responses"] = results
    for r in results:
        out["statuses"][str(r["status"])] = out["statuses"].get(str(r["status"]), 0) + 1
    versions = {r["http_version"] for r in results}
    out["http_version"] = versions.pop() if len(versions) == 1 else sorted(map(str, versions))
    out["alpn"] = "h3" if out["http_version"] == "3" else None
    out["connections"] = len({r["local_port"] for r in results})
    if out["http_version"] != "3":
        out["error"] = "not every response came over HTTP/3"


def main():
    p = argparse.ArgumentParser(description="HTTP/3 test client (curl_cffi)")
    p.add_argument("url")
    p.add_argument("-X", "--method", default=None)
    p.add_argument("--body-size", type=int, default=0)
    p.add_argument("--requests", type=int, default=1, help="concurrent, one session")
    p.add_argument("--header", action="append", default=[], metavar="NAME:VALUE")
    p.add_argument("--ca-certs", help="verify the server against it (default: no check)")
    p.add_argument("--timeout", type=float, default=60.0)
    args = p.parse_args()
    args.method = args.method or ("POST" if args.body_size else "GET")
    digest = hashlib.sha256()
    for piece in body_pieces(args.body_size):
        digest.update(piece)
    out = {"client": "curl_cffi " + curl_cffi.__version__, "alpn": None,
           "http_version": None, "connections": None, "elapsed_ms": None,
           "sent": {"bytes": args.body_size, "sha256": digest.hexdigest()},
           "statuses": {}, "responses": [], "error": None}
    try:
        asyncio.run(run(args, out))
    except Exception as e:  # reported in the JSON, for the suite's log
        out["error"] = "%s: %s" % (type(e).__name__, e)
    json.dump(out, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    sys.exit(0 if out["error"] is None else 1)


if __name__ == "__main__":
    main()
