"""No value stops the dataset: item lines no reader can hold, spreadsheet formulas, symlinks
planted in ``--out``, mathtext in a name. Real item files, the real ``python -m runner``."""

from __future__ import annotations

import csv
import importlib.util
import json
import sqlite3
import time
from pathlib import Path

import pytest

from tests.support.collector import Collector

GOOD = {"spider": "search", "shard": "0/1", "collected_at": "2026-11-29T15:01:02Z",
        "content_hash": "ab" * 32, "full_name": "o/r", "stargazers_count": 3}
FORMULAS = ("=HYPERLINK(\"http://evil\",\"x\")", "+1+1", "-2+3", "@SUM(A1)")
MATH_NAME = "o/$x^{$"  # an unbalanced mathtext expression: matplotlib raised on it


def dataset(tmp_path: Path) -> tuple[Collector, Path]:
    clone = Collector(tmp_path / "c")
    clone.configure()
    search = clone.data_dir / "items" / "search"
    search.mkdir(parents=True)
    path = search / "search-0of1-20261129T150102Z.jsonl"
    lines = [json.dumps({**GOOD, "id": 10**25}),  # past SQLite's 64-bit integers
             json.dumps({**GOOD, "id": 9, "stargazers_count": float("nan")}),
             json.dumps({**GOOD, "id": 10, "forks_count": float("inf")}),
             *(json.dumps({**GOOD, "id": n, "full_name": f"o/r{n}", "description": text})
               for n, text in enumerate(FORMULAS, start=1))]
    path.write_text("\n".join(lines) + "\n")
    trending = clone.data_dir / "items" / "trending"
    trending.mkdir(parents=True)
    now = time.time()
    snapshots = [{"observed_at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t)),
                  "period": "daily", "trending_language": None, "url": "https://x/trending",
                  "spider": "trending", "shard": "0/1", "collected_at": "2026-11-29T15:01:02Z",
                  "rows": [{"rank": 1, "full_name": MATH_NAME, "stars": stars}]}
                 for t, stars in ((now - 7200, 10), (now - 60, 50))]
    (trending / "trending-0of1-20261129T150102Z.jsonl").write_text(
        "\n".join(map(json.dumps, snapshots)) + "\n")
    return clone, path


@pytest.mark.timeout(120)
def test_no_value_stops_the_catalog_and_exports_are_inert(tmp_path: Path) -> None:
    clone, path = dataset(tmp_path)
    built = clone.runner("catalog")
    assert built.returncode == 0, built.stderr
    assert "Traceback" not in built.stderr
    said = built.stderr.strip().splitlines()
    assert len(said) == 3, said
    assert f"{path}:1:" in said[0] and "beyond a 64-bit integer" in said[0]
    assert f"{path}:2:" in said[1] and "NaN" in said[1]
    assert f"{path}:3:" in said[2] and "Infinity" in said[2]

    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    for name in ("repos.csv", ".repos.csv.tmp", "index.html", ".index.html.tmp",
                 ".top_risers.png.tmp"):
        (out / name).symlink_to(victim)
    exported = clone.runner("export", "--format", "csv", "--out", str(out), "--table", "repos")
    assert exported.returncode == 0, exported.stderr
    with open(out / "repos.csv", newline="", encoding="utf-8") as handle:
        descriptions = {row["full_name"]: row["description"] for row in csv.DictReader(handle)}
    assert descriptions == {f"o/r{n}": "'" + text for n, text in enumerate(FORMULAS, start=1)}
    assert victim.read_text() == "untouched"

    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("the report needs matplotlib (pip install -e '.[report]')")
    report = clone.runner("report", "--out", str(out))
    assert report.returncode == 0, report.stderr
    assert "Traceback" not in report.stderr
    assert (out / "top_risers.png").read_bytes().startswith(b"\x89PNG")
    assert MATH_NAME in (out / "index.html").read_text(encoding="utf-8").replace("&amp;", "&")
    assert victim.read_text() == "untouched"
    assert not (out / "index.html").is_symlink()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_catalog_is_moved_aside_and_rebuilt(tmp_path: Path, damage: str) -> None:
    clone, _ = dataset(tmp_path)
    assert clone.runner("catalog").returncode == 0
    db = clone.data_dir / "catalog.sqlite"
    clean = sqlite3.connect(db).execute("SELECT count(*) FROM repos").fetchone()[0]
    data = db.read_bytes()
    db.write_bytes(b"\x00garbage, not SQLite" * 400 if damage == "garbage"
                   else data[: len(data) // 3])
    for suffix in ("-wal", "-shm"):
        db.with_name(db.name + suffix).unlink(missing_ok=True)
    damaged = db.read_bytes()
    again = clone.runner("catalog")
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in again.stderr
    moved = [line for line in again.stderr.splitlines() if "moved aside" in line]
    assert len(moved) == 1 and f"{db}: damaged (" in moved[0], again.stderr
    (aside,) = [path for path in clone.data_dir.glob("catalog.sqlite.damaged-*")
                if not path.name.endswith(("-wal", "-shm"))]
    assert aside.read_bytes() == damaged  # kept byte for byte, never deleted
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM repos").fetchone()[0] == clean


@pytest.mark.timeout(120)
def test_a_full_disk_during_a_build_is_one_line(tmp_path: Path) -> None:
    from tests.support.disk import tmpfs

    clone = Collector(tmp_path / "c")
    with tmpfs(tmp_path / "c" / "data", "size=3m") as data:
        clone.configure()
        search = data / "items" / "search"
        search.mkdir(parents=True)
        lines = (json.dumps({**GOOD, "id": n, "full_name": f"o/r{n}", "description": "d" * 300})
                 for n in range(1, 5001))
        (search / "search-0of1-20261129T150102Z.jsonl").write_text("\n".join(lines) + "\n")
        built = clone.runner("catalog")
    assert built.returncode == 1, built.stdout + built.stderr
    assert "Traceback" not in built.stderr
    (line,) = built.stderr.strip().splitlines()
    assert "catalog.sqlite" in line and "full" in line, line
