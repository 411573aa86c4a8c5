"""Reading paths and chapter cards (bookkit/sphinx/reading_paths.py) on a small fixture
book, built like the real one (-W -n) with the project's configuration: a numbered
chapter, a guide, and an introduction with a reading path. The minutes on the built
pages must be the rule's minutes computed from the fixture notebooks; a path over its
budget must fail the build. The pure functions are tested in
tests/tools/test_reading_paths.py.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from bookkit.notebook import BADGE_MARK
from bookkit.paths import ROOT

pytestmark = pytest.mark.site  # builds a (small) book: `make test`, not `make check`

md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3",
                         "language": "python"}, "language_info": {"name": "python"}}
WORDS = " ".join(["word"] * 250)


def chapter() -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[
        md(f"# Fixture chapter\n\n*A promise.*\n\n{BADGE_MARK}<a href=\"x\">badge</a>"),
        md("**Learning objectives.** None."),
        md(f"## Setting out\n\n{WORDS}\n\n$$\na = b\n$$"),
        code("\n".join(["x = 1"] * 48)),
        md(f"(sec-01-labelled)=\n## A labelled section: $R_m$\n\n{WORDS} {WORDS}"),
        md("## Exercises\n\nNone here."),
    ], metadata={**KERNEL, "book": {"prerequisites": [
        "notebooks/fixture_guide#first-steps", "matrix products"]}})


def guide() -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[
        md(f"# A guide\n\n{BADGE_MARK}"),
        md(f"## First steps\n\n{WORDS}"),
    ], metadata={**KERNEL, "book": {"budget_seconds": 300}})


INTRO = """# Fixture book

```{reading-path}
:budget: 60
notebooks/fixture_guide | a note with *emphasis*
notebooks/01_fixture#setting-out
sec-01-labelled
```

```{reading-path}
:all-pages:
```

(reading-rule)=
## The rule

Words, code, figures and equations.
"""


def fixture_config() -> dict:
    """The project's _config.yml, without execution, pointed at the project's files."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "off"
    config["bibtex_bibfiles"] = [str(ROOT / "book" / "references.bib")]
    config["logo"] = str(ROOT / "book" / "assets" / "logo.svg")
    config["html"]["favicon"] = str(ROOT / "book" / "assets" / "favicon.png")
    sphinx = config["sphinx"]
    sphinx["config"]["html_static_path"] = [
        str(ROOT / p) for p in sphinx["config"]["html_static_path"]
    ]
    return config


def build(source: Path, *flags: str) -> subprocess.CompletedProcess:
    """jupyter-book on the fixture; the machinery of this checkout reads the fixture's
    table of contents (BOOK_ROOT), the extension is this checkout's (PYTHONPATH)."""
    env = dict(os.environ, BOOK_ROOT=str(source), PYTHONPATH=str(ROOT))
    return subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build", str(source),
         "--path-output", str(source), *flags],
        capture_output=True, text=True, env=env,
    )


@pytest.fixture(scope="module")
def book(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("paths")
    (source / "notebooks").mkdir()
    nbformat.write(chapter(), source / "notebooks" / "01_fixture.ipynb")
    nbformat.write(guide(), source / "notebooks" / "fixture_guide.ipynb")
    (source / "intro.md").write_text(INTRO)
    (source / "_config.yml").write_text(yaml.safe_dump(fixture_config()))
    toc = {"format": "jb-book", "root": "intro", "parts": [
        {"caption": "Start here", "chapters": [{"file": "notebooks/fixture_guide"}]},
        {"caption": "Part I", "numbered": True,
         "chapters": [{"file": "notebooks/01_fixture"}]}]}
    (source / "_toc.yml").write_text(yaml.safe_dump(toc))
    done = build(source, "-W", "-n", "--keep-going")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return source


def expected_minutes(source: Path) -> dict[str, int]:
    """The rule's minutes, computed here from the fixture notebooks."""
    from bookkit.measure import prose_stats
    from bookkit.sphinx.reading_paths import page_minutes, section_minutes

    sections = prose_stats.section_stats(source / "notebooks" / "01_fixture.ipynb")
    return {
        "guide": page_minutes(source / "notebooks" / "fixture_guide.ipynb"),
        "chapter": page_minutes(source / "notebooks" / "01_fixture.ipynb"),
        "setting-out": section_minutes(sections[1]),
        "labelled": section_minutes(sections[2]),
    }


def text(fragment: str) -> str:
    """What a reader sees of an HTML fragment, tags dropped (tags separate words)."""
    words = " ".join(re.sub(r"<[^>]+>", " ", fragment).split())
    return html.unescape(re.sub(r" ([.,;:)])", r"\1", words.replace("( ", "(")))


def test_the_path_lists_titles_numbers_links_and_minutes(book: Path) -> None:
    page = (book / "_build" / "html" / "intro.html").read_text()
    lists = re.findall(r'<ol class="[^"]*reading-path">(.*?)</ol>', page, re.S)
    assert len(lists) == 2
    items = re.findall(r"<li><p>(.*?)</p>\s*</li>", lists[0], re.S)
    minutes = expected_minutes(book)
    # by construction: 250 words and 48 lines -> 2.5 + 2 + 1 equation = 5.5 -> 6 min
    assert minutes["setting-out"] == 6 and minutes["labelled"] == 5
    assert [text(i) for i in items] == [
        f"A guide ({minutes['guide']} min): a note with emphasis",
        f"Chapter 1, §1.1 Setting out ({minutes['setting-out']} min)",
        f"Chapter 1, §1.2 A labelled section: \\(R_m\\) ({minutes['labelled']} min)",
    ]
    assert 'href="notebooks/fixture_guide.html"' in items[0]
    assert "<em>emphasis</em>" in items[0]
    assert 'href="notebooks/01_fixture.html#setting-out"' in items[1]
    assert 'href="notebooks/01_fixture.html#a-labelled-section-r-m"' in items[2]
    total = sum(minutes[k] for k in ("guide", "setting-out", "labelled"))
    totals = re.findall(r'<p class="reading-path-total">(.*?)</p>', page, re.S)
    assert text(totals[0]) == f"Total: {total} min by the book's reading-time rule."
    assert 'href="#reading-rule"' in totals[0]
    # :all-pages: lists the registry's pages in the order of the table of contents
    every = re.findall(r"<li><p>(.*?)</p>\s*</li>", lists[1], re.S)
    assert [text(i) for i in every] == [
        f"A guide ({minutes['guide']} min)",
        f"Chapter 1: Fixture chapter ({minutes['chapter']} min)"]
    assert text(totals[1]).startswith(
        f"Total: {minutes['guide'] + minutes['chapter']} min")


def test_every_notebook_page_shows_its_card(book: Path) -> None:
    minutes = expected_minutes(book)
    site = book / "_build" / "html" / "notebooks"
    page = (site / "01_fixture.html").read_text()
    card = re.search(r'<div class="chapter-card[^"]*">(.*?)</div>', page, re.S)
    assert card, "no chapter card"
    assert page.index(BADGE_MARK) < card.start() < page.index("Learning objectives")
    assert text(card[1]) == (
        f"Reading time: {minutes['chapter']} min (the reading-time rule) "
        "Run time: Runs in under a minute on two CPU cores "
        "Prerequisites: A guide: First steps; matrix products")
    assert 'href="fixture_guide.html#first-steps"' in card[1]
    assert 'href="../intro.html#reading-rule"' in card[1]
    guide_page = (site / "fixture_guide.html").read_text()
    assert "Runs in under 5 minutes on two CPU cores" in guide_page
    assert "Prerequisites" not in text(guide_page)


def test_a_path_over_its_budget_fails_the_build(book: Path) -> None:
    intro = book / "intro.md"
    intro.write_text(INTRO.replace(":budget: 60", ":budget: 1"))
    try:
        done = build(book, "-W", "-n", "--keep-going")
    finally:
        intro.write_text(INTRO)
    assert done.returncode != 0
    assert "over its budget of 1" in done.stdout + done.stderr
