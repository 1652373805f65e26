"""A comment or processing instruction in a page's content is not shown, and the text after it
is: React's server rendering puts ``<!-- -->`` between neighbouring texts (Docusaurus, Nextra),
and lxml's ``iterwalk`` sends such a node only as an event of its own, so a walk listening to
"start" and "end" alone dropped the rest of the sentence. Both the Markdown walk and the
fidelity check's own reading keep it."""

from __future__ import annotations

from lxml import etree

from scraper.docpages.extract import extract_page, is_boilerplate, main_content, page_selector
from scraper.docpages.markdown import convert
from scraper.docpages.shown import read_shown

URL = "https://docs.example.org/guide/"


def page(content: str) -> str:
    return f"<html><body><main>{content}</main></body></html>"


def test_the_text_after_a_react_separator_is_in_the_markdown_and_the_text() -> None:
    doc = extract_page(page_selector(page(
        "<p>Version<!-- --> <!-- -->2.0 is out</p>"
        "<p>Once we see <strong>'The broker<!-- -->[name]<!-- --> boot success'</strong>"
        " in the log</p>")), URL)
    assert doc.markdown == ("Version 2.0 is out\n\n"
                            "Once we see **'The broker[name] boot success'** in the log")
    assert doc.text == "Version 2.0 is out Once we see 'The broker [name] boot success' in the log"


def test_a_comment_in_code_is_left_out_and_the_code_after_it_kept() -> None:
    doc = extract_page(page_selector(page(
        '<pre><code class="language-python">x = 1<!-- a note -->\ny = 2</code></pre>'
        '<pre><span class="lineno">1</span>z<!-- c --> = 3</pre>'
        '<pre>a<span class="k">b<!-- c -->d</span>e<br>f</pre>')), URL)
    assert doc.markdown == "```python\nx = 1\ny = 2\n```\n\n```\nz = 3\n```\n\n```\nabde\nf\n```"
    assert (doc.fidelity.code_blocks, doc.fidelity.code_blocks_exact) == (3, 3)


def test_the_fidelity_reading_keeps_the_text_after_a_comment() -> None:
    """The check's own reading, not the converter's: a walk that dropped the text would fall
    below the page's count."""
    main = main_content(page_selector(page(
        '<div class="admonition note"><p class="admonition-title">Note</p>'
        "<p>keep<!-- -->this</p></div>"
        "<pre>x<!-- c --> = 1</pre>")))
    assert main is not None
    shown = read_shown(main, is_boilerplate)
    assert shown.codes == ["x = 1"]
    assert shown.callouts == [("Note", "keepthis")]


def test_the_text_after_a_processing_instruction_is_kept() -> None:
    """libxml2's HTML parser makes ``<?php … ?>`` a comment; a tree built otherwise may hold a
    processing instruction itself."""
    root = etree.fromstring("<div><p>before</p><p>a</p></div>", etree.HTMLParser())
    paragraph = root.find(".//p[2]")
    assert paragraph is not None
    instruction = etree.ProcessingInstruction("php", "echo 1")
    instruction.tail = "fter"
    paragraph.append(instruction)
    converted = convert(root, URL)
    assert converted.markdown == "before\n\nafter"
    assert converted.text == "before a fter"
