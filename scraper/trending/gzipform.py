"""The archive's earlier form, still read: a gzipped *template* per distinct page, and per fetch
the token-like values that differ from the template's first fetch.

A template is the page with a NUL where each token-like attribute value was (request ids,
nonces, CSRF tokens), stored once as ``{sha256[:2]}/{sha256}.gz`` under the archive's bodies
directory; the ``templates`` table holds the values of its first fetch, a fetch's ``changes``
the values that differ (both zlib-compressed JSON). New fetches are written as zstd frames
(:mod:`scraper.trending.deltas`); fetches of this form decode as they always did, within the
same bounds: every decompression stops at ``limit`` bytes.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

from scraper.trending.deltas import FrameError

_HOLE = b"\x00"
_CHUNK = 1 << 16


def template_path(bodies: Path, template: str) -> Path:
    return bodies / template[:2] / f"{template}.gz"


def inflate(data: bytes, limit: int, *, gzip: bool = False) -> bytes:
    """zlib (or gzip) ``data``, at most ``limit`` bytes out: FrameError past it, or if it does
    not decompress. A bomb costs ``limit`` bytes, never what it declares."""
    decompressor = zlib.decompressobj(zlib.MAX_WBITS | (16 if gzip else 0))
    out = bytearray()
    try:
        pending = data
        while pending:
            out += decompressor.decompress(pending, _CHUNK)
            if len(out) > limit:
                raise FrameError(f"decompresses past {limit:,} bytes")
            pending = decompressor.unconsumed_tail
        out += decompressor.flush()
    except zlib.error as exc:
        raise FrameError(f"does not decompress ({exc})") from None
    if len(out) > limit or not decompressor.eof:
        raise FrameError(f"decompresses past {limit:,} bytes" if len(out) > limit
                         else "does not decompress (truncated)")
    return bytes(out)


def join_volatile(template: bytes, values: list[str]) -> bytes:
    """The page again: each NUL of ``template`` replaced by its value, in order."""
    if not values:
        return template
    pieces = template.split(_HOLE)
    if len(pieces) != len(values) + 1:
        raise FrameError(f"its template has {len(pieces) - 1} values, the record {len(values)}")
    out = [pieces[0]]
    for value, piece in zip(values, pieces[1:], strict=True):
        out += [value.encode("ascii"), piece]
    return b"".join(out)


def template_body(bodies: Path, template: str, base_values: bytes, changes: bytes | None,
                  limit: int) -> bytes:
    """One fetch of the earlier form, put back together (not yet checked against its
    sha256)."""
    path = template_path(bodies, template)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FrameError(f"its template {path.name} cannot be read ({exc.strerror})") from None
    try:
        values = json.loads(inflate(base_values, limit))
        for i, value in json.loads(inflate(changes, limit)).items() if changes else ():
            values[int(i)] = value
    except FrameError:
        raise
    except (ValueError, TypeError, IndexError, AttributeError) as exc:
        raise FrameError(f"its recorded values are damaged ({exc})") from None
    body = join_volatile(inflate(data, limit, gzip=True), values)
    if len(body) > limit:
        raise FrameError(f"decompresses past {limit:,} bytes")
    return body
