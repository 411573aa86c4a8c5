"""The licence and the citation: present, valid, and the same wherever stated.

Text and figures are CC BY 4.0, code MIT (bookkit.licence says why). The licence texts
are in the repository; the front page, the README, the site's footer and the last cell
of every chapter (and so of its Colab and student editions) state them; CITATION.cff
and the BibTeX block of the introduction agree with each other and with _config.yml.

CITATION.cff is validated against the Citation File Format 1.2.0 schema
(tests/data/cff-1.2.0.schema.json, the schema `cffconvert` 2.0.0 ships and validates
with). `cffconvert` itself cannot join the book's environment: it requires
jsonschema < 4, and Jupyter's packages require jsonschema >= 4.18.
"""

from __future__ import annotations

import json
import re

import jsonschema
import nbformat
import pytest
import yaml
from markdown_it import MarkdownIt
from pybtex.database import parse_string

from bookkit.chapters import notebook_paths
from bookkit.licence import (
    CODE_LICENCE_FILE,
    CONTENT_LICENCE_FILE,
    CONTENT_LICENCE_URL,
    FOOTER_ID,
    FOOTER_MARK,
    SPDX,
    book_config,
    footer_source,
)
from bookkit.notebook import read, student_notebook
from bookkit.paths import COLAB, ROOT
from bookkit.sync import sync_footer

CHAPTERS = notebook_paths()
CITATION = ROOT / "CITATION.cff"
INTRO = ROOT / "book" / "intro.md"
SCHEMA = ROOT / "tests" / "data" / "cff-1.2.0.schema.json"


def citation() -> dict:
    return yaml.safe_load(CITATION.read_text())


def test_licence_texts_are_in_the_repository() -> None:
    mit = (ROOT / CODE_LICENCE_FILE).read_text()
    assert mit.startswith("MIT License")
    holder = f"Copyright (c) {book_config()['copyright']} {book_config()['author']}"
    assert holder in mit
    cc = (ROOT / CONTENT_LICENCE_FILE).read_text()
    assert "Creative Commons Attribution 4.0 International Public License" in cc
    for section in range(1, 9):
        assert f"Section {section} -- " in cc, f"CC BY 4.0 section {section} missing"


def test_citation_cff_is_valid() -> None:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator(schema).validate(citation())


def test_citation_cff_rejects_what_the_schema_forbids() -> None:
    """The check has teeth: an unknown licence id or a missing title fails."""
    schema = json.loads(SCHEMA.read_text())
    for broken in ({"license": ["CC-BY-4"]}, {"title": None}):
        data = {**citation(), **broken}
        data = {k: v for k, v in data.items() if v is not None}
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft7Validator(schema).validate(data)


def test_citation_agrees_with_the_book() -> None:
    config, cff = book_config(), citation()
    for entry in (cff, cff["preferred-citation"]):
        assert entry["title"] == config["title"]
        assert [a["name"] for a in entry["authors"]] == [config["author"]]
        assert entry["url"] == config["html"]["baseurl"]
        assert entry["repository-code"] == config["repository"]["url"]
        assert tuple(entry["license"]) == SPDX
    assert cff["preferred-citation"]["type"] == "book"
    assert str(cff["preferred-citation"]["year"]) == str(config["copyright"])


def bibtex_block() -> str:
    text = INTRO.read_text()
    assert re.search(r"^\(cite-this-book\)=\n## Cite this book$", text, re.M), (
        "the introduction needs a section '(cite-this-book)=' / '## Cite this book'"
    )
    found = re.search(r"```bibtex\n(.*?)```", text, re.S)
    assert found, "the introduction has no ```bibtex block"
    return found[1]


def test_bibtex_on_the_introduction_agrees_with_citation_cff() -> None:
    entries = parse_string(bibtex_block(), "bibtex").entries
    assert len(entries) == 1
    entry = next(iter(entries.values()))
    preferred = citation()["preferred-citation"]
    assert entry.type == "book"
    assert entry.fields["title"] == preferred["title"]
    assert entry.fields["year"] == str(preferred["year"])
    assert entry.fields["url"] == preferred["url"]
    authors = [str(p) for p in entry.persons["author"]]
    assert authors == ["{" + a["name"] + "}" for a in preferred["authors"]], authors


def test_front_page_readme_and_site_footer_state_the_licence() -> None:
    intro, readme = INTRO.read_text(), (ROOT / "README.md").read_text()
    for where, text in (("book/intro.md", intro), ("README.md", readme)):
        assert "CC BY 4.0" in text and "MIT" in text, f"{where}: licence not stated"
        assert CONTENT_LICENCE_FILE in text and "`LICENSE`" in text, where
    footer = book_config()["html"]["extra_footer"]
    assert CONTENT_LICENCE_URL in footer and "MIT" in footer


def test_footer_cell_says_who_and_what() -> None:
    text = footer_source()
    config = book_config()
    assert text.startswith(FOOTER_MARK)
    for part in (config["title"], config["author"], str(config["copyright"]),
                 CONTENT_LICENCE_URL, "MIT", "cite-this-book"):
        assert part in text, part


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_edition_ends_with_the_licence(path) -> None:
    """The chapter, its Colab edition, its Colab student edition and the student
    notebook that `make student` writes all end with the licence footer."""
    chapter = read(path)
    last = chapter.cells[-1]
    assert last.get("id") == FOOTER_ID and last.source == footer_source(), (
        f"{path.name}: the last cell is not the licence footer; run `make sync`"
    )
    assert sum(FOOTER_MARK in c.source for c in chapter.cells) == 1
    student = student_notebook(chapter)
    assert student.cells[-1].source == footer_source()
    renderer = MarkdownIt("commonmark")
    for edition in (COLAB / path.name, COLAB / "student" / path.name):
        cell = read(edition).cells[-1]
        assert cell.cell_type == "markdown" and FOOTER_MARK in cell.source, edition
        html = renderer.render(cell.source)
        assert f'href="{CONTENT_LICENCE_URL}"' in html, edition
        assert "intro.html#cite-this-book" in html, edition
        assert "{ref}" not in cell.source, edition


def test_sync_moves_and_refreshes_the_footer() -> None:
    """A cell added after the footer (say, by a merge) or an edited footer: sync puts
    the generated footer back as the one last cell."""
    md = nbformat.v4.new_markdown_cell
    footer = md(FOOTER_MARK + "\nold text")
    footer.id = FOOTER_ID
    nb = nbformat.v4.new_notebook(cells=[md("# T"), footer, md("## Added later")])
    assert sync_footer(nb)
    assert [c.source for c in nb.cells] == ["# T", "## Added later", footer_source()]
    assert not sync_footer(nb), "a second sync changes nothing"
