"""Fake github.com (trending pages) and api.github.com (repository search) in one process.

    python -m tests.support.fakes.github --web-host 127.0.0.1 --api-host 127.0.0.1 --port-file PATH
        [--search-limit 30 --search-window 60 --core-limit 60 --core-window 3600]
        [--rate-status 403] [--rate-limit-api json] [--one-origin] [--latency-ms 0 --jitter 0.0]
        [--trending-fixtures DIR]
        [--developer-fixtures DIR]

The two apps share one state (stats, limits, generation), so ``/_stats`` and ``/_control``
answer the same on either listener.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import math
import random
import re
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from tests.support.paths import DATA

from .common import ControlError, FakeProcess, Payload, add_common_args, run, serve
from .data import TRENDING_PAGES
from .perrequest import fresh_values

DEFAULT_TRENDING = TRENDING_PAGES
RATE_DOCS = "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"
SECONDARY_DOCS = (
    "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)
SEARCH_DOCS = "https://docs.github.com/v3/search/"
REST_DOCS = "https://docs.github.com/rest"
SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID {rid}."
)
SEARCH_CAP = 1000  # GitHub never serves search results past the first 1000
RESOURCES = ("core", "search")
TRENDING_SINCE = ("daily", "weekly", "monthly")
DEFAULT_DEVELOPERS = DATA / "trending_developers"
"""Real /trending/developers pages (tests/data/trending_developers/README.md)."""
# A rejected request this long after the identity's first secondary rejection means the client
# ignored retry-after; anything sooner may simply have been in flight already.
SECONDARY_GRACE_S = 1.0
JSON_TYPE = "application/json; charset=utf-8"
RATE_LIMIT_APIS = ("json", "disabled", "html")
"""What ``GET /rate_limit`` is: GitHub's JSON; ``disabled``, a GitHub Enterprise Server with
rate limiting off (404 "Rate limiting is not enabled.", and no ``x-ratelimit-*`` header on any
answer); ``html``, a proxy's page in its place (200, not JSON; the other answers as GitHub's)."""
RATE_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Used",
                "X-RateLimit-Reset", "X-RateLimit-Resource")


# --------------------------------------------------------------------------- fake repositories

POOL_SIZE = 10_000  # queries sample from one pool, so different queries overlap like real ones
_WORD_TEXT = """
async atlas beacon bolt cache canvas cinder cloud codec comet crawler delta drift echo ember
engine flux forge frame garden graph harbor helix hive index kernel lambda lattice ledger lens
loom matrix mesh nebula nexus orbit parser pixel prism pulse quartz query radar relay ripple
router sage scout shard signal spark spider stream summit tensor tide vector vertex wave zephyr
"""
WORDS = tuple(_WORD_TEXT.split())
LANGUAGES = (
    "Python",
    "JavaScript",
    "TypeScript",
    "Go",
    "Rust",
    "C",
    "C++",
    "Java",
    "Ruby",
    "Shell",
    "Jupyter Notebook",
    None,
)
# (key, name, spdx_id, GitHub's numeric license id used in node_id)
LICENSES = (
    ("mit", "MIT License", "MIT", 13),
    ("apache-2.0", "Apache License 2.0", "Apache-2.0", 2),
    ("gpl-3.0", "GNU General Public License v3.0", "GPL-3.0", 9),
    ("bsd-3-clause", 'BSD 3-Clause "New" or "Revised" License', "BSD-3-Clause", 5),
    ("other", "Other", "NOASSERTION", 0),
    None,
)
DESCRIPTIONS = (
    "A fast {a} {b} for humans",
    "Experimental {a} toolkit built on {b}",
    "{A}: the {b} you always wanted — now with ünïcode support",
    "Minimal, dependency-free {a} & {b} library",
    "Production-ready {a} service <with> batteries included",
    None,
)
EPOCH_2008 = 1_199_145_600
EPOCH_2025 = 1_735_689_600


@dataclass(frozen=True, slots=True)
class Repo:
    id: int
    owner: str
    owner_id: int
    owner_type: str
    name: str
    description: str | None
    language: str | None
    license: tuple[str, str, str, int] | None
    stars: int
    forks: int
    open_issues: int
    size: int
    created: int
    updated: int
    pushed: int
    topics: tuple[str, ...]
    archived: bool
    fork: bool
    homepage: str | None


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


LONGTAIL_ZERO = 0.4  # the share of a long-tail query's repositories that have no star


@lru_cache(maxsize=4 * POOL_SIZE)
def make_repo(pool_index: int, generation: int) -> Repo:
    # Attributes depend only on the repository (and generation), so a repo found by two
    # different queries looks the same in both, as on GitHub.
    rng = random.Random(pool_index)
    a, b = rng.sample(WORDS, 2)
    owner_n = rng.randrange(400)
    owner = f"{rng.choice(WORDS)}-{('labs', 'dev', 'hq', 'io')[owner_n % 4]}{owner_n}"
    created = rng.randrange(EPOCH_2008, EPOCH_2025 - 86_400 * 30)
    updated = rng.randrange(created, EPOCH_2025)
    description = rng.choice(DESCRIPTIONS)
    base_stars = int(10 ** rng.uniform(0, 5.3))
    if pool_index >= POOL_SIZE and pool_index % 5 < LONGTAIL_ZERO * 5:
        base_stars = 0  # long-tail repositories (beyond the shared pool): 40% have no star
    forks = int(base_stars * rng.uniform(0.02, 0.3))
    issues = rng.randrange(0, 40 + base_stars // 200)
    # Generation bumps make the data (and so the ETags) change without reshuffling identity.
    bump = generation * (1 + pool_index % 17)
    return Repo(
        id=1_000_003 + pool_index * 7_919,
        owner=owner,
        owner_id=10_007 + owner_n * 104_729,
        owner_type="Organization" if owner_n % 3 == 0 else "User",
        name=f"{a}-{b}" if rng.random() < 0.7 else f"{a}{b.capitalize()}",
        description=(description.format(a=a, b=b, A=a.capitalize()) if description else None),
        language=rng.choice(LANGUAGES),
        license=rng.choice(LICENSES),
        stars=base_stars + bump,
        forks=forks + generation * (pool_index % 3),
        open_issues=issues + generation * (pool_index % 2),
        size=rng.randrange(10, 250_000),
        created=created,
        updated=min(updated + generation * 3_600, EPOCH_2025 + generation * 3_600),
        pushed=max(created, updated - rng.randrange(0, 86_400)) + generation * 3_600,
        topics=tuple(sorted(rng.sample(WORDS, rng.randrange(0, 6)))),
        archived=rng.random() < 0.05,
        fork=rng.random() < 0.08,
        homepage=f"https://{a}-{b}.example.org" if rng.random() < 0.4 else None,
    )


LONGTAIL_RE = re.compile(r"(?<!\S)longtail(\d*)(?!\S)")
LONGTAIL_DEFAULT = 4000
CLONES_RE = re.compile(r"(?<!\S)clones(\d+)(?!\S)")
CLONE_STARS = 7
CLONE_CREATED = 1_600_000_000  # 2020-09-13T12:26:40Z: one script made them all in one second


def total_for(q: str) -> int:
    """How many repositories the free text of a query matches (qualifiers aside)."""
    if "empty" in q:
        return 0
    if "few" in q:
        return 7
    if "huge" in q:
        return 5000
    if match := LONGTAIL_RE.search(q):
        return int(match.group(1) or LONGTAIL_DEFAULT)
    if match := CLONES_RE.search(q):
        return int(match.group(1))
    return 250


# ---------------------------------------------------------------- stars:/created: qualifiers

QUALIFIER_RE = re.compile(r"(?<!\S)(stars|created):(\S+)")
DATE_RE = re.compile(r"(\d{4})-(\d\d)-(\d\d)(?:T(\d\d):(\d\d)(?::(\d\d))?)?(Z|[+-]\d\d:?\d\d)?")


class QueryInvalid(ValueError):
    """What GitHub answers with 422 "Validation Failed"."""


def _bound(name: str, text: str, upper: bool) -> float:
    """A qualifier operand as a number: stars as given, dates as epoch seconds (a bare date
    is its first, or with ``upper`` its last, second; a date-time without seconds its minute)."""
    if name == "stars":
        if not text.isdigit():
            raise QueryInvalid(f"stars:{text}")
        return int(text)
    match = DATE_RE.fullmatch(text)
    if not match:
        raise QueryInvalid(f"created:{text}")
    year, month, day, hour, minute, second, zone = match.groups()
    moment = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0),
                      int(second or 0), tzinfo=UTC).timestamp()
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        moment -= (1 if zone[0] == "+" else -1) * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    if upper:
        moment += 86_399 if hour is None else 59 if second is None else 0
    return moment


def qualifier_test(name: str, value: str) -> Callable[[float], bool]:
    """GitHub's documented forms: n, >n, >=n, <n, <=n, a..b, a..*, *..b."""
    if ".." in value:
        a, _, b = value.partition("..")
        lo = -math.inf if a == "*" else _bound(name, a, False)
        hi = math.inf if b == "*" else _bound(name, b, True)
        return lambda v: lo <= v <= hi
    for op, test in ((">=", lambda v, x: v >= x), ("<=", lambda v, x: v <= x),
                     (">", lambda v, x: v > x), ("<", lambda v, x: v < x)):
        if value.startswith(op):
            x = _bound(name, value[len(op):], op in (">", "<="))
            return lambda v, x=x, test=test: test(v, x)
    lo, hi = _bound(name, value, False), _bound(name, value, True)
    return lambda v: lo <= v <= hi


def parse_search(q: str) -> tuple[str, Callable[[Repo], bool]]:
    """The free text of ``q`` and the filter of its stars:/created: qualifiers."""
    tests: dict[str, Callable[[float], bool]] = {}
    for name, value in QUALIFIER_RE.findall(q):
        if name in tests:
            raise QueryInvalid(f"{name}: given twice")
        tests[name] = qualifier_test(name, value)
    stars, created = tests.get("stars"), tests.get("created")

    def keep(repo: Repo) -> bool:
        return (stars is None or stars(repo.stars)) and (created is None or created(repo.created))

    text = " ".join(QUALIFIER_RE.sub(" ", q).split()) if tests else q
    return text, keep


SORT_KEYS: dict[str, Callable[[Repo], int]] = {
    "stars": lambda r: r.stars,
    "forks": lambda r: r.forks,
    "help-wanted-issues": lambda r: r.open_issues,
    "updated": lambda r: r.updated,
}


@lru_cache(maxsize=64)
def search_results(q: str, generation: int, sort: str, order: str) -> tuple[Repo, ...]:
    """Every repository the free text ``q`` matches, in the order asked for."""
    total = total_for(q)
    if LONGTAIL_RE.search(q) or CLONES_RE.search(q):
        # Repositories of their own (ids beyond the shared pool), so a test can count them.
        start = POOL_SIZE + (zlib.crc32(q.encode()) % 97) * 100_000
        indices = list(range(start, start + total))
    else:
        rng = random.Random(zlib.crc32(q.encode()))
        indices = rng.sample(range(POOL_SIZE), min(total, POOL_SIZE))
    repos = [make_repo(i, generation) for i in indices]
    if CLONES_RE.search(q):
        # Same stars, same creation second: no stars:/created: slice can cut them apart.
        repos = [replace(r, stars=CLONE_STARS, created=CLONE_CREATED) for r in repos]
    key = SORT_KEYS.get(sort)
    if key is None:
        # Best match: the sampled order is the relevance order; GitHub ignores `order` here.
        return tuple(repos)
    if order == "asc":
        return tuple(sorted(repos, key=lambda r: (key(r), r.id)))
    return tuple(sorted(repos, key=lambda r: (-key(r), r.id)))


def repo_item(repo: Repo) -> dict[str, Any]:
    """The JSON item GitHub's search API returns for a repository (same field set)."""
    full = f"{repo.owner}/{repo.name}"
    api = f"https://api.github.com/repos/{full}"
    user_api = f"https://api.github.com/users/{repo.owner}"
    lic = None
    if repo.license is not None:
        key, name, spdx, num = repo.license
        lic = {
            "key": key,
            "name": name,
            "spdx_id": spdx,
            "url": None if key == "other" else f"https://api.github.com/licenses/{key}",
            "node_id": _b64(f"07:License{num}"),
        }
    owner_node = f"{'012:Organization' if repo.owner_type == 'Organization' else '04:User'}"
    return {
        "id": repo.id,
        "node_id": _b64(f"010:Repository{repo.id}"),
        "name": repo.name,
        "full_name": full,
        "private": False,
        "owner": {
            "login": repo.owner,
            "id": repo.owner_id,
            "node_id": _b64(f"{owner_node}{repo.owner_id}"),
            "avatar_url": f"https://avatars.githubusercontent.com/u/{repo.owner_id}?v=4",
            "gravatar_id": "",
            "url": user_api,
            "html_url": f"https://github.com/{repo.owner}",
            "followers_url": f"{user_api}/followers",
            "following_url": f"{user_api}/following{{/other_user}}",
            "gists_url": f"{user_api}/gists{{/gist_id}}",
            "starred_url": f"{user_api}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{user_api}/subscriptions",
            "organizations_url": f"{user_api}/orgs",
            "repos_url": f"{user_api}/repos",
            "events_url": f"{user_api}/events{{/privacy}}",
            "received_events_url": f"{user_api}/received_events",
            "type": repo.owner_type,
            "site_admin": False,
        },
        "html_url": f"https://github.com/{full}",
        "description": repo.description,
        "fork": repo.fork,
        "url": api,
        "forks_url": f"{api}/forks",
        "keys_url": f"{api}/keys{{/key_id}}",
        "collaborators_url": f"{api}/collaborators{{/collaborator}}",
        "teams_url": f"{api}/teams",
        "hooks_url": f"{api}/hooks",
        "issue_events_url": f"{api}/issues/events{{/number}}",
        "events_url": f"{api}/events",
        "assignees_url": f"{api}/assignees{{/user}}",
        "branches_url": f"{api}/branches{{/branch}}",
        "tags_url": f"{api}/tags",
        "blobs_url": f"{api}/git/blobs{{/sha}}",
        "git_tags_url": f"{api}/git/tags{{/sha}}",
        "git_refs_url": f"{api}/git/refs{{/sha}}",
        "trees_url": f"{api}/git/trees{{/sha}}",
        "statuses_url": f"{api}/statuses/{{sha}}",
        "languages_url": f"{api}/languages",
        "stargazers_url": f"{api}/stargazers",
        "contributors_url": f"{api}/contributors",
        "subscribers_url": f"{api}/subscribers",
        "subscription_url": f"{api}/subscription",
        "commits_url": f"{api}/commits{{/sha}}",
        "git_commits_url": f"{api}/git/commits{{/sha}}",
        "comments_url": f"{api}/comments{{/number}}",
        "issue_comment_url": f"{api}/issues/comments{{/number}}",
        "contents_url": f"{api}/contents/{{+path}}",
        "compare_url": f"{api}/compare/{{base}}...{{head}}",
        "merges_url": f"{api}/merges",
        "archive_url": f"{api}/{{archive_format}}{{/ref}}",
        "downloads_url": f"{api}/downloads",
        "issues_url": f"{api}/issues{{/number}}",
        "pulls_url": f"{api}/pulls{{/number}}",
        "milestones_url": f"{api}/milestones{{/number}}",
        "notifications_url": f"{api}/notifications{{?since,all,participating}}",
        "labels_url": f"{api}/labels{{/name}}",
        "releases_url": f"{api}/releases{{/id}}",
        "deployments_url": f"{api}/deployments",
        "created_at": _iso(repo.created),
        "updated_at": _iso(repo.updated),
        "pushed_at": _iso(repo.pushed),
        "git_url": f"git://github.com/{full}.git",
        "ssh_url": f"git@github.com:{full}.git",
        "clone_url": f"https://github.com/{full}.git",
        "svn_url": f"https://github.com/{full}",
        "homepage": repo.homepage,
        "size": repo.size,
        "stargazers_count": repo.stars,
        "watchers_count": repo.stars,
        "language": repo.language,
        "has_issues": True,
        "has_projects": True,
        "has_downloads": True,
        "has_wiki": repo.id % 3 != 0,
        "has_pages": repo.homepage is not None and repo.id % 2 == 0,
        "has_discussions": repo.id % 5 == 0,
        "forks_count": repo.forks,
        "mirror_url": None,
        "archived": repo.archived,
        "disabled": False,
        "open_issues_count": repo.open_issues,
        "license": lic,
        "allow_forking": True,
        "is_template": False,
        "web_commit_signoff_required": False,
        "topics": list(repo.topics),
        "visibility": "public",
        "forks": repo.forks,
        "open_issues": repo.open_issues,
        "watchers": repo.stars,
        "master_branch": "main",
        "default_branch": "main",
        "score": 1.0,
    }


# --------------------------------------------------------------------------- rate limiting


@dataclass
class Limit:
    limit: int
    window: float


@dataclass
class Window:
    reset: int  # epoch seconds, exactly what x-ratelimit-reset announces
    used: int = 0


class RateLimiter:
    """GitHub's primary limit: fixed windows per (identity, resource)."""

    def __init__(self, limits: dict[str, Limit]) -> None:
        self.limits = limits
        self.windows: dict[tuple[str, str], Window] = {}
        # (identity or "*", resource) -> epoch second until which nothing is left
        self.exhausted: dict[tuple[str, str], int] = {}

    def peek(self, identity: str, resource: str, now: float) -> tuple[int, int, int]:
        """(limit, used, reset) without counting anything."""
        limit = self.limits[resource]
        until = max(
            self.exhausted.get((identity, resource), 0), self.exhausted.get(("*", resource), 0)
        )
        if now < until:
            return limit.limit, limit.limit, until
        window = self.windows.get((identity, resource))
        if window is None or now >= window.reset:
            return limit.limit, 0, math.ceil(now + limit.window)
        return limit.limit, min(window.used, limit.limit), window.reset

    def consume(self, identity: str, resource: str, now: float) -> bool:
        limit, used, reset = self.peek(identity, resource, now)
        if used >= limit:
            return False
        key = (identity, resource)
        window = self.windows.get(key)
        if window is None or now >= window.reset:
            window = self.windows[key] = Window(reset=reset)
        window.used += 1
        return True

    def clear(self, resource: str | None = None, identity: str | None = None) -> None:
        def matches(key: tuple[str, str]) -> bool:
            return (resource is None or key[1] == resource) and (
                identity is None or key[0] == identity
            )

        self.windows = {k: v for k, v in self.windows.items() if not matches(k)}
        self.exhausted = {k: v for k, v in self.exhausted.items() if not matches(k)}


@dataclass
class Reply:
    status: int
    body: bytes
    content_type: str = JSON_TYPE
    headers: dict[str, str] | None = None


def json_reply(status: int, data: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, json.dumps(data).encode(), JSON_TYPE, headers)


def bearer_token(authorization: str) -> str:
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() in ("bearer", "token") else authorization


def etag_matches(header: str, etag: str) -> bool:
    tags = {t.strip().removeprefix("W/") for t in header.split(",")}
    return "*" in tags or etag in tags


def link_header(request: web.Request, page: int, last: int) -> str | None:
    """GitHub's Link header: prev, next, last, first (only the relations that apply)."""
    if last <= 1 and page <= 1:
        return None
    base = f"{request.scheme}://{request.host}{request.path}"
    # Keep the client's parameters in their order and put page last, as GitHub does.
    params = [(k, v) for k, v in request.query.items() if k != "page"]

    def url(n: int) -> str:
        return f"<{base}?{urlencode([*params, ('page', str(n))])}>"

    parts = []
    if page > 1:
        parts.append(f'{url(max(1, min(page - 1, last)))}; rel="prev"')
    if page < last:
        parts.append(f'{url(page + 1)}; rel="next"')
        parts.append(f'{url(last)}; rel="last"')
    if page > 1:
        parts.append(f'{url(1)}; rel="first"')
    return ", ".join(parts)


def int_param(request: web.Request, name: str, default: int) -> int:
    try:
        return int(request.query.get(name, default))
    except ValueError:
        return default


# --------------------------------------------------------------------------- the process


class GitHubFake(FakeProcess):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args.latency_ms, args.jitter)
        self.limiter = RateLimiter(
            {
                "search": Limit(args.search_limit, args.search_window),
                "core": Limit(args.core_limit, args.core_window),
            }
        )
        self.rate_status = args.rate_status
        self.rate_limit_api = args.rate_limit_api
        self.one_origin = args.one_origin
        self.generation = 0
        self.secondary: dict[str, tuple[float, int]] = {}  # resource or "*" -> (until, status)
        self.web_secondary: tuple[float, int] = (0.0, 429)
        self._secondary_first: dict[tuple[str, str, float], float] = {}
        self._request_no = 0
        # Cleared by the hold_probes control: GET /rate_limit waits until it is set again.
        self.probes_open = asyncio.Event()
        self.probes_open.set()
        self.probes_waiting = 0
        self.incomplete_every = 0  # every Nth search answer with items is incomplete; 0 = never
        self._answers_with_items = 0
        # On, each trending answer gets new request ids, nonces and CSRF tokens, as GitHub's.
        self.fresh_values = False
        # A burst of errors: web pages whose path and query hold ``match`` get ``status``,
        # ``count`` more times (the fail control).
        self.failing: dict[str, Any] = {}
        self.rng = random.Random(40)
        self.trending = self._load_trending(Path(args.trending_fixtures))
        self.developers = self._load_trending(Path(args.developer_fixtures))
        for key, handler in {
            "limits": self._control_limits,
            "exhaust": self._control_exhaust,
            "secondary": self._control_secondary,
            "web_secondary": self._control_web_secondary,
            "generation": self._control_generation,
            "rate_status": self._control_rate_status,
            "rate_limit_api": self._control_rate_limit_api,
            "reset_limits": self._control_reset_limits,
            "hold_probes": self._control_hold_probes,
            "incomplete_every": self._control_incomplete_every,
            "fresh_values": self._control_fresh_values,
            "fail": self._control_fail,
        }.items():
            self.add_control(key, handler)

    @staticmethod
    def _load_trending(directory: Path) -> list[tuple[str, Payload]]:
        files = sorted(directory.glob("*.html"))
        if not files:
            raise SystemExit(f"no trending fixtures (*.html) in {directory}")
        ctype = "text/html; charset=utf-8"
        return [(f.name, Payload(f.read_bytes(), ctype)) for f in files]

    # ---------------------------------------------------------------- control

    def _control_fresh_values(self, value: Any) -> None:
        if not isinstance(value, bool):
            raise ControlError("fresh_values must be true or false")
        self.fresh_values = value

    def _control_fail(self, value: Any) -> None:
        """``{"match": "/trending/python", "status": 500, "count": 50}``; ``{}`` ends it."""
        if not isinstance(value, dict):
            raise ControlError("fail must be an object: match, status, count")
        self.failing = {"match": str(value["match"]), "status": int(value.get("status", 500)),
                        "count": int(value.get("count", 1_000_000))} if value else {}

    def _failed(self, request: web.Request) -> web.Response | None:
        failing = self.failing
        if not failing or failing["count"] <= 0 or failing["match"] not in str(request.rel_url):
            return None
        failing["count"] -= 1
        return web.Response(status=failing["status"], text="<h1>Server error</h1>",
                            content_type="text/html")

    def _control_limits(self, value: Any) -> None:
        for resource, spec in dict(value).items():
            if resource not in RESOURCES:
                raise ControlError(f"unknown resource {resource!r}")
            current = self.limiter.limits[resource]
            self.limiter.limits[resource] = Limit(
                int(spec.get("limit", current.limit)), float(spec.get("window", current.window))
            )
            self.limiter.clear(resource)

    def _control_exhaust(self, value: Any) -> None:
        resource = value.get("resource")
        identity = value.get("identity") or "*"
        until = math.ceil(time.time() + float(value.get("reset_in", 60)))
        for res in [resource] if resource else RESOURCES:
            if res not in RESOURCES:
                raise ControlError(f"unknown resource {res!r}")
            # Drop live windows so that after `until` a fresh window starts.
            self.limiter.clear(res, None if identity == "*" else identity)
            self.limiter.exhausted[(identity, res)] = until

    def _control_secondary(self, value: Any) -> None:
        resource = value.get("resource") or "*"
        if resource != "*" and resource not in RESOURCES:
            raise ControlError(f"unknown resource {resource!r}")
        seconds = float(value.get("seconds", 60))
        self.secondary[resource] = (time.time() + seconds, int(value.get("status", 403)))

    def _control_web_secondary(self, value: Any) -> None:
        seconds = float(value.get("seconds", 60))
        self.web_secondary = (time.time() + seconds, int(value.get("status", 429)))

    def _control_generation(self, value: Any) -> None:
        self.generation = int(value)

    def _control_incomplete_every(self, value: Any) -> None:
        self.incomplete_every = max(0, int(value))
        self._answers_with_items = 0

    def _control_rate_status(self, value: Any) -> None:
        self.rate_status = int(value)

    def _control_rate_limit_api(self, value: Any) -> None:
        if value not in RATE_LIMIT_APIS:
            raise ControlError(f"rate_limit_api: {value!r} is not one of {RATE_LIMIT_APIS}")
        self.rate_limit_api = value

    def _control_hold_probes(self, value: Any) -> None:
        """True: answers to GET /rate_limit wait (a client starting up holds there); False:
        they go, with the limits as they are then (apply ``exhaust`` first, in one call)."""
        if value:
            self.probes_open.clear()
        else:
            self.probes_open.set()

    def _control_reset_limits(self, value: Any) -> None:
        if value:
            self.limiter.clear()
            self.secondary.clear()
            self.web_secondary = (0.0, 429)

    def config(self) -> dict[str, Any]:
        now = time.time()
        return {
            **super().config(),
            "limits": {
                r: {"limit": lim.limit, "window": lim.window}
                for r, lim in self.limiter.limits.items()
            },
            "rate_status": self.rate_status,
            "rate_limit_api": self.rate_limit_api,
            "generation": self.generation,
            "incomplete_every": self.incomplete_every,
            "exhausted": {
                f"{ident}|{res}": until - now
                for (ident, res), until in self.limiter.exhausted.items()
                if until > now
            },
            "secondary": {
                r: {"seconds_left": until - now, "status": status}
                for r, (until, status) in self.secondary.items()
                if until > now
            },
            "web_secondary": {
                "seconds_left": max(0.0, self.web_secondary[0] - now),
                "status": self.web_secondary[1],
            },
            "probes_waiting": self.probes_waiting,
        }

    def stats(self) -> dict[str, Any]:
        counters = self.recorder.counters
        return {
            **self.recorder.snapshot(),
            "violations": counters["violations"],
            "secondary_violations": counters["secondary:api"] + counters["secondary:web"],
            "secondary_violations_by_app": {
                "api": counters["secondary:api"],
                "web": counters["secondary:web"],
            },
            "secondary_ignored": counters["secondary_ignored"],
            "incomplete_served": counters["incomplete_served"],
            "auth_seen_on_web": counters["auth:web"],
        }

    # ---------------------------------------------------------------- shared helpers

    def _note_secondary(self, app: str, identity: str, until: float, now: float) -> None:
        self.recorder.bump(f"secondary:{app}")
        first = self._secondary_first.setdefault((app, identity, until), now)
        if now - first > SECONDARY_GRACE_S:
            self.recorder.bump("secondary_ignored")

    def _active_secondary(self, resource: str, now: float) -> tuple[float, int] | None:
        active = [
            entry
            for key in (resource, "*")
            if (entry := self.secondary.get(key)) is not None and entry[0] > now
        ]
        return max(active) if active else None

    def _redirect(self, request: web.Request) -> web.Response | None:
        target = request.query.get("url")
        if not target:
            return None
        return web.Response(status=302, headers={"Location": target})

    # ---------------------------------------------------------------- web app

    def make_web_app(self) -> web.Application:
        app = self.make_app("web")
        # Before /trending/{language}: aiohttp matches routes in the order they are added.
        app.router.add_get("/trending/developers", self._web(self._developers))
        app.router.add_get("/trending/developers/{language}", self._web(self._developers))
        app.router.add_get("/trending", self._web(self._trending))
        app.router.add_get("/trending/{language}", self._web(self._trending))
        app.router.add_get("/redirect-to", self._web(self._web_redirect))
        app.router.add_route("*", "/{tail:.*}", self._web(self._web_not_found))
        return app

    def _web(self, handler: Callable[[web.Request], web.Response]) -> Any:
        async def wrapped(request: web.Request) -> web.Response:
            now = time.time()
            identity = request.headers.get("Authorization") or request.remote or "?"
            request["record"] = {"identity": identity}
            failed = self._failed(request)
            if failed is not None:
                return failed
            until, status = self.web_secondary
            if until > now:
                self._note_secondary("web", identity, until, now)
                body = (
                    "<!DOCTYPE html><html><head><title>Too many requests</title></head><body>"
                    "<h1>Whoa there!</h1><p>You have exceeded a secondary rate limit.</p>"
                    "<p>Please wait a few minutes before you try again.</p></body></html>"
                )
                return web.Response(
                    status=status,
                    text=body,
                    content_type="text/html",
                    headers={"Retry-After": str(max(1, math.ceil(until - now)))},
                )
            return handler(request)

        return wrapped

    def _trending(self, request: web.Request) -> web.Response:
        return self._listing(request, self.trending, b'<article class="Box-row"')

    def _developers(self, request: web.Request) -> web.Response:
        return self._listing(request, self.developers, b'<article class="Box-row d-flex"')

    def _listing(self, request: web.Request, pages: list[tuple[str, Payload]],
                 marker: bytes) -> web.Response:
        language = request.match_info.get("language", "")
        since = request.query.get("since", "daily")
        if since not in TRENDING_SINCE:
            since = "daily"  # github.com silently falls back to daily as well
        # crc32, not hash(): the choice must not depend on PYTHONHASHSEED.
        index = zlib.crc32(f"{language}|{since}".encode()) % len(pages)
        name, payload = pages[index]
        if self.generation:
            payload = _generation(payload.body, marker, self.generation)
        if self.fresh_values:
            payload = Payload(fresh_values(payload.body, self.rng), payload.content_type)
        # What was served, for a test to hold an archive's copy to.
        request["record"] = {**request.get("record", {}),
                             "body_sha256": hashlib.sha256(payload.body).hexdigest()}
        return payload.response(request, headers={"X-Fake-Fixture": name})

    def _web_redirect(self, request: web.Request) -> web.Response:
        return self._redirect(request) or web.Response(status=400, text="missing url")

    def _web_not_found(self, request: web.Request) -> web.Response:
        return web.Response(
            status=404,
            text="<!DOCTYPE html><html><body><h1>404</h1><p>Page not found</p></body></html>",
            content_type="text/html",
        )

    # ---------------------------------------------------------------- API app

    def make_api_app(self) -> web.Application:
        app = self.make_app("api")
        if self.one_origin:  # one server for both, as a stand-in or a small GHES proxy serves
            app.router.add_get("/trending", self._web(self._trending))
            app.router.add_get("/trending/{language}", self._web(self._trending))
        app.router.add_get("/search/repositories", self._api(self._search))
        app.router.add_get("/rate_limit", self._held(self._api(self._rate_limit, counted=False)))
        app.router.add_get("/redirect-to", self._api(self._api_redirect))
        app.router.add_route("*", "/{tail:.*}", self._api(self._api_not_found))
        return app

    def _held(self, handler: Callable[[web.Request], Awaitable[web.Response]]) -> Any:
        async def wrapped(request: web.Request) -> web.Response:
            self.probes_waiting += 1
            try:
                await self.probes_open.wait()
            finally:
                self.probes_waiting -= 1
            return await handler(request)

        return wrapped

    def _api(self, produce: Callable[[web.Request], Reply], *, counted: bool = True) -> Any:
        """Wrap an endpoint with auth, secondary/primary limits, ETags and rate headers."""

        async def wrapped(request: web.Request) -> web.Response:
            now = time.time()
            self._request_no += 1
            authorization = request.headers.get("Authorization")
            identity = authorization or request.remote or "?"
            resource = "search" if request.path.startswith("/search/") else "core"
            request["record"] = {"identity": identity, "resource": resource}

            if authorization is not None and bearer_token(authorization) == "bad":
                reply = json_reply(
                    401, {"message": "Bad credentials", "documentation_url": REST_DOCS}
                )
                return self._finish(reply, identity, resource, now)

            secondary = self._active_secondary(resource, now) if counted else None
            if secondary is not None:
                until, status = secondary
                self._note_secondary("api", identity, until, now)
                rid = f"{self._request_no:08X}:FAKE"
                reply = json_reply(
                    status,
                    {
                        "message": SECONDARY_MESSAGE.format(rid=rid),
                        "documentation_url": SECONDARY_DOCS,
                    },
                    {"Retry-After": str(max(1, math.ceil(until - now)))},
                )
                return self._finish(reply, identity, resource, now)

            reply = produce(request)
            etag = None
            if reply.status == 200:
                etag = f'"{hashlib.sha1(reply.body).hexdigest()}"'
                inm = request.headers.get("If-None-Match")
                # A conditional hit is free, as on GitHub (served even when the budget is gone).
                if inm is not None and etag_matches(inm, etag):
                    not_modified = Reply(304, b"", "", {"ETag": etag})
                    return self._finish(not_modified, identity, resource, now)

            limited = counted and self.rate_limit_api != "disabled"
            if limited and not self.limiter.consume(identity, resource, now):
                self.recorder.bump("violations")
                if authorization is not None:
                    who = f"user ID {zlib.crc32(authorization.encode()) % 10_000_000}."
                else:
                    who = (
                        f"{request.remote}. (But here's the good news: Authenticated requests "
                        "get a higher rate limit. Check out the documentation for more details.)"
                    )
                reply = json_reply(
                    self.rate_status,
                    {
                        "message": f"API rate limit exceeded for {who}",
                        "documentation_url": RATE_DOCS,
                    },
                )
                return self._finish(reply, identity, resource, now)

            if etag is not None:
                reply.headers = {**(reply.headers or {}), "ETag": etag}
            return self._finish(reply, identity, resource, now)

        return wrapped

    def _finish(self, reply: Reply, identity: str, resource: str, now: float) -> web.Response:
        limit, used, reset = self.limiter.peek(identity, resource, now)
        headers = {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(limit - used),
            "X-RateLimit-Used": str(used),
            "X-RateLimit-Reset": str(reset),
            "X-RateLimit-Resource": resource,
            "X-GitHub-Media-Type": "github.v3; format=json",
            "X-GitHub-Request-Id": f"{self._request_no:08X}:FAKE",
            "Cache-Control": "private, max-age=60, s-maxage=60",
            "Vary": "Accept, Authorization, Cookie, X-GitHub-OTP",
        }
        if self.rate_limit_api == "disabled":
            for name in RATE_HEADERS:
                del headers[name]
        if reply.content_type:
            headers["Content-Type"] = reply.content_type
        if reply.headers:
            headers.update(reply.headers)
        return web.Response(status=reply.status, body=reply.body or None, headers=headers)

    def _search(self, request: web.Request) -> Reply:
        q = request.query.get("q", "")
        if not q.strip():
            return json_reply(
                422,
                {
                    "message": "Validation Failed",
                    "errors": [{"resource": "Search", "field": "q", "code": "missing"}],
                    "documentation_url": SEARCH_DOCS,
                    "status": "422",
                },
            )
        if "boom500" in q:
            return json_reply(500, {"message": "Server Error"})
        if "badjson" in q:
            return Reply(200, b'{"total_count": 3, "incomplete_results": false, "items": [{"id": ')
        if "htmlbody" in q:
            html = b"<!DOCTYPE html><html><body><h1>Unicorn!</h1><p>No server is currently "
            html += b"available to service your request.</p></body></html>"
            return Reply(200, html, "text/html; charset=utf-8")

        try:
            text, keep = parse_search(q)
        except QueryInvalid as exc:
            return json_reply(
                422,
                {
                    "message": "Validation Failed",
                    "errors": [{"message": f"The search contains an invalid qualifier: {exc}",
                                "resource": "Search", "field": "q", "code": "invalid"}],
                    "documentation_url": SEARCH_DOCS,
                    "status": "422",
                },
            )
        per_page = min(max(int_param(request, "per_page", 30), 1), 100)
        page = max(int_param(request, "page", 1), 1)
        start = (page - 1) * per_page
        # Only a page that starts beyond the cap is refused; the page straddling result 1000
        # is served truncated, which is what makes rel="last" (ceil(1000/per_page)) reachable.
        if start >= SEARCH_CAP:
            return json_reply(
                422,
                {
                    "message": "Only the first 1000 search results are available",
                    "documentation_url": SEARCH_DOCS,
                },
            )
        matched = search_results(
            text, self.generation, request.query.get("sort", ""),
            request.query.get("order", "desc"),
        )
        repos = [r for r in matched if keep(r)]
        total = len(repos)
        page_repos = repos[start : min(start + per_page, SEARCH_CAP)]
        incomplete = False
        if self.incomplete_every and page_repos:
            self._answers_with_items += 1
            if self._answers_with_items % self.incomplete_every == 0:
                # GitHub's search timed out: it says so, and some results are missing.
                incomplete = True
                page_repos = page_repos[::2]
                self.recorder.bump("incomplete_served")
        items = [repo_item(r) for r in page_repos]
        last = math.ceil(min(total, SEARCH_CAP) / per_page)
        body = {"total_count": total, "incomplete_results": incomplete, "items": items}
        link = link_header(request, page, last)
        return json_reply(200, body, {"Link": link} if link else None)

    def _rate_limit(self, request: web.Request) -> Reply:
        if self.rate_limit_api == "disabled":
            return json_reply(404, {"message": "Rate limiting is not enabled.",
                                    "documentation_url": REST_DOCS})
        if self.rate_limit_api == "html":
            return Reply(200, b"<!DOCTYPE html><html><body><h1>Welcome</h1></body></html>",
                         "text/html; charset=utf-8")
        now = time.time()
        identity = request.headers.get("Authorization") or request.remote or "?"
        resources = {}
        for resource in RESOURCES:
            limit, used, reset = self.limiter.peek(identity, resource, now)
            resources[resource] = {
                "limit": limit,
                "used": used,
                "remaining": limit - used,
                "reset": reset,
            }
        return json_reply(200, {"resources": resources, "rate": resources["core"]})

    def _api_redirect(self, request: web.Request) -> Reply:
        target = request.query.get("url")
        if not target:
            return json_reply(400, {"message": "missing url"})
        return Reply(302, b"", "", {"Location": target})

    def _api_not_found(self, request: web.Request) -> Reply:
        return json_reply(404, {"message": "Not Found", "documentation_url": REST_DOCS})


@lru_cache(maxsize=64)  # one fake per process, a handful of pages
def _generation(body: bytes, marker: bytes, generation: int) -> Payload:
    """Generation g leaves out the page's first g rows (modulo their number): the rows below
    move up, otherwise unchanged, as a real list changes between two looks."""
    head, *articles = body.split(marker)
    end = articles[-1].rindex(b"</article>") + len(b"</article>")
    articles[-1], tail = articles[-1][:end], articles[-1][end:]
    kept = articles[generation % len(articles):]
    return Payload(head + b"".join(marker + a for a in kept) + tail, "text/html; charset=utf-8")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--web-host", default="127.0.0.1")
    parser.add_argument("--api-host", default="127.0.0.1")
    add_common_args(parser)
    parser.add_argument("--search-limit", type=int, default=30)
    parser.add_argument("--search-window", type=float, default=60.0)
    parser.add_argument("--core-limit", type=int, default=60)
    parser.add_argument("--core-window", type=float, default=3600.0)
    parser.add_argument("--rate-status", type=int, default=403, choices=(403, 429))
    parser.add_argument("--rate-limit-api", default="json", choices=RATE_LIMIT_APIS)
    parser.add_argument("--one-origin", action="store_true",
                        help="the API listener serves the trending pages too")
    parser.add_argument("--trending-fixtures", default=str(DEFAULT_TRENDING))
    parser.add_argument("--developer-fixtures", default=str(DEFAULT_DEVELOPERS))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    fake = GitHubFake(args)

    async def body() -> None:
        listeners = [
            ("web", fake.make_web_app(), args.web_host),
            ("api", fake.make_api_app(), args.api_host),
        ]
        await serve(fake, listeners, args.port_file)

    run(body)


if __name__ == "__main__":
    main()
