"""Tests for scraper.trending.repositories against real GitHub trending captures.

Expected values were read off the fixture HTML by hand, not produced by the parser.
"""

from __future__ import annotations

import re

import pytest

from scraper.trending.repositories import TrendingRow, _count, parse_trending
from tests.fakes.data import TRENDING_PAGES

FIXTURES = TRENDING_PAGES
BASE_ALL = "https://github.com/trending"
BASE_PYTHON = "https://github.com/trending/python?since=daily"
ENTITY_RE = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]*|#[0-9]+|#[xX][0-9A-Fa-f]+);")


def _load(name: str, base_url: str) -> list[TrendingRow]:
    return parse_trending((FIXTURES / name).read_text(encoding="utf-8"), base_url)


@pytest.fixture(scope="module")
def rows_2019() -> list[TrendingRow]:
    return _load("2019-10_all_daily.html", BASE_ALL)


@pytest.fixture(scope="module")
def rows_2021() -> list[TrendingRow]:
    return _load("2021-04_all_daily.html", BASE_ALL)


@pytest.fixture(scope="module")
def rows_2026() -> list[TrendingRow]:
    return _load("2026-04_python_daily.html", BASE_PYTHON)


def _row(rows: list[TrendingRow], rank: int) -> TrendingRow:
    row = rows[rank - 1]
    assert row.rank == rank
    return row


# --- 2019-10: h1.h3, /o/r/stargazers.<repo>, /o/r/network/members.<repo> --------------------


def test_2019_row_count(rows_2019: list[TrendingRow]) -> None:
    assert len(rows_2019) == 25


def test_2019_first_row_has_no_description(rows_2019: list[TrendingRow]) -> None:
    row = _row(rows_2019, 1)
    assert row.full_name == "brunosimon/folio-2019"
    assert row.owner == "brunosimon"
    assert row.name == "folio-2019"
    assert row.url == "https://github.com/brunosimon/folio-2019"
    assert row.description is None
    assert row.language == "JavaScript"
    assert row.stars == 744
    assert row.forks == 82
    assert row.period_stars == 107
    assert row.built_by == ["brunosimon"]


def test_2019_row2_thousands_comma(rows_2019: list[TrendingRow]) -> None:
    row = _row(rows_2019, 2)
    assert row.full_name == "neex/phuip-fpizdam"
    assert row.description == "Exploit for CVE-2019-11043"
    assert row.language == "Go"
    assert row.stars == 1155
    assert row.forks == 161
    assert row.period_stars == 240
    assert row.built_by == ["neex", "jeffguorg"]


def test_2019_row9_no_language(rows_2019: list[TrendingRow]) -> None:
    row = _row(rows_2019, 9)
    assert row.full_name == "ruanyf/free-books"
    assert row.owner == "ruanyf"
    assert row.name == "free-books"
    assert row.url == "https://github.com/ruanyf/free-books"
    assert row.description == "互联网上的免费书籍"
    assert row.language is None
    assert row.stars == 7430
    assert row.forks == 1163
    assert row.period_stars == 301
    assert row.built_by == ["ruanyf", "LooJee", "krynv", "zaoqi"]


def test_2019_row12_emoji_description_and_bot(rows_2019: list[TrendingRow]) -> None:
    row = _row(rows_2019, 12)
    assert row.full_name == "pubkey/rxdb"
    assert row.description == (
        "\U0001f4bb \U0001f504 \U0001f4f1 A realtime Database for JavaScript Applications"
    )
    assert row.language == "TypeScript"
    assert row.stars == 11732
    assert row.forks == 511
    assert row.period_stars == 428
    # renovate-bot is a user account, greenkeeper an app (/apps/greenkeeper)
    assert row.built_by == ["pubkey", "renovate-bot", "greenkeeper", "salomonelli", "rdworth"]


def test_2019_row15_no_language_and_escaped_ampersand(rows_2019: list[TrendingRow]) -> None:
    row = _row(rows_2019, 15)
    assert row.full_name == "OlivierLaflamme/Cheatsheet-God"
    assert row.owner == "OlivierLaflamme"
    assert row.name == "Cheatsheet-God"
    assert row.url == "https://github.com/OlivierLaflamme/Cheatsheet-God"
    assert row.description == (
        "Penetration Testing Biggest Reference Bank - OSCP / PTP & PTX Cheatsheet"
    )
    assert row.language is None
    assert row.stars == 1599
    assert row.forks == 500
    assert row.period_stars == 40
    assert row.built_by == [
        "OlivierLaflamme",
        "susmithaaa",
        "ummuhanilhan",
        "yhlong0",
        "MrTsRex",
    ]


def test_2019_row17_apps_bots(rows_2019: list[TrendingRow]) -> None:
    row = _row(rows_2019, 17)
    assert row.full_name == "starship/starship"
    assert row.description == "\u2604\U0001f30c\ufe0f The cross-shell prompt for astronauts."
    assert row.language == "Rust"
    assert row.stars == 3885
    assert row.forks == 150
    assert row.period_stars == 73
    assert row.built_by == [
        "matchai",
        "allcontributors",
        "dependabot-preview",
        "chipbuster",
        "heyrict",
    ]


def test_2019_row18_no_description(rows_2019: list[TrendingRow]) -> None:
    row = _row(rows_2019, 18)
    assert row.full_name == "algorithm004-01/algorithm004-01"
    assert row.owner == "algorithm004-01"
    assert row.name == "algorithm004-01"
    assert row.url == "https://github.com/algorithm004-01/algorithm004-01"
    assert row.description is None
    assert row.language == "Java"
    assert row.stars == 768
    assert row.forks == 328
    assert row.period_stars == 99
    assert row.built_by == [
        "melody-li",
        "GeekUniversity",
        "LearningChanging",
        "barryxt",
        "duyue6002",
    ]


def test_2019_row19_trailing_space_in_description(rows_2019: list[TrendingRow]) -> None:
    assert _row(rows_2019, 19).description == "Go Training Class Material :"


def test_2019_last_row(rows_2019: list[TrendingRow]) -> None:
    row = _row(rows_2019, 25)
    assert row.full_name == "haugene/docker-transmission-openvpn"
    assert row.owner == "haugene"
    assert row.name == "docker-transmission-openvpn"
    assert row.url == "https://github.com/haugene/docker-transmission-openvpn"
    assert row.description == (
        "Docker container running Transmission torrent client with WebUI over an OpenVPN tunnel"
    )
    assert row.language == "Shell"
    assert row.stars == 1437
    assert row.forks == 545
    assert row.period_stars == 9
    assert row.built_by == ["haugene", "e7d", "jandrews377", "eskemojoe007", "shuaiscott"]


# --- 2021-04: h1.h3, /o/r/stargazers, /o/r/network/members.<repo> -----------------------------


def test_2021_row_count(rows_2021: list[TrendingRow]) -> None:
    assert len(rows_2021) == 25


def test_2021_first_row_one_stars_today(rows_2021: list[TrendingRow]) -> None:
    row = _row(rows_2021, 1)
    assert row.full_name == "knutwurst/Marlin-2-0-x-Anycubic-i3-MEGA-S"
    assert row.owner == "knutwurst"
    assert row.name == "Marlin-2-0-x-Anycubic-i3-MEGA-S"
    assert row.url == "https://github.com/knutwurst/Marlin-2-0-x-Anycubic-i3-MEGA-S"
    assert row.description == (
        'Marlin 2.0.x Version for Anycubic i3 MEGA M/S/X with Anycubic TFT or the "new" DGUS'
        " Clone TFT - Now also with BLTouch!"
    )
    assert row.language == "C++"
    assert row.stars == 187
    assert row.forks == 47
    assert row.period_stars == 1
    assert row.built_by == ["knutwurst", "bodeme"]


def test_2021_row2_sponsor_button_and_zero_period(rows_2021: list[TrendingRow]) -> None:
    row = _row(rows_2021, 2)
    assert row.full_name == "jens-maus/RaspberryMatic"
    assert row.language == "JavaScript"
    assert row.stars == 817
    assert row.forks == 110
    assert row.period_stars == 0
    assert row.built_by == ["jens-maus", "jp112sdl", "angelnu", "HMside", "theimo1221"]


def test_2021_row6_no_language(rows_2021: list[TrendingRow]) -> None:
    row = _row(rows_2021, 6)
    assert row.full_name == "VoronDesign/Voron-0"
    assert row.owner == "VoronDesign"
    assert row.name == "Voron-0"
    assert row.url == "https://github.com/VoronDesign/Voron-0"
    assert row.description == "Voron 0 CoreXY 3D Printer design"
    assert row.language is None
    assert row.stars == 187
    assert row.forks == 75
    assert row.period_stars == 2
    assert row.built_by == ["nemgrea", "FHeilmann", "john--", "doowrednu", "meteyou"]


def test_2021_row10_no_stars_forks_or_period(rows_2021: list[TrendingRow]) -> None:
    row = _row(rows_2021, 10)
    assert row.full_name == "Clever/launch-gen"
    assert row.owner == "Clever"
    assert row.name == "launch-gen"
    assert row.url == "https://github.com/Clever/launch-gen"
    assert row.description == "Generate config package from launch YML file"
    assert row.language == "Go"
    assert row.stars == 0
    assert row.forks == 0
    assert row.period_stars == 0
    assert row.built_by == ["nathanleiby", "johnhuangclever", "mcab", "rgarcia", "taylor-sutton"]


def test_2021_row11_no_language(rows_2021: list[TrendingRow]) -> None:
    row = _row(rows_2021, 11)
    assert row.full_name == "victorkifer/clicker"
    assert row.owner == "victorkifer"
    assert row.name == "clicker"
    assert row.url == "https://github.com/victorkifer/clicker"
    assert row.description == (
        "Wireless Presenter for Android and iOS, supports Windows, Linux and OS X"
    )
    assert row.language is None
    assert row.stars == 40
    assert row.forks == 5
    assert row.period_stars == 0
    assert row.built_by == ["victorkifer", "franckgaga"]


def test_2021_row12_link_inside_description(rows_2021: list[TrendingRow]) -> None:
    row = _row(rows_2021, 12)
    assert row.full_name == "openucx/ucx"
    assert row.description == (
        "Unified Communication X (mailing list - https://elist.ornl.gov/mailman/listinfo/ucx-group)"
    )
    assert row.language == "C"
    assert row.stars == 479
    assert row.forks == 214


def test_2021_row17_apps_bot(rows_2021: list[TrendingRow]) -> None:
    row = _row(rows_2021, 17)
    assert row.full_name == "Zettelkasten-Team/Zettelkasten"
    assert row.built_by == ["sjPlot", "Elmari", "transifex-integration", "heussd", "RalfBarkow"]
    assert row.period_stars == 1


def test_2021_row21_no_description_language_or_forks(rows_2021: list[TrendingRow]) -> None:
    row = _row(rows_2021, 21)
    assert row.full_name == "KiyoshiHirayama/misc"
    assert row.owner == "KiyoshiHirayama"
    assert row.name == "misc"
    assert row.url == "https://github.com/KiyoshiHirayama/misc"
    assert row.description is None
    assert row.language is None
    assert row.stars == 1
    assert row.forks == 0
    assert row.period_stars == 0
    assert row.built_by == ["KiyoshiHirayama"]


def test_2021_emoji_descriptions(rows_2021: list[TrendingRow]) -> None:
    assert _row(rows_2021, 5).description == (
        "Node-RED packaged as Addon for the Homematic CCU3 and RaspberryMatic "
        "\U0001f939\u200d\u2642\ufe0f"
    )
    assert _row(rows_2021, 23).description == (
        "COVID-19 Inzidenz-Widget für iOS innerhalb Deutschlands \U0001f1e9\U0001f1ea "
        "(Kreis/Stadt + Bundesland + Trend)"
    )


def test_2021_last_row(rows_2021: list[TrendingRow]) -> None:
    row = _row(rows_2021, 25)
    assert row.full_name == "fave77/pbchess"
    assert row.owner == "fave77"
    assert row.name == "pbchess"
    assert row.url == "https://github.com/fave77/pbchess"
    assert row.description == "An open-sourced free online chess platform"
    assert row.language == "JavaScript"
    assert row.stars == 19
    assert row.forks == 44
    assert row.period_stars == 0
    assert row.built_by == ["fave77", "Coder-Srinivas", "Subhra264", "snyk-bot", "OmkarPh"]


# --- 2026-04 (/trending/python): h2.h3, /o/r/stargazers, /o/r/forks ------------------------


def test_2026_row_count(rows_2026: list[TrendingRow]) -> None:
    assert len(rows_2026) == 20


def test_2026_first_row(rows_2026: list[TrendingRow]) -> None:
    row = _row(rows_2026, 1)
    assert row.full_name == "Alishahryar1/free-claude-code"
    assert row.owner == "Alishahryar1"
    assert row.name == "free-claude-code"
    assert row.url == "https://github.com/Alishahryar1/free-claude-code"
    assert row.description == (
        "Use claude-code for free in the terminal, VSCode extension or via discord like openclaw"
    )
    assert row.language == "Python"
    assert row.stars == 11139
    assert row.forks == 1636
    assert row.period_stars == 3975
    assert row.built_by == [
        "Alishahryar1",
        "cursoragent",
        "claude",
        "rishiskhare",
        "github-actions",
    ]


def test_2026_row10_six_digit_stars(rows_2026: list[TrendingRow]) -> None:
    row = _row(rows_2026, 10)
    assert row.full_name == "donnemartin/system-design-primer"
    assert row.stars == 344245
    assert row.forks == 55600
    assert row.period_stars == 288


def test_2026_row13_bot_alt_differs_from_app_slug(rows_2026: list[TrendingRow]) -> None:
    row = _row(rows_2026, 13)
    assert row.full_name == "roboflow/rf-detr"
    # the Copilot reviewer links to /apps/copilot-pull-request-reviewer with alt="@Copilot"
    assert row.built_by == ["Borda", "SkalskiP", "claude", "Copilot", "pre-commit-ci"]


def test_2026_row15_no_description(rows_2026: list[TrendingRow]) -> None:
    row = _row(rows_2026, 15)
    assert row.full_name == "deepseek-ai/DeepSeek-V3"
    assert row.owner == "deepseek-ai"
    assert row.name == "DeepSeek-V3"
    assert row.url == "https://github.com/deepseek-ai/DeepSeek-V3"
    assert row.description is None
    assert row.language == "Python"
    assert row.stars == 102875
    assert row.forks == 16681
    assert row.period_stars == 77
    assert row.built_by == ["GeeeekExplorer", "mowentian", "enochkan", "DeepSeekDDM", "Konano"]


def test_2026_last_row_with_sponsor_button(rows_2026: list[TrendingRow]) -> None:
    row = _row(rows_2026, 20)
    assert row.full_name == "pydantic/pydantic-ai"
    assert row.owner == "pydantic"
    assert row.name == "pydantic-ai"
    assert row.url == "https://github.com/pydantic/pydantic-ai"
    assert row.description == "AI Agent Framework, the Pydantic way"
    assert row.language == "Python"
    assert row.stars == 16627
    assert row.forks == 1984
    assert row.period_stars == 22
    assert row.built_by == ["DouweM", "Kludex", "samuelcolvin", "dmontagu", "claude"]


# --- invariants over every row of every fixture -----------------------------------------------


@pytest.mark.parametrize(
    ("name", "base_url"),
    [
        ("2019-10_all_daily.html", BASE_ALL),
        ("2021-04_all_daily.html", BASE_ALL),
        ("2026-04_python_daily.html", BASE_PYTHON),
    ],
)
def test_invariants(name: str, base_url: str) -> None:
    rows = _load(name, base_url)
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
