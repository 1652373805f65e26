"""Reading an item segment in bounded memory, and telling a damaged one from a bad line.

* **Bounded**: a line longer than ``CATALOG_MAX_LINE_BYTES`` is never held whole; it is read
  past in blocks and given without its text, so the build names it and skips it. A segment of
  one 400 MB line costs the build a block, not the line (and the record ``json`` would make).
* **Damaged**: a segment that cannot be read - not gzip, truncated, a bad CRC, a byte that is not
  UTF-8 (the item store writes nothing else: such a byte is damage to the file, not a bad
  record) - raises :class:`UnreadableSegment` saying why, for the caller to set it aside
  (:mod:`scraper.utils.quarantine`) and go on with the others. An error of the disk itself
  (``EIO``, a file gone) is an ``OSError`` as before: the next build tries it again.
* **Open segments**: a ``.part`` is read from where the last build stopped to its last newline
  as this read starts, never past it: a line a round is still writing, or a torn tail a kill
  left (cut at the shard's next start), is never read.
"""

from __future__ import annotations

import codecs
import gzip
import io
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pipelines.segments import whole_lines_end
from scraper.settings import CATALOG_MAX_LINE_BYTES

BLOCK = 1024 * 1024
"""Bytes read at a time past a line too long to hold, and when a whole segment is checked."""


Handle = gzip.GzipFile | io.BufferedReader


class UnreadableSegment(Exception):
    """The segment at ``path`` cannot be read; ``why`` says what is wrong with it, in words."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


@dataclass(frozen=True, slots=True)
class Line:
    number: int
    size: int  # bytes, its newline included
    text: str | None  # None: longer than the limit, skipped unread


def segment_lines(path: Path, max_line: int = CATALOG_MAX_LINE_BYTES, *,
                  start: int = 0, number: int = 0, whole: bool = False) -> Iterator[Line]:
    """The lines of a ``.jsonl`` or ``.jsonl.gz`` segment, each UTF-8 text or, longer than
    ``max_line`` bytes, none; :class:`UnreadableSegment` when the file is damaged.

    ``start``: the (uncompressed) byte after the lines already read, ``number`` of them.
    ``whole``: an open segment, read only to its last newline now.
    """
    with _opened(path, path.name.endswith(".gz")) as opened:
        handle: Handle | _Bounded = opened
        if start:
            with _damage_said(path):
                opened.seek(start)
        if whole:
            handle = _Bounded(opened, whole_lines_end(opened.fileno()) - start)
        while True:
            raw = _read(path, handle.readline, max_line + 1)
            if not raw:
                return
            number += 1
            if len(raw) > max_line:
                yield Line(number, len(raw) + _skip_rest(path, handle), None)
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise UnreadableSegment(path, f"not UTF-8: byte {exc.start} of line {number} "
                                        f"is {raw[exc.start]:#04x}") from None
            yield Line(number, len(raw), text)


class _Bounded:
    """A handle that reads no more than ``left`` bytes (an open segment's whole lines)."""

    def __init__(self, handle: Handle, left: int) -> None:
        self.handle = handle
        self.left = max(0, left)

    def readline(self, size: int) -> bytes:
        data = self.handle.readline(min(size, self.left)) if self.left else b""
        self.left -= len(data)
        return data


def check_segment(path: Path, gzipped: bool) -> None:
    """Read the whole segment once, a block at a time: :class:`UnreadableSegment` if the
    catalog could not read it (the drain looks before a shipped segment enters ``items/``,
    from a file whose name does not say it is gzip yet)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    with _opened(path, gzipped) as handle:
        while block := _read(path, handle.read, BLOCK):
            try:
                decoder.decode(block)
            except UnicodeDecodeError as exc:
                raise UnreadableSegment(path, f"not UTF-8: byte {offset + exc.start} of its "
                                        f"text is {block[exc.start]:#04x}") from None
            offset += len(block)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise UnreadableSegment(path, "not UTF-8: its text ends inside a character") from None


def _opened(path: Path, gzipped: bool) -> Handle:
    if gzipped:
        return gzip.open(path, "rb")
    return open(path, "rb")


def _read(path: Path, read: Callable[[int], bytes], size: int) -> bytes:
    """``read(size)``, a damaged gzip stream said in words."""
    with _damage_said(path):
        return read(size)


@contextmanager
def _damage_said(path: Path) -> Iterator[None]:
    try:
        yield
    except gzip.BadGzipFile as exc:
        raise UnreadableSegment(path, _gzip_trouble(str(exc))) from None
    except EOFError:
        raise UnreadableSegment(path, "truncated: its gzip stream ends before its end") from None
    except zlib.error as exc:
        raise UnreadableSegment(path, f"damaged gzip data ({exc})") from None


def _gzip_trouble(message: str) -> str:
    if message.startswith("Not a gzipped file"):
        return "not gzip (it does not start as a gzip stream does)"
    if message.startswith("CRC check failed"):
        return f"bad CRC: its content is not what was compressed ({message})"
    return f"damaged gzip stream ({message})"


def _skip_rest(path: Path, handle: Handle | _Bounded) -> int:
    """Read past the rest of a line, a block at a time; the bytes skipped."""
    skipped = 0
    while True:
        block = _read(path, handle.readline, BLOCK)
        skipped += len(block)
        if not block or block.endswith(b"\n"):
            return skipped
