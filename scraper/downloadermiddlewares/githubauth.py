"""The GitHub token goes to the API's origin and nowhere else.

The token (setting ``GITHUB_TOKEN``, which ``scrapy crawl`` reads from the variable the config
names in ``github.token_env``) is added as ``Authorization: Bearer …`` only to requests whose
scheme, host and port are the API's; any other request — including one redirected away from the
API — has the header removed. Every request passes here, redirects included (Scrapy reschedules
them through the whole chain).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from scraper.config import Secret


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
        settings = crawler.settings
        if not settings.get("GITHUB_API_URL"):
            raise NotConfigured("no GITHUB_API_URL")
        token: Secret | None = settings.get("GITHUB_TOKEN")
        return cls(settings["GITHUB_API_URL"], token.reveal() if token else None)

    def process_request(self, request: Request, spider: Spider | None = None) -> None:
        if origin(request.url) == self.api_origin and self._authorization:
            request.headers[b"Authorization"] = self._authorization
        else:
            request.headers.pop(b"Authorization", None)

    def __repr__(self) -> str:  # never the token, whoever prints the middleware list
        token = "set" if self._authorization else "none"
        return f"<GitHubAuthMiddleware api={self.api_origin[1]} token={token}>"
