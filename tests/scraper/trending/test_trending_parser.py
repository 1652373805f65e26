"""Tests for scraper.trending.repositories against real GitHub trending captures.

Expected values were read off the fixture HTML by hand, not produced by the parser.
"""

from __future__ import annotations

import functools
import re

import pytest

from scraper.trending.repositories import TrendingRow, _count, parse_trending
from tests.support.fakes.data import TRENDING_PAGES

FIXTURES = TRENDING_PAGES
BASE_ALL = "https://github.com/trending"
BASE_PYTHON = "https://github.com/trending/python?since=daily"
ENTITY_RE = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]*|#[0-9]+|#[xX][0-9A-Fa-f]+);")


# Each vintage's markup: 2019-10 h1.h3, /o/r/stargazers.<repo>, /o/r/network/members.<repo>;
# 2021-04 h1.h3, /o/r/stargazers, /o/r/network/members.<repo>; 2026-04 (/trending/python)
# h2.h3, /o/r/stargazers, /o/r/forks.
VINTAGES = {
    "2019": ("2019-10_all_daily.html", BASE_ALL, 25),
    "2021": ("2021-04_all_daily.html", BASE_ALL, 25),
    "2026": ("2026-04_python_daily.html", BASE_PYTHON, 20),
}
"""vintage: (fixture page, the list's URL, its row count)."""


@functools.cache
def rows_of(vintage: str) -> list[TrendingRow]:
    name, base_url, _ = VINTAGES[vintage]
    return parse_trending((FIXTURES / name).read_text(encoding="utf-8"), base_url)


# Rows whose fields test a form the parser must read: (vintage, rank, the fields as GitHub showed
# them). A field left out of a row is not under test there.
ROWS = [
    pytest.param("2019", 1, {
        "full_name": "brunosimon/folio-2019",
        "owner": "brunosimon",
        "name": "folio-2019",
        "url": "https://github.com/brunosimon/folio-2019",
        "description": None,
        "language": "JavaScript",
        "stars": 744,
        "forks": 82,
        "period_stars": 107,
        "built_by": ["brunosimon"],
    }, id="2019-first_row_has_no_description"),
    pytest.param("2019", 2, {
        "full_name": "neex/phuip-fpizdam",
        "description": "Exploit for CVE-2019-11043",
        "language": "Go",
        "stars": 1155,
        "forks": 161,
        "period_stars": 240,
        "built_by": ["neex", "jeffguorg"],
    }, id="2019-row2_thousands_comma"),
    pytest.param("2019", 9, {
        "full_name": "ruanyf/free-books",
        "owner": "ruanyf",
        "name": "free-books",
        "url": "https://github.com/ruanyf/free-books",
        "description": "互联网上的免费书籍",
        "language": None,
        "stars": 7430,
        "forks": 1163,
        "period_stars": 301,
        "built_by": ["ruanyf", "LooJee", "krynv", "zaoqi"],
    }, id="2019-row9_no_language"),
    # renovate-bot is a user account, greenkeeper an app (/apps/greenkeeper)
    pytest.param("2019", 12, {
        "full_name": "pubkey/rxdb",
        "description": (
            "\U0001f4bb \U0001f504 \U0001f4f1 A realtime Database for JavaScript Applications"
        ),
        "language": "TypeScript",
        "stars": 11732,
        "forks": 511,
        "period_stars": 428,
        "built_by": ["pubkey", "renovate-bot", "greenkeeper", "salomonelli", "rdworth"],
    }, id="2019-row12_emoji_description_and_bot"),
    pytest.param("2019", 15, {
        "full_name": "OlivierLaflamme/Cheatsheet-God",
        "owner": "OlivierLaflamme",
        "name": "Cheatsheet-God",
        "url": "https://github.com/OlivierLaflamme/Cheatsheet-God",
        "description": (
            "Penetration Testing Biggest Reference Bank - OSCP / PTP & PTX Cheatsheet"
        ),
        "language": None,
        "stars": 1599,
        "forks": 500,
        "period_stars": 40,
        "built_by": [
            "OlivierLaflamme",
            "susmithaaa",
            "ummuhanilhan",
            "yhlong0",
            "MrTsRex",
        ],
    }, id="2019-row15_no_language_and_escaped_ampersand"),
    pytest.param("2019", 17, {
        "full_name": "starship/starship",
        "description": "\u2604\U0001f30c\ufe0f The cross-shell prompt for astronauts.",
        "language": "Rust",
        "stars": 3885,
        "forks": 150,
        "period_stars": 73,
        "built_by": [
            "matchai",
            "allcontributors",
            "dependabot-preview",
            "chipbuster",
            "heyrict",
        ],
    }, id="2019-row17_apps_bots"),
    pytest.param("2019", 18, {
        "full_name": "algorithm004-01/algorithm004-01",
        "owner": "algorithm004-01",
        "name": "algorithm004-01",
        "url": "https://github.com/algorithm004-01/algorithm004-01",
        "description": None,
        "language": "Java",
        "stars": 768,
        "forks": 328,
        "period_stars": 99,
        "built_by": [
            "melody-li",
            "GeekUniversity",
            "LearningChanging",
            "barryxt",
            "duyue6002",
        ],
    }, id="2019-row18_no_description"),
    pytest.param("2019", 19, {
        "description": "Go Training Class Material :",
    }, id="2019-row19_trailing_space_in_description"),
    pytest.param("2019", 25, {
        "full_name": "haugene/docker-transmission-openvpn",
        "owner": "haugene",
        "name": "docker-transmission-openvpn",
        "url": "https://github.com/haugene/docker-transmission-openvpn",
        "description": (
            "Docker container running Transmission torrent client with WebUI over an OpenVPN "
            "tunnel"
        ),
        "language": "Shell",
        "stars": 1437,
        "forks": 545,
        "period_stars": 9,
        "built_by": ["haugene", "e7d", "jandrews377", "eskemojoe007", "shuaiscott"],
    }, id="2019-last_row"),
    pytest.param("2021", 1, {
        "full_name": "knutwurst/Marlin-2-0-x-Anycubic-i3-MEGA-S",
        "owner": "knutwurst",
        "name": "Marlin-2-0-x-Anycubic-i3-MEGA-S",
        "url": "https://github.com/knutwurst/Marlin-2-0-x-Anycubic-i3-MEGA-S",
        "description": (
            "Marlin 2.0.x Version for Anycubic i3 MEGA M/S/X with Anycubic TFT or the \"new\" "
            "DGUS Clone TFT - Now also with BLTouch!"
        ),
        "language": "C++",
        "stars": 187,
        "forks": 47,
        "period_stars": 1,
        "built_by": ["knutwurst", "bodeme"],
    }, id="2021-first_row_one_stars_today"),
    pytest.param("2021", 2, {
        "full_name": "jens-maus/RaspberryMatic",
        "language": "JavaScript",
        "stars": 817,
        "forks": 110,
        "period_stars": 0,
        "built_by": ["jens-maus", "jp112sdl", "angelnu", "HMside", "theimo1221"],
    }, id="2021-row2_sponsor_button_and_zero_period"),
    pytest.param("2021", 6, {
        "full_name": "VoronDesign/Voron-0",
        "owner": "VoronDesign",
        "name": "Voron-0",
        "url": "https://github.com/VoronDesign/Voron-0",
        "description": "Voron 0 CoreXY 3D Printer design",
        "language": None,
        "stars": 187,
        "forks": 75,
        "period_stars": 2,
        "built_by": ["nemgrea", "FHeilmann", "john--", "doowrednu", "meteyou"],
    }, id="2021-row6_no_language"),
    pytest.param("2021", 10, {
        "full_name": "Clever/launch-gen",
        "owner": "Clever",
        "name": "launch-gen",
        "url": "https://github.com/Clever/launch-gen",
        "description": "Generate config package from launch YML file",
        "language": "Go",
        "stars": 0,
        "forks": 0,
        "period_stars": 0,
        "built_by": ["nathanleiby", "johnhuangclever", "mcab", "rgarcia", "taylor-sutton"],
    }, id="2021-row10_no_stars_forks_or_period"),
    pytest.param("2021", 11, {
        "full_name": "victorkifer/clicker",
        "owner": "victorkifer",
        "name": "clicker",
        "url": "https://github.com/victorkifer/clicker",
        "description": (
            "Wireless Presenter for Android and iOS, supports Windows, Linux and OS X"
        ),
        "language": None,
        "stars": 40,
        "forks": 5,
        "period_stars": 0,
        "built_by": ["victorkifer", "franckgaga"],
    }, id="2021-row11_no_language"),
    pytest.param("2021", 12, {
        "full_name": "openucx/ucx",
        "description": (
            "Unified Communication X (mailing list - "
            "https://elist.ornl.gov/mailman/listinfo/ucx-group)"
        ),
        "language": "C",
        "stars": 479,
        "forks": 214,
    }, id="2021-row12_link_inside_description"),
    pytest.param("2021", 17, {
        "full_name": "Zettelkasten-Team/Zettelkasten",
        "built_by": ["sjPlot", "Elmari", "transifex-integration", "heussd", "RalfBarkow"],
        "period_stars": 1,
    }, id="2021-row17_apps_bot"),
    pytest.param("2021", 21, {
        "full_name": "KiyoshiHirayama/misc",
        "owner": "KiyoshiHirayama",
        "name": "misc",
        "url": "https://github.com/KiyoshiHirayama/misc",
        "description": None,
        "language": None,
        "stars": 1,
        "forks": 0,
        "period_stars": 0,
        "built_by": ["KiyoshiHirayama"],
    }, id="2021-row21_no_description_language_or_forks"),
    pytest.param("2021", 5, {
        "description": (
            "Node-RED packaged as Addon for the Homematic CCU3 and RaspberryMatic "
            "\U0001f939\u200d\u2642\ufe0f"
        ),
    }, id="2021-emoji_descriptions_5"),
    pytest.param("2021", 23, {
        "description": (
            "COVID-19 Inzidenz-Widget für iOS innerhalb Deutschlands \U0001f1e9\U0001f1ea "
            "(Kreis/Stadt + Bundesland + Trend)"
        ),
    }, id="2021-emoji_descriptions_23"),
    pytest.param("2021", 25, {
        "full_name": "fave77/pbchess",
        "owner": "fave77",
        "name": "pbchess",
        "url": "https://github.com/fave77/pbchess",
        "description": "An open-sourced free online chess platform",
        "language": "JavaScript",
        "stars": 19,
        "forks": 44,
        "period_stars": 0,
        "built_by": ["fave77", "Coder-Srinivas", "Subhra264", "snyk-bot", "OmkarPh"],
    }, id="2021-last_row"),
    pytest.param("2026", 1, {
        "full_name": "Alishahryar1/free-claude-code",
        "owner": "Alishahryar1",
        "name": "free-claude-code",
        "url": "https://github.com/Alishahryar1/free-claude-code",
        "description": (
            "Use claude-code for free in the terminal, VSCode extension or via discord like "
            "openclaw"
        ),
        "language": "Python",
        "stars": 11139,
        "forks": 1636,
        "period_stars": 3975,
        "built_by": [
            "Alishahryar1",
            "cursoragent",
            "claude",
            "rishiskhare",
            "github-actions",
        ],
    }, id="2026-first_row"),
    pytest.param("2026", 10, {
        "full_name": "donnemartin/system-design-primer",
        "stars": 344245,
        "forks": 55600,
        "period_stars": 288,
    }, id="2026-row10_six_digit_stars"),
    # the Copilot reviewer links to /apps/copilot-pull-request-reviewer with alt="@Copilot"
    pytest.param("2026", 13, {
        "full_name": "roboflow/rf-detr",
        "built_by": ["Borda", "SkalskiP", "claude", "Copilot", "pre-commit-ci"],
    }, id="2026-row13_bot_alt_differs_from_app_slug"),
    pytest.param("2026", 15, {
        "full_name": "deepseek-ai/DeepSeek-V3",
        "owner": "deepseek-ai",
        "name": "DeepSeek-V3",
        "url": "https://github.com/deepseek-ai/DeepSeek-V3",
        "description": None,
        "language": "Python",
        "stars": 102875,
        "forks": 16681,
        "period_stars": 77,
        "built_by": ["GeeeekExplorer", "mowentian", "enochkan", "DeepSeekDDM", "Konano"],
    }, id="2026-row15_no_description"),
    pytest.param("2026", 20, {
        "full_name": "pydantic/pydantic-ai",
        "owner": "pydantic",
        "name": "pydantic-ai",
        "url": "https://github.com/pydantic/pydantic-ai",
        "description": "AI Agent Framework, the Pydantic way",
        "language": "Python",
        "stars": 16627,
        "forks": 1984,
        "period_stars": 22,
        "built_by": ["DouweM", "Kludex", "samuelcolvin", "dmontagu", "claude"],
    }, id="2026-last_row_with_sponsor_button"),
]


@pytest.mark.parametrize("vintage", VINTAGES)
def test_row_count(vintage: str) -> None:
    assert len(rows_of(vintage)) == VINTAGES[vintage][2]


@pytest.mark.parametrize(("vintage", "rank", "expected"), ROWS)
def test_row(vintage: str, rank: int, expected: dict[str, object]) -> None:
    row = rows_of(vintage)[rank - 1]
    assert row.rank == rank
    assert {field: getattr(row, field) for field in expected} == expected


# --- invariants over every row of every fixture -----------------------------------------------


@pytest.mark.parametrize("vintage", VINTAGES)
def test_invariants(vintage: str) -> None:
    rows = rows_of(vintage)
    assert rows
    assert [r.rank for r in rows] == list(range(1, len(rows) + 1))
    assert len({r.full_name for r in rows}) == len(rows)
    for r in rows:
        assert r.owner and r.name
        assert "/" not in r.owner and "/" not in r.name
        assert r.owner.strip() == r.owner and r.name.strip() == r.name
        assert r.full_name == f"{r.owner}/{r.name}"
        assert r.url == f"https://github.com/{r.owner}/{r.name}"
        assert r.url.startswith("https://github.com/")
        for n in (r.stars, r.forks, r.period_stars):
            assert isinstance(n, int) and n >= 0
        if r.description is not None:
            assert r.description
            assert r.description == r.description.strip()
            assert "  " not in r.description and "\n" not in r.description
            assert not ENTITY_RE.search(r.description)
        if r.language is not None:
            assert r.language and r.language == r.language.strip()
        assert all(login and not login.startswith("@") for login in r.built_by)


def test_bytes_input_matches_text_input() -> None:
    path = FIXTURES / "2026-04_python_daily.html"
    assert parse_trending(path.read_bytes(), BASE_PYTHON) == parse_trending(
        path.read_text(encoding="utf-8"), BASE_PYTHON
    )


# --- pages without rows -------------------------------------------------------------------------

RATE_LIMIT_PAGE = """<!DOCTYPE html>
<html><head><title>Rate limit &middot; GitHub</title></head>
<body><div class="c">
<h1>Whoa there!</h1>
<p>You have exceeded a secondary rate limit.<br><br>
Please wait a few minutes before you try again;
in some cases this may take up to an hour.</p>
</div></body></html>
"""


@pytest.mark.parametrize(
    "html",
    [
        RATE_LIMIT_PAGE,
        "<html><body>nothing</body></html>",
        "",
        "   \n",
        b"",
        '<html><body><div class="Box"><div class="blankslate">'
        "<h3>It looks like we don't have any trending repositories.</h3></div></div></body></html>",
    ],
)
def test_pages_without_rows_return_empty_list(html: str | bytes) -> None:
    assert parse_trending(html, BASE_ALL) == []


# --- counts and missing fields on synthetic rows ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12,345", 12345),
        ("\n        1,234,567\n", 1234567),
        ("1 stars today", 1),
        ("1,234 stars today", 1234),
        ("56 stars this week", 56),
        ("0", 0),
        ("", 0),
        (None, 0),
        ("Star", 0),
    ],
)
def test_count(text: str | None, expected: int) -> None:
    assert _count(text) == expected


def _article(body: str, href: str = "/octo/repo") -> str:
    return (
        '<html><body><div data-hpc><article class="Box-row">'
        f'<h2 class="h3 lh-condensed"><a href="{href}">\n  <span>octo /</span>\n  repo\n</a></h2>'
        f"{body}</article></div></body></html>"
    )


def test_counts_with_commas_and_period_phrases() -> None:
    html = _article(
        '<div class="f6">'
        '<a href="/octo/repo/stargazers"> 12,345 </a>'
        '<a href="/octo/repo/forks">\n 1,002\n</a>'
        '<span class="d-inline-block float-sm-right"> 1 stars today </span>'
        "</div>"
    )
    (row,) = parse_trending(html, "https://github.com/trending")
    assert (row.stars, row.forks, row.period_stars) == (12345, 1002, 1)


@pytest.mark.parametrize(
    ("period", "expected"),
    [("56 stars this week", 56), ("1,234 stars this month", 1234), ("2 stars today", 2)],
)
def test_period_phrases(period: str, expected: int) -> None:
    html = _article(f'<div class="f6"><span class="float-sm-right">{period}</span></div>')
    assert parse_trending(html, BASE_ALL)[0].period_stars == expected


def test_minimal_row_defaults() -> None:
    (row,) = parse_trending(_article(""), "https://github.com/trending?since=weekly")
    assert row == TrendingRow(
        rank=1,
        full_name="octo/repo",
        owner="octo",
        name="repo",
        url="https://github.com/octo/repo",
        description=None,
        language=None,
        stars=0,
        forks=0,
        period_stars=0,
        built_by=[],
    )


def test_blank_description_and_language_are_none() -> None:
    html = _article('<p class="col-9">  \n </p><span itemprop="programmingLanguage"> </span>')
    row = parse_trending(html, BASE_ALL)[0]
    assert row.description is None
    assert row.language is None


def test_description_entities_whitespace_and_links() -> None:
    html = _article(
        '<p class="col-9">\n   Tom &amp; Jerry&#39;s\n\n   <b>fast</b>\t&lt;tool&gt;'
        ' (see <a href="/other/repo/stargazers">9,999 stars today</a>)  </p>'
        '<div><a href="/octo/repo/stargazers">7</a></div>'
    )
    row = parse_trending(html, BASE_ALL)[0]
    assert row.description == "Tom & Jerry's fast <tool> (see 9,999 stars today)"
    # links and text inside the description never feed the counts
    assert row.stars == 7
    assert row.period_stars == 0


def test_2019_style_hrefs_and_network_forks() -> None:
    html = _article(
        '<a href="/octo/repo/stargazers.repo">3,210</a>'
        '<a href="/octo/repo/network/members.repo">45</a>'
    )
    row = parse_trending(html, BASE_ALL)[0]
    assert (row.stars, row.forks) == (3210, 45)


def test_built_by_bots_and_order() -> None:
    html = _article(
        "<span>Built by "
        '<a href="/alice"><img class="avatar mb-1 avatar-user" alt="@alice"></a>'
        '<a href="/apps/dependabot"><img class="avatar mb-1" alt="@dependabot"></a>'
        '<a href="/bob"><img class="avatar" alt="@bob"></a>'
        "</span>"
    )
    assert parse_trending(html, BASE_ALL)[0].built_by == ["alice", "dependabot", "bob"]


def test_legacy_ol_repo_list_markup() -> None:
    html = (
        '<ol class="repo-list"><li>'
        '<div><h3><a href="/old/one"><span class="text-normal">old /</span> one</a></h3></div>'
        '<div class="py-1"><p>An old row</p></div>'
        '<div><span itemprop="programmingLanguage">C</span>'
        '<a href="/old/one/stargazers">1,000</a><a href="/old/one/network">10</a>'
        '<span class="float-sm-right">5 stars today</span></div>'
        "</li></ol>"
    )
    (row,) = parse_trending(html, "https://github.com/trending")
    assert (row.full_name, row.description, row.language) == ("old/one", "An old row", "C")
    assert (row.stars, row.forks, row.period_stars) == (1000, 10, 5)


def test_rows_without_repo_heading_are_skipped_and_ranks_stay_contiguous() -> None:
    html = (
        '<article class="Box-row"><h2 class="h3"><a href="/a/one">a / one</a></h2></article>'
        '<article class="Box-row"><h2 class="h3"><a href="/login">promo</a></h2></article>'
        '<article class="Box-row"><p>no heading</p></article>'
        '<article class="Box-row"><h2 class="h3"><a href="/b/two/">b / two</a></h2></article>'
    )
    rows = parse_trending(html, BASE_ALL)
    assert [(r.rank, r.full_name) for r in rows] == [(1, "a/one"), (2, "b/two")]


def test_url_resolves_against_base_url() -> None:
    row = parse_trending(_article(""), "https://example.test/trending/python?since=daily")[0]
    assert row.url == "https://example.test/octo/repo"
