"""A round against the spider-shard's recent rounds: the figures, the ratio, the bounded file."""

from __future__ import annotations

import os
from pathlib import Path

from scraper.utils.roundhistory import (
    MAX_ROUNDS,
    RoundFigures,
    read_history,
    unusual,
    write_history,
)

LIST = "trending?since=daily"


def usual_rounds(n: int = 5, rows: int = 25) -> list[RoundFigures]:
    return [RoundFigures(at=1000.0 + k, items=30, bytes=100_000, errors=0, rows={LIST: rows},
                         coverage={LIST: 0.9}) for k in range(n)]


def test_half_the_rows_gone_at_the_default_ratio_is_one_line_naming_the_list() -> None:
    earlier = usual_rounds()
    current = RoundFigures(at=2000.0, items=30, bytes=100_000, rows={LIST: 12},
                           coverage={LIST: 0.9})
    assert unusual(current, earlier, 0.5) == f"{LIST}: 12 rows, median 25"
    current.rows[LIST] = 13  # more than half: usual
    assert unusual(current, earlier, 0.5) is None


def test_each_figure_moves_past_the_ratio_on_its_own_side() -> None:
    earlier = usual_rounds()
    assert unusual(RoundFigures(rows={LIST: 25}, coverage={LIST: 0.3}, items=30,
                                bytes=100_000), earlier, 0.5) == \
        f"{LIST}: 30% of fields filled, median 90%"
    assert unusual(RoundFigures(items=10, bytes=100_000), earlier, 0.5) == "10 items, median 30"
    assert unusual(RoundFigures(items=30, bytes=40_000), earlier, 0.5) == \
        "40000 bytes received, median 100000"
    assert unusual(RoundFigures(items=30, bytes=100_000, errors=3), earlier, 0.5) == \
        "3 errors, median 0"
    assert unusual(RoundFigures(items=30, bytes=100_000, errors=2), earlier, 0.5) is None


def test_no_line_without_history_nor_for_a_list_answered_unchanged() -> None:
    assert unusual(RoundFigures(rows={LIST: 1}), usual_rounds(2), 0.5) is None  # two: no usual
    unchanged = RoundFigures(items=30, bytes=100_000, rows={LIST: 0})  # a 304
    assert unusual(unchanged, usual_rounds(), 0.5) is None
    few = [RoundFigures(at=k, items=4) for k in range(5)]  # few new items is how rounds go
    assert unusual(RoundFigures(items=0), few, 0.5) is None


def test_history_keeps_the_window_and_at_most_max_rounds(tmp_path: Path) -> None:
    path = tmp_path / "rounds" / "trending-0of1.json"
    now = 10 * 86400.0
    old = [RoundFigures(at=now - 8 * 86400)]
    recent = [RoundFigures(at=now - k, items=k) for k in range(MAX_ROUNDS + 10, 0, -1)]
    os.makedirs(path.parent)
    write_history(path, old + recent, now, 7)
    kept = read_history(path)
    assert len(kept) == MAX_ROUNDS and kept[-1] == recent[-1] and kept[0] == recent[10]


def test_an_unreadable_history_is_an_empty_one(tmp_path: Path) -> None:
    path = tmp_path / "h.json"
    path.write_text('{"rounds": [{"at": 1, "rows": {"a": 3}}, 7, {"at": "x"}')  # torn
    assert read_history(path) == []
    path.write_text('{"rounds": [{"at": 1.0, "rows": {"a": 3}}, 7, {"at": "x"}]}')
    assert read_history(path) == [RoundFigures(at=1.0, rows={"a": 3}), RoundFigures()]
