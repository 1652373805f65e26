"""How deep a value nests, judged without recursion and without walking past the limit."""

from __future__ import annotations

from typing import Any

import pytest

from pipelines.nesting import deeper_than


def nested(depth: int, leaf: Any = "x") -> Any:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@pytest.mark.parametrize(("value", "limit", "deeper"), [
    ("text", 0, False), ([], 0, False), (["x"], 0, True), ({"a": 1}, 1, False),
    (nested(32), 32, False), (nested(33), 32, True), (nested(32, []), 32, False),
    (nested(32, [1]), 32, True), ([1, [2, [3]], {"a": {"b": [4]}}], 4, False),
    ([1, [2, [3]], {"a": {"b": [4]}}], 3, True),
])
def test_depth_is_judged_at_the_limit(value: Any, limit: int, deeper: bool) -> None:
    assert deeper_than(value, limit) is deeper


def test_a_value_far_past_the_recursion_limit_is_judged() -> None:
    assert deeper_than(nested(200_000), 32)
