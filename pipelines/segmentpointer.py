"""Which segment a spider-shard has open, without listing ``items/``.

``items/{spider}/`` holds every segment ever closed (tens of thousands after a year), and a
worker starts every round; listing it to find the one ``.part`` made each start cost
O(files). ``state/segments/{spider}-{i}of{N}.open`` instead holds the name of the last segment
the spider-shard opened, written (atomically, synced) *before* that segment is created: the
segment open now, if any, is that name's ``.part`` when it exists, and no other. A kill between
the write and the creation leaves a name with no file, which reads as none open.

Without the file (a data dir from before it, or ``state/`` removed) a start lists the directory
once, as before, and writes it.
"""

from __future__ import annotations

from pathlib import Path

from scraper.utils.statefile import write_atomic


class SegmentPointer:
    def __init__(self, path: Path, prefix: str) -> None:
        self.path = path
        self.prefix = prefix
        """``{spider}-{i}of{N}``: a name this spider-shard's store wrote starts with it."""

    def read(self) -> str | None:
        """The last opened segment's ``.part`` name; None when there is no usable pointer (the
        caller lists the directory instead)."""
        try:
            name = self.path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return None
        # Only a bare name of this spider-shard's: anything else is not ours to open.
        if "/" in name or "\0" in name or not name.startswith(f"{self.prefix}-"):
            return None
        return name

    def write(self, name: str) -> None:
        write_atomic(self.path, name + "\n")
