"""Slides: one reveal.js deck per chapter, by nbconvert from the executed notebooks.

    python -m bookkit.editions.slides OUTDIR [--executed DIR]   (``make book`` runs it)

The author picks the slides in code-cell metadata (CONTRIBUTING.md, "Slides"):
``"slide": {"title": ..., "text": ..., "outputs": ...}`` or a list of such objects.
Each becomes a slide with the title, the text (at most 40 words of Markdown, math
allowed) and the cell's executed outputs (``"outputs": false`` for none, a list of
indices for some); a title slide comes first. This file only turns that metadata into
nbconvert's ``slideshow`` metadata and points nbconvert's reveal.js template at local
files: reveal.js (with its theme's fonts) from the PyPI package sphinx-revealjs, MathJax
3, plotly.js and the figures' keyboard controls from the site's ``_static/`` (no CDN:
the decks work offline).

The decks of the chapters with a module of their own (``"session": true``,
``bookkit.chapters``) also get the slides their module's minute plan in
``book/course/schedule.md`` uses, generated from that page (``session_slides``): a
slide for each in-class prompt that asks students to predict, vote, guess or answer
before the cell runs, one for each discussion question, and the exercises to hand in
with their kind and time. Answers that the page gives in parentheses after a question
stay off the slides.

**Speaker notes** (reveal.js's notes plugin, loaded from the local copy: press S for the
speaker view). Every chapter's minute plan rows in the schedule (``minute_plan``: the
sessions of the core module and the Part IV modules, each row given to the chapter its
"run live" column names) become notes: all of them, with the session's name, on the
title slide, and each row also on the first slide of the section it names (its italic
section titles or ``{ref}`` labels), where the instructor needs it. A chapter the
schedule has no plan for yet gets its learning objectives as notes. They are nbconvert's
``slide_type: "notes"`` cells, which the slides themselves never show.
"""

from __future__ import annotations

import argparse
import base64
import html
import re
import shutil
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

import jinja2
import nbformat
import plotly.io as pio
import sphinx_revealjs
from nbconvert import SlidesExporter

from bookkit.chapters import chapters
from bookkit.notebook import NOTEBOOK_NAME, read
from bookkit.paths import EXECUTED_NOTEBOOKS, SCHEDULE

REVEAL = Path(sphinx_revealjs.__file__).parent / "_static" / "revealjs"
REVEAL_PARTS = ["dist/reveal.css", "dist/reveal.js", "dist/theme/white.css",
                "dist/theme/fonts/source-sans-pro", "plugin/notes/notes.js"]
MAX_SLIDES, MAX_WORDS = 25, 40
# The deck is laid out at 1280 x 760 and scaled to the screen: 720 / 760 at 1280 x 720.
DECK_WIDTH, DECK_HEIGHT, SCREEN_HEIGHT = 1280, 760, 720
FIGURE_WIDTH = 1240  # the widest a figure may be drawn on a slide (deck pixels)
MIN_TEXT_PX, TEXT_POINTS = 14, 10  # matplotlib's tick and legend text: 10 pt
MAX_ZOOM = 1.5
PLOTLY = "application/vnd.plotly.v1+json"

TEMPLATE = r"""{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}
<link rel="icon" href="../_static/favicon.png">
{% if resources.plotly %}<script src="../_static/plotly.min.js"></script>
<script src="../_static/plotly-keyboard.js"></script>{% endif %}
{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}
<script>window.MathJax = {
  tex: {inlineMath: [["$", "$"]], displayMath: [["$$", "$$"]], processEscapes: true},
  options: {skipHtmlTags: ["script", "style", "pre", "code"]}};</script>
<script defer src="../_static/mathjax/tex-mml-chtml.js"></script>
<style>
.reveal .slides { text-align: left; }
.reveal .slides .jp-RenderedHTMLCommon { font-size: 30px; }
.reveal .slides h1, .reveal .slides h2 { text-transform: none; margin-bottom: 0.4em; }
.reveal .slides h1 { font-size: 60px; } .reveal .slides h2 { font-size: 44px; }
/* Figures get an explicit width from make_slides.py (figure_width): large enough for
   10-point text to be 14 px or more on a 1280 x 720 screen, small enough to fit. */
.reveal .slides .jp-OutputArea-output img {
  max-width: 100%; height: auto; display: block; margin: 0 auto; }
.reveal .slides .jp-OutputArea-output img:not([width]) { max-height: 410px; }
/* Logs wrap between words only (JupyterLab's own style breaks anywhere). */
.reveal .slides .jp-OutputArea-output pre { font-size: 20px; line-height: 1.3;
  white-space: pre-wrap; word-break: normal; overflow-wrap: normal; }
/* WCAG contrast for the slide number (reveal.js draws white on 40 % black). */
.reveal .slide-number { background-color: #222; color: #fff; }
/* A figure's keyboard controls (plotly-keyboard.js): shown at the foot of the slide
   while one of them has the focus, taking no room otherwise. */
.reveal div.plotly-keyboard { position: absolute; left: 0; bottom: 0; z-index: 10;
  display: flex; gap: 1.5rem; font-size: 18px; padding: 4px 8px; background: #fff;
  opacity: 0; }
.reveal div.plotly-keyboard:focus-within { opacity: 1; }
</style>
{%- endblock html_head_js_mathjax -%}
{% block footer_js %}
<script src="reveal.js/dist/reveal.js"></script>
<script src="reveal.js/plugin/notes/notes.js"></script>
<script>
// S opens the speaker view: the minute plan's notes (RevealNotes, a local file)
Reveal.initialize({hash: true, center: false, transition: "none", slideNumber: "c/t",
                   width: 1280, height: 760, plugins: [RevealNotes]});
// plotly draws figures on hidden slides at a default size: resize on arrival
Reveal.on("slidechanged", (event) => event.currentSlide
  .querySelectorAll(".plotly-graph-div").forEach((d) => window.Plotly.Plots.resize(d)));
</script>
{% endblock footer_js %}
"""
INDEX = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Slides</title>
<link rel="icon" href="../_static/favicon.png">
<style>body {{ font-family: sans-serif; max-width: 44em; margin: 2em auto; }}</style>
</head><body><main><h1>Slides</h1>
<p>One deck per chapter, with the figures and numbers of the executed notebooks. Keys:
&rarr; next, Esc overview, F full screen; add <code>?print-pdf</code> to a deck's
address to print it.</p>
<ul>
{items}
</ul></main></body></html>
"""


def specs(cell: nbformat.NotebookNode) -> list[dict]:
    """The slides a code cell asks for (a dict or a list of dicts under ``slide``)."""
    found = cell.metadata.get("slide", []) if cell.cell_type == "code" else []
    return [found] if isinstance(found, dict) else list(found)


def words(text: str) -> int:
    """Words of slide text, math not counted."""
    prose = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " ", text, flags=re.DOTALL)
    return len(re.findall(r"\w+", prose))


def shown(outputs: list, choice: bool | list[int]) -> list:
    """The outputs a slide shows; plotly JSON alone gets HTML that plotly.js draws."""
    chosen = [o for k, o in enumerate(outputs) if choice is True or (
        choice is not False and k in choice)]
    for data in (o.get("data", {}) for o in chosen):
        if PLOTLY in data and "text/html" not in data:
            data["text/html"] = pio.to_html(data[PLOTLY], full_html=False,
                                            include_plotlyjs=False)
    return chosen


def png_size(data: str) -> tuple[int, int, float]:
    """(width, height, dots per inch) of a base64 PNG; 72 dpi when it does not say
    (matplotlib writes its dpi into the pHYs chunk)."""
    raw = base64.b64decode(data)
    if raw[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG image")
    width, height = struct.unpack(">II", raw[16:24])
    dpi, at = 72.0, 8
    while at + 8 <= len(raw):
        length, kind = struct.unpack(">I4s", raw[at : at + 8])
        if kind == b"pHYs":
            x, _, unit = struct.unpack(">IIB", raw[at + 8 : at + 17])
            dpi = x * 0.0254 if unit == 1 else dpi
            break
        if kind == b"IDAT":
            break
        at += 12 + length
    return width, height, dpi


def tick_and_legend_points(source: str) -> float:
    """The smallest font size (points) a figure cell asks for its ticks or legend:
    matplotlib's default 10 unless a line about ticks or a legend sets a smaller
    fontsize or labelsize."""
    named = {"xx-small": 5.79, "x-small": 6.94, "small": 8.33}
    sizes = [float(TEXT_POINTS)]
    for line in source.splitlines():
        if not re.search(r"legend|tick", line):
            continue
        pattern = r"(?:fontsize|labelsize)\s*=\s*([\d.]+|[\"'][a-z-]+[\"'])"
        for value in re.findall(pattern, line):
            value = value.strip("\"'")
            sizes.append(float(value) if value[0].isdigit()
                         else named.get(value, TEXT_POINTS))
    return min(sizes)


def figure_width(width: int, height: int, dpi: float, text: str,
                 points: float = TEXT_POINTS) -> tuple[int, float]:
    """The width (deck pixels) to draw a figure at, and the size in screen pixels at
    1280 x 720 of its text of ``points`` points: as large as fits below the slide's
    title and text, at most MAX_ZOOM times the figure's own size."""
    lines = -(-len(text) // 70) if text else 0  # about 70 characters a line at 30 px
    room = 410 + 40 * (4 - min(lines, 4))  # 410 px under four lines of text
    zoom = min(FIGURE_WIDTH / width, room / height, MAX_ZOOM)
    text_px = points / 72 * dpi * zoom * SCREEN_HEIGHT / DECK_HEIGHT
    return round(width * zoom), text_px


def sized(outputs: list, text: str, where: str, points: float = TEXT_POINTS) -> list:
    """Give every PNG output its slide width; warn where the figure's tick and legend
    text (``points``) stays under 14 px at 1280 x 720."""
    for output in outputs:
        data = output.get("data", {}).get("image/png")
        if not data:
            continue
        width, text_px = figure_width(*png_size(data), text, points)
        output.setdefault("metadata", {})["image/png"] = {"width": width}
        if text_px < MIN_TEXT_PX:
            print(f"slides: {where}: {points:g}-pt tick or legend text is "
                  f"{text_px:.1f} px at 1280 x 720 (make the figure smaller or the "
                  f"text at least {TEXT_POINTS} pt)", file=sys.stderr)
    return outputs


def slide(source: str, kind: str = "slide", **fields) -> nbformat.NotebookNode:
    """A cell that starts a slide (``kind="slide"``) or continues it (``"-"``)."""
    v4 = nbformat.v4
    make = v4.new_code_cell if "outputs" in fields else v4.new_markdown_cell
    return make(source, metadata={"slideshow": {"slide_type": kind}}, **fields)


def plain(text: str) -> str:
    """Schedule Markdown as slide text: roles reduced to their text, answers given in
    parentheses after a question dropped, one line."""
    text = re.sub(r"\{(?:ref|doc)\}`([^`<]*?)\s*<[^>]*>`", r"\1", text)
    text = re.sub(r"\{(?:ref|doc)\}`([^`]*)`", r"\1", text)
    text = re.sub(r"\?\s*\((?:[^()]|\([^()]*\))*\)", "?", text)  # an answer after a ?
    return " ".join(text.split())


def exercise_titles() -> dict[str, str]:
    """'8.1' -> 'The causal mask can count', from every chapter's exercise titles."""
    titles = {}
    for chapter in chapters():
        for cell in read(chapter.path).cells:
            if cell.cell_type == "markdown":
                titles.update(re.findall(
                    r"\{exercise(?:-start)?\} (\d+\.\d+) · ([^\n]*)", cell.source))
    return titles


REF = r"\{ref\}`Exercise (\d+)\.(\d+) <[^>]*>`"


def exercise_refs(text: str) -> list[tuple[str, str, str]]:
    """(chapter, k, note) of every exercise a hand-in names, with the note in
    parentheses after it; "from Exercise N.a to Exercise N.b" names a..b."""
    found = []
    pattern = rf"(?:from\s+{REF}\s+to\s+)?{REF}(?:\s*\(([^)]*)\))?"
    for match in re.finditer(pattern, text):
        first_n, first_k, n, k, note = match.groups()
        start = int(first_k) if first_n == n else int(k)
        found += [(n, str(j), note or "") for j in range(start, int(k) + 1)]
    return found


def short(note: str) -> str:
    """'code, about 20 minutes' -> 'code, 20 min'."""
    note = plain(note.split(";")[0])
    return re.sub(r"about (\d+(?:–\d+)?) minutes(?: each)?", r"\1 min", note)


def session_slides(schedule: str, titles: dict[str, str]) -> dict[int, list[dict]]:
    """Slide specs (title, text) for each chapter with a module of its own in the
    schedule (``"session": true`` in its metadata, ``bookkit.chapters``): the prompts
    of the minute plan, the discussion questions, the exercises."""
    found: dict[int, list[dict]] = {c.number: [] for c in chapters() if c.session}
    for module in re.split(r"^(?=### Module:)", schedule, flags=re.M)[1:]:
        heading = module.splitlines()[0]
        numbers = [int(n) for n in re.findall(r"\b(\d+)\b", heading.split("—")[0])]
        home = numbers[0]
        for start, end, activity, live in re.findall(
                r"^\| (\d+)–(\d+) \| ([^|]*?) \|([^|]*)\|$", module, re.M):
            lower = activity.lower()
            if not re.search(r"predict|vote|guess|\bask\b|\?", lower):
                continue
            kind = ("Vote" if "vote" in lower else "Predict first"
                    if re.search(r"\bpredict\b|\bguess", lower) else "Question")
            chapter = re.search(r"Ch\. (\d+)", live)
            found[int(chapter.group(1)) if chapter else home].append(
                {"title": f"{kind} ({start}–{end} min)", "text": plain(activity)})
        discuss = re.search(r"\*\*Discuss\.\*\*\n\n((?:- .*\n(?:  .*\n)*)+)", module)
        for question in re.findall(r"^- (.*(?:\n  .*)*)", discuss.group(1) if discuss
                                   else "", re.M):
            found[home].append({"title": "Discuss", "text": plain(question)})
        hand_in = re.search(r"\*\*Hand in\.\*\*(.*?)(?=\n### |\Z)", module, re.S)
        required, _, optional = (hand_in.group(1) if hand_in else "").partition(
            "Optional")
        by_chapter: dict[int, list[str]] = {}
        for text, optional_part in ((required, False), (optional, True)):
            for n, k, note in exercise_refs(text):
                kind = "optional" if optional_part else short(note)
                line = f"- Exercise {n}.{k} · {titles.get(f'{n}.{k}', '')}" + (
                    f" ({kind})" if kind else "")
                by_chapter.setdefault(int(n), []).append(line)
        for n, lines in by_chapter.items():
            chunk: list[str] = []
            for line in lines:  # as many exercises per slide as MAX_WORDS allows
                if chunk and words("\n".join(chunk + [line])) > MAX_WORDS:
                    found[n].append({"title": "Exercises to hand in",
                                     "text": "\n".join(chunk)})
                    chunk = []
                chunk.append(line)
            found[n].append({"title": "Exercises to hand in", "text": "\n".join(chunk)})
    return found


@dataclass(frozen=True)
class PlanRow:
    """One row of a minute plan in the schedule, as speaker notes read it."""

    session: str  # "Session 1: Why position?", "Module: Chapter 8 — Does ..."
    minutes: str  # "0–10"
    activity: str
    live: str  # the "run live" column
    sections: tuple[str, ...]  # the section titles and {ref} labels it names


PLAN_ROW = re.compile(r"^\| (\d+)–(\d+) \| ([^|]*?) \|([^|]*)\|$", re.M)


def note_text(text: str) -> str:
    """Schedule Markdown as note text: roles reduced to their text, one line (answers in
    parentheses kept: the notes are the instructor's)."""
    text = re.sub(r"\{(?:ref|doc)\}`([^`<]*?)\s*<[^>]*>`", r"\1", text)
    text = re.sub(r"\{(?:ref|doc)\}`([^`]*)`", r"\1", text)
    return " ".join(text.split())


def minute_plan(schedule: str) -> dict[int, list[PlanRow]]:
    """Each chapter's rows of the schedule's minute plans: the core sessions
    (``## Session k: ... (Chapters a and b)``) and the Part IV modules (``### Module:
    Chapter N — ...``). A row belongs to the chapter its "run live" column names first
    (``Ch. 6, ...``), else to the chapter of the row before it (the session's first
    chapter for its first row)."""
    found: dict[int, list[PlanRow]] = {}
    for part in re.split(r"^(?=## Session \d|### Module:)", schedule, flags=re.M)[1:]:
        heading, _, body = part.partition("\n")
        body = re.split(r"^#{2,3} ", body, flags=re.M)[0]  # up to the next section
        title = heading.lstrip("# ").strip()
        if title.startswith("Session"):
            numbers = re.search(r"\(Chapters? ([^)]*)\)\s*$", title)
            title = title[: numbers.start()].strip() if numbers else title
        else:
            numbers = re.match(r"Module: Chapters? ([^—]*)", title)
            title = re.sub(r"\s*\(one 90-minute session\)$", "", title)
        chapters = [int(n) for n in re.findall(r"\d+", numbers[1])] if numbers else []
        chapter = chapters[0] if chapters else 0
        for start, end, activity, live in PLAN_ROW.findall(body):
            named = re.search(r"Ch\. (\d+)", live)
            chapter = int(named[1]) if named else chapter
            sections = tuple(re.findall(r"\*([^*]+)\*", live)
                             + re.findall(r"\{ref\}`([^`<]+)`", live))
            found.setdefault(chapter, []).append(PlanRow(
                title, f"{start}–{end}", note_text(activity), note_text(live),
                sections))
    return found


def row_note(row: PlanRow) -> str:
    """One row as a line of speaker notes."""
    live = f" *Run:* {row.live}" if row.live else ""
    return f"- **{row.minutes} min.** {row.activity}{live}"


def _key(text: str) -> str:
    """A section title compared loosely: lower case, letters and digits only."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def section_of(cell: nbformat.NotebookNode, current: list[str]) -> list[str]:
    """The keys of the section a markdown cell opens (its ``##``/``###`` heading and
    the labels before it), or ``current`` if it opens none."""
    labels = re.findall(r"^\(([\w:.-]+)\)=\s*$", cell.source, re.M)
    heading = re.search(r"^#{2,3} (.+)$", cell.source, re.M)
    if not heading:
        return current
    return [_key(heading[1]), *labels]


def matches(row: PlanRow, section: list[str]) -> bool:
    """Whether a plan row names the section (a title it begins, or one of its
    labels)."""
    if not section:
        return False
    title, labels = section[0], section[1:]
    return any(name in labels or (_key(name) and title.startswith(_key(name)))
               for name in row.sections)


def deck(nb: nbformat.NotebookNode, stem: str,
         extra: list[dict] | None = None,
         plan: list[PlanRow] | None = None) -> nbformat.NotebookNode:
    """The slide notebook: a title slide, the slides the code cells ask for, then the
    ``extra`` slides (title and text, from the schedule); the minute plan's ``plan``
    rows as speaker notes (on the title slide, and on the slides of the sections they
    name)."""
    heading, *rest = nb.cells[0].source.split("\n")
    promise = [ln for ln in rest if ln.strip() and not ln.lstrip().startswith("<")]
    link = f'<a href="../notebooks/{stem}.html">Read the chapter</a>'
    cells = [slide("\n".join([heading, *promise, "", link]))]
    plan = plan or []
    if plan:
        cells.append(slide(f"**{plan[0].session}**: this chapter's part of the "
                           "minute plan (the schedule page).\n\n"
                           + "\n".join(row_note(r) for r in plan), "notes"))
    else:  # a chapter the schedule has no minute plan for yet: its objectives
        objectives = next((c.source for c in nb.cells[1:4] if c.cell_type == "markdown"
                           and "objectives" in c.source.lower()), "")
        cells.append(slide("No minute plan in the schedule for this chapter yet. "
                           + note_text(objectives), "notes"))
    noted: set[PlanRow] = set()
    section: list[str] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            section = section_of(cell, section)
        rows = [r for r in plan if r not in noted and matches(r, section)]
        for k, spec in enumerate(specs(cell)):
            text = spec.get("text", "")
            if words(text) > MAX_WORDS:
                raise ValueError(f"{stem}: slide {spec['title']!r} has {words(text)} "
                                 f"words of text; keep it to {MAX_WORDS}")
            cells.append(slide(f"## {spec['title']}\n\n{text}"))
            outputs = sized(shown(cell.get("outputs", []), spec.get("outputs", True)),
                            text, f"{stem}, {spec['title']!r}",
                            tick_and_legend_points(cell.source))
            if outputs:
                cells.append(slide("", "-", outputs=outputs))
            if k == 0 and rows:
                cells.append(slide("\n".join(row_note(r) for r in rows), "notes"))
                noted.update(rows)
    for spec in extra or []:
        if words(spec["text"]) > MAX_WORDS:
            raise ValueError(f"{stem}: the schedule's slide {spec['title']!r} has "
                             f"{words(spec['text'])} words; shorten it in "
                             f"book/course/schedule.md to {MAX_WORDS}")
        cells.append(slide(f"## {spec['title']}\n\n{spec['text']}"))
    count = sum(c.metadata.slideshow.slide_type == "slide" for c in cells)
    if count > MAX_SLIDES:
        raise ValueError(f"{stem}: {count} slides; a deck has at most {MAX_SLIDES}")
    metadata = {"title": heading.lstrip("# "), "slides": count,
                "language_info": nb.metadata.get("language_info", {"name": "python"})}
    return nbformat.v4.new_notebook(cells=cells, metadata=metadata)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path, help="where to write: _build/html/slides")
    parser.add_argument(
        "--executed", type=Path, default=EXECUTED_NOTEBOOKS, help="notebooks"
    )
    args = parser.parse_args(argv)
    paths = sorted(p for p in args.executed.glob("*.ipynb")
                   if NOTEBOOK_NAME.match(p.name))
    if not paths:
        sys.exit(f"no executed notebooks in {args.executed}: run `make book` first")
    shutil.rmtree(args.outdir / "reveal.js", ignore_errors=True)
    for part in REVEAL_PARTS:
        source, target = REVEAL / part, args.outdir / "reveal.js" / part
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, target)
    exporter = SlidesExporter(
        extra_loaders=[jinja2.DictLoader({"book.j2": TEMPLATE})],
        template_file="book.j2",
        reveal_url_prefix="reveal.js", reveal_theme="white", exclude_input=True,
        exclude_input_prompt=True, exclude_output_prompt=True)
    items = []
    schedule = SCHEDULE.read_text(encoding="utf-8")
    extra = session_slides(schedule, exercise_titles())
    plans = minute_plan(schedule)
    for path in paths:
        number = int(path.stem[:2])
        slides = deck(read(path), path.stem, extra.get(number, []),
                      plans.get(number, []))
        plotly = any(PLOTLY in o.get("data", {}) or "plotly-graph-div" in str(o)
                     for c in slides.cells for o in c.get("outputs", []))
        resources = {"metadata": {"name": path.stem}, "plotly": plotly}
        body, _ = exporter.from_notebook_node(slides, resources)
        (args.outdir / f"{path.stem}.html").write_text(body, encoding="utf-8")
        title, count = html.escape(slides.metadata.title), slides.metadata.slides
        link = f'<a href="{path.stem}.html">{title}</a>'
        items.append(f"<li>{link} ({count} slides)</li>")
        print(f"slides: {args.outdir / path.stem}.html ({count} slides)")
    index = INDEX.format(items="\n".join(items))
    (args.outdir / "index.html").write_text(index, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
