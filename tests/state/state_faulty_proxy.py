"""A loopback HTTP proxy in front of an S3 server that injects real HTTP failures.

``fail_first=N``: the first N requests get ``status`` (503 SlowDown by default) without reaching
the server. ``lose_responses=N``: the first N requests *are* forwarded, but the client gets a
500 instead of the real answer (a response lost after the server acted). Counts every request.
"""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_BODY = {
    503: b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>",
    500: b"<Error><Code>InternalError</Code><Message>We encountered an internal error."
         b"</Message></Error>",
}
_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade", "te"}


class FaultyProxy:
    def __init__(self, upstream: str, *, fail_first: int = 0, status: int = 503,
                 lose_responses: int = 0, only_methods: tuple[str, ...] = ()) -> None:
        self.upstream = urlsplit(upstream)
        self.fail_first = fail_first
        self.status = status
        self.lose_responses = lose_responses
        self.only_methods = only_methods
        self.requests: list[tuple[str, str, int]] = []  # (method, path, status sent)
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                targeted = not proxy.only_methods or self.command in proxy.only_methods
                with proxy._lock:
                    inject = targeted and proxy.fail_first > 0
                    lose = targeted and not inject and proxy.lose_responses > 0
                    if inject:
                        proxy.fail_first -= 1
                    if lose:
                        proxy.lose_responses -= 1
                if inject:
                    self._reply(proxy.status, _BODY.get(proxy.status, b""), {})
                    return
                conn = http.client.HTTPConnection(proxy.upstream.hostname, proxy.upstream.port,
                                                  timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                if lose:
                    self._reply(500, _BODY[500], {})
                    return
                out = {k: v for k, v in resp.getheaders()
                       if k.lower() not in _HOP | {"content-length"}}
                length = resp.getheader("Content-Length") if self.command == "HEAD" else None
                self._reply(resp.status, data, out, length)

            def _reply(self, status: int, data: bytes, headers: dict[str, str],
                       length: str | None = None) -> None:
                with proxy._lock:
                    proxy.requests.append((self.command, self.path, status))
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", length or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FaultyProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
