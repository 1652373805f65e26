"""The ETag (and ``Link`` header) last seen for each GitHub API page: what the conditional
requests middleware (:mod:`scraper.budget.conditional`) asks of its store (``ETAG_STORAGE``).
Backends: :mod:`.sqliteetags`, :mod:`.redisetags`, :mod:`.memorybudget`."""

from __future__ import annotations

from typing import Protocol

from scraper.stores.base import Outage


class EtagStorage(Outage, Protocol):
    """The ETag (and ``Link``) last seen for each GitHub API page, per identity."""

    def get(self, identity: str, url: str) -> PageTag | None: ...

    def remember(self, identity: str, pages: dict[str, PageTag]) -> None:
        """``url → (etag, link)`` of pages whose items are all written, all or nothing."""

    def close(self) -> None: ...


PageTag = tuple[str, str | None]
"""A page's ``(etag, link)``."""


ETAG_KEEP_S = 30 * 86400.0
"""An ETag unseen this long is dropped."""
