"""A scripted stand-in GitHub: records every request and answers from a fixed script."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.support.fakes.data import API_EXAMPLES


class Scripted:
    """Records ``(path, query, headers)`` of every request; answers:

    * ``/trending…``: a 200 HTML page without any repository row;
    * ``/search/repositories?q=example``: GitHub's documented example body, one page;
    * ``q=capped``: page 1 = the example with ``Link: rel="next"``; page 2 = 422;
    * ``q=endless``: every page links to the next one, past result 1000 (a misbehaving API);
    * ``q=moved``: 302 to ``redirect_to``;
    * ``/rate_limit``: a generous budget (every API answer also carries ``X-RateLimit-*``);
    * anything else: 404.
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.redirect_to = ""
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                scripted.requests.append({"path": parts.path, "query": query,
                                          "headers": dict(self.headers.items())})
                status, headers, body = scripted.answer(parts.path, query, self)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, path: str, query: dict[str, str], handler: Any
               ) -> tuple[int, dict[str, str], bytes]:
        # A generous budget, announced as GitHub does, so that no client waits on this host.
        reset = int(time.time()) + 60
        rate = {"limit": 5000, "remaining": 4999, "used": 1, "reset": reset}
        json_type = {"Content-Type": "application/json; charset=utf-8",
                     **{f"X-RateLimit-{k.capitalize()}": str(v) for k, v in rate.items()},
                     "X-RateLimit-Resource": "search" if path.startswith("/search/") else "core"}
        if path == "/rate_limit":
            body = {"resources": {"core": rate, "search": rate}, "rate": rate}
            return 200, json_type, json.dumps(body).encode()
        if path.startswith("/trending"):
            body = b"<!DOCTYPE html><html><body><h1>Trending</h1><p>Nothing here.</p></body></html>"
            return 200, {"Content-Type": "text/html; charset=utf-8"}, body
        if path != "/search/repositories":
            return 404, json_type, b'{"message": "Not Found"}'
        q, page = query.get("q", ""), int(query.get("page", "1"))
        example = EXAMPLE_SEARCH.read_bytes()
        if q == "example":
            return 200, json_type, example
        if (q == "capped" and page == 1) or q == "endless":
            params = {k: v for k, v in query.items() if k != "page"}
            next_url = f"{self.url}{path}?{urlencode({**params, 'page': page + 1})}"
            return 200, {**json_type, "Link": f'<{next_url}>; rel="next"'}, example
        if q == "capped":
            body = b'{"message": "Only the first 1000 search results are available"}'
            return 422, json_type, body
        if q == "moved":
            return 302, {"Location": self.redirect_to}, b""
        return 404, json_type, b'{"message": "Not Found"}'

    def of(self, path: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == path]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


EXAMPLE_SEARCH = API_EXAMPLES / "search_repositories_example.json"
