"""Slides: one reveal.js deck per chapter, generated from the executed notebooks, offline.

The first tests exercise tools/make_slides.py on a small synthetic notebook (no build needed);
the rest check the decks `make book` wrote into _build/html/slides/: one per chapter, no
http(s) address in any src of script/img/iframe or href of link, every local file they load
present, and, opened in Chromium, no request leaving the machine, no browser error, math
typeset and interactive figures drawn.
"""
from __future__ import annotations

import base64
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import pytest
from make_slides import (BIBFILE, Citations, MystContext, collect_labels, main, markdown_blocks,
                         myst_to_markdown, slide_notebook)
from nbtools import notebook_paths

STEMS = [p.stem for p in notebook_paths()]
LOADING_ATTRS = {("script", "src"), ("img", "src"), ("iframe", "src"), ("source", "src"),
                 ("video", "src"), ("audio", "src"), ("embed", "src"), ("link", "href"),
                 ("object", "data")}


class ResourceParser(HTMLParser):
    """Collect every URL an HTML page loads by itself (not the links a reader may follow)."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value and (tag, name) in LOADING_ATTRS:
                self.loads.append(value)
            elif value and (tag, name) == ("a", "href"):
                self.links.append(value)


def resources(html_text: str) -> ResourceParser:
    parser = ResourceParser()
    parser.feed(html_text)
    loads_in_css = re.findall(r"(?:@import\s+|url\()\s*['\"]?(https?://[^'\")\s]+)", html_text)
    parser.loads.extend(loads_in_css)
    return parser


def is_remote(url: str) -> bool:
    return urlparse(url).scheme in ("http", "https") or url.startswith("//")


# --------------------------------------------------------------------------- the converter


@pytest.fixture(scope="module")
def ctx() -> MystContext:
    return MystContext(Citations.from_bibfile(BIBFILE), chapter=3)


def test_citations_become_author_year(ctx: MystContext) -> None:
    text = myst_to_markdown("As {cite:t}`vaswani2017attention` showed {cite:p}`su2024roformer,press2022alibi`.", ctx)
    assert text == "As Vaswani et al. (2017) showed (Su et al., 2024; Press et al., 2022)."


def test_every_bib_entry_has_a_label(ctx: MystContext) -> None:
    keys = re.findall(r"^@\w+\{([^,]+),", BIBFILE.read_text(), re.M)
    for key in keys:
        authors, year = ctx.citations.labels[key]
        assert authors and "{" not in authors and "\\" not in authors, f"{key}: {authors!r}"
        assert re.fullmatch(r"\d{4}", year), f"{key}: year {year!r}"


def test_roles_become_text(ctx: MystContext) -> None:
    source = ("See {doc}`notation <../book/notation>`, {doc}`04_sinusoidal_in_code`, "
              "a {term}`KV cache <KV cache>` and {math}`\\theta_i`.")
    assert myst_to_markdown(source, ctx) == (
        "See notation, Chapter 4, a KV cache and $\\theta_i$.")


def test_labelled_equations_are_numbered(ctx: MystContext) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "(eq-target)=\n$$\na = b\n$$ (eq-first)\n\n$$ c = d $$ (eq-second)\n\nBy {eq}`eq-second`.")])
    local = MystContext(ctx.citations, chapter=3)
    collect_labels(nb, local)
    text = myst_to_markdown(nb.cells[0].source, local)
    assert "(eq-target)=" not in text
    assert "a = b\n \\tag{3.1}$$" in text
    assert "$$ c = d  \\tag{3.2}$$" in text
    assert text.endswith("By (3.2).")


def test_directives_become_quoted_blocks(ctx: MystContext) -> None:
    source = ("````{exercise} Shift it\n:label: ex-03-shift\n\nProve $x$.\n\n```python\ncode\n```\n````\n\n"
              "```{prf:theorem} Equivariance\n:label: thm-03-eq\n\nFor every $P$.\n```\n\n"
              "```{prf:proof}\nEasy.\n```\n\nBy {prf:ref}`thm-03-eq`.\n\n"
              "```{note}\nA note.\n```\n\n```{solution} ex-03-shift\n:class: dropdown\nSecret.\n```")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(source)])
    local = MystContext(ctx.citations, chapter=3)
    collect_labels(nb, local)
    text = myst_to_markdown(source, local)
    assert "> **Exercise 3.1 (Shift it).** Prove $x$." in text
    assert "> ```python\n> code\n> ```" in text
    assert "> **Theorem 3.1 (Equivariance).** For every $P$." in text
    assert "> *Proof.* Easy. $\\blacksquare$" in text
    assert "By Theorem 3.1." in text
    assert "> **Note.** A note." in text
    assert "Secret" not in text and ":label:" not in text and "{" not in text.replace("\\tag{", "")


def test_blocks_never_split_code_or_math() -> None:
    text = "## Title\nIntro.\n\n```python\na = 1\n\nb = 2\n```\n\n$$\nx\n\ny\n$$\n\nEnd."
    assert markdown_blocks(text) == ["## Title", "Intro.", "```python\na = 1\n\nb = 2\n```",
                                     "$$\nx\n\ny\n$$", "End."]


# --------------------------------------------------------------------------- layout


def synthetic_notebook() -> nbformat.NotebookNode:
    """An executed chapter in miniature: every cell kind and tag the chapters use."""
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + (700).to_bytes(4, "big")
                           + (400).to_bytes(4, "big") + b"\x08\x06\x00\x00\x00").decode()
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    stream = nbformat.v4.new_output("stream", name="stdout", text="hello\n")
    image = nbformat.v4.new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"})
    cells = [
        md("# A chapter\n\n*A promise.*\n\n<!-- colab-badge -->"),
        code("import os", metadata={"tags": ["remove-cell"]}),
        code("import numpy as np", metadata={"tags": ["export"]}),
        md("## First section\n\nText with $x^2$ and {cite:t}`su2021sinusoidal`."),
        code("print('hello')", outputs=[stream]),
        code("plot()", metadata={"tags": ["hide-input"]}, outputs=[image]),
        md("### A subsection\n\nMore."),
        code("\n".join(f"line_{k} = {k}" for k in range(30))),
        md("## Exercises\n\n````{exercise} Do it\n:label: ex-09-do\n\nWrite `f`.\n````"),
        code("def f():\n    raise NotImplementedError('Exercise 9.1: write f')"),
        md("```{solution-start} ex-09-do\n:class: dropdown\n```", metadata={"tags": ["solution"]}),
        code("def f():\n    return 42", metadata={"tags": ["solution"]}),
        md("```{solution-end}\n```", metadata={"tags": ["solution"]}),
        code("check_f(f)", metadata={"tags": ["exercise-check"]},
             outputs=[nbformat.v4.new_output("stream", name="stdout", text="All 3 checks passed.\n")]),
    ]
    return nbformat.v4.new_notebook(cells=cells)


def test_slide_structure() -> None:
    nb = slide_notebook(synthetic_notebook(), Citations.from_bibfile(BIBFILE),
                        "../notebooks/09_demo.html", chapter=9)
    kinds = [(c.metadata["slideshow"]["slide_type"], c.source.split("\n")[0][:30]) for c in nb.cells]
    starts = [(kind, head) for kind, head in kinds if kind in ("slide", "subslide")]
    assert starts[0] == ("slide", "# A chapter")
    assert ("slide", "## First section") in starts
    assert ("subslide", "### A subsection") in starts
    assert ("slide", "## Exercises") in starts
    sources = "\n".join(c.source for c in nb.cells)
    assert "import os" not in sources, "the hidden setup cell must not be on a slide"
    assert "import numpy" not in sources, "an imports-only cell adds nothing to a slide"
    assert "return 42" not in sources and "check_f" not in sources, "solutions and checks stay off"
    assert "Su (2021)" in sources
    assert "# ... 19 more lines in the notebook" in sources, "long code is cut"
    assert "../notebooks/09_demo.html" in sources, "the deck links back to the chapter"
    hidden = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("plot()")]
    assert hidden[0].metadata["transient"]["remove_source"], "hide-input shows the output only"


def test_synthetic_deck_is_offline(tmp_path: Path) -> None:
    executed = tmp_path / "executed"
    executed.mkdir()
    nbformat.write(synthetic_notebook(), executed / "09_demo.ipynb")
    out = tmp_path / "slides"
    assert main([str(out), "--executed", str(executed)]) == 0
    deck = (out / "09_demo.html").read_text()
    found = resources(deck)
    remote = [u for u in found.loads if is_remote(u)]
    assert not remote, f"the deck loads from the network: {remote}"
    assert "reveal.js/dist/reveal.js" in found.loads
    assert "../_static/mathjax/tex-mml-chtml.js" in found.loads
    for url in found.loads:
        if not url.startswith(("data:", "../_static/")):
            assert (out / url).is_file(), f"the deck loads {url}, which make_slides did not write"
    index = (out / "index.html").read_text()
    assert 'href="09_demo.html"' in index and "A chapter" in index


# --------------------------------------------------------------------------- the built decks


@pytest.fixture(scope="module")
def slides(site: Path) -> Path:
    folder = site / "slides"
    if not (folder / "index.html").is_file():
        pytest.fail(f"no slides in {folder}: `make book` runs tools/make_slides.py after the build")
    return folder


@pytest.mark.parametrize("stem", STEMS)
def test_deck_exists_and_loads_nothing_remote(stem: str, slides: Path, site: Path) -> None:
    deck = slides / f"{stem}.html"
    assert deck.is_file(), f"no slides for {stem}: run `make book`"
    found = resources(deck.read_text())
    remote = [u for u in found.loads if is_remote(u)]
    assert not remote, f"{deck.name} loads from the network: {remote}"
    for url in found.loads + found.links:
        if url.startswith(("data:", "#", "mailto:")) or is_remote(url):
            continue
        target = (slides / urlparse(url).path).resolve()
        assert target.is_file(), f"{deck.name} refers to {url}, which is not in the site"


def test_index_lists_every_deck(slides: Path) -> None:
    found = resources((slides / "index.html").read_text())
    assert not [u for u in found.loads if is_remote(u)]
    for stem in STEMS:
        assert f"{stem}.html" in found.links, f"slides/index.html does not list {stem}"
    for url in found.links:
        assert (slides / urlparse(url).path).resolve().is_file(), f"index.html: broken link {url}"


@pytest.mark.parametrize("stem", STEMS)
def test_deck_in_browser(stem: str, slides: Path, site: Path) -> None:
    from browser import browser, serve, wait_for_math

    problems: list[str] = []
    with serve(site) as base, browser() as chromium:
        page = chromium.new_page(viewport={"width": 1280, "height": 800})
        host = urlparse(base).netloc

        def route(route) -> None:
            url = route.request.url
            if urlparse(url).scheme in ("http", "https") and urlparse(url).netloc != host:
                problems.append(f"external request {url}")
                return route.abort()
            return route.continue_()

        page.route("**/*", route)
        page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
        page.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        page.goto(f"{base}slides/{stem}.html", wait_until="load")
        page.wait_for_load_state("networkidle")
        wait_for_math(page)
        probe = page.evaluate("""() => ({
            slides: window.Reveal ? Reveal.getTotalSlides() : 0,
            math: document.querySelectorAll('mjx-container').length,
            mathErrors: document.querySelectorAll('mjx-merror').length,
            rawTex: /\\$\\$/.test(document.querySelector('.slides').innerText),
            plotlyEmpty: Array.from(document.querySelectorAll('.plotly-graph-div'))
                .filter(d => !d.querySelector('.main-svg')).length,
        })""")
    assert not problems, f"{stem} slides: {problems}"
    assert probe["slides"] >= 5, f"{stem}: only {probe['slides']} slides"
    assert probe["math"] > 0 and probe["mathErrors"] == 0 and not probe["rawTex"], \
        f"{stem}: math not typeset ({probe})"
    assert probe["plotlyEmpty"] == 0, f"{stem}: plotly figures not drawn ({probe})"
