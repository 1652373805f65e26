"""Content a page shows one copy at a time: tab panels and light/dark copies of a code block.

Tabs: Docusaurus ``<Tabs>`` and headless-UI tabs (Nextra) are WAI-ARIA tabs, a ``role=tablist``
of ``role=tab`` labels and one ``role=tabpanel`` per tab (Docusaurus renders every panel, the
unselected ones ``hidden``; headless UI renders the unselected ones as empty placeholders).
MkDocs Material's content tabs (pymdownx.tabbed) are a ``div.tabbed-set`` of radio inputs, their
``<label>``\\ s (in a ``div.tabbed-labels`` in the alternate style) and one ``div.tabbed-block``
per tab in a ``div.tabbed-content`` (the legacy style has a ``div.tabbed-content`` after each
label instead). The strip of labels is a control, not content: the converter leaves it out and
writes each panel under its own label.

Theme copies: some highlighters write a code block once per colour theme (rehype-pretty-code's
``data-theme="light"``/``"dark"`` siblings, ``theme-light``/``theme-dark`` wrappers, VitePress's
``vp-code-light``/``vp-code-dark``, Shiki's ``pre.shiki`` named by its theme, ``github-light``
and ``github-dark``) and let CSS show one; a reader gets it once.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from lxml import etree

# How far up from a panel its tab strip is looked for: Docusaurus's is the grandparent's child,
# headless UI's a child of the great-grandparent.
_TAB_STRIP_DEPTH = 4
THEME_CLASSES = frozenset({"theme-light", "theme-dark", "shiki-light", "shiki-dark",
                           "vp-code-light", "vp-code-dark"})
# A Shiki block's class names its theme; a theme for light or dark ends so ("github-dark").
_SHIKI = "shiki"
_THEME_ENDINGS = ("-light", "-dark")
# Siblings looked back over for the copy a theme variant repeats (a title and a block per theme).
_THEME_SIBLINGS = 4


def _classes(element: etree._Element) -> set[str]:
    value = element.get("class")
    return set(value.split()) if value else set()


def _label_text(element: etree._Element) -> str:
    return " ".join("".join(element.itertext()).split())


def is_tab_strip(element: etree._Element, names: AbstractSet[str]) -> bool:
    """The labels of a set of tabs, which the converter writes above each panel instead."""
    if "tabbed-labels" in names or element.get("role") == "tablist":
        return True
    if element.tag != "label":
        return False
    parent = element.getparent()
    return parent is not None and "tabbed-set" in _classes(parent)


def tab_label(element: etree._Element) -> str | None:
    """The label of the tab ``element`` is the panel of, or None when it is not a tab panel."""
    if element.get("role") == "tabpanel":
        return _aria_tab_label(element)
    value = element.get("class")
    if not value or "tabbed-" not in value:
        return None
    names = set(value.split())
    parent = element.getparent()
    if parent is None:
        return None
    if "tabbed-block" in names and "tabbed-content" in _classes(parent):
        tab_set = parent.getparent()
        if tab_set is None or "tabbed-set" not in _classes(tab_set):
            return None
        blocks = [block for block in parent if "tabbed-block" in _classes(block)]
        labels = [label for strip in tab_set if "tabbed-labels" in _classes(strip)
                  for label in strip.iter("label")]
        index = blocks.index(element)
        return _label_text(labels[index]) if index < len(labels) else ""
    if "tabbed-content" in names and "tabbed-set" in _classes(parent):
        # The legacy style: a label, then its panel. In the alternate style this is the box
        # of every panel, after the strip of labels: not a panel itself.
        label = element.getprevious()
        while label is not None and label.tag == "input":
            label = label.getprevious()
        return _label_text(label) if label is not None and label.tag == "label" else None
    return None


def _aria_tab_label(panel: etree._Element) -> str:
    """A ``role=tabpanel``'s label: the ``role=tab`` that names it (``aria-labelledby``,
    ``aria-controls``), else the tab at its place among its sibling panels."""
    container = panel.getparent()
    tabs: list[etree._Element] = []
    for _ in range(_TAB_STRIP_DEPTH):
        if container is None:
            return ""
        strip = next((element for element in container.iter()
                      if element.get("role") == "tablist"), None)
        if strip is not None:
            tabs = [tab for tab in strip.iter() if tab.get("role") == "tab"]
            break
        container = container.getparent()
    labelled_by, own_id = panel.get("aria-labelledby"), panel.get("id")
    for tab in tabs:
        if (labelled_by and tab.get("id") == labelled_by) or \
                (own_id and tab.get("aria-controls") == own_id):
            return _label_text(tab)
    parent = panel.getparent()
    siblings = [sibling for sibling in parent if sibling.get("role") == "tabpanel"] \
        if parent is not None else [panel]
    index = siblings.index(panel)
    return _label_text(tabs[index]) if index < len(tabs) else ""


def theme_variant(element: etree._Element) -> str | None:
    theme = element.get("data-theme")
    if theme:
        return theme
    value = element.get("class")
    if not value or ("-light" not in value and "-dark" not in value):
        return None
    names = set(value.split())
    marked = names & THEME_CLASSES
    if not marked and _SHIKI in names:
        marked = {name for name in names if name.endswith(_THEME_ENDINGS)}
    return min(marked) if marked else None


def is_theme_copy(element: etree._Element) -> bool:
    """A copy of the element before it for another colour theme: same tag, same text, marked for
    another theme."""
    variant = theme_variant(element)
    if variant is None:
        return False
    text = None
    for number, sibling in enumerate(element.itersiblings(preceding=True)):
        if number >= _THEME_SIBLINGS:
            break
        other = theme_variant(sibling) if sibling.tag == element.tag else None
        if other is None or other == variant:
            continue
        text = "".join(element.itertext()) if text is None else text
        if "".join(sibling.itertext()) == text:
            return True
    return False
