"""The page archive as WARC 1.1 (ISO 28500): what warcio, pywb and ReplayWeb.page read.

A ``warcinfo`` record first; then per fetch a ``response`` record (the URL, the fetch time as
``WARC-Date``, the status and the headers the archive kept, the body as served, its
``WARC-Payload-Digest`` the archive's sha256) and a ``metadata`` record concurrent to it
(``application/warc-fields``: the list, the parser version and what it read: rows, fields
found, drift). Each record is its own gzip member, as ``.warc.gz`` readers expect, written by
warcio as it is made: memory holds one fetch, whatever the archive's size.
"""

from __future__ import annotations

import base64
import http
import io
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from scraper.trending.archive import ArchivedPage, PageArchiveStorage

SOFTWARE = "hubcollect (python -m runner archive export)"


def payload_digest(sha256: str) -> str:
    """The archive's sha256 as WARC labels a digest: ``sha256:`` and base32."""
    return "sha256:" + base64.b32encode(bytes.fromhex(sha256)).decode()


def status_line(status: int) -> str:
    try:
        return f"{status} {http.HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def metadata_fields(page: ArchivedPage) -> bytes:
    """What the archive knows of the fetch besides its body, as ``name: value`` lines."""
    profile = page.profile
    fields = [("list", page.list_key), ("parser-version", page.parser_version),
              ("rows", profile.rows), ("rows-with-language", profile.with_language),
              ("rows-with-stars", profile.with_stars),
              ("rows-with-description", profile.with_description),
              ("rows-sha256", profile.rows_hash), ("drift", "yes" if page.drifted else "no")]
    return "".join(f"{name}: {value}\r\n" for name, value in fields).encode()


class WarcStream:
    """Records out to ``out``, one gzip member each."""

    def __init__(self, out: BinaryIO) -> None:
        from warcio.warcwriter import WARCWriter

        self.writer = WARCWriter(out, gzip=True, warc_version="1.1")

    def write(self, record: Any) -> None:
        self.writer.write_record(record)

    def warcinfo(self, filename: str) -> None:
        self.write(self.writer.create_warcinfo_record(filename, {
            "software": SOFTWARE, "format": "WARC File Format 1.1",
            "description": "GitHub trending pages as served, from the page archive"}))

    def fetch(self, page: ArchivedPage, body: bytes) -> None:
        from warcio.statusandheaders import StatusAndHeaders

        headers = [*page.headers, ("Content-Length", str(len(body)))]
        response = self.writer.create_warc_record(
            page.url, "response", payload=io.BytesIO(body), length=len(body),
            warc_headers_dict={"WARC-Date": page.observed_at,
                               "WARC-Payload-Digest": payload_digest(page.sha256)},
            http_headers=StatusAndHeaders(status_line(page.status), headers,
                                          protocol="HTTP/1.1"))
        self.write(response)
        fields = metadata_fields(page)
        self.write(self.writer.create_warc_record(
            page.url, "metadata", payload=io.BytesIO(fields), length=len(fields),
            warc_content_type="application/warc-fields",
            warc_headers_dict={"WARC-Date": page.observed_at, "WARC-Concurrent-To":
                               response.rec_headers.get_header("WARC-Record-ID")}))


def write_warc(archive: PageArchiveStorage, pages: Iterable[ArchivedPage], out: BinaryIO,
               filename: str, skipped: Callable[[str], None]) -> int:
    """Every page of ``pages`` whose body the archive gives back, into ``out``; each other
    one goes to ``skipped`` as its one line. Returns how many fetches were written."""
    from scraper.trending.archive import UnreadableBody

    stream = WarcStream(out)
    stream.warcinfo(filename)
    written = 0
    for page in pages:
        try:
            body = archive.body(page)
        except UnreadableBody as exc:
            skipped(str(exc))
            continue
        stream.fetch(page, body)
        written += 1
    return written
