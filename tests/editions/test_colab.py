"""Colab editions (bookkit.editions.colab): plain Markdown Colab renders, no raw MyST.

Every notebook a Colab badge opens (colab/ and colab/student/) is rendered with a
CommonMark renderer (markdown-it-py); neither its source nor the HTML may show MyST.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import nbformat
import pytest
from markdown_it import MarkdownIt

from bookkit.chapters import notebook_paths, page_paths
from bookkit.config import site_url, student_site_url
from bookkit.editions.colab import (
    Book,
    Converter,
    colab_edition,
    make_book,
    write_editions,
)
from bookkit.notebook import WITHHELD_PAGES, read, tags
from bookkit.paths import BUILD, COLAB, COLAB_HANDOUTS, ROOT

CHAPTERS = notebook_paths()
PAGES = page_paths()  # chapters and guides: a guide has a Colab edition, no student one
EDITIONS = [COLAB / p.name for p in PAGES] + [
    COLAB / "student" / p.name for p in CHAPTERS
]
MYST = re.compile(
    r"\{(doc|ref|eq|numref|term|math|download|abbr|prf:[\w-]+|cite(:\w+)?)\}(`|<code>)"
    r"|```\{|:::\{|^\s*\([\w:.-]+\)=\s*$|^\s*:(label|class|nonumber):"
    r'|class="language-\{|\[\^[\w-]+\]',
    re.M,
)


def test_editions_are_up_to_date() -> None:
    stale = write_editions({p: read(p) for p in PAGES}, check=True)
    assert not stale, f"run `make sync`: {stale}"


@pytest.mark.parametrize(
    "path", EDITIONS, ids=lambda p: p.relative_to(COLAB).as_posix()
)
def test_commonmark_shows_no_myst(path: Path) -> None:
    renderer = MarkdownIt("commonmark")
    for k, cell in enumerate(read(path).cells):
        if cell.cell_type != "markdown":
            continue
        for where, text in (
            ("source", cell.source),
            ("rendered", renderer.render(cell.source)),
        ):
            found = MYST.search(text)
            assert not found, f"{path.name} cell {k} ({where}) shows MyST: {found[0]!r}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_code_is_the_chapter_code(chapter: Path) -> None:
    """Colab runs the chapter's own code: only solution cells get a Colab title line."""
    source = [c.source for c in read(chapter).cells if c.cell_type == "code"]
    edition = [
        re.sub(r"\A# @title [^\n]*\n", "", c.source)
        for c in read(COLAB / chapter.name).cells
        if c.cell_type == "code"
    ]
    assert edition == source


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_student_edition_has_no_solution(chapter: Path) -> None:
    nb = read(COLAB / "student" / chapter.name)
    assert not [c for c in nb.cells if "solution" in tags(c)]
    assert "Solution to" not in "\n".join(c.source for c in nb.cells)
    badge = re.search(r'href="([^"]+)"', nb.cells[0].source)[1]
    assert badge.endswith(f"/colab/student/{chapter.name}"), badge
    badge = re.search(r'href="([^"]+)"', read(COLAB / chapter.name).cells[0].source)[1]
    assert badge.endswith(f"/colab/{chapter.name}"), badge


def test_theorem_like_blocks_share_one_counter() -> None:
    """A lemma after a theorem is 9.2 and a definition after them 9.3, in the text
    and in a reference, as on the site (_config.yml's prf_realtyp_to_countertyp)."""
    md = nbformat.v4.new_markdown_cell
    blocks = "\n\n".join(
        f"```{{prf:{kind}}} {title}\n:label: {label}\n\nText.\n```"
        for kind, title, label in (
            ("theorem", "One", "thm-09-one"),
            ("lemma", "Two", "lem-09-two"),
            ("definition", "Three", "def-09-three"),
        )
    )
    cells = [md("# Demo\n\n<!-- colab-badge -->"),
             md(blocks + "\n\nBy {prf:ref}`def-09-three`.")]
    nb = nbformat.v4.new_notebook(cells=cells)
    path = ROOT / "notebooks" / "09_demo.ipynb"
    text = "\n\n".join(
        c.source for c in colab_edition(nb, path, make_book({path: nb})).cells
    )
    for title in ("Theorem 9.1 (One)", "Lemma 9.2 (Two)", "Definition 9.3 (Three)"):
        assert f"**{title}.**" in text
    assert "[Definition 9.3](" in text


def test_conversion_of_each_construct() -> None:
    md = nbformat.v4.new_markdown_cell
    cells = [
        md("# Demo\n\n<!-- colab-badge -->"),
        md(
            "(sec-09-start)=\n## Start\n\n```{prf:theorem} Shift\n"
            ":label: thm-09-shift\n\nFor all $m$.\n```\n\n```{prf:proof}\nObvious.\n"
            "```\n\n$$\na = b\n$$ (eq-09-a)\n\nBy {prf:ref}`thm-09-shift`, "
            "{eq}`eq-09-a` and {ref}`the start <sec-09-start>`; "
            "{cite:t}`vaswani2017attention` and "
            "{cite:p}`su2024roformer,press2022alibi`; "
            "{doc}`notation <../book/notation>`, {math}`\\theta`.\n\n"
            "```{note}\nA note.\n```\n\n````{exercise} Try\n:label: ex-09-try\n\n"
            "Do it.\n\n```python\nx = 1\n```\n````\n\nA note[^fn].\n\n[^fn]: Here."
        ),
        md(
            "```{solution} ex-09-try\n:class: dropdown\n\nDone.\n```",
            metadata={"tags": ["solution"]},
        ),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    path = ROOT / "notebooks" / "09_demo.ipynb"
    book = make_book({path: nb})
    assert isinstance(book, Book)
    text = "\n\n".join(c.source for c in colab_edition(nb, path, book).cells)
    page = f"{book.site}notebooks/09_demo.html"
    assert "**Theorem 9.1 (Shift).** For all $m$." in text
    assert "*Proof.* Obvious. ∎" in text
    assert "a = b\n\\tag{9.1}$$" in text
    assert f"[Theorem 9.1]({page}#thm-09-shift)" in text
    assert f"[(9.1)]({page}#equation-eq-09-a)" in text
    assert f"[the start]({page}#sec-09-start)" in text
    assert f"[Vaswani et al. (2017)]({book.site}book/bibliography.html)" in text
    assert "([Su et al., 2024](" in text and "; [Press et al., 2022](" in text
    assert f"[notation]({book.site}book/notation.html)" in text and "$\\theta$" in text
    assert "> **Note.** A note." in text
    assert "**Exercise 9.1 (Try).** Do it.\n\n```python\nx = 1\n```" in text
    assert (
        "<details><summary>Solution to Exercise 9.1</summary>\n\nDone.\n\n</details>"
        in text
    )
    assert "A note<sup>1</sup>." in text and "<sup>1</sup> Here." in text
    assert "(sec-09-start)=" not in text and ":label:" not in text
    assert (
        Converter(book, 9).convert("{cite:t}`su2021sinusoidal`")
        == f"[Su (2021)]({book.site}book/bibliography.html)"
    )


STUDENT_EDITIONS = [COLAB / "student" / p.name for p in CHAPTERS] + [
    COLAB_HANDOUTS / p.name for p in CHAPTERS
]


@pytest.mark.parametrize(
    "path", STUDENT_EDITIONS, ids=lambda p: p.relative_to(COLAB).as_posix()
)
def test_student_editions_link_the_student_site(path: Path) -> None:
    """A student's Colab edition and hand-out link the course's student site (its
    address is course.student_site in _config.yml), never the website whose pages
    show the solutions, and never the instructor page."""
    text = "\n".join(c.source for c in read(path).cells if c.cell_type == "markdown")
    public, student = site_url(), student_site_url()
    urls = re.findall(r"https?://[^\s)\"'<>]+", text)
    on_site = [u for u in urls if u.startswith(public) and not u.startswith(student)]
    assert not on_site, f"{path.name} links the website with the solutions: {on_site}"
    assert any(u.startswith(student) for u in urls), f"{path.name}: no student site"
    for page in WITHHELD_PAGES:
        assert page.removesuffix(".md") + ".html" not in text


def test_links_reach_built_pages(site: Path) -> None:
    """Every link into the website names a page and anchor the build produced; the
    student editions' links to the student site too (the same pages, the instructor
    page withheld)."""
    book = make_book({p: read(p) for p in CHAPTERS})
    missing, ids = [], {}
    for path in EDITIONS + STUDENT_EDITIONS:
        text = "\n".join(
            c.source for c in read(path).cells if c.cell_type == "markdown"
        )
        prefix = student_site_url() if path in STUDENT_EDITIONS else book.site
        for url in set(
            re.findall(r"\]\((" + re.escape(prefix) + r"[^)\s]*)\)", text)
        ):
            page, _, anchor = url.removeprefix(prefix).partition("#")
            target = site / (page or "index.html")  # the site's own address
            if not target.is_file():
                missing.append(url)
            elif anchor:
                ids.setdefault(
                    target, set(re.findall(r'id="([^"]+)"', target.read_text()))
                )
                if anchor not in ids[target]:
                    missing.append(url)
    assert not missing, (
        f"links to pages or anchors the site does not have: {sorted(missing)}"
    )


def test_numbers_are_the_builds(site: Path) -> None:
    """Every number the Colab editions give a figure, theorem-like block or equation
    is the one Sphinx gave the same label in the built site (the module counts them
    from the sources; here the build's environment says what they are)."""
    with (BUILD / ".doctrees" / "environment.pickle").open("rb") as f:
        env = pickle.load(f)  # the build's own record, written by `make book`
    built: dict[str, str] = {}
    # sphinx-proof numbers every theorem-like kind with theorem's counter
    # (prf_realtyp_to_countertyp); the title says the block's own kind (its realtype)
    real = {label: entry["realtype"] for label, entry in env.proof_list.items()}
    for doc, kinds in env.toc_fignumbers.items():
        for kind, ids in kinds.items():
            for node_id, number in ids.items():
                label = node_id.removeprefix("equation-")
                text = ".".join(map(str, number))
                name = "Figure" if kind == "figure" else real.get(label, kind)
                built[f"{doc.rsplit('/', 1)[-1]}#{label}"] = (
                    f"({text})" if kind == "displaymath" else
                    f"{name.capitalize()} {text}")
    book = make_book({p: read(p) for p in CHAPTERS})
    compared, wrong = 0, []
    for label, target in book.targets.items():
        if not re.fullmatch(r"(\(|[A-Z][a-z]+ )\d[\d.]*\)?", target.text):
            continue  # a section title or an exercise (numbered in its title)
        page = target.url.split("#")[0].split("/")[-1].removesuffix(".html")
        key = f"{page}#{label}"
        if key not in built:
            continue  # an exercise: sphinx-exercise numbers none (:nonumber:)
        compared += 1
        if built[key] != target.text:
            wrong.append(f"{key}: Colab {target.text!r}, site {built[key]!r}")
    assert not wrong, "\n".join(wrong)
    figures = sum(len(k.get("figure", {})) for k in env.toc_fignumbers.values())
    assert compared >= figures > 50, (compared, figures)
    # one counter per chapter: a lemma after a definition takes the next number
    shared = {tuple(map(str, built[k].split()[1].split("."))) for k in built
              if k.split("#")[-1] in real}
    assert len(shared) == len([k for k in built if k.split("#")[-1] in real])


def figure_notebook() -> nbformat.NotebookNode:
    """A chapter in miniature with figure cells (the convention of CONTRIBUTING.md)."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell

    def figure(name: str | None, caption: str, alt: str) -> dict:
        options = {"caption": caption} | ({"name": name} if name else {})
        return {"mystnb": {"figure": options, "image": {"alt": alt}}}

    return nbformat.v4.new_notebook(cells=[
        md("# Demo\n\n<!-- colab-badge -->"),
        md("As {numref}`fig-09-line` and {numref}`Plot %s <fig-09-plot>` show."),
        code("plot_line()", metadata=figure("fig-09-line", "A line: see $x$.", "Line")),
        code("plot_free()", metadata=figure(None, "Not numbered.", "Free")),
        code("plot()", metadata=figure("fig-09-plot", "Interactive.", "Plot")),
        code("no_figure()"),
    ])


def test_figures_are_numbered_and_captioned() -> None:
    """{numref} becomes "Figure N.k", numbered by chapter and order of the named
    captioned figure cells (as Sphinx numbers them); a caption cell follows each."""
    nb = figure_notebook()
    path = ROOT / "notebooks" / "09_demo.ipynb"
    book = make_book({path: nb})
    page = f"{book.site}notebooks/09_demo.html"
    for student in (False, True):
        cells = colab_edition(nb, path, book, student).cells
        text = "\n\n".join(c.source for c in cells)
        assert "{numref}" not in text
        line, plot = f"({page}#fig-09-line)", f"({page}#fig-09-plot)"
        assert f"As [Figure 9.1]{line} and [Plot 9.2]{plot} show." in text
        sources = [c.source for c in cells]
        after = {
            s: sources[k + 1] for k, s in enumerate(sources) if s.startswith("plot")
        }
        assert after["plot_line()"] == "**Figure 9.1.** A line: see $x$."
        assert after["plot_free()"] == "**Figure.** Not numbered."
        assert after["plot()"] == "**Figure 9.2.** Interactive."
        assert sources[sources.index("no_figure()") + 1:] == [], "no caption there"
        ids = [c.id for c in cells]
        assert len(ids) == len(set(ids)), "caption cells need their own ids"
    nbformat.validate(colab_edition(nb, path, book))


@pytest.mark.parametrize(
    "path", EDITIONS, ids=lambda p: p.relative_to(COLAB).as_posix()
)
def test_no_numref_survives(path: Path) -> None:
    text = "\n".join(c.source for c in read(path).cells if c.cell_type == "markdown")
    assert "{numref}" not in text, f"{path.name}: a {{numref}} was not converted"


def test_student_editions_hold_no_solution_text() -> None:
    """colab/student/ is public and students open it: no solution text and no
    quotation of a withheld page (bookkit/leaks.py), their notes included."""
    from bookkit import leaks

    found = leaks.scan(COLAB / "student", leaks.fingerprints(WITHHELD_PAGES))
    assert not found, leaks.report(found)
