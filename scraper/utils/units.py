"""Human units used in configuration and on the command line: sizes and durations."""

from __future__ import annotations

import math
import re

_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(i?)(b?)\s*$", re.IGNORECASE)
_SIZE_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}

_DURATION_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_DURATION_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

SIZE_HELP = "a size such as 512MB, 1.5G or 2GiB"
DURATION_HELP = "a duration such as 90, 45s, 30m, 12h or 7d"


def parse_size(text: str | int) -> int:
    """Bytes in ``text``: ``100MB``, ``1.5G``, ``2GiB``, ``4096``.

    Suffixes are binary multiples (a ``G`` of RAM is what ``free -g`` shows), with or without
    ``i``/``B``. Raises ValueError on anything else.
    """
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not {SIZE_HELP}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"{text!r} is not {SIZE_HELP}")
        return text
    match = _SIZE_RE.match(str(text))
    if not match or (match.group(3) and not match.group(2)):
        raise ValueError(f"{text!r} is not {SIZE_HELP}")
    number, unit = float(match.group(1)), match.group(2).lower()
    size = number * 1024 ** _SIZE_POWERS[unit]
    if not math.isfinite(size):  # "9999…9G": no int for infinity
        raise ValueError(f"{text!r} is not {SIZE_HELP}")
    return int(size)


def parse_duration(text: str | int | float) -> float:
    """Seconds in ``text``: ``90``, ``45s``, ``30m``, ``12h``, ``7d``, ``2w``."""
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not {DURATION_HELP}")
    if isinstance(text, int | float):
        if not text >= 0 or not math.isfinite(text):  # NaN, ∞ (YAML .nan, .inf), negative
            raise ValueError(f"{text!r} is not {DURATION_HELP}")
        return float(text)
    match = _DURATION_RE.match(str(text))
    if not match:
        raise ValueError(f"{text!r} is not {DURATION_HELP}")
    seconds = float(match.group(1)) * _DURATION_SECONDS[match.group(2).lower()]
    if not math.isfinite(seconds):
        raise ValueError(f"{text!r} is not {DURATION_HELP}")
    return seconds


def format_size(size: float) -> str:
    """``1288490188`` → ``1.2 GB``: binary units, one decimal from GB up."""
    for unit, power in (("TB", 4), ("GB", 3)):
        if size >= 1024**power:
            return f"{size / 1024**power:.1f} {unit}"
    if size >= 1024**2:
        return f"{size / 1024**2:.0f} MB"
    if size >= 1024:
        return f"{size / 1024:.0f} KB"
    return f"{int(size)} B"


def format_duration(seconds: float | None) -> str:
    """``42s``, ``12m``, ``3.1h``: short enough for a status column; ``-`` for none."""
    if seconds is None:
        return "-"
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 page``, ``2 pages``, ``0 new items``: the number with its noun in the right form."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
