"""A page's code fidelity: of the code blocks the converter walked, how many its Markdown holds
byte-exact when read back as Markdown (fences, list indentation and quote marks taken off)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# An opening fence after the containers it sits in: quote marks, list markers, indentation.
_OPENING = re.compile(r"^((?:>[ ]?|[ ]|[-*+][ ]|\d{1,9}[.)][ ])*)(`{3,})[^`]*$")
_MARKER = re.compile(r"[-*+]|\d{1,9}[.)]")


@dataclass(frozen=True, slots=True)
class Fidelity:
    code_blocks: int  # code blocks in the walked tree
    code_blocks_exact: int  # of them, held byte-exact by the Markdown

    @property
    def complete(self) -> bool:
        return self.code_blocks_exact == self.code_blocks


def continuation(prefix: str) -> str:
    """What the lines after an opening fence start with: its quote marks, and the indentation
    a list marker stands for."""
    return _MARKER.sub(lambda marker: " " * len(marker.group(0)), prefix)


def read_fences(markdown: str) -> list[str]:
    """The code of every fenced block, as a Markdown reader gets it back."""
    codes: list[str] = []
    lines = markdown.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        opening = _OPENING.match(line) if "```" in line else None
        if not opening:
            continue
        rest, marks = continuation(opening.group(1)), opening.group(2)
        closing, bare = rest + marks, rest.rstrip()
        body = []
        while i < len(lines) and lines[i] != closing:
            line = lines[i]
            body.append(line[len(rest):] if line.startswith(rest) else
                        "" if line == bare else "\x00")  # \x00: a line the block lost
            i += 1
        i += 1
        codes.append("\n".join(body))
    return codes


def measure(markdown: str, walked: Iterable[str]) -> Fidelity:
    """``walked``: each code block's code as the converter read it from the tree, in order."""
    expected = list(walked)
    if not expected:
        return Fidelity(0, 0)
    found = read_fences(markdown)
    exact, start = 0, 0
    for code in expected:
        try:
            start = found.index(code, start) + 1
        except ValueError:
            continue
        exact += 1
    return Fidelity(len(expected), exact)
