"""Build one reveal.js slide deck per chapter from the executed notebooks; the decks work offline.

    python tools/make_slides.py OUTDIR [--executed DIR] [--static-prefix ../_static]

`make book` runs it after the site build as ``tools/make_slides.py _build/html/slides``, so the
decks sit next to the site and share its vendored JavaScript:

- reveal.js 5 is copied into ``OUTDIR/reveal.js/`` from the PyPI package ``sphinx-revealjs``
  (installed with ``--no-deps``; only its static files are used, Sphinx never loads it);
- MathJax 3 and plotly.js come from the site's ``_static/`` (vendored by tools/vendor_assets.py),
  referenced as ``../_static/...`` from ``OUTDIR``.

nbconvert's stock reveal template loads reveal.js, require.js, jQuery, mermaid and MathJax 2
from CDNs; the template below replaces every one of those references.

How a notebook becomes slides (decided automatically, nothing to tag by hand):

- the title cell is the first slide; every ``##`` heading starts a slide, every ``###`` a
  sub-slide (reveal.js's vertical direction); a section too long for one screen continues on
  further sub-slides, each headed "(continued)";
- cells tagged ``remove-cell`` (setup), ``solution`` and ``exercise-check`` are dropped;
  ``hide-input``/``remove-input`` cells show only their output; long code is cut to its first
  lines and long text output to its first lines, with a pointer to the notebook;
- MyST markup the plain Markdown renderer does not know is translated: citations become
  "Author et al. (year)", ``{doc}``/``{term}``/``{prf:ref}`` roles become text, labelled
  equations get numbers that ``{eq}`` references use, and theorem, exercise and admonition
  directives become quoted blocks with a bold heading.
"""
from __future__ import annotations

import argparse
import base64
import codecs
import copy
import html
import math
import re
import shutil
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import latexcodec  # noqa: F401  (registers the "ulatex" codec used for author names)
import nbformat
import yaml
from nbconvert import SlidesExporter
from pybtex.database import parse_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbtools import NOTEBOOK_NAME, ROOT, notebook_paths, read, tags  # noqa: E402

EXECUTED = ROOT / "_build" / "jupyter_execute" / "notebooks"
BIBFILE = ROOT / "book" / "references.bib"
REVEAL_PARTS = ["LICENSE", "dist/reveal.css", "dist/reveal.js", "dist/theme/white.css",
                "dist/theme/fonts/source-sans-pro", "plugin/notes/notes.js"]

DROP_CELL_TAGS = {"remove-cell", "solution", "exercise-check"}
HIDE_INPUT_TAGS = {"hide-input", "remove-input"}
DROP_OUTPUT_TAGS = {"remove-output"}

# Slide geometry (reveal.js scales the whole 1280 x 760 canvas to the window).
SLIDE_WIDTH, SLIDE_HEIGHT = 1280, 760
LINE_PX = 26            # pixels per estimated line (measured in Chromium on chapter 1's deck)
BUDGET = 27.0           # estimated lines per (sub-)slide before a section continues
SLACK = 4.0             # a short paragraph may overfill a slide this much rather than be alone
MAX_CODE_LINES = 12     # longer code cells are cut to this many lines
MAX_STREAM_LINES = 12   # longer printed output is cut to this many lines
CHARS_PER_LINE = 100    # for estimating how many lines a paragraph wraps to

PRF_KINDS = {"theorem", "lemma", "definition", "corollary", "proposition", "proof", "remark",
             "example", "property", "conjecture", "axiom", "criterion", "observation",
             "algorithm", "assumption", "notation"}
ADMONITIONS = {"note", "tip", "warning", "important", "caution", "attention", "hint", "danger",
               "error", "seealso", "admonition", "dropdown", "topic", "sidebar", "margin"}
DROPPED_DIRECTIVES = {"solution", "solution-start", "solution-end", "glossary", "bibliography",
                      "toctree", "tableofcontents", "raw", "code-cell"}

TEMPLATE = r"""{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}
<script src="{{ resources.book.static_prefix }}/plotly.min.js"></script>
{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}
<script>
window.MathJax = {
  tex: {inlineMath: [["$", "$"], ["\\(", "\\)"]], displayMath: [["$$", "$$"], ["\\[", "\\]"]],
        processEscapes: true, tags: "none"},
  options: {skipHtmlTags: ["script", "noscript", "style", "textarea", "pre", "code"]}
};
</script>
<script defer src="{{ resources.book.static_prefix }}/mathjax/tex-mml-chtml.js"></script>
{%- endblock html_head_js_mathjax -%}
{%- block html_head_css -%}
<style type="text/css">
{{ resources.book.css }}
</style>
{%- endblock html_head_css -%}
{% block footer_js %}
<script src="{{ resources.reveal.url_prefix }}/dist/reveal.js"></script>
<script src="{{ resources.reveal.url_prefix }}/plugin/notes/notes.js"></script>
<script>
Reveal.initialize({
  controls: true, progress: true, history: true, center: false, hash: true,
  transition: "{{ resources.reveal.transition }}", slideNumber: "c/t",
  width: {{ resources.reveal.width }}, height: {{ resources.reveal.height }}, margin: 0.03,
  plugins: [RevealNotes]
});
// Plotly draws hidden figures at a default size: redraw those on the slide just shown.
Reveal.on("slidechanged", function (event) {
  if (window.Plotly) {
    event.currentSlide.querySelectorAll(".plotly-graph-div").forEach(function (div) {
      window.Plotly.Plots.resize(div);
    });
  }
});
</script>
{% endblock footer_js %}
"""

SLIDE_CSS = """
.reveal .slides { text-align: left; }
.reveal .slides section { height: 100%; overflow-y: auto; overflow-x: hidden; }
.reveal .slides section > section { padding: 0 0.5em; }
.reveal .slides h1, .reveal .slides h2, .reveal .slides h3, .reveal .slides h4 {
  text-transform: none; }
.reveal .slides h1 { font-size: 1.9em; } .reveal .slides h2 { font-size: 1.45em; }
.reveal .slides h3 { font-size: 1.2em; } .reveal .slides h4 { font-size: 0.9em; color: #666; }
.reveal .slides blockquote { width: auto; margin: 0.5em 0; padding: 0.2em 0.8em;
  font-style: normal; background: #f4f6fa; border-left: 5px solid #3b6ea5; box-shadow: none; }
.reveal .slides blockquote p { display: block; }
.reveal .slides table { font-size: 0.8em; }
.reveal .slides .jp-OutputArea-output img { max-height: 560px; width: auto; }
.reveal .slides .back-link { font-size: 0.7em; }
"""

INDEX_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8" />
<title>Slides: {book_title}</title>
<style type="text/css">
body {{ font-family: "Source Sans Pro", Helvetica, Arial, sans-serif; max-width: 46em;
  margin: 2em auto; padding: 0 1em; line-height: 1.5; color: #222; }}
h1 {{ font-size: 1.8em; }} li {{ margin: 0.5em 0; }} .small {{ color: #555; font-size: 0.9em; }}
kbd {{ border: 1px solid #aaa; border-radius: 3px; padding: 0 0.3em; font-size: 0.9em; }}
</style>
</head>
<body>
<h1>Slides: {book_title}</h1>
<p>One deck per chapter, generated from the executed notebooks: every figure and printed
number is the one the chapter computes. The decks work offline.</p>
<ul>
{items}
</ul>
<p class="small">Keys: <kbd>&rarr;</kbd>/<kbd>Space</kbd> next, <kbd>&darr;</kbd> continue a
section, <kbd>Esc</kbd> overview, <kbd>S</kbd> speaker view, <kbd>F</kbd> full screen.
Print to PDF: open a deck with <code>?print-pdf</code> after its file name, then print from
the browser. Solutions and exercise checks are left out: they are in the chapters
(<a href="../book/course/instructor.html">instructor page</a>).</p>
</body>
</html>
"""


# --------------------------------------------------------------------------- citations


@dataclass
class Citations:
    """Author-year labels for the keys of the book's BibTeX file."""

    labels: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (authors, year)

    @classmethod
    def from_bibfile(cls, path: Path) -> "Citations":
        db = parse_file(str(path))
        labels = {}
        for key, entry in db.entries.items():
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            names = [_clean_latex(" ".join(p.last_names)) for p in people]
            if not names:
                authors = _clean_latex(entry.fields.get("organization", key))
            elif len(names) == 1:
                authors = names[0]
            elif len(names) == 2:
                authors = f"{names[0]} and {names[1]}"
            else:
                authors = f"{names[0]} et al."
            labels[key] = (authors, entry.fields.get("year", "n.d."))
        return cls(labels)

    def textual(self, key: str) -> str:
        authors, year = self.labels.get(key, (key, "?"))
        return f"{authors} ({year})"

    def parenthetical(self, key: str) -> str:
        authors, year = self.labels.get(key, (key, "?"))
        return f"{authors}, {year}"


def _clean_latex(text: str) -> str:
    """Decode LaTeX accents and drop protective braces: ``Sch{\\"u}tze`` -> ``Schütze``."""
    return codecs.decode(text, "ulatex").replace("{", "").replace("}", "")


# --------------------------------------------------------------------------- MyST -> Markdown

ROLE = re.compile(r"\{([a-zA-Z][\w:+-]*)\}`([^`]*)`")
FENCE_OPEN = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:+-]+)\}\s*(?P<arg>.*)$")
PLAIN_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
TARGET = re.compile(r"^\s*\(([\w:.-]+)\)=\s*$")
LABELLED_MATH_END = re.compile(r"^(?P<body>.*)\$\$\s*\((?P<label>[\w:.-]+)\)\s*$")
OPTION = re.compile(r"^\s*:([\w-]+):\s*(.*)$")


@dataclass
class MystContext:
    """What the converter needs to know about the whole notebook."""

    citations: Citations
    chapter: int | None = None                                 # NN of NN_topic, if known
    equations: dict[str, str] = field(default_factory=dict)   # label -> "3.2"
    blocks: dict[str, str] = field(default_factory=dict)      # label -> "Theorem 3.2"

    def number(self, k: int) -> str:
        """The k-th item of a kind, numbered as the site numbers it: "3.2" in Chapter 3."""
        return f"{self.chapter}.{k}" if self.chapter is not None else str(k)


def _split_target(text: str) -> tuple[str, str]:
    """``title <target>`` -> (title, target); ``target`` -> ("", target)."""
    match = re.match(r"^(.*?)\s*<([^>]+)>\s*$", text, re.S)
    return (match.group(1), match.group(2)) if match else ("", text)


def _doc_title(target: str) -> str:
    """Words for a ``{doc}`` link without a title: "Chapter 4", "the notation page"."""
    stem = target.rstrip("/").split("/")[-1].removesuffix(".ipynb").removesuffix(".md")
    chapter = re.match(r"^(\d\d)_", stem)
    if chapter:
        return f"Chapter {int(chapter.group(1))}"
    return "the " + stem.replace("_", " ") + " page"


def convert_role(name: str, content: str, ctx: MystContext) -> str:
    """Render one MyST role as plain Markdown text."""
    title, target = _split_target(content)
    if name.startswith("cite"):
        keys = [k.strip() for k in content.split(",") if k.strip()]
        if name in ("cite:p", "cite:ps", "cite"):
            return "(" + "; ".join(ctx.citations.parenthetical(k) for k in keys) + ")"
        return "; ".join(ctx.citations.textual(k) for k in keys)
    if name == "eq":
        number = ctx.equations.get(target)
        return f"({number})" if number else "the equation above"
    if name == "math":
        return f"${content}$"
    if name == "doc":
        return title or _doc_title(target)
    if name in ("prf:ref", "ref", "numref", "numref:ref"):
        return title or ctx.blocks.get(target, target.replace("-", " "))
    if name in ("code", "literal", "samp", "file", "kbd"):
        return f"`{content}`"
    if name in ("sup",):
        return f"<sup>{html.escape(content)}</sup>"
    if name in ("sub",):
        return f"<sub>{html.escape(content)}</sub>"
    return title or target  # term, download, abbr and anything unknown: keep the words


def convert_roles(line: str, ctx: MystContext) -> str:
    """Render every MyST role in one line of Markdown."""
    return ROLE.sub(lambda m: convert_role(m.group(1), m.group(2), ctx), line)


def _directive_heading(name: str, arg: str, options: dict[str, str], ctx: MystContext) -> str:
    """The bold lead-in of a translated directive: "**Theorem 3.2 (Title).**", "**Note.**"."""
    kind = name.split(":", 1)[1] if name.startswith("prf:") else name
    arg = convert_roles(arg, ctx)
    if kind == "proof":
        return "*Proof.*"
    if kind in PRF_KINDS or kind == "exercise":
        label = ctx.blocks.get(options.get("label", ""), kind.capitalize())
        return f"**{label}{f' ({arg})' if arg else ''}.**"
    if kind in ("admonition", "dropdown", "topic", "sidebar", "margin"):
        return f"**{arg}**" if arg else ""
    return f"**{kind.capitalize()}{f': {arg}' if arg else ''}.**"


def _parse_options(body: list[str]) -> tuple[dict[str, str], list[str]]:
    """Split a directive body into its ``:key: value`` options and the content."""
    options: dict[str, str] = {}
    rest = list(body)
    if rest and rest[0].strip() == "---":  # YAML block form
        end = next((j for j in range(1, len(rest)) if rest[j].strip() == "---"), None)
        if end is not None:
            for line in rest[1:end]:
                key, _, value = line.partition(":")
                options[key.strip()] = value.strip()
            rest = rest[end + 1:]
    while rest and OPTION.match(rest[0]):
        key, value = OPTION.match(rest[0]).groups()
        options[key] = value
        rest.pop(0)
    return options, rest


def _find_close(lines: list[str], start: int, fence: str) -> int:
    """Index of the line closing ``fence`` opened at ``start - 1`` (or len(lines))."""
    for j in range(start, len(lines)):
        if lines[j].strip() == fence:
            return j
    return len(lines)


def myst_to_markdown(text: str, ctx: MystContext) -> str:
    """Translate the MyST a chapter uses into Markdown that nbconvert renders."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        opened = FENCE_OPEN.match(line)
        plain = PLAIN_FENCE.match(line)
        if opened:
            fence, name = opened.group("fence"), opened.group("name")
            close = _find_close(lines, i + 1, fence)
            options, body = _parse_options(lines[i + 1:close])
            out.extend(_render_directive(name, opened.group("arg").strip(), options, body, ctx))
            i = close + 1
            continue
        if plain:  # ordinary code block: copy untouched
            close = _find_close(lines, i + 1, plain.group(1))
            out.extend(lines[i:close + 1])
            i = close + 1
            continue
        if TARGET.match(line) or line.strip() == "+++" or line.lstrip().startswith("% "):
            i += 1
            continue
        labelled = LABELLED_MATH_END.match(line)
        if labelled:
            number = ctx.equations.get(labelled.group("label"))
            tag = rf" \tag{{{number}}}" if number else ""
            out.append(f"{labelled.group('body')}{tag}$$")
            i += 1
            continue
        out.append(convert_roles(line, ctx))
        i += 1
    return "\n".join(out)


def _render_directive(name: str, arg: str, options: dict[str, str], body: list[str],
                      ctx: MystContext) -> list[str]:
    """One directive as Markdown lines: a quoted block for theorems, exercises and notes."""
    kind = name.split(":", 1)[1] if name.startswith("prf:") else name
    if name in DROPPED_DIRECTIVES:
        return []
    if name == "math":
        return ["$$", *body, "$$"]
    if name in ("code-block", "code", "sourcecode"):
        return [f"```{arg}", *body, "```"]
    if name in ("figure", "image"):
        caption = " ".join(ln.strip() for ln in body if ln.strip())
        return [f"*Figure: {convert_roles(caption, ctx)}*"] if caption else []
    inner = myst_to_markdown("\n".join(body), ctx).strip("\n").split("\n")
    if not (kind in PRF_KINDS or name in ADMONITIONS or name == "exercise"):
        return inner  # unknown directive: keep its content
    heading = _directive_heading(name, arg, options, ctx)
    while inner and not inner[0].strip():
        inner.pop(0)
    starts_paragraph = bool(inner) and not re.match(r"^\s*([-*+>|]|\d+\.|\$\$|```|:::)", inner[0])
    if heading and starts_paragraph:
        content = [f"{heading} {inner[0]}", *inner[1:]]
    else:
        content = ([heading, ""] if heading else []) + inner
    if kind == "proof" and content:
        content[-1] += " $\\blacksquare$"
    return [">" + (" " + ln if ln else "") for ln in content] + [""]


def collect_labels(nb: nbformat.NotebookNode, ctx: MystContext) -> None:
    """Number labelled equations and theorem-like blocks in order of appearance, per kind
    and with the chapter number in front, as the site does (Theorem 3.2, equation (3.5))."""
    counts: dict[str, int] = {}
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.split("\n")
        for j, line in enumerate(lines):
            labelled = LABELLED_MATH_END.match(line)
            if labelled and labelled.group("label") not in ctx.equations:
                ctx.equations[labelled.group("label")] = ctx.number(len(ctx.equations) + 1)
            opened = FENCE_OPEN.match(line)
            if opened:
                name = opened.group("name")
                kind = name.split(":", 1)[1] if name.startswith("prf:") else name
                if kind in PRF_KINDS - {"proof"} or kind == "exercise":
                    options, _ = _parse_options(lines[j + 1:j + 12])
                    counts[kind] = counts.get(kind, 0) + 1
                    if "label" in options:
                        number = ctx.number(counts[kind])
                        ctx.blocks[options["label"]] = f"{kind.capitalize()} {number}"


# --------------------------------------------------------------------------- slide layout


def _wrapped_lines(line: str) -> float:
    """Estimated slide lines one Markdown line takes once wrapped."""
    stripped = re.sub(r"<[^>]*>", "", line).strip()
    if not stripped:
        return 0.4
    if stripped.startswith("#"):
        return 2.5
    quoted = 1.2 if stripped.startswith(">") else 1.0  # quoted blocks have padding
    return quoted * max(1, math.ceil(len(stripped) / CHARS_PER_LINE))


def markdown_blocks(text: str) -> list[str]:
    """Split Markdown into blocks at blank lines, never inside a code block or display math."""
    blocks: list[list[str]] = [[]]
    fence: str | None = None
    in_math = False
    for line in text.split("\n"):
        stripped = line.strip().lstrip("> ").strip()
        if fence is None and not in_math and not line.strip():
            if blocks[-1]:
                blocks.append([])
            continue
        blocks[-1].append(line)
        if fence is None and stripped.count("$$") % 2 == 1:
            in_math = not in_math
        elif fence is None and not in_math and PLAIN_FENCE.match(stripped):
            fence = PLAIN_FENCE.match(stripped).group(1)
        elif fence is not None and stripped == fence:
            fence = None
        if fence is None and not in_math and line.lstrip().startswith("#"):
            blocks.append([])  # a heading is a block of its own
    return ["\n".join(b) for b in blocks if b]


def markdown_cost(text: str) -> float:
    """Estimated slide lines of a Markdown block, margins included."""
    return sum(_wrapped_lines(ln) for ln in text.split("\n")) + 1.0


def _png_height(data: str) -> float:
    """Displayed height in slide lines of a base64 PNG (width capped by the slide width)."""
    raw = base64.b64decode(data[:64])
    width, height = struct.unpack(">II", raw[16:24])
    scale = min(1.0, (SLIDE_WIDTH - 120) / width, 560 / height)
    return height * scale / LINE_PX


def output_cost(output: nbformat.NotebookNode) -> float:
    """Estimated slide lines of one cell output (text, image, plotly figure or table)."""
    if output.output_type == "stream":
        return output.text.count("\n") + 1
    data = output.get("data", {})
    if "application/vnd.plotly.v1+json" in data:
        layout = data["application/vnd.plotly.v1+json"].get("layout", {})
        return layout.get("height", 450) / LINE_PX
    if "image/png" in data:
        return _png_height(data["image/png"])
    if "text/html" in data:
        return 2 + 1.5 * "".join(data["text/html"]).count("<tr")
    text = "".join(data.get("text/plain", ""))
    return text.count("\n") + 1


def is_import_only(source: str) -> bool:
    """True for a cell of import statements, comments and blank lines only."""
    lines = [ln.strip() for ln in source.split("\n")]
    return all(not ln or ln.startswith(("import ", "from ", "#")) for ln in lines)


def shorten_code(source: str) -> str:
    """Code cut to ``MAX_CODE_LINES`` lines, the last saying how many were left out."""
    lines = source.rstrip().split("\n")
    if len(lines) <= MAX_CODE_LINES:
        return source.rstrip()
    hidden = len(lines) - MAX_CODE_LINES + 1
    return "\n".join(lines[:MAX_CODE_LINES - 1] + [f"# ... {hidden} more lines in the notebook"])


def shorten_output(output: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Printed output cut to ``MAX_STREAM_LINES`` lines (other outputs unchanged)."""
    if output.output_type != "stream":
        return output
    lines = output.text.rstrip("\n").split("\n")
    if len(lines) > MAX_STREAM_LINES:
        hidden = len(lines) - MAX_STREAM_LINES + 1
        output = copy.deepcopy(output)
        output.text = "\n".join(lines[:MAX_STREAM_LINES - 1] + [f"... ({hidden} more lines)"]) + "\n"
    return output


@dataclass
class Item:
    """One piece of slide content: a Markdown block or a code cell, with its estimated height."""

    cell: nbformat.NotebookNode
    cost: float
    heading: int = 0          # 1, 2, 3 for a #, ##, ### heading block
    title: str = ""
    new_subslide: bool = False  # start a sub-slide here (after the title slide)


def slide_items(nb: nbformat.NotebookNode, ctx: MystContext) -> list[Item]:
    """The notebook's cells as slide content: filtered, translated, shortened, split."""
    items: list[Item] = []
    for cell in nb.cells:
        cell_tags = set(tags(cell))
        if cell_tags & DROP_CELL_TAGS or cell.cell_type == "raw":
            continue
        if cell.cell_type == "markdown":
            text = myst_to_markdown(cell.source, ctx)
            for block in markdown_blocks(text):
                heading = re.match(r"^(#{1,6})\s+(.*)$", block.strip())
                level = len(heading.group(1)) if heading and "\n" not in block.strip() else 0
                items.append(Item(nbformat.v4.new_markdown_cell(block), markdown_cost(block),
                                  level, heading.group(2) if level else ""))
            continue
        cell = copy.deepcopy(cell)
        show_input = not (cell_tags & HIDE_INPUT_TAGS) and cell.source.strip()
        outputs = [] if cell_tags & DROP_OUTPUT_TAGS else [
            shorten_output(o) for o in cell.get("outputs", [])
            if o.output_type != "stream" or o.name == "stdout"]
        if not outputs and is_import_only(cell.source):
            show_input = False  # the imports cell says nothing on a slide
        if not show_input and not outputs:
            continue
        cell.outputs = outputs
        cost = sum(output_cost(o) for o in outputs)
        if show_input:
            cell.source = shorten_code(cell.source)
            cost += cell.source.count("\n") + 1.5
        else:
            cell.metadata.setdefault("transient", {})["remove_source"] = True
        items.append(Item(cell, cost))
    return items


def layout(items: list[Item]) -> list[nbformat.NotebookNode]:
    """Give every cell its reveal.js slide type: ## starts a slide, ### a sub-slide, and a
    (sub-)slide that would overflow continues on a new sub-slide headed "(continued)".
    A heading never stands alone: a ### right after a ## shares its slide."""
    cells: list[nbformat.NotebookNode] = []
    used, section, only_headings = 0.0, "", False
    for k, item in enumerate(items):
        overflows = used + item.cost > BUDGET and not (
            item.cost <= SLACK and used + item.cost <= BUDGET + SLACK)
        after = items[k + 1] if k + 1 < len(items) else None
        if (not overflows and after is not None and item.cell.cell_type == "code"
                and after.cell.cell_type == "markdown" and not after.heading
                and after.cost <= 2 * SLACK and item.cost + after.cost <= BUDGET
                and used + item.cost + after.cost > BUDGET + SLACK):
            overflows = True  # keep a figure together with the short comment that follows it
        if not cells or item.heading in (1, 2):
            kind = "slide"
        elif only_headings:
            kind = "-"
        elif item.heading == 3 or item.new_subslide:
            kind = "subslide"
        elif overflows and used > 0:
            cont = nbformat.v4.new_markdown_cell(f"#### {section} (continued)" if section
                                                 else "#### (continued)")
            cont.metadata["slideshow"] = {"slide_type": "subslide"}
            cells.append(cont)
            used, kind = 1.6, "-"
        else:
            kind = "-"
        if kind in ("slide", "subslide"):
            used, only_headings = 0.0, True
        only_headings = only_headings and bool(item.heading)
        if item.heading:
            section = re.sub(r"[*_`]", "", item.title)
        item.cell.metadata["slideshow"] = {"slide_type": kind}
        cells.append(item.cell)
        used += item.cost
    return cells


def slide_notebook(nb: nbformat.NotebookNode, citations: Citations, chapter_href: str,
                   chapter: int | None = None) -> nbformat.NotebookNode:
    """A copy of an executed chapter notebook laid out as slides."""
    ctx = MystContext(citations, chapter)
    collect_labels(nb, ctx)
    items = slide_items(nb, ctx)
    if not items:
        raise ValueError("the notebook has no content to put on slides")
    back = nbformat.v4.new_markdown_cell(
        f'<p class="back-link"><a href="{chapter_href}">Read the full chapter</a> '
        "(derivations, exercises with solutions)</p>")
    badge = next((k + 1 for k, it in enumerate(items) if "colab-badge" in it.cell.source), None)
    first_break = next((k for k, it in enumerate(items) if k and it.heading in (1, 2)), len(items))
    at = badge if badge is not None and badge < first_break else first_break
    items.insert(at, Item(back, 1.5))
    if at + 1 < len(items) and not items[at + 1].heading:
        items[at + 1].new_subslide = True  # objectives and prerequisites get a slide of their own
    out = nbformat.v4.new_notebook(metadata=copy.deepcopy(nb.metadata))
    out.metadata.pop("widgets", None)
    out.cells = layout(items)
    return out


# --------------------------------------------------------------------------- export


def reveal_source(explicit: Path | None = None) -> Path:
    """The reveal.js distribution folder (with dist/ and plugin/)."""
    if explicit is not None:
        candidates = [explicit]
    else:
        candidates = []
        try:
            import sphinx_revealjs  # noqa: PLC0415 - only its static files are used
            candidates.append(Path(sphinx_revealjs.__file__).parent / "_static" / "revealjs")
        except ImportError:
            pass
    for path in candidates:
        if (path / "dist" / "reveal.js").is_file():
            return path
    raise FileNotFoundError(
        "reveal.js not found: the slides use the copy inside the PyPI package sphinx-revealjs. "
        "Install it with `pip install --no-deps sphinx-revealjs==3.2.1` (it is listed in "
        "requirements-nodeps.txt; `make setup` does this) or pass --reveal DIR.")


def vendor_reveal(source: Path, dest: Path) -> None:
    """Copy the part of reveal.js the decks load into ``dest``."""
    shutil.rmtree(dest, ignore_errors=True)
    for part in REVEAL_PARTS:
        src = source / part
        target = dest / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target)
        else:
            shutil.copy2(src, target)


def make_exporter() -> SlidesExporter:
    """nbconvert's reveal.js exporter with this file's offline template."""
    return SlidesExporter(
        extra_loaders=[jinja2.DictLoader({"book_slides.html.j2": TEMPLATE})],
        template_file="book_slides.html.j2",
        reveal_url_prefix="reveal.js",
        reveal_theme="white",
        reveal_transition="none",
        reveal_width=str(SLIDE_WIDTH),
        reveal_height=str(SLIDE_HEIGHT),
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )


def deck_title(nb: nbformat.NotebookNode, fallback: str) -> str:
    """The chapter's title: the first ``# `` heading."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if match:
                return match.group(1).strip()
    return fallback


def write_deck(executed: Path, outdir: Path, exporter: SlidesExporter, citations: Citations,
               static_prefix: str) -> str:
    """Write ``outdir/<stem>.html`` from one executed notebook; return the deck's title."""
    nb = read(executed)
    title = deck_title(nb, executed.stem)
    number = re.match(r"^(\d\d)_", executed.stem)
    slides = slide_notebook(nb, citations, f"../notebooks/{executed.stem}.html",
                            int(number.group(1)) if number else None)
    slides.metadata["title"] = title
    resources = {"book": {"static_prefix": static_prefix, "css": SLIDE_CSS},
                 "metadata": {"name": executed.stem}}
    body, _ = exporter.from_notebook_node(slides, resources=resources)
    (outdir / f"{executed.stem}.html").write_text(body, encoding="utf-8")
    return title


def write_index(outdir: Path, decks: list[tuple[str, str]], book_title: str) -> None:
    """Write ``outdir/index.html``, a plain page listing every deck and its chapter."""
    items = "\n".join(
        f'<li><a href="{stem}.html">{html.escape(title)}</a> '
        f'<span class="small">(<a href="../notebooks/{stem}.html">chapter</a>)</span></li>'
        for stem, title in decks)
    (outdir / "index.html").write_text(
        INDEX_TEMPLATE.format(book_title=html.escape(book_title), items=items), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path, help="where to write the decks, e.g. _build/html/slides")
    parser.add_argument("--executed", type=Path, default=EXECUTED,
                        help="folder of executed notebooks (default: the book build's)")
    parser.add_argument("--static-prefix", default="../_static",
                        help="URL of the site's _static/ folder relative to OUTDIR")
    parser.add_argument("--reveal", type=Path, default=None, help="a reveal.js folder to copy")
    args = parser.parse_args(argv)

    if args.executed == EXECUTED:
        stems = [p.stem for p in notebook_paths()]
    else:
        stems = sorted(p.stem for p in args.executed.glob("*.ipynb") if NOTEBOOK_NAME.match(p.name))
    missing = [s for s in stems if not (args.executed / f"{s}.ipynb").is_file()]
    if missing:
        print(f"no executed notebook for {missing} in {args.executed}; run `make book` first",
              file=sys.stderr)
        return 1
    args.outdir.mkdir(parents=True, exist_ok=True)
    vendor_reveal(reveal_source(args.reveal), args.outdir / "reveal.js")
    exporter = make_exporter()
    citations = Citations.from_bibfile(BIBFILE)
    decks = []
    for stem in stems:
        title = write_deck(args.executed / f"{stem}.ipynb", args.outdir, exporter, citations,
                           args.static_prefix)
        decks.append((stem, title))
        print(f"slides: {args.outdir / stem}.html  ({title})")
    book_title = yaml.safe_load((ROOT / "_config.yml").read_text()).get("title", "the book")
    write_index(args.outdir, decks, book_title)
    print(f"slides: {args.outdir / 'index.html'} lists {len(decks)} decks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
