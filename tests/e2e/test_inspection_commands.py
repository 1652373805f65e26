"""``scrapy fetch``, ``shell`` and ``parse`` of a GitHub API URL: asked as the search spider
asks (the token, to the API's origin only, and the budget), shown whole, and a URL the shell
cannot fetch is one line saying why."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.support.collector import REPO_ROOT, SCRAPY, Collector, free_port

TOKEN = "ghp_inspection_token"


def scrapy(collector: Collector, *args: str, token: str = TOKEN,
           timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SCRAPY, *args], cwd=REPO_ROOT,
                          env=collector.env(GITHUB_TOKEN=token), capture_output=True,
                          text=True, timeout=timeout)


def api_requests(fake_github: Any, since: int) -> list[dict[str, Any]]:
    return [r for r in fake_github.stats()["requests"][since:] if r["app"] == "api"]


@pytest.mark.timeout(240)
def test_fetch_shell_and_parse_of_an_api_url_send_the_token_as_the_spiders_do(
        collector: Collector, fake_github: Any) -> None:
    collector.configure(github=fake_github,
                        spiders={"search": {"queries": ["topic:web-scraping"],
                                            "complete": False}})
    # A round first: its ETags must not turn the commands' answers into bodiless 304s.
    crawl = collector.crawl("search", env=collector.env(GITHUB_TOKEN=TOKEN))
    assert crawl.returncode == 0, crawl.stderr[-2000:]
    collected = collector.items("search")
    assert collected
    url = f"{fake_github.url('api')}/search/repositories?q=topic%3Aweb-scraping&per_page=2"
    seen = len(fake_github.stats()["requests"])

    fetched = scrapy(collector, "fetch", "--nolog", url)
    assert fetched.returncode == 0, fetched.stderr[-2000:]
    assert fetched.stdout.startswith('{"total_count": ')
    shell = scrapy(collector, "shell", "--nolog", "-c", "(response.status, spider.name)", url)
    assert (shell.returncode, shell.stdout, shell.stderr) == (0, "(200, 'search')\n", "")
    named = scrapy(collector, "shell", "--spider=search", "--nolog", "-c",
                   "response.json()['total_count']", url)
    assert (named.returncode, named.stderr) == (0, ""), named.stderr[-2000:]
    assert int(named.stdout) > 2
    for spider in ([], ["--spider", "search"]):
        parsed = scrapy(collector, "parse", "--nolog", *spider, url)
        assert parsed.returncode == 0, parsed.stderr[-2000:]
        items, requests = parsed.stdout.split("# Requests")
        assert items.count("'full_name':") == 2, parsed.stdout[:2000]
        assert "page=2" in requests  # the next page, as the spider would follow it
    asked = [r for r in api_requests(fake_github, seen) if r["path"] == "/search/repositories"]
    assert len(asked) == 5 and {r["status"] for r in asked} == {200}, asked
    assert all(r["auth"] for r in asked), asked

    # Only to the API's origin: a trending page asked by hand goes without it.
    web = scrapy(collector, "fetch", "--nolog", f"{fake_github.url('web')}/trending")
    assert web.returncode == 0 and "Box-row" in web.stdout
    assert fake_github.stats()["auth_seen_on_web"] == 0
    # ...and nothing of a round was written by the commands.
    assert collector.items("search") == collected


def test_the_shell_says_in_one_line_why_it_has_no_response(collector: Collector,
                                                           fake_github: Any) -> None:
    collector.configure(github=fake_github)
    url = f"{fake_github.url('api')}/search/repositories?q=topic%3Ax"
    # The fake answers 401 "Bad credentials" to the token "bad": the spider closes; the shell
    # used to wait for the answer forever.
    refused = scrapy(collector, "shell", "--spider=search", "--nolog", "-c", "response", url,
                     token="bad", timeout=60)
    assert (refused.returncode, refused.stdout) == (0, "None\n")
    assert refused.stderr == (f"scrapy shell: no response from {url}: GitHub answered 401 Bad "
                              "credentials for the token in $GITHUB_TOKEN\n")
    nobody = f"http://127.0.0.1:{free_port()}/docs/"
    gone = scrapy(collector, "shell", "--nolog", "-c", "response", nobody)
    assert (gone.returncode, gone.stdout) == (0, "None\n")
    assert gone.stderr.startswith(f"scrapy shell: no response from {nobody}: 127.0.0.1:")
    assert "Connection was refused" in gone.stderr and gone.stderr.count("\n") == 1
