"""The GitHub token goes to the API's origin and nowhere else, and only while a request is sent.

The token (setting ``GITHUB_TOKEN``, which ``scrapy crawl`` reads from the variable the config
names in ``github.token_env``) is added as ``Authorization: Bearer …`` only by spiders that say
``uses_github_token`` (the search spider), only to requests whose scheme, host and port are the
API's and whose path is under ``api_url``'s; any other request — including one redirected away
from the API — has the header removed. Every request passes here, redirects included (Scrapy
reschedules them through the whole chain).

The header lives on the request only from here to the download handler and back: this is the
last ``process_request`` (order 970, after the GitHub budget's 960) and so the first
``process_response``/``process_exception``, which take it off again. Whatever copies the request
afterwards — a retry after a 5xx or a timeout, a redirect, the budget's replay after a
rate-limit pause, the spider through ``response.request`` — copies it without the token, so the
token reaches no queue (the distributed mode's Redis queue included), callback, item or log.
A request handed back to the scheduler from an earlier ``process_request`` (the budget's, while
the spider closes) never had it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

from scraper.config.collector import Secret


def origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def under_api(url: str, api_url: str) -> bool:
    """``url`` is on the API's origin and under its path (``/api/v3`` on GitHub Enterprise
    Server: the rest of that host is a web site, not the API)."""
    if origin(url) != origin(api_url):
        return False
    prefix = urlsplit(api_url).path.rstrip("/")
    path = urlsplit(url).path
    return not prefix or path == prefix or path.startswith(prefix + "/")


class GitHubAuthMiddleware:
    def __init__(self, api_url: str, token: str | None) -> None:
        self.api_url = api_url
        self.api_origin = origin(api_url)
        self._authorization = f"Bearer {token}".encode() if token else None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GitHubAuthMiddleware:
        settings = crawler.settings
        if not settings.get("GITHUB_API_URL"):
            raise NotConfigured("no GITHUB_API_URL")
        token: Secret | None = settings.get("GITHUB_TOKEN")
        # Only a spider that asks GitHub's API sends the token: a docs site could otherwise
        # redirect the docs spider to API paths of its choosing, authenticated.
        if not getattr(crawler.spidercls, "uses_github_token", False):
            token = None
        return cls(settings["GITHUB_API_URL"], token.reveal() if token else None)

    def process_request(self, request: Request, spider: Spider | None = None) -> None:
        if self._authorization and under_api(request.url, self.api_url):
            request.headers[b"Authorization"] = self._authorization
        else:
            request.headers.pop(b"Authorization", None)

    def process_response(self, request: Request, response: Response) -> Response:
        request.headers.pop(b"Authorization", None)
        return response

    def process_exception(self, request: Request, exception: BaseException) -> None:
        request.headers.pop(b"Authorization", None)

    def __repr__(self) -> str:  # never the token, whoever prints the middleware list
        token = "set" if self._authorization else "none"
        return f"<GitHubAuthMiddleware api={self.api_origin[1]} token={token}>"
