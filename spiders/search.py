"""``search``: GitHub's REST repository search, one item per repository, paged by ``Link``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import scrapy
from scrapy.http import Response

from scraper.items import SearchRepoItem
from spiders.base import CollectorSpider

RESULTS_CAP = 1000
"""GitHub's search API serves only the first 1000 results of a query."""

API_HEADERS = {
    "Accept": "application/vnd.github+json",
    "X-GitHub-Api-Version": "2022-11-28",
}

COPIED_FIELDS = (
    "id", "full_name", "html_url", "description", "language", "stargazers_count",
    "forks_count", "open_issues_count", "topics", "created_at", "updated_at", "pushed_at",
    "archived",
)


def next_link(link_header: str) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header, as GitHub writes it, or None."""
    for part in link_header.split(","):
        url, _, params = part.partition(";")
        if 'rel="next"' in params.replace(" ", ""):
            return url.strip().strip("<>")
    return None


def first_result_index(url: str, default_per_page: int) -> int:
    """0-based index of the first result a search page URL asks for."""
    query = parse_qs(urlsplit(url).query)
    page = int(query.get("page", ["1"])[0])
    per_page = int(query.get("per_page", [str(default_per_page)])[0])
    return (page - 1) * per_page


class SearchSpider(CollectorSpider):
    name = "search"
    # A 422 past the result cap ends a query with a warning, not an HttpError; a 304 (the
    # budget middleware asked with If-None-Match) means the page is unchanged.
    custom_settings = {"HTTPERROR_ALLOWED_CODES": [304, 422]}

    def query_url(self, query: str) -> str:
        section = self.config.search
        params = {"q": query, "sort": section.sort, "order": "desc",
                  "per_page": section.per_page}
        return f"{self.config.github.api_url}/search/repositories?{urlencode(params)}"

    def page_request(self, url: str, query: str) -> scrapy.Request:
        return scrapy.Request(
            url, callback=self.parse, errback=self.request_failed, headers=API_HEADERS,
            dont_filter=True, meta={"deltafetch_enabled": False, "query": query},
        )

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for query in self.my_entries():
            yield self.page_request(self.query_url(query), query)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        query = response.meta["query"]
        if response.status == 422:
            self.crawler.stats.inc_value("search/unprocessable")
            self.logger.warning("search %r ended: GitHub answered 422 at %s", query, response.url)
            return
        if response.status == 304:
            # Unchanged since a round that collected it: no items, but later pages may differ.
            self.crawler.stats.inc_value("search/not_modified")
            yield from self.follow_next(response, query)
            return
        try:
            body = json.loads(response.body)
            results = body["items"]
            if not isinstance(results, list):
                raise TypeError(f"'items' is {type(results).__name__}, not a list")
        except (ValueError, KeyError, TypeError) as exc:
            self.crawler.stats.inc_value("search/bad_responses")
            self.logger.error("search %r: not a search result at %s (%s: %s)", query,
                              response.url, type(exc).__name__, exc)
            return
        repos = [repo for repo in results if isinstance(repo, dict)]
        if len(repos) != len(results):
            self.crawler.stats.inc_value("search/bad_results", len(results) - len(repos))
            self.logger.error("search %r: %d of %d results at %s are not objects; skipped",
                              query, len(results) - len(repos), len(results), response.url)
        for repo in repos:
            yield self.stamp(self.item(query, repo))
        yield from self.follow_next(response, query)

    def follow_next(self, response: Response, query: str) -> Iterator[scrapy.Request]:
        """The ``rel="next"`` page, never one that starts past GitHub's result cap."""
        link = next_link(response.headers.get("Link", b"").decode("latin-1"))
        if not link:
            return
        try:
            start = first_result_index(link, self.config.search.per_page)
        except ValueError as exc:
            self.crawler.stats.inc_value("search/bad_responses")
            self.logger.error("search %r ended: unusable next link %r at %s (%s)", query,
                              link, response.url, exc)
            return
        if start < RESULTS_CAP:
            yield self.page_request(link, query)

    @staticmethod
    def item(query: str, repo: dict[str, Any]) -> SearchRepoItem:
        item = SearchRepoItem(query=query, **{key: repo.get(key) for key in COPIED_FIELDS})
        license_info = repo.get("license")
        item["license"] = license_info.get("spdx_id") if isinstance(license_info, dict) else None
        item["topics"] = list(repo.get("topics") or [])
        return item
