"""Fake documentation host: several small doc sites under path prefixes of one origin.

    python -m tests.support.fakes.docs --host 127.0.0.2 --port-file PATH
        [--sites 3] [--pages 40] [--page-kb 6] [--latency-ms 0 --jitter 0.0]
        [--fixtures DIR] [--redirect] [--sitemap]

Site k lives under ``/site{k}/``; each real page in ``--fixtures`` (default
``tests/data/docs``) is served byte-exact as ``/fixtures/{file stem}/``, a site of its own,
with ``Last-Modified: FIXTURE_LAST_MODIFIED``; ``/site{k}/``, ``/site{k}/index.html`` and
``/site{k}/page0.html`` are byte-identical mirrors. Pages link to each other in cycles and
to everything a crawler must *not* follow (robots-disallowed, other sites, other hosts,
mailto:), see :meth:`DocsFake.render_page`. With ``--redirect``, each site's start page also
links ``moved.html``, which answers 301 to ``page{pages-1}.html`` (a page also linked directly).
With ``--sitemap``, pages no link reaches are listed in sitemaps: ``/site{k}/sitemap.xml`` (the
site's own) lists ``orphan.html``; robots.txt's ``Sitemap:`` line names ``/sitemap_index.xml``,
a sitemap index of ``/site{k}/sitemap-pages.xml.gz`` (gzip files) that list
``hidden/orphan.html``; both also list pages every crawl reaches by links, and what a crawler
must not fetch (another site's page, robots-disallowed, off-site, a PDF, another host's
sitemap). Without it, ``sitemap.xml`` is a 404 and robots.txt names no sitemap.
"""

from __future__ import annotations

import argparse
import gzip
import html
import random
import re
import struct
import zlib
from pathlib import Path
from typing import Any

from aiohttp import web

from .common import FakeProcess, Payload, add_common_args, run, serve
from .data import DOCS_PAGES

HTML_TYPE = "text/html; charset=utf-8"
XML_TYPE = "application/xml"
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
# Never fetched by a correct crawler: nothing listens there.
FOREIGN_URL = "http://127.0.0.9:9/elsewhere.html"
FOREIGN_SITEMAP = "http://127.0.0.9:9/sitemap.xml"
ORPHAN_SENTENCE = "Only a sitemap leads here."
# Must survive into extracted text intact (entities decoded, non-ASCII kept).
SPECIAL_SENTENCE = "Beware of naïve café — ünïcode text &amp; markup like &lt;b&gt; tags."
# Must never appear in extracted text.
SCRIPT_MARKER = "SCRIPT_TEXT_MUST_NOT_BE_EXTRACTED"
STYLE_MARKER = "STYLE_TEXT_MUST_NOT_BE_EXTRACTED"
SITE_PATH = re.compile(r"^/site(0|[1-9][0-9]*)/(.*)$")
FIXTURE_PATH = re.compile(r"^/fixtures/([\w.-]+)/$")
DEFAULT_FIXTURES = DOCS_PAGES
FIXTURE_LAST_MODIFIED = "Sat, 01 Aug 2026 10:00:00 GMT"
PAGE_NAME = re.compile(r"^page(0|[1-9][0-9]*)\.html$")

_VOCABULARY = """
the a of to and in is for that with on as by this be are from or an it can you your each
configure install request response handler middleware pipeline spider crawler scheduler queue
cache index document parser selector extractor item field setting option value default timeout
retry backoff limit token header cookie session proxy redirect encoding charset stream buffer
worker process thread signal event callback deferred reactor engine downloader slot concurrency
throughput latency politeness robots sitemap canonical mirror duplicate fingerprint checksum
naïve café façade résumé Zürich ünïcode déjà-vu coöperate
returns raises accepts yields stores loads parses merges filters sorts schedules retries
quickly safely lazily eagerly rarely always never usually explicitly implicitly
"""
VOCABULARY = tuple(_VOCABULARY.split())


def _png_1x1() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data)
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\x33\x66\x99")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _pdf() -> bytes:
    filler = bytes(random.Random(7).randrange(256) for _ in range(2048))
    return (
        b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n"
        + filler
        + (b"\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n")
    )


class DocsFake(FakeProcess):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args.latency_ms, args.jitter)
        self.sites = args.sites
        self.pages = args.pages
        self.page_bytes = int(args.page_kb * 1024)
        self.fixtures: Path = args.fixtures
        self.redirect = args.redirect
        self.sitemap = args.sitemap
        self.generation = 0
        self.base_url = ""
        # path -> payload for the current generation; filled lazily so startup stays instant.
        self._cache: dict[str, Payload] = {}
        self._flaky_seen: set[str] = set()
        self._static = self._static_payloads()
        self.add_control("generation", self._control_generation)
        self.add_control("reset_flaky", lambda v: self._flaky_seen.clear() if v else None)

    def _control_generation(self, value: Any) -> None:
        self.generation = int(value)
        self._cache = {}

    def bound(self, urls: dict[str, str]) -> None:
        self.base_url = urls["url"]
        if self.sitemap:
            robots = self._static["/robots.txt"].body.decode()
            robots += f"\nSitemap: {self.base_url}/sitemap_index.xml\n"
            self._static["/robots.txt"] = Payload(robots.encode(), "text/plain; charset=utf-8")
            self._static["/sitemap_index.xml"] = Payload(self._sitemap_index(), XML_TYPE)

    def config(self) -> dict[str, Any]:
        return {
            **super().config(),
            "generation": self.generation,
            "sites": self.sites,
            "pages": self.pages,
            "page_kb": self.page_bytes / 1024,
        }

    def stats(self) -> dict[str, Any]:
        snapshot = self.recorder.snapshot()
        snapshot["requests"] = [
            {k: r[k] for k in ("t", "method", "path", "query", "status", "auth")}
            for r in snapshot["requests"]
        ]
        snapshot["auth_seen"] = self.recorder.counters["auth"]
        return snapshot

    # ---------------------------------------------------------------- content

    def _static_payloads(self) -> dict[str, Payload]:
        robots = "User-agent: *\n" + "".join(
            f"Disallow: /site{k}/private/\n" for k in range(self.sites)
        )
        outside = (
            "<!DOCTYPE html><html><head><title>Outside every site</title></head>"
            "<body><p>This page is outside all documentation sites.</p></body></html>"
        )
        return {
            "/robots.txt": Payload(robots.encode(), "text/plain; charset=utf-8"),
            "/outside.html": Payload(outside.encode(), HTML_TYPE),
        }

    def _sitemap_index(self) -> bytes:
        locs = [f"{self.base_url}/site{k}/sitemap-pages.xml.gz" for k in range(self.sites)]
        locs.append(FOREIGN_SITEMAP)
        entries = "".join(f"<sitemap><loc>{html.escape(loc)}</loc></sitemap>" for loc in locs)
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="{SITEMAP_NS}">'
                f"{entries}</sitemapindex>\n").encode()

    def _urlset(self, site: int, orphan: str) -> bytes:
        base = f"{self.base_url}/site{site}/"
        locs = [f"{base}{orphan}", base, f"{base}page1.html", f"{base}page1.html#section-1",
                f"{base}private/secret.html", f"{base}files/manual.pdf",
                f"{self.base_url}/outside.html", f"{self.base_url}/site{site + 1}/index.html",
                FOREIGN_URL]
        entries = "".join(f"<url><loc>{html.escape(loc)}</loc><lastmod>2026-08-01</lastmod>"
                          "</url>" for loc in locs)
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{SITEMAP_NS}">'
                f"{entries}</urlset>\n").encode()

    def _orphan(self, site: int, rest: str) -> Payload:
        body = (f"<!DOCTYPE html><html><head><title>Orphan {rest} of site {site}</title></head>"
                f"<body><main><h1>Orphan {rest}</h1><p>{ORPHAN_SENTENCE}</p></main></body>"
                "</html>")
        return Payload(body.encode(), HTML_TYPE)

    def _sitemap_payload(self, site: int, rest: str) -> Payload | None:
        if rest in ("orphan.html", "hidden/orphan.html"):
            return self._orphan(site, rest)
        if rest == "sitemap.xml":
            return Payload(self._urlset(site, "orphan.html"), XML_TYPE)
        if rest == "sitemap-pages.xml.gz":
            body = gzip.compress(self._urlset(site, "hidden/orphan.html"), mtime=0)
            return Payload(body, "application/x-gzip", compressible=False)
        return None

    def _site_payload(self, site: int, rest: str) -> Payload | None:
        if self.sitemap:
            sitemap = self._sitemap_payload(site, rest)
            if sitemap is not None:
                return sitemap
        page_match = PAGE_NAME.match(rest)
        if rest in ("", "index.html"):
            return self._page(site, 0)
        if page_match:
            index = int(page_match.group(1))
            return self._page(site, index) if index < self.pages else None
        if rest == "flaky.html":
            body = f"<!DOCTYPE html><html><head><title>Flaky page of site {site}</title></head>"
            body += '<body><main><p>Recovered after an error.</p><a href="index.html">Back</a>'
            body += "</main></body></html>"
            return Payload(body.encode(), HTML_TYPE)
        if rest == "private/secret.html":
            body = "<!DOCTYPE html><html><head><title>Secret</title></head>"
            body += "<body><p>robots.txt disallows this page.</p></body></html>"
            return Payload(body.encode(), HTML_TYPE)
        if rest == "files/manual.pdf":
            return Payload(_pdf(), "application/pdf", compressible=False)
        if rest == "img/diagram.png":
            return Payload(_png_1x1(), "image/png", compressible=False)
        return None

    def _page(self, site: int, index: int) -> Payload:
        # The three mirror URLs share this one object, so their bodies are byte-identical.
        key = f"/site{site}/page{index}.html"
        payload = self._cache.get(key)
        if payload is None:
            payload = Payload(self.render_page(site, index).encode(), HTML_TYPE)
            self._cache[key] = payload
        return payload

    def render_page(self, site: int, index: int) -> str:
        """One documentation page; deterministic in (site, index, generation)."""
        rng = random.Random(f"docs:{site}:{index}:{self.generation}")
        pages = self.pages

        def words(n: int) -> str:
            return " ".join(rng.choices(VOCABULARY, k=n))

        title = f"{words(3).capitalize()} — Site {site} Docs, page {index}"
        links = [
            ("index.html", "Home"),
            (f"page{(index + 1) % pages}.html", "Next"),
            (f"page{(index - 1) % pages}.html", "Previous"),
            (f"/site{site}/page{(index + 7) % pages}.html", "Jump ahead"),
            (f"{self.base_url}/site{site}/page{(index + 3) % pages}.html", "Absolute link"),
            (f"./page{(index + 11) % pages}.html#section-2", "Section link"),
            ("private/secret.html", "Private area"),
            ("/outside.html", "Outside the site"),
            (FOREIGN_URL, "Elsewhere"),
            ("mailto:docs@example.com", "Write to us"),
            ("files/manual.pdf", "Manual (PDF)"),
            ("img/diagram.png", "Diagram"),
        ]
        if self.sites > 1:
            links.append((f"/site{(site + 1) % self.sites}/index.html", "Another site"))
        if index == 0:
            links.append(("flaky.html", "Sometimes broken"))
            if self.redirect:
                links.append(("moved.html", "Moved page"))
        nav = "\n".join(f'    <a href="{html.escape(h)}">{t}</a>' for h, t in links)

        sections = [f"<h1>{html.escape(title)}</h1>", f"<p>{SPECIAL_SENTENCE} {words(40)}.</p>"]
        size = sum(map(len, sections))
        number = 0
        while size < self.page_bytes - 1800:  # leave room for head, nav and footer
            number += 1
            part = [f'<h2 id="section-{number}">{number}. {words(4).capitalize()}</h2>']
            for _ in range(rng.randrange(1, 4)):
                part.append(f"<p>{words(rng.randrange(40, 90)).capitalize()}.</p>")
            if rng.random() < 0.5:
                part.append(f"<h3>{words(3).capitalize()}</h3>")
                part.append(f"<p>Use <code>a &lt; b &amp;&amp; c</code> to {words(20)}.</p>")
            if rng.random() < 0.3:
                items = "".join(f"<li>{words(6)}</li>" for _ in range(rng.randrange(2, 6)))
                part.append(f"<ul>{items}</ul>")
            chunk = "\n".join(part)
            sections.append(chunk)
            size += len(chunk)
        main = "\n".join(sections)
        return f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{html.escape(title)}</title>
  <style>.{STYLE_MARKER} {{ color: #333; }} main > p::before {{ content: "{STYLE_MARKER}"; }}
  </style>
  <script>window.{SCRIPT_MARKER} = "if (a < b && c) {{ {SCRIPT_MARKER} }}";</script>
</head>
<body>
  <nav class="sidebar">
{nav}
  </nav>
  <main>
{main}
  </main>
  <footer><p>&copy; 2024 Example Docs &middot; generation {self.generation}</p></footer>
</body>
</html>
"""

    # ---------------------------------------------------------------- serving

    def make_docs_app(self) -> web.Application:
        app = self.make_app("docs")
        # One catch-all route and a dict lookup: cheaper than the router for every page.
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    async def _handle(self, request: web.Request) -> web.Response:
        path = request.path
        if self.redirect and path.endswith("/moved.html") and SITE_PATH.match(path):
            target = path[: -len("moved.html")] + f"page{self.pages - 1}.html"
            return web.Response(status=301, headers={"Location": target})
        payload = self._cache.get(path) or self._static.get(path)
        if payload is None:
            payload = self._resolve(path)
            if payload is None:
                return web.Response(
                    status=404,
                    text="<!DOCTYPE html><html><body><h1>Not found</h1></body></html>",
                    content_type="text/html",
                )
            self._cache[path] = payload
        if path.startswith("/fixtures/"):
            return payload.response(request, headers={"Last-Modified": FIXTURE_LAST_MODIFIED})
        if path.endswith("/flaky.html") and path not in self._flaky_seen:
            self._flaky_seen.add(path)
            return web.Response(
                status=500,
                text="<!DOCTYPE html><html><body><h1>Internal error</h1></body></html>",
                content_type="text/html",
            )
        return payload.response(request)

    def _resolve(self, path: str) -> Payload | None:
        fixture = FIXTURE_PATH.match(path)
        if fixture is not None:
            page = self.fixtures / f"{fixture.group(1)}.html"
            return Payload(page.read_bytes(), HTML_TYPE) if page.is_file() else None
        match = SITE_PATH.match(path)
        if match is None:
            return None
        site = int(match.group(1))
        if site >= self.sites:
            return None
        return self._site_payload(site, match.group(2))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.2")
    add_common_args(parser)
    parser.add_argument("--sites", type=int, default=3)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--page-kb", type=float, default=6.0)
    parser.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES)
    parser.add_argument("--redirect", action="store_true",
                        help="start pages link moved.html, a 301 to the last page")
    parser.add_argument("--sitemap", action="store_true",
                        help="sitemaps (robots.txt, sitemap index, gzip) list orphan pages")
    args = parser.parse_args(argv)
    if args.sites < 1 or args.pages < 1:
        parser.error("--sites and --pages must be >= 1")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    fake = DocsFake(args)

    async def body() -> None:
        await serve(fake, [("url", fake.make_docs_app(), args.host)], args.port_file)

    run(body)


if __name__ == "__main__":
    main()
