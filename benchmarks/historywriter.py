"""The rounds the defaults run, written into a data dir on a fake clock, through the real stores.

What each round of ``python -m runner --workers 20`` at the defaults leaves on disk (the shard plan
of :func:`runner.supervision.plan.make_plan`, each spider's ``config.round_interval_of``), with the
classes the spiders write through, opened and closed once per round as a worker does:

* **trending**, hourly, 6 shards over the 12 lists: each fetch's body into the page archive
  (:class:`scraper.trending.archive.FilesystemPageArchive`; the bodies are real 2026 pages moved
  on per fetch, :mod:`benchmarks.trendingpages`), its page snapshot and its row items
  (:func:`scraper.trending.pages.page_item`, ``row_items``) through the content-hash store,
  the listing pages into the deltafetch store, each request into the GitHub budget (the web
  pace);
* **search**, hourly, 2 shards (a query each): every result on the first round, then
  ``search_per_hour`` changed repositories an hour (an assumption: only GitHub knows), each API
  page into the budget, the ETag store and the deltafetch store, each query's slice plan;
* **docs**, every 6 h, 12 shards over the 14 sites: each site at its page cap (2,000 pages, an
  assumption), fetched on the first round and again once ``refresh_after`` (7 days) has passed,
  a tenth of the pages fetched again changed (an assumption); the items' content is that of real
  documentation pages (``tests/data/docs``, ``tests/data/generators``) read by the spider's own
  ``extract_page``; each page with its links into the deltafetch store;
* items as :class:`pipelines.itemstore.JsonLinesItemStore` writes them (``json_line``), into
  hourly segments opened, named (``state/segments/``) and closed as it does;
* each round's log, as a real round of that spider wrote it (:mod:`benchmarks.roundlogs`),
  rotated at ``LOG_MAX_BYTES`` as ``LogRotation`` rotates it.

The clock is :attr:`HistoryWriter.now`; nothing here reads the wall clock.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from parsel import Selector
from scrapy import Request
from scrapy.utils.request import fingerprint

from benchmarks.common import REPO_ROOT
from benchmarks.trendingpages import TrendingPages
from pipelines.itemstore import json_line
from pipelines.segmentpointer import SegmentPointer
from pipelines.segments import PART_SUFFIX, SegmentPolicy, close_segment, stamp_now
from runner.supervision.plan import make_plan
from scraper import settings as defaults
from scraper.budget.limits import ANONYMOUS, RateHeaders
from scraper.budget.sqliteetags import EtagStore
from scraper.budget.store import BucketKey, BucketSpec, BudgetStore, BudgetTiming
from scraper.config.collector import CollectorConfig
from scraper.dedup.sqlitehashes import SqliteContentHashStore
from scraper.dedup.sqliteurls import STORE_KIND, DeltaFetchStore
from scraper.docpages.extract import extract_page
from scraper.docpages.fidelityrecord import Fidelity
from scraper.extensions.logrotate import rollover
from scraper.items import CollectedItem, DocPageItem, SearchRepoItem, content_hash, is_deduplicated
from scraper.slicing.slices import Range, Slice
from scraper.slicing.sqliteplans import SlicePlanStore
from scraper.trending.archive import ArchivedPage, FilesystemPageArchive, body_sha256
from scraper.trending.pages import (
    REPOSITORIES,
    list_key,
    page_item,
    parse_profile,
    row_items,
    snapshot_of,
)
from scraper.trending.repositories import PARSER_VERSION
from scraper.utils.diskspace import data_size
from scraper.utils.layout import DataLayout, worker_slug
from scraper.utils.sharding import Shard

WORKERS = 20
"""``python -m runner --workers 20``: the plan README's set-up runs."""
HOUR = 3600
SEARCH_RESULTS = {"topic:web-scraping": 5000, "language:python stars:>5000": 3000}
"""Repositories each default query finds (an assumption, about what GitHub showed in 2026)."""
SEARCH_CAP = 1000  # GitHub's results per query: a complete query is cut into slices of this
DOCS_CHANGED_SHARE = 0.1
"""Of the pages fetched again after ``refresh_after``, the share whose content changed."""
DOCS_LINKS_PER_PAGE = 3
"""New links each page's record keeps (each URL is one page's new link in a round)."""
TEST_DATA = REPO_ROOT / "tests" / "data"


@dataclass(frozen=True, slots=True)
class DocSample:
    title: str | None
    headings: list[str]
    markdown: str
    text: str
    lang: str | None
    fidelity: Fidelity


def doc_samples() -> list[DocSample]:
    """The content of every real documentation page in the tests' data, read as the spider
    reads it."""
    samples = []
    for path in sorted([*TEST_DATA.glob("docs/*.html"), *TEST_DATA.glob("generators/*.html")]):
        page = extract_page(Selector(text=path.read_text(encoding="utf-8", errors="replace")),
                            f"https://docs.example.org/{path.name}")
        samples.append(DocSample(page.title, page.headings, page.markdown, page.text, page.lang,
                                 page.fidelity))
    return samples


class HistoryWriter:
    def __init__(self, data: Path, start: float, search_per_hour: int,
                 round_logs: dict[str, str], docs_pages: int | None = None,
                 seed: int = 36) -> None:
        self.layout = DataLayout(data)
        self.config = CollectorConfig(data_dir=data)
        self.now = start
        self.hours = 0
        self.rng = random.Random(seed)
        self.round_logs = round_logs
        self.search_per_hour = search_per_hour
        self.plan = make_plan(self.config, WORKERS).counts
        self.every = {spider: int(self.config.round_interval_of(spider) // HOUR)
                      for spider in self.plan}
        self.policy = SegmentPolicy(defaults.ITEMSTORE_SEGMENT_SECONDS,
                                    defaults.ITEMSTORE_SEGMENT_BYTES, defaults.ITEMSTORE_COMPRESS)
        self.timing = BudgetTiming(defaults.BUDGET_RESET_GUARD, defaults.BUDGET_MIN_INTERVAL,
                                   defaults.BUDGET_BACKOFF_START, defaults.BUDGET_BACKOFF_MAX,
                                   defaults.BUDGET_MAX_WAIT)
        self.pages = TrendingPages(seed)
        self.lists = self.config.trending.start_entries()
        self.samples = doc_samples()
        self.docs_pages = docs_pages or self.config.docs.max_pages_per_site
        """Pages of each docs site: by default its cap, all fetched in the first round."""
        self.fetched: dict[str, list[float | None]] = {}
        self.revision: dict[str, list[int]] = {}
        self.keys: dict[str, list[bytes]] = {}
        self.search_stars: dict[str, list[int]] = {q: [0] * n for q, n in SEARCH_RESULTS.items()}
        self.written: dict[str, int] = dict.fromkeys(self.plan, 0)
        """Item bytes written per spider."""

    def clock(self) -> float:
        return self.now

    # --- one hour ----------------------------------------------------------------------------

    def hour(self) -> None:
        """Every round due in this hour, one spider-shard after the other."""
        top = self.now
        for spider, shards in self.plan.items():
            if self.hours % self.every[spider]:
                continue
            for index in range(shards):
                self.now = top + 1 + index  # the runner starts due rounds one by one
                getattr(self, f"_{spider}_round")(Shard(index, shards))
        self.hours += 1
        self.now = top + HOUR

    # --- trending ----------------------------------------------------------------------------

    def _trending_round(self, shard: Shard) -> None:
        archive = FilesystemPageArchive.at(self.layout, "trending")
        pace = BucketKey("github.com", "web")
        with _Round(self, "trending", shard) as round_, _Budget(self, {pace: BucketSpec(
                None, defaults.GITHUB_WEB_MIN_INTERVAL)}) as budget:
            for language, period, spoken in shard.select(self.lists):
                list_id = self.lists.index((language, period, spoken))
                self.now += defaults.GITHUB_WEB_MIN_INTERVAL
                url = (f"https://github.com/trending{'/' + language if language else ''}"
                       f"?since={period}")
                budget.request(pace, RateHeaders())
                body, rows = self.pages.page(list_id, period, self.hours, url)
                observed = _stamp(self.now, ms=True)
                snapshot = snapshot_of(REPOSITORIES, rows)
                page = ArchivedPage(url=url, observed_at=observed, status=200,
                                    sha256=body_sha256(body),
                                    list_key=list_key(period, language, spoken),
                                    parser_version=PARSER_VERSION,
                                    profile=parse_profile(snapshot))
                archive.put(page, body)
                items: list[CollectedItem] = [page_item(
                    REPOSITORIES, observed_at=observed, period=period, language=language,
                    spoken=spoken, url=url, rows=snapshot, archive_sha256=page.sha256,
                    parser_version=PARSER_VERSION, parsed_at=observed)]
                round_.write([*items, *row_items(REPOSITORIES, rows, period, language,
                                                 spoken)])
                round_.fetched(url, [])
        archive.close()

    # --- search ------------------------------------------------------------------------------

    def _search_round(self, shard: Shard) -> None:
        api = self.config.github.api_url
        core, search = BucketKey(ANONYMOUS, "core"), BucketKey(ANONYMOUS, "search")
        limits = self.config.github.first_guess_limits()
        specs = {key: BucketSpec(limits[key.resource].limit, limits[key.resource].window, True)
                 for key in (core, search)}
        plans = SlicePlanStore(self.layout.search_slices_db)
        etags = EtagStore(self.layout.etags_db, clock=self.clock)
        with _Round(self, "search", shard) as round_, _Budget(self, specs) as budget:
            for query in shard.select(list(self.config.search.queries)):
                total = SEARCH_RESULTS[query]
                stars = self.search_stars[query]
                first = not any(stars)
                changed = range(total) if first else self.rng.sample(
                    range(total), max(1, self.search_per_hour_of(query)))
                for n in changed:
                    stars[n] += 1 if stars[n] else 5000 + 7 * n
                slices = [Slice(Range(k * 100_000, k * 100_000 + 99_999))
                          for k in range(math.ceil(total / SEARCH_CAP))]
                plans.save(query, slices)
                tags = {}
                pages = math.ceil(total / defaults.SEARCH_PER_PAGE)
                for page in range(pages):
                    self.now += 2.0  # 30 search requests a minute
                    slice_ = slices[page * defaults.SEARCH_PER_PAGE // SEARCH_CAP]
                    url = (f"{api}/search/repositories?q={quote(slice_.query(query))}"
                           f"&sort=stars&order=desc&per_page={defaults.SEARCH_PER_PAGE}"
                           f"&page={page % (SEARCH_CAP // defaults.SEARCH_PER_PAGE) + 1}")
                    budget.request(search, RateHeaders(
                        limit=30, remaining=29 - page % 30, reset=self.now + 60, used=1,
                        resource="search"))
                    tags[url] = (f'W/"{self.rng.getrandbits(128):032x}"', None)
                    lo = page * defaults.SEARCH_PER_PAGE
                    round_.write([self._repo(query, n, stars[n], slice_) for n in changed
                                  if lo <= n < lo + defaults.SEARCH_PER_PAGE])
                    round_.fetched(url, [url.replace(f"&page={page + 1}", f"&page={page + 2}")])
                etags.remember(ANONYMOUS, tags)
        plans.close()
        etags.close()

    def search_per_hour_of(self, query: str) -> int:
        return round(self.search_per_hour * SEARCH_RESULTS[query] / sum(SEARCH_RESULTS.values()))

    def _repo(self, query: str, n: int, stars: int, slice_: Slice) -> SearchRepoItem:
        owner, name = f"owner{n % 997}", f"{query.split(':')[1].split()[0]}-tool-{n}"
        pushed = _stamp(self.now - self.rng.randrange(86400))
        return SearchRepoItem(
            query=query, id=10_000_000 + n, full_name=f"{owner}/{name}",
            html_url=f"https://github.com/{owner}/{name}",
            description=f"A {name.replace('-', ' ')} for collecting and parsing the web, "
                        "with a command line and a Python API",
            language="Python", stargazers_count=stars, forks_count=stars // 9,
            open_issues_count=n % 40, topics=["web-scraping", "python", "crawler"][: 1 + n % 3],
            license="MIT" if n % 3 else "Apache-2.0", created_at="2019-03-04T05:06:07Z",
            updated_at=pushed, pushed_at=pushed, archived=False, slice=slice_.qualifiers())

    # --- docs --------------------------------------------------------------------------------

    def _docs_round(self, shard: Shard) -> None:
        refresh = self.config.docs.refresh_after
        with _Round(self, "docs", shard) as round_:
            for site in shard.select(list(self.config.docs.start_urls)):
                fetched = self.fetched.setdefault(site, [None] * self.docs_pages)
                revision = self.revision.setdefault(site, [0] * self.docs_pages)
                keys = self.keys.setdefault(site, [fingerprint(Request(self._url(site, n)))
                                                   for n in range(self.docs_pages)])
                due = [n for n, at in enumerate(fetched)
                       if at is None or self.now - at >= refresh][: self.docs_pages]
                for n in due:
                    self.now += 0.01
                    again = fetched[n] is not None
                    if again and self.rng.random() < DOCS_CHANGED_SHARE:
                        revision[n] += 1
                    fetched[n] = self.now
                    round_.write([self._doc(site, n, revision[n])])
                    links = [self._url(site, k) for k in range(
                        DOCS_LINKS_PER_PAGE * n + 1, DOCS_LINKS_PER_PAGE * (n + 1) + 1)
                        if k < self.docs_pages]
                    round_.deltafetch.record(keys[n], str(self.now), links)

    @staticmethod
    def _url(site: str, n: int) -> str:
        return site if n == 0 else f"{site}section-{n // 50}/page-{n}.html"

    def _doc(self, site: str, n: int, revision: int) -> DocPageItem:
        sample = self.samples[(n * 7 + len(site)) % len(self.samples)]
        url = self._url(site, n)
        title = f"{sample.title or 'Page'} — {urlsplit(url).path}"
        note = f"\n\nPage {n} of {site}, revision {revision}.\n"
        return DocPageItem(url=url, title=title, headings=sample.headings,
                           markdown=sample.markdown + note, text=sample.text + note,
                           canonical_url=url, lang=sample.lang, last_modified=None,
                           version=None, **sample.fidelity.fields())


class _Round:
    """One spider-shard's round: its stores opened, its segment appended to, its log written,
    and everything closed at its end, as a worker process does."""

    def __init__(self, writer: HistoryWriter, spider: str, shard: Shard) -> None:
        self.writer, self.spider, self.shard = writer, spider, shard
        self.layout = writer.layout
        self.slug = worker_slug(spider, shard)

    def __enter__(self) -> _Round:
        layout = self.layout
        self.hashes = SqliteContentHashStore(layout.contenthash_db(self.spider))
        self.deltafetch = DeltaFetchStore(layout.deltafetch_db(self.spider), kind=STORE_KIND)
        self.part = self._open_segment()
        self.handle = open(self.part, "ab", buffering=0)
        return self

    def _open_segment(self) -> Path:
        directory = self.layout.items_dir(self.spider)
        directory.mkdir(parents=True, exist_ok=True)
        pointer = SegmentPointer(self.layout.open_segment_pointer(self.spider, self.shard),
                                 self.slug)
        named = pointer.read()
        part = directory / named if named else None
        if part is not None and part.exists() and self.writer.policy.is_due(
                part, part.stat().st_size, self.writer.now):
            close_segment(part, self.writer.policy.compress)
        if part is None or not part.exists():
            part = directory / f"{self.slug}-{stamp_now(self.writer.now)}.jsonl{PART_SUFFIX}"
            pointer.write(part.name)
        return part

    def write(self, items: Iterable[CollectedItem]) -> None:
        """The items of one page: stamped, deduplicated by content, written, confirmed."""
        collected_at = _stamp(self.writer.now)
        for item in items:
            item["spider"], item["shard"] = self.spider, str(self.shard)
            item["collected_at"] = collected_at
            digest = item["content_hash"] = content_hash(item)
            if is_deduplicated(item) and not self.hashes.claim(digest):
                continue
            line = json_line(item)
            self.handle.write(line)
            self.writer.written[self.spider] += len(line)
            if is_deduplicated(item):
                self.hashes.confirm(digest, collected_at)

    def fetched(self, url: str, links: list[str]) -> None:
        """A page whose items were written: recorded in deltafetch with the requests it made."""
        self.deltafetch.record(fingerprint(Request(url)), str(self.writer.now), links)

    def __exit__(self, *exc: object) -> None:
        self.handle.close()
        size = self.part.stat().st_size
        if not size:
            self.part.unlink()
        elif self.writer.policy.is_due(self.part, size, self.writer.now):
            close_segment(self.part, self.writer.policy.compress)
        self.hashes.close()
        self.deltafetch.close()
        self._log()

    def _log(self) -> None:
        logs = self.layout.logs_dir
        logs.mkdir(parents=True, exist_ok=True)
        path = self.layout.log_file(self.spider, self.shard)
        if path.exists() and path.stat().st_size >= defaults.LOG_MAX_BYTES:
            rollover(path, defaults.LOG_BACKUP_COUNT)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(self.writer.round_logs[self.spider])


class _Budget:
    """The GitHub budget as one round uses it: a booking and an answer per request."""

    def __init__(self, writer: HistoryWriter, specs: dict[BucketKey, BucketSpec]) -> None:
        self.store = BudgetStore(writer.layout.budget_db, writer.timing, clock=writer.clock,
                                 wall=writer.clock)
        for key, spec in specs.items():
            self.store.define(key, spec)

    def __enter__(self) -> _Budget:
        return self

    def request(self, key: BucketKey, rate: RateHeaders) -> None:
        self.store.complete(self.store.reserve(key), key, rate)

    def __exit__(self, *exc: object) -> None:
        self.store.release_process()
        self.store.close()


def _stamp(epoch: float, ms: bool = False) -> str:
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch))
    return text + (f".{int(epoch % 1 * 1000):03d}Z" if ms else "Z")


def part_sizes(layout: DataLayout) -> dict[str, int]:
    """Bytes on disk of each part of the data dir (allocated blocks, as ``data_size`` counts
    them), and ``other`` for the rest (state files, locks, growth samples)."""
    sizes = {name: sum(_size(path) for path in paths) for name, paths in _parts(layout).items()}
    sizes["other"] = data_size(layout.root) - sum(sizes.values())
    return sizes


def _size(path: Path) -> int:
    """A directory's ``data_size``; a store file's blocks with its -wal and -shm."""
    if path.is_dir():
        return data_size(path)
    total = 0
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        with contextlib.suppress(FileNotFoundError):
            total += os.lstat(name).st_blocks * 512
    return total


def _parts(layout: DataLayout) -> dict[str, list[Path]]:
    state = layout.state_dir
    return {
        "items trending": [layout.items_dir("trending")],
        "items search": [layout.items_dir("search")],
        "items docs": [layout.items_dir("docs")],
        "page archive": [layout.archive_dir("trending"), state / "archive"],
        "dedup stores": [layout.deltafetch_dir, layout.contenthash_dir],
        "budget, etags, slice plans": [layout.budget_db, layout.etags_db,
                                       layout.search_slices_db],
        "catalog": [layout.catalog_db, layout.catalog_metadata],
        "feeds": [layout.feeds_dir],
        "logs": [layout.logs_dir],
    }

