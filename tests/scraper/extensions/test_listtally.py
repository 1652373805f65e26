"""Which list an item came from, and what the worker state file keeps of each list."""

from __future__ import annotations

from scraper.extensions.listtally import ListTally, list_key, longest_site, rows_and_fields
from scraper.items import DocPageItem, SearchRepoItem, TrendingPageItem, TrendingRepoItem


def test_lists_are_named_without_host_or_password() -> None:
    page = TrendingPageItem(url="https://github.com/trending/python?since=weekly",
                            rows=[{"full_name": "a/b", "language": None}])
    assert list_key(page) == "trending/python?since=weekly"
    assert list_key(TrendingRepoItem(full_name="a/b")) is None  # its page counts it
    assert list_key(SearchRepoItem(query='topic:"web scraping"')) == 'topic:"web scraping"'
    doc = DocPageItem(url="https://u:s3cret@docs.example.org/en/latest/intro/page.html")
    site = "https://u:s3cret@docs.example.org/en/latest/"
    assert list_key(doc, [site, "https://u:s3cret@docs.example.org/"]) == \
        "https://u:***@docs.example.org/en/latest/"
    assert list_key(doc) == "https://u:***@docs.example.org/en/latest/intro/"


def test_the_spiders_sites_are_looked_up_by_the_urls_prefixes() -> None:
    """The docs spider's mapping of sites gives what a scan of every site gives (issue 37)."""
    sites = {"http://h/": set(), "http://h/a/": set(), "http://h/a/b/": set(),
             "https://h/a/": set(), "http://h:81/x/": set()}
    urls = ["http://h/a/b/c.html", "http://h/a/b/", "http://h/a/bc/d", "http://h/a", "http://h/",
            "http://h", "https://h/a/b/c", "https://h/b/", "http://h:81/x/y/z#f", "http://g/a/",
            "http://h/a/b/c?q=/a/b/", ""]
    for url in urls:
        assert longest_site(url, sites) == longest_site(url, list(sites)), url
    assert longest_site("http://h/a/b/c.html", sites) == "http://h/a/b/"
    assert longest_site("http://h/a/bc/d", sites) == "http://h/a/"
    assert longest_site("http://g/a/", sites) is None
    doc = DocPageItem(url="https://u:s3cret@docs.example.org/en/latest/intro/page.html")
    assert list_key(doc, {"https://u:s3cret@docs.example.org/en/latest/": set()}) == \
        "https://u:***@docs.example.org/en/latest/"


def test_rows_and_fields_of_a_page_and_of_a_row_item() -> None:
    page = TrendingPageItem(rows=[{"a": 1, "b": None}, {"a": "", "b": 2}, "not a row"])
    assert rows_and_fields(page) == (2, 2, 4)
    rows, filled, fields = rows_and_fields(SearchRepoItem(query="q", full_name="a/b"))
    assert (rows, filled) == (1, 2) and fields > filled


def test_merged_keeps_recent_lists_and_drops_those_silent_past_the_window() -> None:
    tally = ListTally()
    tally.add(SearchRepoItem(query="new"), 500.0)
    tally.confirm("unchanged", 400.0)
    earlier = {"old": {"last_data_at": 10.0}, "kept": {"last_data_at": 300.0},
               "unchanged": {"last_data_at": 200.0}, "bad": "x"}
    assert tally.merged(earlier, keep_after=100.0) == {
        "kept": {"last_data_at": 300.0, "rows": 0},
        "unchanged": {"last_data_at": 400.0, "rows": 0},
        "new": {"last_data_at": 500.0, "rows": 1}}
