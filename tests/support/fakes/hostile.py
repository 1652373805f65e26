"""A hostile HTTP server: everything a crawler meets on a bad day, on raw asyncio sockets.

    python -m tests.support.fakes.hostile --port-file PATH [--host 127.0.0.5] [--other-host
    127.0.0.6]
        [--huge-mb 100]

aiohttp cannot misbehave enough (reset mid-headers, never finish a body, lie about its gzip),
so this server speaks HTTP/1.1 itself: it reads the request head and answers every request
with ``Connection: close``. The port file holds ``{"url", "other", "pid"}``; ``other`` is a
second listener on another loopback address, the target of the off-host redirect.

Docs-like site under ``/site/`` (``/site/`` = ``/site/index.html`` links to everything)::

    good{0..4}.html      ordinary pages (the index is one too): the crawl must collect all six
    storm.html           503 every time: a 5xx storm
    reset.html           half a status line and headers, then a TCP reset
    hang.html            headers and part of the body, then nothing, ever
    huge.html            a 100 MB body with Content-Length, streamed
    huge-stream.html     the same without Content-Length (ends when the connection closes)
    badgzip.html         Content-Encoding: gzip, body not gzip
    gzipbomb.html        valid gzip of 100 MB of spaces, about 100 KB on the wire
    loop-a.html          302 → loop-b.html → 302 → loop-a.html …
    chain/{n}.html       302 → chain/{n+1}.html, forever, never the same URL twice
    offsite.html         302 → {other}/site/elsewhere.html, another host

Dense pages under ``/dense/`` (``/dense/index.html`` links to each), a site of their own::

    links.html           15 MB of 500,000 links (under the project's 16 MB), Content-Length
    links-stream.html    the same without Content-Length
    big.html             just under the docs page cap: 50,000 links and 20,000 list items
    nested.html          1,600 nested <div>s with NESTED_TEXT at the bottom
    items.html           100,000 list items
    p{n}.html            a small page (what big.html's links point to)

Pages whose parsed form, not their bytes, is the danger, each under its spider's size cap,
under ``/shapes/`` (``/shapes/index.html`` links to the docs ones)::

    cells.html           380,000 ``<td>x`` cells in 1.9 MB (under the docs cap)
    columns.html         a table of 2,000 columns and 190 rows, 1.9 MB

A GitHub-like trending page at ``/trending`` (any language path, any ``since``) with
:data:`TRENDING_FLOOD_ROWS` rows where GitHub serves 25; ``/trending/cells``: 15 MB of
``<td>x``; ``/trending/rowflood``: 180,000 small rows in 13 MB; ``/trending/normal``: 25 rows.

A GitHub-like search API under ``/api/search/repositories``, chosen by the ``q`` parameter:
``good`` (two pages by ``Link``), ``badjson``, ``htmlbody``, ``nullitems`` (``"items": null``),
``scalaritems`` (items that are not objects), ``notobject`` (a JSON list), ``badlink`` (a
``Link`` next URL with ``page=abc``), ``storm`` (503), ``reset``, ``badgzip``, ``surrogate`` (a
description holding a lone surrogate, ``\\ud800``, next to a plain result), ``million``
(1,000,000 results ``{"id": n}`` in 14 MB), ``overfull`` (five results where ``per_page`` asks
for four), ``badtypes`` (an ``id`` that is a list, ``topics`` a number, no ``full_name``, one
good result), ``deep`` (``items`` nested 4,000 arrays deep), ``nested`` (a description nested
:data:`NESTED_VALUE_DEPTH` lists deep, next to a plain result); anything else is answered like
``good`` with its own repositories.

Two more listeners are sites whose ``/robots.txt`` cannot be read: ``url("bigrobots")``
(127.0.0.7) streams 50 MB of it, ``url("slowrobots")`` (127.0.0.8) never finishes it; every
other path there is a small page linking to ``good{0..4}.html``.

Under ``/api-wedge/`` (an ``api_url`` of its own) rate-limit answers built to stop a budget
forever, each on a query's first request only: ``/rate_limit`` with ``reset: 1e300`` and
non-numbers; ``retryforever`` (403 secondary limit, ``retry-after: 99999999999``),
``reset3000`` (remaining 0 until the year 3000), ``limit3000`` (the same on a 403 primary limit),
``badheaders`` (text and out-of-range values). Under ``/api-honest/`` the same answers, with a
``/rate_limit`` that tells the truth (29 of 30 left, a reset a minute away).

``toapi.html`` (under ``/site/``, not linked from the index) redirects to the search API;
the query ``offpath`` links its next page to ``/site/good0.html``, the API's host outside its path.

``GET /_stats``: ``{"counts": {key: n}, "times": {key: [t, …]}, "bytes_sent": {key: n},
"authorized": [listener:target, …]}`` where the key is the path (``/site/storm.html``) or, for
the API, ``api:{q}:{page}``; ``authorized`` lists every request that carried Authorization.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import os
import signal
import socket
import struct
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from .common import write_port_file

HTML = "text/html; charset=utf-8"
JSON = "application/json; charset=utf-8"
CHUNK = 64 * 1024
HEAD_LIMIT = 64 * 1024
HANG_MAX_S = 300.0  # a hanging response gives up by itself after this long

HOSTILE_PAGES = (
    "storm.html", "reset.html", "hang.html", "huge.html", "huge-stream.html", "badgzip.html",
    "gzipbomb.html", "loop-a.html", "chain/0.html", "offsite.html",
)
GOOD_PAGES = tuple(f"good{k}.html" for k in range(5))
DENSE_PAGES = ("big.html", "nested.html", "items.html", "links.html", "links-stream.html")
NESTED_DIVS = 1600
NESTED_VALUE_DEPTH = 900
"""How deep the query ``nested`` buries its first result's description (lists in lists)."""
NESTED_TEXT = "Found at the bottom of sixteen hundred divs."
LIST_ITEMS = 100_000
TRENDING_FLOOD_ROWS = 3000
SHAPE_PAGES = ("cells.html", "columns.html")
ROBOTS_LISTENERS = ("bigrobots", "slowrobots")
ROWFLOOD_ROWS = 180_000
API_QUERIES = ("good", "badjson", "htmlbody", "nullitems", "scalaritems", "notobject",
               "badlink", "storm", "reset", "badgzip")

_WORD_TEXT = """alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike
november oscar papa quebec romeo sierra tango uniform victor whiskey xray"""
_WORDS = tuple(_WORD_TEXT.split())


def page_html(title: str, paragraphs: list[str], links: list[tuple[str, str]]) -> bytes:
    nav = "".join(f'<a href="{href}">{text}</a>\n' for href, text in links)
    body = "".join(f"<p>{p}</p>\n" for p in paragraphs)
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>"
            f"<body><nav>{nav}</nav><main><h1>{title}</h1>\n{body}</main></body></html>"
            ).encode()


def good_page(k: int) -> bytes:
    words = " ".join(_WORDS[(k * 7 + i) % len(_WORDS)] for i in range(60))
    links = [("index.html", "Home"), (GOOD_PAGES[(k + 1) % len(GOOD_PAGES)], "Next")]
    return page_html(f"Good page {k}", [f"Good page {k} says: {words}."], links)


def index_page() -> bytes:
    links = [(name, f"Good {name}") for name in GOOD_PAGES]
    links += [(name, f"Hostile {name}") for name in HOSTILE_PAGES]
    return page_html("Hostile index", ["Everything a crawler meets on a bad day."], links)


def dense_page(name: str) -> bytes:
    """The body of ``/dense/{name}``: pages whose tree, not their bytes, is the danger."""
    if name == "nested.html":
        body = "<div>" * NESTED_DIVS + f"<p>{NESTED_TEXT}</p>" + "</div>" * NESTED_DIVS
    elif name == "items.html":
        body = "<ul>" + "<li>i</li>\n" * LIST_ITEMS + "</ul>"
    elif name == "big.html":
        links = "".join(f'<a href="p{k}.html">{k}</a>\n' for k in range(50_000))
        body = links + "<ul>" + "<li>i</li>" * 20_000 + "</ul>"
    elif name.startswith("links"):
        body = "".join(f"<a href=p{k}.html>{k}</a>\n" for k in range(500_000))
    else:
        links = [(name, f"Dense {name}") for name in DENSE_PAGES]
        return page_html("Dense index", ["Pages whose tree is the danger."], links)
    return (f"<!DOCTYPE html><html><head><title>Dense {name}</title></head><body><main>"
            f"<h1>Dense {name}</h1>{body}</main></body></html>").encode()


def shape_page(name: str) -> bytes:
    """The body of ``/shapes/{name}``: small in bytes, huge as a tree."""
    if name == "cells.html":
        body = "<table><tr>" + "<td>x" * 380_000 + "</table>"
    elif name == "columns.html":
        body = "<table>" + ("<tr>" + "<td>x" * 2000) * 190 + "</table>"
    else:
        links = [(page, f"Shape {page}") for page in SHAPE_PAGES]
        return page_html("Shapes index", ["Pages whose tree is the danger."], links)
    return (f"<!DOCTYPE html><html><head><title>Shape {name}</title></head><body><main>"
            f"<h1>Shape {name}</h1>{body}</main></body></html>").encode()


def trending_shape(language: str) -> bytes:
    """``/trending/{language}``: the ordinary flood, or a page built to exhaust the parser."""
    if language == "cells":
        return b"<!DOCTYPE html><html><body><table><tr>" + b"<td>x" * 3_000_000 + b"</table>"
    if language == "normal":
        return trending_flood(25)
    if language == "rowflood":
        rows = "".join(f'<article class="Box-row"><h2><a href="/f/r{n}">r</a></h2></article>'
                       for n in range(ROWFLOOD_ROWS))
        return f"<!DOCTYPE html><html><body>{rows}</body></html>".encode()
    return trending_flood(TRENDING_FLOOD_ROWS)


def trending_flood(rows: int) -> bytes:
    """A trending page in GitHub's markup (``article.Box-row``) with ``rows`` repository rows."""
    articles = "".join(
        f'<article class="Box-row"><h2 class="h3 lh-condensed"><a href="/flood/repo-{n}">'
        f'flood / repo-{n}</a></h2><p class="col-9">Row {n} of a flood.</p>'
        f'<a href="/flood/repo-{n}/stargazers">{n}</a></article>\n' for n in range(rows))
    return (f"<!DOCTYPE html><html><body><div class=\"Box\">{articles}</div></body></html>"
            ).encode()


def repo(q: str, n: int) -> dict[str, Any]:
    name = f"{q}-repo-{n}"
    return {
        "id": 1000 * (sum(map(ord, q)) % 997) + n,
        "full_name": f"hostile/{name}", "html_url": f"https://github.com/hostile/{name}",
        "description": f"Repository {n} of query {q}", "language": "Python",
        "stargazers_count": 100 - n, "forks_count": n, "open_issues_count": 0,
        "topics": ["hostile"], "license": {"spdx_id": "MIT"},
        "created_at": "2020-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
        "pushed_at": "2024-01-01T00:00:00Z", "archived": False,
    }


class Hostile:
    def __init__(self, args: argparse.Namespace) -> None:
        self.huge_bytes = int(args.huge_mb * 1024 * 1024)
        self.url = ""
        self.other = ""
        self.counts: Counter[str] = Counter()
        self.times: defaultdict[str, list[float]] = defaultdict(list)
        self.bytes_sent: Counter[str] = Counter()
        self.authorized: list[str] = []  # listener:target of every request with Authorization
        self._bomb: bytes | None = None
        self._dense: dict[str, bytes] = {}

    # ------------------------------------------------------------------ plumbing

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                     listener: str) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        try:
            request_line, _, header_block = head.decode("latin-1").partition("\r\n")
            method, target, _ = request_line.split(" ", 2)
            parts = urlsplit(target)
            if any(line.lower().startswith("authorization:")
                   for line in header_block.split("\r\n")):
                self.authorized.append(f"{listener}:{target}")
            await self.route(listener, method, parts.path, parse_qs(parts.query), writer, reader)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception as exc:  # a bug here must show in the server's stderr, not hang
            import traceback

            traceback.print_exc()
            with contextlib.suppress(Exception):
                await self.send(writer, "error", 500, [], repr(exc).encode(), "text/plain")
        finally:
            if not writer.is_closing():
                writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def note(self, key: str) -> None:
        self.counts[key] += 1
        self.times[key].append(time.time())

    async def send(self, writer: asyncio.StreamWriter, key: str, status: int,
                   headers: list[tuple[str, str]], body: bytes = b"",
                   content_type: str | None = HTML, length: bool = True) -> None:
        reason = {200: "OK", 302: "Found", 403: "Forbidden", 404: "Not Found",
                  500: "Internal Server Error",
                  503: "Service Unavailable"}.get(status, "Unknown")
        lines = [f"HTTP/1.1 {status} {reason}", "Connection: close"]
        if content_type:
            lines.append(f"Content-Type: {content_type}")
        if length:
            lines.append(f"Content-Length: {len(body)}")
        lines += [f"{k}: {v}" for k, v in [*headers, *getattr(writer, "rate_headers", [])]]
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        writer.write(data)
        await writer.drain()
        self.bytes_sent[key] += len(data)

    async def stream(self, writer: asyncio.StreamWriter, key: str, total: int,
                     with_length: bool) -> None:
        head = ["HTTP/1.1 200 OK", "Connection: close", f"Content-Type: {HTML}"]
        if with_length:
            head.append(f"Content-Length: {total}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        chunk = b"<p>" + b"x" * (CHUNK - 8) + b"</p>\n\n"
        sent = self.bytes_sent[key] = 0  # a client that hangs up after the headers got none
        try:
            await writer.drain()
            while sent < total and not writer.is_closing():
                piece = chunk[: total - sent]
                writer.write(piece)
                await writer.drain()
                sent += len(piece)
                self.bytes_sent[key] = sent
        except ConnectionError:
            pass

    def stats(self) -> dict[str, Any]:
        return {"counts": dict(self.counts), "times": dict(self.times),
                "bytes_sent": dict(self.bytes_sent), "total": sum(self.counts.values()),
                "authorized": self.authorized}

    # ------------------------------------------------------------------ routes

    async def route(self, listener: str, method: str, path: str, query: dict[str, list[str]],
                    writer: asyncio.StreamWriter, reader: asyncio.StreamReader) -> None:
        if path == "/_stats":
            await self.send(writer, "_stats", 200, [], json.dumps(self.stats()).encode(), JSON)
            return
        if listener in ROBOTS_LISTENERS and path == "/robots.txt":
            key = f"{listener}:{path}"
            self.note(key)
            if listener == "bigrobots":
                await self.stream(writer, key, 50 * 1024 * 1024, with_length=False)
            else:
                await self.hang(writer, reader, key)
            return
        if listener in ROBOTS_LISTENERS:
            key = f"{listener}:{path}"
            self.note(key)
            name = path.removeprefix("/site/")
            body = page_html(f"{listener} {name}", [f"A page of {listener}, whose robots.txt "
                                                    "cannot be read."],
                             [(page, page) for page in GOOD_PAGES])
            await self.send(writer, key, 200, [], body)
            return
        if listener == "other":
            key = f"other:{path}"
            self.note(key)
            body = page_html("Elsewhere, on another host",
                             ["A page on another host, reached by a redirect."],
                             [("/site/index.html", "Home of the other host")])
            await self.send(writer, key, 200, [], body)
            return
        if path.startswith(("/api-wedge/", "/api-honest/")):
            await self.wedge(path, query, writer)
            return
        if path.startswith("/api/"):
            await self.api(path, query, writer)
            return
        self.note(path)
        if path == "/robots.txt":
            await self.send(writer, path, 200, [], b"User-agent: *\nAllow: /\n", "text/plain")
        elif path in ("/site/", "/site/index.html"):
            await self.send(writer, path, 200, [], index_page())
        elif path.startswith("/site/good"):
            name = path.removeprefix("/site/")
            if name not in GOOD_PAGES:
                await self.send(writer, path, 404, [], b"<h1>Not found</h1>")
                return
            await self.send(writer, path, 200, [], good_page(GOOD_PAGES.index(name)))
        elif path == "/site/storm.html":
            await self.send(writer, path, 503, [], b"<h1>Service Unavailable</h1>")
        elif path == "/site/reset.html":
            await self.reset(writer, path)
        elif path == "/site/hang.html":
            await self.hang(writer, reader, path)
        elif path == "/site/huge.html":
            await self.stream(writer, path, self.huge_bytes, with_length=True)
        elif path == "/site/huge-stream.html":
            await self.stream(writer, path, self.huge_bytes, with_length=False)
        elif path == "/site/badgzip.html":
            await self.badgzip(writer, path)
        elif path == "/site/gzipbomb.html":
            await self.send(writer, path, 200, [("Content-Encoding", "gzip")], self.bomb())
        elif path == "/site/loop-a.html":
            await self.send(writer, path, 302, [("Location", "loop-b.html")])
        elif path == "/site/loop-b.html":
            await self.send(writer, path, 302, [("Location", "/site/loop-a.html")])
        elif path.startswith("/site/chain/"):
            try:
                n = int(path.removeprefix("/site/chain/").removesuffix(".html"))
            except ValueError:
                n = 0
            await self.send(writer, path, 302, [("Location", f"{n + 1}.html")])
        elif path.startswith("/dense/"):
            await self.dense(writer, path)
        elif path == "/site/toapi.html":  # a docs page sending the crawler to the API
            target = f"{self.url}/api/search/repositories?q=good"
            await self.send(writer, path, 302, [("Location", target)])
        elif path == "/site/offsite.html":
            await self.send(writer, path, 302, [("Location", f"{self.other}/site/elsewhere.html")])
        elif path == "/trending" or path.startswith("/trending/"):
            language = path.partition("/trending/")[2]
            await self.send(writer, path, 200, [],
                            self.built(path, lambda: trending_shape(language)))
        elif path.startswith("/shapes/"):
            name = path.removeprefix("/shapes/") or "index.html"
            if name not in (*SHAPE_PAGES, "index.html"):
                await self.send(writer, path, 404, [], b"<h1>Not found</h1>")
                return
            await self.send(writer, path, 200, [], self.built(path, lambda: shape_page(name)))
        else:
            await self.send(writer, path, 404, [], b"<h1>Not found</h1>")

    def built(self, key: str, make: Any) -> bytes:
        """A big body, made once per server."""
        if key not in self._dense:
            self._dense[key] = make()
        return self._dense[key]

    async def dense(self, writer: asyncio.StreamWriter, path: str) -> None:
        name = path.removeprefix("/dense/") or "index.html"
        number = name.removeprefix("p").removesuffix(".html")
        if name == f"p{number}.html" and number.isdigit():
            body = page_html(f"Dense page {number}", ["A small page."], [("index.html", "Home")])
            await self.send(writer, path, 200, [], body)
            return
        if name not in (*DENSE_PAGES, "index.html"):
            await self.send(writer, path, 404, [], b"<h1>Not found</h1>")
            return
        key = "links.html" if name.startswith("links") else name
        if key not in self._dense:
            self._dense[key] = dense_page(key)
        body = self._dense[key]
        await self.send(writer, path, 200, [], body, length=name != "links-stream.html")

    async def reset(self, writer: asyncio.StreamWriter, key: str) -> None:
        """Half the headers, then RST: SO_LINGER 0 makes close() abort the connection."""
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/ht")
        await writer.drain()
        await asyncio.sleep(0.05)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    async def hang(self, writer: asyncio.StreamWriter, reader: asyncio.StreamReader,
                   key: str) -> None:
        """Promise 100 000 bytes, send 1 000, then wait for the client to give up."""
        head = (f"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: {HTML}\r\n"
                "Content-Length: 100000\r\n\r\n").encode()
        writer.write(head + b"<html><body><p>" + b"z" * 985)
        await writer.drain()
        with contextlib.suppress(TimeoutError, ConnectionError):
            await asyncio.wait_for(reader.read(), HANG_MAX_S)  # EOF when the client hangs up

    async def badgzip(self, writer: asyncio.StreamWriter, key: str) -> None:
        garbage = b"\x1f\x8b\x08\x00" + bytes((i * 37 + 11) % 256 for i in range(4000))
        await self.send(writer, key, 200, [("Content-Encoding", "gzip")], garbage)

    def bomb(self) -> bytes:
        if self._bomb is None:
            self._bomb = gzip.compress(b" " * self.huge_bytes, compresslevel=9, mtime=0)
        return self._bomb

    # ------------------------------------------------------------------ the API

    async def api(self, path: str, query: dict[str, list[str]],
                  writer: asyncio.StreamWriter) -> None:
        q = (query.get("q") or [""])[0]
        page = (query.get("page") or ["1"])[0]
        if path == "/api/rate_limit":  # a generous budget: the hostility is elsewhere
            self.note("api:rate_limit")
            window = {"limit": 5000, "used": 0, "remaining": 5000, "reset": int(time.time()) + 3600}
            body = json.dumps({"resources": {"core": window, "search": window}, "rate": window})
            await self.send(writer, "api:rate_limit", 200, [], body.encode(), JSON)
            return
        key = f"api:{q}:{page}"
        self.note(key)
        if path != "/api/search/repositories":
            await self.send(writer, key, 404, [], b'{"message": "Not Found"}', JSON)
            return
        writer.rate_headers = [  # type: ignore[attr-defined]  # read by send()
            ("X-RateLimit-Limit", "5000"), ("X-RateLimit-Remaining", "4999"),
            ("X-RateLimit-Used", "1"), ("X-RateLimit-Reset", str(int(time.time()) + 3600)),
            ("X-RateLimit-Resource", "search")]
        if q == "badjson":
            await self.send(writer, key, 200, [], b'{"total_count": 3, "items": [{"id": ', JSON)
        elif q == "htmlbody":
            await self.send(writer, key, 200, [], b"<!DOCTYPE html><html><body><h1>Unicorn!"
                            b"</h1></body></html>", HTML)
        elif q == "nullitems":
            await self.send(writer, key, 200, [], b'{"total_count": 0, "items": null}', JSON)
        elif q == "scalaritems":
            body = json.dumps({"total_count": 3, "items": [1, "two", None, repo(q, 1)]})
            await self.send(writer, key, 200, [], body.encode(), JSON)
        elif q == "notobject":
            await self.send(writer, key, 200, [], b"[1, 2, 3]", JSON)
        elif q == "storm":
            await self.send(writer, key, 503, [], b'{"message": "Service Unavailable"}', JSON)
        elif q == "reset":
            await self.reset(writer, key)
        elif q == "badgzip":
            await self.badgzip(writer, key)
        elif q == "surrogate":
            broken = {**repo(q, 1), "description": "half a pair: \ud800, then more"}
            body = json.dumps({"total_count": 2, "items": [broken, repo(q, 2)]})  # "\\ud800"
            await self.send(writer, key, 200, [], body.encode(), JSON)
        elif q == "million":
            body = self.built("api:million", lambda: (
                '{"total_count": 1000000, "incomplete_results": false, "items": ['
                + ",".join(f'{{"id": {n}}}' for n in range(1_000_000)) + "]}").encode())
            await self.send(writer, key, 200, [], body, JSON)
        elif q == "overfull":
            body = json.dumps({"total_count": 5, "items": [repo(q, n) for n in range(5)]})
            await self.send(writer, key, 200, [], body.encode(), JSON)
        elif q == "badtypes":
            items = [{**repo(q, 1), "id": [1, 2]}, {**repo(q, 2), "topics": 7},
                     {key: value for key, value in repo(q, 3).items() if key != "full_name"},
                     repo(q, 4)]
            body = json.dumps({"total_count": 4, "items": items})
            await self.send(writer, key, 200, [], body.encode(), JSON)
        elif q == "deep":
            body = b'{"total_count": 1, "items": ' + b"[" * 4000 + b"]" * 4000 + b"}"
            await self.send(writer, key, 200, [], body, JSON)
        elif q == "nested":
            nested = repo(q, 1)
            nested["description"] = ["\N{SNOWMAN}"]
            for _ in range(NESTED_VALUE_DEPTH - 1):
                nested["description"] = [nested["description"]]
            body = json.dumps({"total_count": 2, "items": [nested, repo(q, 2)]})
            await self.send(writer, key, 200, [], body.encode(), JSON)
        elif q == "offpath":  # a next page on the API's host, outside the API's path
            body = json.dumps({"total_count": 9, "items": [repo(q, 1)]})
            link = f'<{self.url}/site/good0.html?{urlencode({"q": q, "page": 2})}>; rel="next"'
            await self.send(writer, key, 200, [("Link", link)], body.encode(), JSON)
        elif q == "badlink":
            body = json.dumps({"total_count": 9, "items": [repo(q, 1), repo(q, 2)]})
            link = f'<{self.url}{path}?{urlencode({"q": q, "page": "abc"})}>; rel="next"'
            await self.send(writer, key, 200, [("Link", link)], body.encode(), JSON)
        else:  # good (and any other query): two pages of three and two repositories
            items = [repo(q, n) for n in (range(3) if page == "1" else range(3, 5))]
            headers = []
            if page == "1":
                next_url = f"{self.url}{path}?{urlencode({'q': q, 'page': 2})}"
                headers.append(("Link", f'<{next_url}>; rel="next"'))
            body = json.dumps({"total_count": 5, "incomplete_results": False, "items": items})
            await self.send(writer, key, 200, headers, body.encode(), JSON)


    async def wedge(self, path: str, query: dict[str, list[str]],
                    writer: asyncio.StreamWriter) -> None:
        """Rate-limit answers built to stop a budget forever, each only on a query's first
        page's first request; every later answer is an ordinary, healthy one."""
        q = (query.get("q") or [""])[0]
        honest = path.startswith("/api-honest/")
        prefix = "honest" if honest else "wedge"
        key = f"{prefix}:rate_limit" if path.endswith("/rate_limit") else f"{prefix}:{q}"
        self.note(key)
        first = self.counts[key] == 1
        reset = str(int(time.time()) + 3)  # within the test's BUDGET_MAX_WAIT
        if key.endswith(":rate_limit"):
            window = ({"limit": 30, "remaining": 29, "reset": int(time.time()) + 60, "used": 1}
                      if honest else
                      {"limit": "plenty", "remaining": -3, "reset": 1e300, "used": 0})
            body = json.dumps({"resources": {"core": window, "search": window}})
            await self.send(writer, key, 200, [], body.encode(), JSON)
            return
        rate = {"limit": "5000", "remaining": "4999", "reset": reset, "resource": "search"}
        status = 200
        if first and q == "retryforever":
            status, rate["retry-after"] = 403, "99999999999"
        elif first and q == "reset3000":
            rate.update(remaining="0", reset="32503680000")  # 3000-01-01
        elif first and q == "limit3000":
            status = 403
            rate.update(remaining="0", reset="32503680000")
        elif first and q == "badheaders":
            rate.update(limit="-5", remaining="lots", reset="soon", used="1e400")
        headers = [(k if k == "retry-after" else f"X-RateLimit-{k.title()}", v)
                   for k, v in rate.items()]
        if status == 403 and q == "limit3000":
            body = b'{"message": "API rate limit exceeded for 127.0.0.1."}'
        elif status == 403:
            body = b'{"message": "You have exceeded a secondary rate limit."}'
        else:
            body = json.dumps({"total_count": 1, "items": [repo(q, 1)]}).encode()
        await self.send(writer, key, status, headers, body, JSON)


async def serve(args: argparse.Namespace) -> None:
    hostile = Hostile(args)
    servers = []
    urls: dict[str, str] = {}
    for name, host in (("url", args.host), ("other", args.other_host),
                       ("bigrobots", args.big_robots_host), ("slowrobots", args.slow_robots_host)):
        server = await asyncio.start_server(
            lambda r, w, name=name: hostile.handle(r, w, name), host, 0, limit=HEAD_LIMIT,
            backlog=256)
        port = server.sockets[0].getsockname()[1]
        urls[name] = f"http://{host}:{port}"
        servers.append(server)
    hostile.url, hostile.other = urls["url"], urls["other"]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    write_port_file(args.port_file, {**urls, "pid": os.getpid()})
    parent = os.getppid()
    while not stop.is_set():  # a killed test run must not leave us holding ports
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=1.0)
        if os.getppid() != parent:
            break
    for server in servers:
        server.close()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port-file", required=True, type=Path)
    parser.add_argument("--host", default="127.0.0.5")
    parser.add_argument("--other-host", default="127.0.0.6")
    parser.add_argument("--big-robots-host", default="127.0.0.7")
    parser.add_argument("--slow-robots-host", default="127.0.0.8")
    parser.add_argument("--huge-mb", type=float, default=100.0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    asyncio.run(serve(parse_args(argv)))


if __name__ == "__main__":
    main()
