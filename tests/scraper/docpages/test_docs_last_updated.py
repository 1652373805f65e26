"""A generator's "Last updated" line is read from the elements its class names, found in one
walk over the page's class attributes (issue 37), and reads as the rule over the whole page
would: in document order, each node once, also where one named element holds another."""

from __future__ import annotations

import pytest

from scraper.docpages.extract import last_modified, page_selector


@pytest.mark.parametrize(("body", "expected"), [
    ('<div class="theme-last-updated">Last updated on <time datetime="2024-01-02T03:04:05Z">'
     "x</time></div>", "2024-01-02T03:04:05Z"),
    ('<div class="last-updated"><div class="last-updated">Last updated: Jan 02, 2024</div>'
     " more</div>", "Jan 02, 2024 more"),
    ('<span class="git-revision-date-localized-plugin">2024-03-04<span '
     'class="git-revision-date-localized-plugin">x</span>tail</span>', "2024-03-04 x tail"),
    ('<p class="lastupdated">Last updated on Mar 05, 2023.</p>', "2023-03-05"),
    ('<p class="last">the last word</p>', None),
    ('<span class="x-last-updated">no</span><div class=" last-updated\t">Last updated: '
     "2020-01-01</div>", "2020-01-01"),
])
def test_last_updated_reads_like_the_rule_over_the_page(body: str, expected: str | None) -> None:
    page = page_selector(f"<html><body><main>{body}</main></body></html>")
    assert last_modified(page, None) == expected
