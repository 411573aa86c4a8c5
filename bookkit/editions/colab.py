"""Colab editions: each chapter with its MyST turned into Markdown that Colab renders.

    python -m bookkit.editions [--check]   (``make sync`` runs it after the sync)

Colab renders CommonMark and MathJax but loads no extensions, so a chapter's roles and
directives would show as raw text there. For every ``notebooks/NN_topic.ipynb`` this
writes

- ``colab/NN_topic.ipynb``: the same cells, with ``{doc}``/``{ref}`` links pointing at
  the website; theorems, definitions, exercises (...) as numbered bold titles
  ("**Theorem 5.2 (title).**"); ``{prf:ref}``/``{eq}``/``{numref}`` as their number
  with a link ("Figure 4.2"); every captioned figure cell followed by a Markdown cell
  "**Figure 4.2.** caption"; citations as "Author (year)" linked to the bibliography
  page; ``(label)=`` targets dropped; admonitions as quotes; solutions folded
  (``<details>`` for Markdown, a hidden Colab form for solution code); cells folded
  on the site (``jupyter.source_hidden``: the exercise checks) folded as Colab forms
  (``cellView: "form"``; Colab ignores ``source_hidden``);
- ``colab/student/NN_topic.ipynb``: the same from the student notebook
  (``bookkit.notebook.student_notebook``), so no solutions at all, and its links
  point at the course's student site (``course.student_site``), not the website.

The numbers are the website's: sphinx-proof counts every theorem-like kind with one
counter per chapter (Lemma 3.1, Definition 3.2, Theorem 3.3, ...: _config.yml's
prf_realtyp_to_countertyp), sphinx-exercise counts exercises, Sphinx counts labelled
equations and figures (a figure is numbered when it has a caption and a name: the cell
metadata ``mystnb.figure`` or a ``{figure}`` directive with ``:name:``).

Why the numbers are counted here and not read from the build: the editions are written
by ``make sync`` from the sources alone, in a second, and committed; taking the numbers
from a build would make every sync wait for one (about eight minutes, every notebook
executed). Instead the counting is checked against the build:
``tests/editions/test_colab.py`` compares every number this module gives with the one
Sphinx gave the same label in the built site (its ``environment.pickle``).

The website's address is ``html.baseurl`` in _config.yml, the student site's
``course.student_site``. Both editions are committed
(the Colab badges open them from GitHub); ``python -m bookkit.editions --check`` fails
when one is stale.
"""

from __future__ import annotations

import codecs
import copy
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import latexcodec  # noqa: F401  (registers the "ulatex" codec for author names)
import nbformat
import yaml
from pybtex.database import parse_file

from bookkit.chapters import chapter
from bookkit.config import site_url, student_site_url
from bookkit.notebook import (
    NOTEBOOK_NAME,
    SOLUTION,
    clear_outputs,
    link_edition,
    notebook_bytes,
    read,
    student_notebook,
    tags,
)
from bookkit.paths import BIBFILE, BOOK, COLAB, COLAB_STUDENT, NOTEBOOKS, ROOT

PRF_KINDS = {
    "theorem",
    "lemma",
    "definition",
    "corollary",
    "proposition",
    "remark",
    "example",
    "conjecture",
    "axiom",
    "criterion",
    "observation",
    "property",
    "assumption",
    "notation",
    "algorithm",
}
NUMBERED = {f"prf:{k}" for k in PRF_KINDS} | {"exercise"}


def counter(name: str) -> str:
    """The counter a numbered directive advances: one for every theorem-like kind
    (_config.yml's prf_realtyp_to_countertyp maps each to theorem's), one for
    exercises."""
    return "prf:theorem" if name.startswith("prf:") else name


# Exercise titles carry their own number ("6.2 · Title", with :nonumber: on the site).
OWN_NUMBER = re.compile(r"^(\d+\.\d+)\s*·\s*")


def numbered_title(name: str, arg: str, running: str) -> tuple[str, str]:
    """(number, rest of title): a number written in the title wins."""
    if name == "exercise" and (own := OWN_NUMBER.match(arg)):
        return f"{kind_title(name)} {own[1]}", arg[own.end() :]
    return f"{kind_title(name)} {running}", arg
ADMONITIONS = {
    "note",
    "tip",
    "hint",
    "important",
    "warning",
    "caution",
    "attention",
    "danger",
    "error",
    "seealso",
    "admonition",
    "dropdown",
    "margin",
    "sidebar",
    "topic",
}

FENCE = re.compile(
    r"^(?P<indent>\s*)(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:+-]+)\}\s*(?P<arg>.*)$"
)
PLAIN_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
TARGET = re.compile(r"^\s*\(([\w:.-]+)\)=\s*$")
OPTION = re.compile(r"^\s*:([\w-]+):\s*(.*)$")
ROLE = re.compile(r"\{([a-zA-Z][\w:+-]*)\}`([^`]*)`")
EQ_LABEL = re.compile(r"\$\$\s*\(([\w:.-]+)\)[ \t]*$", re.M)
HEADING = re.compile(r"^#+\s+(.*)$")
FOOTNOTE = re.compile(r"^\[\^([\w-]+)\]:[ \t]*|\[\^([\w-]+)\]", re.M)


@dataclass
class Target:
    text: str
    url: str


@dataclass
class Book:
    """What each chapter's conversion needs: the site, citations, every label."""

    site: str
    citations: dict[str, str]  # key -> "Vaswani et al." + year, see cite()
    years: dict[str, str]
    targets: dict[str, Target] = field(default_factory=dict)



def _latex(text: str) -> str:
    return codecs.decode(text, "ulatex").replace("{", "").replace("}", "").strip()


def read_citations(path: Path = BIBFILE) -> tuple[dict[str, str], dict[str, str]]:
    """Author labels ("Su", "Press et al.") and years of every BibTeX entry."""
    authors, years = {}, {}
    for key, entry in parse_file(str(path)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [_latex(" ".join(p.last_names)) for p in people if str(p) != "others"]
        if not names:
            label = _latex(entry.fields.get("title", key))
        elif len(names) > 2 or (len(people) > len(names)):
            label = f"{names[0]} et al."
        else:
            label = " and ".join(names)
        authors[key], years[key] = label, entry.fields.get("year", "n.d.")
    return authors, years


def page_url(book: Book, target: str) -> str:
    """The site address of a ``{doc}`` target written relative to notebooks/."""
    path = (
        (NOTEBOOKS / target.split("#")[0])
        .resolve()
        .relative_to(ROOT)
        .with_suffix(".html")
    )
    return book.site + path.as_posix()


def doc_title(target: str) -> str:
    """The first heading of a page named relative to notebooks/ (what Sphinx shows)."""
    base = NOTEBOOKS / target.split("#")[0]
    for path in (base.with_suffix(".ipynb"), base.with_suffix(".md")):
        if path.is_file():
            text = (
                "\n".join(c.source for c in read(path).cells[:1])
                if path.suffix == ".ipynb"
                else path.read_text()
            )
            found = re.search(r"^#\s+(.+)$", text, re.M)
            return found[1].strip() if found else target
    return target


def directives(text: str):
    """(name, argument, options) of every directive in a cell, outermost first."""
    lines = text.split("\n")
    for k, line in enumerate(lines):
        match = FENCE.match(line)
        if match:
            options, _ = parse_options(lines[k + 1 :])
            yield match["name"], match["arg"].strip(), options


def parse_options(body: list[str]) -> tuple[dict[str, str], list[str]]:
    """Leading ``:key: value`` lines of a directive body (or a YAML block)."""
    options, k = {}, 0
    if body and body[0].strip() == "---":
        end = body.index("---", 1)
        options, k = yaml.safe_load("\n".join(body[1:end])) or {}, end + 1
    while k < len(body) and (match := OPTION.match(body[k])):
        options[match[1]] = match[2].strip()
        k += 1
    return options, body[k:]


def figure_options(cell: nbformat.NotebookNode) -> dict:
    """A code cell's ``mystnb.figure`` metadata (caption, name), or {}."""
    if cell.cell_type != "code":
        return {}
    return dict((cell.metadata.get("mystnb") or {}).get("figure") or {})


def page_number(path: Path) -> int | None:
    """A chapter's number; None for a guide (an unnumbered page). A notebook outside
    the table of contents (a test's) is numbered by its name."""
    try:
        return chapter(path.stem).number
    except KeyError:
        return int(path.name[:2]) if NOTEBOOK_NAME.match(path.name) else None


def numbered(chapter_number: int | None, count: int) -> str:
    """"4.2" in Chapter 4; "2" on an unnumbered page, as Sphinx numbers them."""
    return f"{chapter_number}.{count}" if chapter_number is not None else str(count)


def collect_targets(book: Book, nbs: dict[Path, nbformat.NotebookNode]) -> None:
    """Number every labelled theorem, exercise, equation, figure, section as the site
    does."""
    for path, nb in nbs.items():
        page_no, page = page_number(path), page_url(book, path.name)
        counts: Counter[str] = Counter()
        for cell in nb.cells:
            figure = figure_options(cell)
            if figure.get("caption") and figure.get("name"):
                counts["figure"] += 1
                name = str(figure["name"])
                book.targets[name] = Target(
                    f"Figure {numbered(page_no, counts['figure'])}", f"{page}#{name}"
                )
            if cell.cell_type != "markdown":
                continue
            for name, arg, options in directives(cell.source):
                if name == "figure" and "name" in options:
                    counts["figure"] += 1
                    book.targets[options["name"]] = Target(
                        f"Figure {numbered(page_no, counts['figure'])}",
                        f"{page}#{options['name']}",
                    )
                if name in NUMBERED:
                    counts[counter(name)] += 1
                    running = numbered(page_no, counts[counter(name)])
                    number, _ = numbered_title(name, arg, running)
                    if "label" in options:
                        book.targets[options["label"]] = Target(
                            number, f"{page}#{options['label']}"
                        )
            for label in EQ_LABEL.findall(cell.source):
                counts["eq"] += 1
                book.targets[label] = Target(
                    f"({numbered(page_no, counts['eq'])})", f"{page}#equation-{label}"
                )
            lines = cell.source.split("\n")
            for k, line in enumerate(lines):
                if match := TARGET.match(line):
                    heading = next((h for h in lines[k + 1 :] if h.strip()), "")
                    text = (
                        HEADING.match(heading)[1]
                        if HEADING.match(heading)
                        else match[1]
                    )
                    book.targets[match[1]] = Target(text, f"{page}#{match[1]}")


def kind_title(name: str) -> str:
    return name.removeprefix("prf:").capitalize()


@dataclass
class Converter:
    """One chapter's MyST to Markdown; keeps the running numbers of its directives."""

    book: Book
    chapter: int | None  # None on an unnumbered page
    counts: Counter = field(default_factory=Counter)
    solution_for: str | None = None  # set by {solution-start}: the exercise solved
    footnotes: dict[str, int] = field(default_factory=dict)  # label -> number

    def role(self, match: re.Match) -> str:
        name, content = match[1], match[2]
        explicit = re.fullmatch(r"(.*?)\s*<([^<>]+)>", content, re.S)
        text, target = (explicit[1], explicit[2]) if explicit else (None, content)
        text = " ".join(text.split()) if text else None
        if name == "doc":
            return f"[{text or doc_title(target)}]({page_url(self.book, target)})"
        if name in ("ref", "prf:ref", "numref", "eq"):
            found = self.book.targets.get(target)
            if found is None:
                print(f"make_colab: unknown label {target!r} (kept as text)")
                return text or target
            if name == "numref" and text:  # "Fig. %s" or "{number}" as in Sphinx
                number = found.text.split()[-1]
                text = text.replace("%s", number).replace("{number}", number)
            return f"[{text or found.text}]({found.url})"
        if name.startswith("cite"):
            return self.cite(name, [k.strip() for k in content.split(",")])
        if name == "math":
            return f"${content}$"
        if name == "term":
            return f"[{text or target}]({self.book.site}book/glossary.html)"
        if name in ("sub", "sup"):
            return f"<{name}>{content}</{name}>"
        if name in ("code", "literal", "kbd"):
            return f"`{content}`"
        return text or target

    def cite(self, name: str, keys: list[str]) -> str:
        bib = f"{self.book.site}book/bibliography.html"
        missing = [k for k in keys if k not in self.book.citations]
        if missing:
            raise ValueError(
                f"unknown citation keys {missing}: add them to book/references.bib"
            )

        def label(k: str) -> str:
            return self.book.citations[k]

        if name in ("cite:t", "cite:ts"):
            return "; ".join(
                f"[{label(k)} ({self.book.years[k]})]({bib})" for k in keys
            )
        if name == "cite:year":
            return "; ".join(f"[{self.book.years[k]}]({bib})" for k in keys)
        if name == "cite:author":
            return "; ".join(f"[{label(k)}]({bib})" for k in keys)
        return (
            "("
            + "; ".join(f"[{label(k)}, {self.book.years[k]}]({bib})" for k in keys)
            + ")"
        )

    def inline(self, text: str) -> str:
        """Roles and equation labels in a run of ordinary lines."""
        text = ROLE.sub(self.role, text)

        def footnote(match: re.Match) -> str:  # numbered in order of appearance
            label = match[1] or match[2]
            number = self.footnotes.setdefault(label, len(self.footnotes) + 1)
            return f"<sup>{number}</sup>" + (" " if match[1] else "")

        text = FOOTNOTE.sub(footnote, text)

        def tag(match: re.Match) -> str:
            found = self.book.targets.get(match[1])
            return f"\\tag{{{found.text.strip('()')}}}$$" if found else "$$"

        return EQ_LABEL.sub(tag, text)

    def convert(self, text: str) -> str:
        lines, out, run, k = text.split("\n"), [], [], 0

        def flush() -> None:
            if run:
                out.append(self.inline("\n".join(run)))
                run.clear()

        while k < len(lines):
            line = lines[k]
            if (match := FENCE.match(line)) or PLAIN_FENCE.match(line):
                fence = match["fence"] if match else PLAIN_FENCE.match(line)[1]
                end = next(
                    (
                        j
                        for j in range(k + 1, len(lines))
                        if re.fullmatch(
                            rf"\s*{re.escape(fence[0])}{{{len(fence)},}}\s*", lines[j]
                        )
                    ),
                    len(lines),
                )
                flush()
                if match:
                    options, body = parse_options(lines[k + 1 : end])
                    out.append(
                        self.directive(
                            match["name"],
                            match["arg"].strip(),
                            options,
                            "\n".join(body).strip("\n"),
                        )
                    )
                else:
                    out.extend(lines[k : end + 1])
                k = end + 1
            elif TARGET.match(line):
                k += 1
            else:
                run.append(line)
                k += 1
        flush()
        return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")

    def directive(self, name: str, arg: str, options: dict, body: str) -> str:
        if name in NUMBERED:
            self.counts[counter(name)] += 1
            title, arg = numbered_title(
                name, arg, numbered(self.chapter, self.counts[counter(name)])
            )
            title += f" ({self.inline(arg)})" if arg else ""
            return lead(f"**{title}.**", self.convert(body))
        if name == "prf:proof":
            return lead("*Proof.*", self.convert(body)) + " ∎"
        if name == "solution":
            return (
                f"<details><summary>Solution to {self.exercise(arg)}</summary>\n\n"
                f"{self.convert(body)}\n\n</details>"
            )
        if name == "solution-start":
            self.solution_for = self.exercise(arg)
            return ""
        if name == "solution-end":
            self.solution_for = None
            return ""
        if name == "math":
            label = options.get("label")
            tag = (
                f" \\tag{{{self.book.targets[label].text.strip('()')}}}"
                if label
                else ""
            )
            return f"$$\n{body}{tag}\n$$"
        if name in ADMONITIONS:
            title = (
                self.inline(arg)
                if arg
                else {"seealso": "See also"}.get(name, name.capitalize())
            )
            content = self.convert(body)
            if name == "dropdown" or "dropdown" in str(options.get("class", "")):
                return f"<details><summary>{title}</summary>\n\n{content}\n\n</details>"
            return "\n".join(
                "> " + ln if ln else ">"
                for ln in lead(f"**{title}.**", content).split("\n")
            )
        return (
            lead(f"**{self.inline(arg)}**", self.convert(body))
            if arg
            else self.convert(body)
        )

    def exercise(self, label: str) -> str:
        found = self.book.targets.get(label.strip())
        return found.text if found else "the exercise"


def lead(title: str, body: str) -> str:
    """A bold title run into the first paragraph, or alone before math, lists, code."""
    if not body or re.match(
        r"\s*(\$\$|[-*+] |\d+\. |`{3}|~{3}|>|\||<|#|\\begin)", body
    ):
        return f"{title}\n\n{body}".rstrip()
    return f"{title} {body}"


CHECK_DEFINITION = re.compile(r"ExerciseCheck\(|^def check_\w+\(", re.M)


def fold_for_colab(cell: nbformat.NotebookNode) -> None:
    """Fold a cell that is folded on the site (``jupyter.source_hidden``) in Colab too.

    Colab ignores ``source_hidden``; it folds a cell shown as a form
    (``cellView: "form"``), under the title of its first line, ``# @title ...``.
    """
    if not cell.source.lstrip().startswith("# @title"):
        title = (
            "Exercise checks: run this cell, then try the exercises"
            if CHECK_DEFINITION.search(cell.source)
            else "Folded code: run this cell (the text explains what it does)"
        )
        cell.source = f"# @title {title}\n{cell.source}"
    cell.metadata["cellView"] = "form"


def colab_edition(
    nb: nbformat.NotebookNode, path: Path, book: Book, student: bool = False
) -> nbformat.NotebookNode:
    """The Colab edition of one chapter (``student``: from its student version)."""
    out = student_notebook(nb) if student else copy.deepcopy(nb)
    converter, cells = Converter(book, page_number(path)), []
    edition = "student" if student else "colab"
    for cell in out.cells:
        if cell.cell_type == "markdown":
            cell.source = link_edition(converter.convert(cell.source), edition)
            if not cell.source.strip():
                continue
            if converter.solution_for:  # prose between solution-start and solution-end
                cell.source = (
                    f"<details><summary>Solution to {converter.solution_for}"
                    f"</summary>\n\n{cell.source}\n\n</details>"
                )
        elif cell.cell_type == "code":
            clear_outputs(cell)
            if converter.solution_for and SOLUTION in tags(cell):
                cell.source = (
                    f"# @title Solution to {converter.solution_for}\n{cell.source}"
                )
                cell.metadata["cellView"] = (
                    "form"  # Colab shows the title, hides the code
                )
                cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
            elif cell.metadata.get("jupyter", {}).get("source_hidden"):
                fold_for_colab(cell)
        cells.append(cell)
        caption = figure_caption(cell, converter)
        if caption is not None:
            cells.append(caption)
    page = f"{book.site}notebooks/{path.stem}.html"
    where = "the course's student site" if student else "the book's website"
    note = nbformat.v4.new_markdown_cell(
        f"> **Colab edition** of [this chapter]({page}), generated from "
        f"`notebooks/{path.name}`: cross-references and citations link to {where}. "
        "Run the first code cell before the others.")
    note.id = "colab-edition-note"  # fixed, so regenerating gives identical files
    out.cells = [cells[0], note, *cells[1:]]
    return out


def collect_page_targets(book: Book) -> None:
    """``(label)=`` targets of the prose pages in book/ (e.g. ``cite-this-book``)."""
    for path in sorted(BOOK.rglob("*.md")):
        if "vendor" in path.relative_to(ROOT).parts:
            continue
        page = book.site + path.relative_to(ROOT).with_suffix(".html").as_posix()
        lines = path.read_text().split("\n")
        for k, line in enumerate(lines):
            if match := TARGET.match(line):
                heading = next((h for h in lines[k + 1 :] if h.strip()), "")
                found = HEADING.match(heading)
                text = found[1] if found else match[1]
                book.targets.setdefault(match[1], Target(text, f"{page}#{match[1]}"))


def figure_caption(
    cell: nbformat.NotebookNode, converter: Converter
) -> nbformat.NotebookNode | None:
    """The Markdown cell under a captioned figure cell: "**Figure 4.2.** caption"."""
    figure = figure_options(cell)
    if not figure.get("caption"):
        return None
    found = converter.book.targets.get(str(figure.get("name", "")))
    title = f"{found.text}." if found else "Figure."
    text = converter.inline(" ".join(str(figure["caption"]).split()))
    caption = nbformat.v4.new_markdown_cell(f"**{title}** {text}")
    caption.id = f"{cell.get('id', 'figure')}-caption"[:64]
    return caption


def make_book(nbs: dict[Path, nbformat.NotebookNode], site: str | None = None) -> Book:
    """Numbers and links of every page, on ``site`` (default: the website)."""
    citations, years = read_citations()
    book = Book(site or site_url(), citations, years)
    collect_targets(book, nbs)
    collect_page_targets(book)
    return book


def write_editions(
    nbs: dict[Path, nbformat.NotebookNode], check: bool = False
) -> list[str]:
    """Write (or with ``check``, compare) every Colab edition; return what was stale."""
    book, stale, wanted = make_book(nbs), [], set()
    student_book = make_book(nbs, student_site_url())  # the student editions' links
    for path, nb in nbs.items():
        editions = [(False, COLAB)]
        if page_number(path) is not None:  # a chapter: its exercises, without answers
            editions.append((True, COLAB_STUDENT))
        for student, folder in editions:
            target = folder / path.name
            wanted.add(target)
            data = notebook_bytes(colab_edition(nb, path, student_book if student
                                                else book, student))
            if not target.is_file() or target.read_bytes() != data:
                stale.append(f"{target.relative_to(ROOT)}: stale Colab edition")
                if not check:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
    made = set(COLAB.glob("*.ipynb")) | set(COLAB_STUDENT.glob("*.ipynb"))
    for extra in sorted(made - wanted):
        stale.append(f"{extra.relative_to(ROOT)}: no chapter of that name")
        if not check:
            extra.unlink()
    return stale

