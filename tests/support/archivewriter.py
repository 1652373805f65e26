"""A process that archives trending pages until it is killed, for the kill test.

    python -m tests.support.archivewriter DATA_DIR SEED

Each fetch is the real 2026 page with fresh per-request values (:func:`page_at`); after each
``put`` returns it prints ``put N`` and flushes, so a test knows how far it got before its
SIGKILL.
"""

from __future__ import annotations

import base64
import random
import sys
import time
from pathlib import Path

from scraper.trending.archive import ArchivedPage, FilesystemPageArchive, body_sha256
from scraper.utils.layout import DataLayout
from scraper.utils.stamps import ms_stamp
from tests.support.fakes.data import TRENDING_PAGES
from tests.support.fakes.perrequest import fresh_values

URL = "https://github.com/trending/python?since=daily"
PAGE = TRENDING_PAGES / "2026-04_python_daily.html"


def page_at(n: int, rng: random.Random, page: bytes) -> bytes:
    """Fetch ``n`` of a list: ``page`` with fresh per-request values, and every fourth fetch
    6 KB of new text, as rows that came onto the list bring (so the list's head moves on and
    frames chain); the three fetches after it show the same text."""
    news = random.Random(n // 4).randbytes(4500)
    text = b"<!-- " + base64.b64encode(news) + b" -->"
    return fresh_values(page.replace(b"</body>", text + b"</body>", 1), rng)


def main(argv: list[str]) -> None:
    data_dir, seed = Path(argv[0]), int(argv[1])
    rng = random.Random(seed)
    archive = FilesystemPageArchive.at(DataLayout(data_dir), "trending")
    page = PAGE.read_bytes()
    for n in range(1_000_000):
        body = page_at(n, rng, page)
        observed = ms_stamp(int(time.time() * 1000))
        archive.put(ArchivedPage(URL, observed, 200, body_sha256(body), "daily|python|", "1"),
                    body)
        print(f"put {n}", flush=True)
        time.sleep(0.002)  # a new millisecond: two fetches never share an instant


if __name__ == "__main__":
    main(sys.argv[1:])
