"""The GitHub token goes to the API's origin and nowhere else.

The token is read from the environment variable the config names (``github.token_env``) and is
added as ``Authorization: Bearer …`` only to requests whose scheme, host and port are the API's;
any other request — including one redirected away from the API — has the header removed. Every
request passes here, redirects included (Scrapy reschedules them through the whole chain).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from scrapy import Request, Spider
from scrapy.crawler import Crawler

from scraper.config import load_config


def origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


class GitHubAuthMiddleware:
    def __init__(self, api_url: str, token: str | None) -> None:
        self.api_origin = origin(api_url)
        self._authorization = f"Bearer {token}".encode() if token else None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GitHubAuthMiddleware:
        github = load_config(crawler.settings.get("COLLECTOR_CONFIG")).github
        return cls(github.api_url, github.token())

    def process_request(self, request: Request, spider: Spider | None = None) -> None:
        if origin(request.url) == self.api_origin and self._authorization:
            request.headers[b"Authorization"] = self._authorization
        else:
            request.headers.pop(b"Authorization", None)

    def __repr__(self) -> str:  # never the token, whoever prints the middleware list
        token = "set" if self._authorization else "none"
        return f"<GitHubAuthMiddleware api={self.api_origin[1]} token={token}>"
