"""Slides: one reveal.js deck per chapter, by nbconvert from the executed notebooks.

The first tests run bookkit/editions/slides.py on a small synthetic notebook (no build),
including every file the copied reveal.js style sheets refer to (the theme's fonts).
The rest check the decks `make book` wrote into _build/html/slides/: one per chapter,
nothing loaded from the network, and, opened in Chromium, no console error, failed
request or HTTP error (a 404 fails), no serious or critical axe-core violation, math
typeset, every figure drawn, at most 25 slides, each fitting the screen with at most
40 words of text besides its title.
"""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import pytest

from bookkit.chapters import chapters, notebook_paths
from bookkit.editions.slides import (
    MAX_SLIDES,
    MAX_WORDS,
    PlanRow,
    deck,
    main,
    minute_plan,
    session_slides,
    words,
)
from bookkit.notebook import read as read_notebook

STEMS = [p.stem for p in notebook_paths()]
LOADS = {("script", "src"), ("img", "src"), ("iframe", "src"), ("link", "href"),
         ("source", "src"), ("embed", "src"), ("object", "data")}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + (700).to_bytes(4, "big")
                       + (400).to_bytes(4, "big") + b"\x08\x06\x00\x00\x00").decode()


class Resources(HTMLParser):
    """Every URL a page loads by itself, and the links a reader may follow."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.links: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value and (tag, name) in LOADS:
                self.loads.append(value)
            elif value and (tag, name) == ("a", "href"):
                self.links.append(value)


def is_remote(url: str) -> bool:
    return urlparse(url).scheme in ("http", "https") or url.startswith("//")


def executed_notebook() -> nbformat.NotebookNode:
    """An executed chapter in miniature: slides as dicts, a list, without outputs."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    stream = nbformat.v4.new_output("stream", name="stdout", text="answer 42\n")
    image = nbformat.v4.new_output("display_data", data={"image/png": PNG})
    plot = nbformat.v4.new_output("display_data", data={
        "application/vnd.plotly.v1+json": {"data": [{"y": [1, 3, 2]}], "layout": {}}})
    return nbformat.v4.new_notebook(cells=[
        md("# A chapter\n*A promise.*\n\n<!-- colab-badge --><a href='x'>badge</a>"),
        code("import os", metadata={"tags": ["remove-cell"]}),
        md("## Text the slides never show"),
        code("secret_source()", outputs=[stream, image], metadata={"slide": {
            "title": "A figure", "text": "It shows $$x^2$$ and one number."}}),
        code("plot()", outputs=[stream, plot], metadata={"slide": [
            {"title": "The equation", "text": "$$e^{i\\pi} = -1$$", "outputs": False},
            {"title": "The plot only", "outputs": [1]}]}),
        code("no_slide()", outputs=[stream]),
    ])


def test_slides_come_from_metadata() -> None:
    nb = deck(executed_notebook(), "09_demo")
    kinds = [c.metadata.slideshow.slide_type for c in nb.cells]
    assert kinds.count("slide") == nb.metadata.slides == 4
    sources = [c.source for c in nb.cells]
    assert sources[0].startswith("# A chapter\n*A promise.*")
    assert "badge" not in sources[0] and "../notebooks/09_demo.html" in sources[0]
    assert "## A figure\n\nIt shows $$x^2$$ and one number." in sources
    shown = "".join(sources)
    assert "secret" not in shown and "Text the slides" not in shown
    outputs = [c.outputs for c in nb.cells if c.cell_type == "code"]
    assert len(outputs) == 2, "outputs: false shows none"
    assert len(outputs[0]) == 2 and len(outputs[1]) == 1
    assert "text/html" in outputs[1][0].data, "plotly JSON gets HTML for plotly.js"


def test_slide_limits_are_enforced() -> None:
    nb = executed_notebook()
    nb.cells[3].metadata.slide["text"] = "word " * (MAX_WORDS + 1) + "$$a + b + c$$"
    with pytest.raises(ValueError, match="words"):
        deck(nb, "09_demo")
    nb.cells[3].metadata.slide = [{"title": f"slide {k}"} for k in range(MAX_SLIDES)]
    with pytest.raises(ValueError, match="slides"):
        deck(nb, "09_demo")


def test_synthetic_deck_is_offline(tmp_path: Path) -> None:
    executed = tmp_path / "executed"
    executed.mkdir()
    nbformat.write(executed_notebook(), executed / "09_demo.ipynb")
    out = tmp_path / "slides"
    assert main([str(out), "--executed", str(executed)]) == 0
    found = Resources((out / "09_demo.html").read_text())
    assert not [u for u in found.loads if is_remote(u)]
    assert "../_static/mathjax/tex-mml-chtml.js" in found.loads
    assert "../_static/plotly.min.js" in found.loads
    assert "../_static/favicon.png" in found.loads
    for url in found.loads:
        if not url.startswith(("data:", "../_static/")):
            assert (out / url).is_file(), f"the deck loads {url}, which is not there"
    # the speaker view: reveal.js's notes plugin, from the local copy, registered
    page = (out / "09_demo.html").read_text()
    assert "reveal.js/plugin/notes/notes.js" in found.loads
    assert "plugins: [RevealNotes]" in page
    assert 'href="09_demo.html"' in (out / "index.html").read_text()
    assert not missing_css_references(out), missing_css_references(out)


CSS_URL = re.compile(r"""@import\s+(?:url\()?["']?([^"')\s;]+)|url\(["']?([^"')]+)""")


def missing_css_references(folder: Path) -> list[str]:
    """Files that a style sheet under ``folder`` imports or loads and that are absent
    (a deck asks for them: each is a 404)."""
    missing = []
    for css in folder.rglob("*.css"):
        for imported, loaded in CSS_URL.findall(css.read_text(errors="replace")):
            url = urlparse(imported or loaded).path
            if not url or (imported or loaded).startswith(("data:", "#")):
                continue
            if is_remote(imported or loaded):
                missing.append(f"{css.name}: remote {imported or loaded}")
            elif not (css.parent / url).is_file():
                missing.append(f"{css.relative_to(folder)}: {imported or loaded}")
    return missing


# ------------------------------------------------------------------------ built decks


@pytest.fixture(scope="module")
def slides(site: Path) -> Path:
    folder = site / "slides"
    if not (folder / "index.html").is_file():
        pytest.fail(f"no slides in {folder}: `make book` writes them")
    return folder


def test_every_file_the_style_sheets_ask_for_is_there(slides: Path) -> None:
    """reveal.js's theme imports its fonts' CSS, which loads the fonts: all present."""
    assert (slides / "reveal.js" / "dist" / "theme" / "white.css").is_file()
    assert not missing_css_references(slides), missing_css_references(slides)


@pytest.mark.parametrize("page", STEMS)
def test_every_deck_has_speaker_notes(page: str, slides: Path) -> None:
    """Each built deck carries the minute plan as speaker notes and loads reveal.js's
    notes plugin from the site itself (the speaker view works offline)."""
    text = (slides / f"{page}.html").read_text()
    assert '<aside class="notes">' in text, f"{page}: no speaker notes"
    found = Resources(text)
    assert "reveal.js/plugin/notes/notes.js" in found.loads
    assert (slides / "reveal.js" / "plugin" / "notes" / "notes.js").is_file()
    assert "plugins: [RevealNotes]" in text


@pytest.mark.parametrize("page", ["index", *STEMS])
def test_page_loads_nothing_remote(page: str, slides: Path) -> None:
    path = slides / f"{page}.html"
    assert path.is_file(), f"no {path.name}: run `make book`"
    found = Resources(path.read_text())
    assert not [u for u in found.loads if is_remote(u)], f"{path.name} loads remotely"
    for url in found.loads + found.links:
        if url.startswith(("data:", "#", "mailto:")) or is_remote(url):
            continue
        target = (slides / urlparse(url).path).resolve()
        assert target.is_file(), f"{path.name} refers to {url}, not in the site"
    if page == "index":
        for stem in STEMS:
            assert f"{stem}.html" in found.links, f"index.html does not list {stem}"


PROBE = """() => {
  const out = [];
  for (let k = 0; k < Reveal.getTotalSlides(); k++) {
    Reveal.slide(k);
    const s = Reveal.getCurrentSlide();
    const text = Array.from(s.querySelectorAll('.jp-MarkdownCell'))
      .filter(cell => !cell.closest('aside.notes')).map(cell => {
      const c = cell.cloneNode(true);
      c.querySelectorAll('h1, h2, mjx-container').forEach(e => e.remove());
      return c.textContent; }).join(' ');
    out.push({k, title: (s.querySelector('h1, h2') || {}).textContent || '',
      words: (text.match(/\\w+/g) || []).length,
      height: s.scrollHeight,
      images: Array.from(s.querySelectorAll('img')).filter(
        i => !(i.complete && i.naturalWidth > 0)).length});
  }
  const notes = Array.from(document.querySelectorAll('aside.notes'));
  return {slides: out, height: Reveal.getConfig().height,
    notes: notes.length,
    notesShown: notes.filter(n => n.offsetParent !== null).length,
    notesPlugin: Reveal.hasPlugin('notes'),
    math: document.querySelectorAll('mjx-container').length,
    mathErrors: document.querySelectorAll('mjx-merror').length,
    rawTex: /\\$\\$/.test(document.querySelector('.slides').innerText),
    plotlyEmpty: Array.from(document.querySelectorAll('.plotly-graph-div'))
      .filter(d => !d.querySelector('.main-svg')).length,
    noKeyboard: Array.from(document.querySelectorAll('.plotly-graph-div'))
      .filter(d => d.layout && ((d.layout.sliders || []).length
                                || (d.layout.updatemenus || []).length))
      .filter(d => !document.querySelector('#' + d.id + '-slider-0, #' + d.id
                                           + '-menu-0')).length};
}"""


@pytest.mark.parametrize("page", ["index", *STEMS])
def test_deck_in_browser(page: str, slides: Path, site: Path) -> None:
    from bookkit.site.browser import axe_audit, browser, serve, wait_for_math

    problems: list[str] = []
    with serve(site) as base, browser() as chromium:
        tab = chromium.new_page(viewport={"width": 1280, "height": 800})
        host = urlparse(base).netloc

        def route(route) -> None:
            url = route.request.url
            parts = urlparse(url)
            if parts.scheme in ("http", "https") and parts.netloc != host:
                problems.append(f"external request {url}")
                return route.abort()
            return route.continue_()

        tab.route("**/*", route)
        tab.on("console", lambda m: problems.append(f"console: {m.text}")
               if m.type == "error" else None)
        tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        tab.on("requestfailed", lambda r: problems.append(f"failed: {r.url}"))
        tab.on("response", lambda r: problems.append(f"{r.status} {r.url}")
               if r.status >= 400 else None)
        tab.goto(f"{base}slides/{page}.html", wait_until="load")
        tab.wait_for_load_state("networkidle")
        if page != "index":
            wait_for_math(tab)
        serious = [f"{v['id']} ({v['impact']}): {v['nodes'][:3]}"
                   for v in axe_audit(tab) if v["impact"] in ("serious", "critical")]
        if page == "index":
            assert not problems, f"slides/index.html: {problems}"
            assert not serious, f"slides/index.html, axe-core: {serious}"
            return
        probe = tab.evaluate(PROBE)
    assert not problems, f"{page} slides: {problems}"
    assert not serious, f"{page} slides, axe-core: {serious}"
    found = probe["slides"]
    assert 5 <= len(found) <= MAX_SLIDES, f"{page}: {len(found)} slides"
    assert probe["math"] > 0 and probe["mathErrors"] == 0 and not probe["rawTex"], \
        f"{page}: math not typeset ({probe})"
    assert probe["plotlyEmpty"] == 0, f"{page}: plotly figures not drawn"
    assert probe["notes"] > 0 and probe["notesPlugin"], f"{page}: no speaker notes"
    assert probe["notesShown"] == 0, f"{page}: speaker notes shown on a slide"
    assert probe["noKeyboard"] == 0, f"{page}: figure controls without keyboard ones"
    for s in found:
        where = f"{page} slide {s['k'] + 1} ({s['title']!r})"
        assert s["images"] == 0, f"{where}: an image did not load"
        assert s["words"] <= MAX_WORDS, f"{where}: {s['words']} words besides the title"
        assert s["height"] <= probe["height"], f"{where}: taller than the screen"


# ------------------------------------------------------- Part IV: the schedule's slides

SCHEDULE_SAMPLE = """\
### Module: Chapter 8 — A sample

| minutes | activity | run live |
| --- | --- | --- |
| 0–10 | On the board: the three hooks. | Ch. 8, *One model* |
| 10–25 | Predictions: which code solves *copy*? Students vote. | Ch. 8, *Tasks* |
| 25–40 | Predict the ranking, then run. | Ch. 9, *Tiny model* |
| 40–50 | Which surprised whom? (Usually: RoPE fails.) | |

**Discuss.**

- Why does RoPE fail at $4L$? (New offsets; a softmax over
  more keys.)
- Where does NoPE's position come from?

**Hand in.**

- {ref}`Exercise 8.1 <ex-08-a>` (derivation, about 20 minutes): text.
- from {ref}`Exercise 8.2 <ex-08-b>` to
  {ref}`Exercise 8.4 <ex-08-d>` (code, about 20–25 minutes each).

Optional: {ref}`Exercise 9.1 <ex-09-a>`.
"""


def test_session_slides_come_from_the_schedule() -> None:
    titles = {"8.1": "One", "8.2": "Two", "8.3": "Three", "8.4": "Four", "9.1": "Nine"}
    found = session_slides(SCHEDULE_SAMPLE, titles)
    eight = [(s["title"], s["text"]) for s in found[8]]
    assert ("Vote (10–25 min)",
            "Predictions: which code solves *copy*? Students vote.") in eight
    assert ("Question (40–50 min)", "Which surprised whom?") in eight, \
        "an answer in parentheses after a question stays off the slide"
    assert not any("hooks" in text for _, text in eight), "no prompt, no slide"
    assert ("Discuss", "Why does RoPE fail at $4L$?") in eight
    assert ("Discuss", "Where does NoPE's position come from?") in eight
    exercises = "\n".join(t for title, t in eight if title == "Exercises to hand in")
    assert exercises.splitlines() == [
        "- Exercise 8.1 · One (derivation, 20 min)",
        "- Exercise 8.2 · Two (code, 20–25 min)",
        "- Exercise 8.3 · Three (code, 20–25 min)",
        "- Exercise 8.4 · Four (code, 20–25 min)"]
    nine = [(s["title"], s["text"]) for s in found[9]]
    assert ("Predict first (25–40 min)", "Predict the ranking, then run.") in nine
    assert ("Exercises to hand in", "- Exercise 9.1 · Nine (optional)") in nine


def test_every_session_deck_gets_its_session_slides() -> None:
    """From the real schedule: the deck of each chapter with a module of its own
    (``"session": true``, the registry) gets a prompt to answer before a cell runs (or
    its module's discussion) and the exercises to hand in; the other decks get none; no
    slide is over the word limit and no deck over the slide limit."""
    from bookkit.editions.slides import exercise_titles, specs
    from bookkit.notebook import read
    from bookkit.paths import SCHEDULE

    found = session_slides(SCHEDULE.read_text(), exercise_titles())
    for chapter in chapters():
        path, extra = chapter.path, found.get(chapter.number, [])
        if not chapter.session:
            assert not extra, f"{path.stem}: session slides without a session"
            continue
        titles = [s["title"] for s in extra]
        assert "Exercises to hand in" in titles, f"{path.stem}: no exercises slide"
        assert any(t.startswith(("Vote", "Predict", "Question", "Discuss"))
                   for t in titles), f"{path.stem}: no prediction or discussion slide"
        assert all(words(s["text"]) <= MAX_WORDS for s in extra)
        own = 1 + sum(len(specs(c)) for c in read(path).cells)
        assert own + len(extra) <= MAX_SLIDES, f"{path.stem}: {own + len(extra)} slides"
    assert sum(t["title"] == "Vote (10–25 min)" for t in found[8]) == 1
    assert sum(t["title"] == "Discuss" for t in found[8]) == 3


def test_extra_slides_are_held_to_the_word_limit() -> None:
    nb = executed_notebook()
    nb.cells[3].metadata.slide["text"] = "short"
    made = deck(nb, "09_demo", [{"title": "Discuss", "text": "Why?"}])
    assert made.cells[-1].source == "## Discuss\n\nWhy?"
    with pytest.raises(ValueError, match="schedule"):
        deck(nb, "09_demo", [{"title": "Discuss", "text": "word " * (MAX_WORDS + 1)}])


# ------------------------------------------------------------ legible figures and logs


def matplotlib_png(figsize: tuple[float, float]) -> str:
    """A figure as the book's kernels make it (100 dpi, tight bounding box), base64."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize, dpi=100)
    ax.plot([0, 1], [1, 0], label="a line")
    ax.legend()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


@pytest.mark.parametrize("figsize, words", [((7, 4), 0), ((7, 4), MAX_WORDS),
                                            ((12, 4), 20), ((5, 4.5), MAX_WORDS)])
def test_figures_show_ten_point_text_at_14_px(figsize, words) -> None:
    """At 1280 x 720, reveal.js scales the 1280 x 760 deck by 720/760; a figure drawn
    at the width make_slides gives it shows matplotlib's 10-pt tick and legend text at
    14 px or more, and still fits under the title and text. (The book's figures are
    7 x 4 inches by default; a figure taller than about 5.5 inches cannot meet both,
    and make_slides says so: test_too_tall_a_figure_is_reported.)"""
    from bookkit.editions.slides import figure_width, png_size

    width, height, dpi = png_size(matplotlib_png(figsize))
    assert abs(dpi - 100) < 0.01, "matplotlib records its dpi in the PNG"
    text = " ".join(["word"] * words)
    drawn, text_px = figure_width(width, height, dpi, text)
    # independently: 10 pt = 10/72 inch = 13.9 px at 100 dpi, times the zoom, times
    # the deck's scale on the screen
    zoom = drawn / width
    assert 10 / 72 * 100 * zoom * 720 / 760 == pytest.approx(text_px, rel=1e-2)
    assert text_px >= 14
    lines = -(-len(text) // 70)
    assert drawn <= 1240 and height * zoom <= 570 - 40 * min(4, lines) + 1


def test_too_tall_a_figure_is_reported(capsys) -> None:
    from bookkit.editions.slides import sized

    output = nbformat.v4.new_output("display_data",
                                    data={"image/png": matplotlib_png((4, 7))})
    sized([output], "some words of text", "08_demo, 'A tall one'")
    assert "08_demo, 'A tall one': 10-pt tick or legend text is" in (
        capsys.readouterr().err)


def test_deck_gives_figures_their_width_and_keeps_log_words_whole(tmp_path) -> None:
    nb = executed_notebook()
    nb.cells[3].outputs[1] = nbformat.v4.new_output(
        "display_data", data={"image/png": matplotlib_png((7, 4))})
    executed = tmp_path / "executed"
    executed.mkdir()
    nbformat.write(nb, executed / "08_demo.ipynb")
    out = tmp_path / "slides"
    assert main([str(out), "--executed", str(executed)]) == 0
    page = (out / "08_demo.html").read_text()
    assert re.search(r'<img[^>]*\swidth="?\d+', page), "the figure has a width"
    style = re.search(r"\.reveal \.slides \.jp-OutputArea-output pre \{[^}]*\}",
                      page).group(0)
    assert "word-break: normal" in style and "overflow-wrap: normal" in style
    # the Part IV deck carries the schedule's slides too
    assert "Exercises to hand in" in page and "Vote (10–25 min)" in page


def test_smaller_tick_or_legend_text_is_taken_into_account(capsys) -> None:
    from bookkit.editions.slides import sized, tick_and_legend_points

    source = ('ax.plot(x)\nax.legend(loc="upper center", fontsize=9)\n'
              'ax.annotate("a", fontsize=6)')
    assert tick_and_legend_points(source) == 9  # the annotation is neither
    assert tick_and_legend_points("ax.tick_params(labelsize='small')") == 8.33
    assert tick_and_legend_points("ax.plot(x)") == 10
    output = nbformat.v4.new_output("display_data",
                                    data={"image/png": matplotlib_png((7, 4.5))})
    sized([output], " ".join(["word"] * MAX_WORDS), "02_demo, 'Legend'", 9.0)
    # 9 pt at 100 dpi: a 4.5-inch figure gets about 410 px under four lines of text
    assert "02_demo, 'Legend': 9-pt tick or legend text is" in capsys.readouterr().err


# --------------------------------------------------------------- speaker notes

PLAN_SAMPLE = """\
## Session 1: A sample (Chapters 8 and 9)

| minutes | activity | run live |
| --- | --- | --- |
| 0–10 | Predict, then run. | Ch. 8, *A figure section*: the first cell |
| 10–20 | On the board: {ref}`Exercise 8.1 <ex-08-a>`. | |
| 20–30 | The second chapter. | Ch. 9, {ref}`sec-09-x` |

## Shorter and longer versions

| 0–10 | Not a session's row. | Ch. 8 |

### Module: Chapter 9 — A module (one 90-minute session)

| 0–15 | A module's row. | |
"""


def test_minute_plan_rows_go_to_the_chapter_they_run() -> None:
    plan = minute_plan(PLAN_SAMPLE)
    assert [r.minutes for r in plan[8]] == ["0–10", "10–20"]
    assert [r.minutes for r in plan[9]] == ["20–30", "0–15"]
    first, second = plan[8]
    assert first.session == "Session 1: A sample"
    assert first.sections == ("A figure section",)
    assert second.activity == "On the board: Exercise 8.1."
    assert plan[9][0].sections == ("sec-09-x",)
    assert plan[9][1].session == "Module: Chapter 9 — A module"
    assert not any("Not a session" in r.activity for rows in plan.values()
                   for r in rows)


def test_notes_go_on_the_title_slide_and_the_matching_slide() -> None:
    nb = executed_notebook()
    nb.cells.insert(3, nbformat.v4.new_markdown_cell("## A figure section, in full"))
    rows = [PlanRow("Session 1: A sample", "0–10", "Predict, then run.", "Ch. 8",
                    ("A figure section",)),
            PlanRow("Session 1: A sample", "10–20", "Discuss.", "", ())]
    made = deck(nb, "08_demo", plan=rows)
    kinds = [c.metadata.slideshow.slide_type for c in made.cells]
    assert kinds.count("slide") == made.metadata.slides == 4, "notes are no slides"
    notes = [(k, c.source) for k, c in enumerate(made.cells) if kinds[k] == "notes"]
    assert notes[0][0] == 1 and "Session 1: A sample" in notes[0][1]
    assert "**0–10 min.** Predict" in notes[0][1] and "**10–20 min.**" in notes[0][1]
    k, text = notes[1]
    assert made.cells[k - 2].source.startswith("## A figure"), "after the figure slide"
    assert text == "- **0–10 min.** Predict, then run. *Run:* Ch. 8"
    assert len(notes) == 2, "a row goes to the first matching slide only"


def test_every_chapter_has_speaker_notes_from_the_schedule() -> None:
    """From the real schedule: every chapter of the core module and of Part IV has
    minute plan rows, and its deck gets them as notes; a chapter without a plan gets
    its objectives (every deck has notes)."""
    from bookkit.paths import SCHEDULE

    plan = minute_plan(SCHEDULE.read_text())
    assert set(range(1, 13)) <= set(plan), "Chapters 1-12 have a minute plan"
    for chapter in chapters():
        rows = plan.get(chapter.number, [])
        made = deck(read_notebook(chapter.path), chapter.path.stem, plan=rows)
        notes = [c for c in made.cells
                 if c.metadata.slideshow.slide_type == "notes"]
        assert notes, f"{chapter.path.stem}: no speaker notes"
        assert ("min.**" if rows else "objectives") in notes[0].source


def test_a_chapter_without_a_plan_gets_its_objectives_as_notes() -> None:
    nb = executed_notebook()
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(
        "**Learning objectives.** After this chapter you can\n\n1. rotate a pair."))
    notes = [c.source for c in deck(nb, "13_demo").cells
             if c.metadata.slideshow.slide_type == "notes"]
    assert notes == ["No minute plan in the schedule for this chapter yet. **Learning "
                     "objectives.** After this chapter you can 1. rotate a pair."]
