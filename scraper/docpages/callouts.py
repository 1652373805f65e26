"""Callouts (admonitions): a box a page sets off from its text under a title that says what it
is (Note, Tip, Warning). The converter writes each as a quote whose first line is the title in
bold; the fidelity check finds them by the same rules.

The boxes: Sphinx's and MkDocs' ``div.admonition`` (title ``p.admonition-title``), MkDocs
Material's collapsible ones (``details.note``, ``details.tip``…, title in ``<summary>``),
Docusaurus ``div.theme-admonition`` (title ``div.admonitionHeading_…``), VitePress
``div.custom-block`` (``p.custom-block-title``), Starlight ``aside.starlight-aside``
(``p.starlight-aside__title``), GitHub's ``div.markdown-alert`` (``p.markdown-alert-title``),
Bootstrap's ``div.alert`` (Hugo Docsy), and Asciidoctor's (Antora's) ``div.admonitionblock``:
a one-row table of an icon cell, whose type is its icon's ``title`` (its text without font
icons), and a content cell; that table lays out the box, it is not a table of the page's.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from lxml import etree

from scraper.docpages.visible import classes, label_text

BOX_CLASSES = frozenset({"admonition", "theme-admonition", "custom-block", "alert",
                         "starlight-aside", "markdown-alert", "admonitionblock"})
TITLE_CLASSES = frozenset({"admonition-title", "custom-block-title", "starlight-aside__title",
                           "markdown-alert-title"})
# MkDocs Material's admonition types and their aliases, on a collapsible ``<details>``; other
# ``<details>`` (rustdoc's toggles, a FAQ's answers) are sections, not callouts.
DETAILS_TYPES = frozenset({"note", "abstract", "summary", "tldr", "info", "todo", "tip", "hint",
                           "important", "success", "check", "done", "question", "help", "faq",
                           "warning", "caution", "attention", "failure", "fail", "missing",
                           "danger", "error", "bug", "example", "quote", "cite"})
ASCIIDOC_BOX = "admonitionblock"
_BOX_TAGS = frozenset({"div", "aside", "details"})
# From an Asciidoctor icon cell up to its box: td > tr > tbody > table > div.
_ICON_DEPTH = 4


def is_callout(tag: str, names: AbstractSet[str]) -> bool:
    if tag in _BOX_TAGS and names & BOX_CLASSES:
        return True
    return tag == "details" and bool(names & DETAILS_TYPES)


def is_callout_title(names: AbstractSet[str]) -> bool:
    return bool(names & TITLE_CLASSES) or any(name.startswith("admonitionHeading")
                                               for name in names)


def is_layout_table(table: etree._Element) -> bool:
    """The table an Asciidoctor admonition lays its icon and its text out with."""
    parent = table.getparent()
    return parent is not None and ASCIIDOC_BOX in classes(parent)


def icon_title(cell: etree._Element, names: AbstractSet[str]) -> str | None:
    """The type an Asciidoctor admonition's icon cell names ("Important"); None when ``cell``
    is not one."""
    if "icon" not in names or cell.tag != "td":
        return None
    box = cell.getparent()
    for _ in range(_ICON_DEPTH):
        if box is None or ASCIIDOC_BOX in classes(box):
            break
        box = box.getparent()
    if box is None or ASCIIDOC_BOX not in classes(box):
        return None
    text = label_text(cell)
    if text:
        return text
    for icon in cell.iter("i", "img"):
        named = (icon.get("title") or icon.get("alt") or "").strip()
        if named:
            return named
    return ""
