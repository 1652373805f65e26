"""Segments no reader can read, set aside under ``quarantine/``: kept byte for byte, never deleted.

A closed segment the catalog cannot read (not gzip, truncated, a bad CRC, not UTF-8), or one a
box shipped that the dataset box's drain cannot take (fields unlike the ones an upload writes,
chunks larger than declared, a gzip stream that does not check), would stop every later build
at the same place. It is moved under ``quarantine/`` instead (the paths are
:class:`~scraper.utils.layout.DataLayout`'s), where nothing reads it again, and
``quarantine/why.log`` gets one line: when, which, why. A file repaired by hand and moved back
into ``items/{spider}/`` loads at the next build.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from scraper.utils.layout import DataLayout
from scraper.utils.stamps import utc_stamp

KINDS = ("items", "shipped")
"""The folders of ``quarantine/``: segments of ``items/``, segments received through Redis."""


def set_aside(layout: DataLayout, source: Path, target: Path, why: str) -> Path:
    """Move ``source`` to ``target`` (``target`` with ``-1``, ``-2`` … before its suffixes when
    that name is taken: nothing set aside is ever replaced) and log why; returns where it went."""
    target.parent.mkdir(parents=True, exist_ok=True)
    place = _unused(target)
    try:
        os.replace(source, place)
    except OSError as exc:
        if exc.errno != errno.EXDEV:  # items/ mounted apart from data_dir: copied, then removed
            raise
        import shutil  # here: `status` counts what is set aside, and shutil brings bz2, lzma

        temporary = place.with_name(f".{place.name}.tmp")
        shutil.copyfile(source, temporary)
        with open(temporary, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temporary, place)
        source.unlink()
    _sync_dir(place.parent)
    line = " ".join(f"{utc_stamp()} {place.relative_to(layout.quarantine_dir)}: {why}".split())
    with open(layout.quarantine_log, "a", encoding="utf-8", errors="replace") as log:
        log.write(line + "\n")
    return place


def count_quarantined(layout: DataLayout) -> int:
    """Segments set aside so far (``why.log`` is not one)."""
    total = 0
    for kind in KINDS:
        for _, _, files in os.walk(layout.quarantine_dir / kind):
            total += sum(1 for name in files if not name.startswith("."))
    return total


def _unused(target: Path) -> Path:
    name = target.name
    stem, dot, suffixes = name.partition(".")
    candidate, n = target, 1
    while candidate.exists():
        candidate = target.with_name(f"{stem}-{n}{dot}{suffixes}")
        n += 1
    return candidate


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)  # the move survives a power cut: the segment is in one place or the other
    finally:
        os.close(fd)
