"""Documentation versions in URLs: ``/en/latest/``, ``/en/stable/``, ``/3/``, ``/v2.1/``."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# A URL path segment naming a version: Read the Docs' latest/stable, 3, 20, v1.2, 4.x, 2.0.1.
VERSION_SEGMENT = re.compile(r"^(?:latest|stable|dev|devel|main|master|nightly|"
                             r"v?\d+(?:\.\d+){0,3}(?:\.x)?)$", re.IGNORECASE)


def url_version(url: str) -> tuple[str, str] | None:
    """(the version, the URL up to and including its segment) for the first path segment of
    ``url``'s directory that names a version, e.g. ``("stable", "https://h/en/stable/")``."""
    parts = urlsplit(url)
    segments = parts.path.split("/")[:-1]
    for index, segment in enumerate(segments):
        if segment and VERSION_SEGMENT.match(segment):
            root = "/".join(segments[:index + 1])
            return segment, f"{parts.scheme}://{parts.netloc}{root}/"
    return None
