"""The notebook model: what a chapter notebook is made of, and every rule about it.

Every edition of the book (the student notebooks, the Colab editions, the student site,
the nbgrader hand-outs, the slides, the PDF) is a writer on top of this module, and so
is the solution-leak search: the tag vocabulary, the Colab badge, the solution filter,
output clearing and the student notebook are defined here and nowhere else
(``tests/tools/test_architecture.py`` greps for them elsewhere).

Cell tags carry the conventions, so they survive Jupyter, Colab and jupytext:

``remove-cell`` (:data:`SETUP`)
    the hidden setup cell, the first code cell (written by ``bookkit.sync``).
``export`` (:data:`EXPORT`)
    imports and definitions only. Tests execute exactly these cells
    (:func:`export_source`), so the functions a reader sees are the ones tested.
``name:X`` / ``copy:X`` (:data:`NAME`, :data:`COPY`)
    the defining cell of ``X`` and a later chapter's copy of it, kept identical by
    ``bookkit.sync``.
``solution`` (:data:`SOLUTION`)
    a solution (its dropdown markdown and its code): removed from every student edition.
``exercise-check`` (:data:`CHECK`)
    a cell that calls a check function; in a student notebook the only kind of cell
    allowed to raise ``NotImplementedError``.
``hidden-cases`` (:data:`HIDDEN_CASES`)
    after an exercise's solution: ``hidden_cases_<name>(rng)``, the random inputs on
    which the grader compares a submission with the solution (and, where needed, how:
    ``bookkit.grading``). Secret like a solution
    (no student edition has it; ``bookkit.sync`` also tags it ``remove-cell``).
``hide-input`` (:data:`HIDE_INPUT`)
    code folded on the site (plotting helpers, copied functions, check functions).
``remove-input`` (:data:`REMOVE_INPUT`)
    code the site does not show at all (only its output).
"""

from __future__ import annotations

import base64
import copy
import re
from pathlib import Path

import nbformat

from bookkit.config import repository, student_site_url

SETUP = "remove-cell"
EXPORT = "export"
NAME = "name"
COPY = "copy"
SOLUTION = "solution"
CHECK = "exercise-check"
HIDDEN_CASES = "hidden-cases"
HIDE_INPUT = "hide-input"
REMOVE_INPUT = "remove-input"

NOTEBOOK_NAME = re.compile(r"^\d\d_[a-z0-9_]+\.ipynb$")  # a chapter
GUIDE_NAME = re.compile(r"^[a-z][a-z0-9_]*\.ipynb$")  # an unnumbered page


def chapter_number(path: Path) -> int:
    """The chapter number of ``NN_topic.ipynb``."""
    if not NOTEBOOK_NAME.match(path.name):
        raise ValueError(f"chapter notebooks are named NN_topic.ipynb, not {path.name}")
    return int(path.name[:2])

# Per-run metadata that Jupyter adds and no edition keeps.
RUN_METADATA = ("execution", "collapsed", "scrolled")
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}


# Reading and writing -------------------------------------------------------------


def read(path: Path) -> nbformat.NotebookNode:
    """Read a notebook as nbformat v4."""
    return nbformat.read(path, as_version=4)


def write(nb: nbformat.NotebookNode, path: Path) -> None:
    """Write a notebook with stable formatting (one-space JSON indent, as Jupyter)."""
    nbformat.write(nb, path)


def notebook_bytes(nb: nbformat.NotebookNode) -> bytes:
    """The bytes :func:`write` would write (to compare with a file without writing)."""
    return (nbformat.writes(nb) + "\n").encode()


# Tags -----------------------------------------------------------------------------


def tags(cell: nbformat.NotebookNode) -> list[str]:
    """The tags of a cell (empty list if none)."""
    return list(cell.get("metadata", {}).get("tags", []))


def tag_values(cell: nbformat.NotebookNode, prefix: str) -> list[str]:
    """Values of tags of the form ``prefix:value`` (``NAME``, ``COPY``)."""
    return [t.split(":", 1)[1] for t in tags(cell) if t.startswith(prefix + ":")]


def is_solution(cell: nbformat.NotebookNode) -> bool:
    """A cell no student edition may show: a solution, or an exercise's hidden cases."""
    return bool({SOLUTION, HIDDEN_CASES} & set(tags(cell)))


def is_check(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and CHECK in tags(cell)


def export_source(path: Path) -> str:
    """The concatenated source of a notebook's ``export`` cells, in order."""
    cells = read(path).cells
    parts = [c.source for c in cells if c.cell_type == "code" and EXPORT in tags(c)]
    return "\n\n".join(parts) + "\n"


# Outputs --------------------------------------------------------------------------


def clear_outputs(cell: nbformat.NotebookNode) -> bool:
    """Drop a code cell's outputs, execution count and per-run metadata; True if
    anything was there."""
    changed = False
    if cell.cell_type == "code" and (
        cell.get("outputs") or cell.get("execution_count") is not None
    ):
        cell.outputs, cell.execution_count = [], None
        changed = True
    for key in RUN_METADATA:
        if key in cell.get("metadata", {}):
            del cell.metadata[key]
            changed = True
    return changed


# The Colab badge and links to the editions ----------------------------------------

BADGE_MARK = "<!-- colab-badge -->"
COLAB_PREFIX = "https://colab.research.google.com/github/"
BADGE_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="117" height="20" role="img" '
    'aria-label="Open in Colab"><rect rx="3" width="117" height="20" fill="#444"/>'
    '<rect rx="3" width="22" height="20" fill="#f9ab00"/>'
    '<circle cx="8" cy="10" r="4" fill="none" stroke="#444" stroke-width="2"/>'
    '<circle cx="14" cy="10" r="4" fill="none" stroke="#444" stroke-width="2"/>'
    '<text x="69" y="14" fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" '
    'font-size="11" text-anchor="middle">Open in Colab</text></svg>'
)
# A Colab link to a chapter in any of its folders: notebooks/, colab/, colab/student/.
EDITION_LINK = re.compile(
    r"(https://colab\.research\.google\.com/github/[^\s\"'()]*?/blob/[^/\s\"']+/)"
    r"(?:notebooks|colab)/(?:student/)?([a-z0-9_]+\.ipynb)"
)
# The folder of each edition a Colab link can open.
EDITION_FOLDERS = {"colab": "colab", "student": "colab/student"}


def colab_url(relative: str) -> str:
    """The Colab address of a notebook of the repository (``colab/NN_topic.ipynb``)."""
    slug, branch = repository()
    return f"{COLAB_PREFIX}{slug}/blob/{branch}/{relative}"


def badge_html(name: str) -> str:
    """The title cell's badge line: the Colab badge as an inline SVG (no request),
    opening the chapter's Colab edition ``colab/<name>``."""
    data = base64.b64encode(BADGE_SVG.encode()).decode()
    return (
        f'{BADGE_MARK}<a href="{colab_url(f"colab/{name}")}" target="_blank" '
        f'rel="noopener"><img src="data:image/svg+xml;base64,{data}" '
        'alt="Open in Colab"/></a>'
    )


def link_edition(text: str, edition: str) -> str:
    """Point every Colab link to a page in ``text`` at one edition's folder
    (``"colab"`` or ``"student"``). Guides have no student edition: their links keep
    the Colab edition."""

    def target(match: re.Match) -> str:
        chapter = NOTEBOOK_NAME.match(match[2])
        folder = EDITION_FOLDERS[edition if chapter else "colab"]
        return f"{match[1]}{folder}/{match[2]}"

    return EDITION_LINK.sub(target, text)


# Solutions and the student notebook -------------------------------------------------

SOLUTION_MARKERS = ("{solution}", "{solution-start}", "{solution-end}")
# Pages no student edition has (the instructor notes), relative to the repository.
WITHHELD_PAGES = ["book/course/instructor.md"]
STUDENT_NOTE_MARK = "<!-- student-version -->"
STUDENT_NOTE_ID = "student-version-note"  # fixed: regenerating gives identical files


def student_note() -> str:
    """The note under a student notebook's title: what it is, how the checks work,
    and where to read the chapter (the course's student site, never the website with
    the solutions)."""
    site = student_site_url()
    return f"""{STUDENT_NOTE_MARK}
> **Student version.** The solutions are removed from this notebook; the exercises at
> the end are yours. Each coding exercise has a stub that raises `NotImplementedError`
> and a check cell below it: once you have written the function, run the check. It
> names the case that fails, with the expected and the obtained value, until it prints
> *All N checks passed*. Everything else in the notebook runs as it is. The chapter is
> also on the [course's student site]({site}), without solutions. Hand in your
> exercises in the chapter's hand-out notebook, as the
> [running page]({site}book/course/running.html) explains."""


def without_solutions(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` without its ``solution`` cells (outputs kept)."""
    out = copy.deepcopy(nb)
    out.cells = [c for c in out.cells if not is_solution(c)]
    return out


def leftover_solutions(nb: nbformat.NotebookNode) -> list[int]:
    """Indices of markdown cells that still hold a solution directive (a check that
    the solutions are tagged)."""
    return [
        k
        for k, c in enumerate(nb.cells)
        if c.cell_type == "markdown" and any(m in c.source for m in SOLUTION_MARKERS)
    ]


def title_cell(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The first cell, which must be the markdown title (``# Title``)."""
    if (
        not nb.cells
        or nb.cells[0].cell_type != "markdown"
        or not nb.cells[0].source.startswith("# ")
    ):
        raise ValueError("the first cell must be the markdown title cell ('# Title')")
    return nb.cells[0]


def student_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student notebook: no solutions, no outputs, a note after the title, the
    Colab badge opening the student edition (``colab/student/``)."""
    out = without_solutions(nb)
    title = title_cell(out)
    for cell in out.cells:
        clear_outputs(cell)
    title.source = link_edition(title.source, "student")
    note = nbformat.v4.new_markdown_cell(student_note())
    note.id = STUDENT_NOTE_ID
    out.cells.insert(1, note)
    out.metadata.pop("widgets", None)
    return out
