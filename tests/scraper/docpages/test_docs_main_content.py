"""The main content is a generator's own container before any landmark, whichever comes first
in the page (issue 37: each XPath stops at its first match)."""

from __future__ import annotations

import pytest

from scraper.docpages.extract import main_content, page_selector

CONTAINERS = ['<article class="bd-article">', '<div class="theme-doc-markdown markdown">',
              '<article class=" md-content__inner\tmd-typeset">', '<div class="vp-doc _x">',
              '<section class="markdown-section">', '<div class="col-content">',
              '<div id="doc-content">']


@pytest.mark.parametrize("container", CONTAINERS)
def test_a_generators_container_wins_over_the_landmarks(container: str) -> None:
    tag = container[1:].split()[0]
    page = page_selector(f'<html><body><main role="main"><p>nav</p>{container}<p>doc</p>'
                         f"</{tag}></main></body></html>")
    found = main_content(page)
    assert found is not None and found.tag == tag and found.findtext("p") == "doc"


def test_without_one_the_landmarks_choose() -> None:
    page = page_selector('<html><body><div class="col-contents"><main><p>doc</p></main>'
                         "</div></body></html>")
    found = main_content(page)
    assert found is not None and found.tag == "main"
