"""Where a docs site lives, from its start URL: shared by the spider and the catalog's commands,
which read the config's start URLs without importing a parser (and Scrapy with it)."""

from __future__ import annotations

from urllib.parse import urldefrag, urlsplit


def site_prefix(start_url: str) -> str:
    """The URL prefix a docs site lives under: its start URL up to the last ``/`` of the path."""
    url, _ = urldefrag(start_url)
    parts = urlsplit(url)
    path = parts.path or "/"
    directory = path[: path.rfind("/") + 1]
    return f"{parts.scheme}://{parts.netloc}{directory}"
