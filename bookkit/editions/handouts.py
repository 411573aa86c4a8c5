"""The nbgrader hand-outs: each chapter's exercises as an nbgrader *source* notebook.

``bookkit.autograde`` releases them with nbgrader (``make assignments``) and grades the
students' work (``make autograde``). A hand-out is the chapter's student notebook cut to
what the exercises need: the setup cell, the chapter's ``export`` cells (imports and
definitions, folded), then the "Exercises" section (a chapter whose exercises sit inside
the text, like Chapter 12's lab, keeps the whole notebook). In it

- each stub is an nbgrader *answer* cell (``solution``): students write there; the
  instructor's solution follows it between ``### BEGIN SOLUTION`` and ``### END
  SOLUTION`` in the source, so the release shows the stub only;
- each ``exercise-check`` cell is an *autograder test* cell, read-only; in the source it
  first re-runs the cells that define the checks (hidden tests, ``### BEGIN HIDDEN
  TESTS``), which nbgrader removes from the release and restores at grading: a check
  redefined anywhere in the notebook is the book's check again;
- every other code cell (setup, definitions, the checks' definitions) is read-only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from bookkit.notebook import (
    CHECK,
    EXPORT,
    KERNELSPEC,
    SETUP,
    clear_outputs,
    is_solution,
    read,
    tags,
)

POINTS = 1
EXERCISES_HEADING = re.compile(r"^## Exercises", re.M)
EXERCISE = re.compile(
    r"^\s*(?:`{3,}|:{3,})\{exercise(?:-start)?\}\s*(?P<title>.*)$(?P<options>(?:\n\s*:.*)*)",
    re.M,
)
LABEL = re.compile(r"^\s*:label:\s*(\S+)", re.M)
NUMBER = re.compile(r"^(\d+\.\d+)")
STUB = re.compile(r"raise\s+NotImplementedError\(")
# A cell that defines exercise checks or the feedback machinery they use.
CHECK_DEFINITION = re.compile(
    r"^(?:def (?:_?check_\w+)\(|class ExerciseCheck\b)|ExerciseCheck\(", re.M
)
ASSIGNMENT_NOTE = """\
> **Hand-in notebook.** The exercises of this chapter, with the chapter's definitions
> folded above them (run every cell from the top). Read the chapter on the book's
> website or in your student notebook. Write each function in the cell of its stub
> (replace the `raise NotImplementedError`), then run the check below it. The check
> cells are read-only: when your notebook is graded, every check runs as it is
> here, whatever the notebook does to it."""


def nbgrader(cell: nbformat.NotebookNode, grade_id: str, *, grade: bool = False,
             solution: bool = False, locked: bool = False) -> None:
    meta = {"grade": grade, "solution": solution, "locked": locked,
            "grade_id": grade_id, "schema_version": 3, "task": False}
    if grade:
        meta["points"] = POINTS
    cell.metadata["nbgrader"] = meta


@dataclass
class Exercise:
    number: str  # "3.2"
    label: str  # "ex-03-which-h"
    stub: int  # index of the stub cell in the instructor notebook
    solutions: list[int]  # solution code cells
    check: int  # the exercise-check cell


def exercises(nb: nbformat.NotebookNode, name: str) -> list[Exercise]:
    """The checked exercises of an instructor notebook, in order."""
    found, previous, directive = [], 0, None
    for k, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and (match := EXERCISE.search(cell.source)):
            directive = match
        if CHECK not in tags(cell):
            continue
        between = range(previous, k)
        stubs = [j for j in between if nb.cells[j].cell_type == "code"
                 and not is_solution(nb.cells[j])
                 and STUB.search(nb.cells[j].source)]
        # The solution code after the stub (a derivation's illustration before it is
        # not part of this exercise's answer).
        solutions = [j for j in between if nb.cells[j].cell_type == "code"
                     and is_solution(nb.cells[j]) and stubs and j > stubs[-1]]
        if directive is None or not stubs or not solutions:
            raise ValueError(f"{name}, cell {k}: a check needs an exercise, a stub "
                             "and a solution before it")
        label = LABEL.search(directive["options"])
        number = NUMBER.match(directive["title"])
        found.append(Exercise(number[1] if number else "?",
                              label[1] if label else f"cell-{k}",
                              stubs[-1], solutions, k))
        previous, directive = k + 1, None
    return found


def assignment_source(path: Path) -> nbformat.NotebookNode:
    """The nbgrader source notebook of one chapter (solutions inside the answers)."""
    nb = read(path)
    found = exercises(nb, path.name)
    stub_of = {e.stub: e for e in found}
    check_of = {e.check: e for e in found}
    start = next((k for k, c in enumerate(nb.cells) if c.cell_type == "markdown"
                  and EXERCISES_HEADING.search(c.source)), None)
    quick = start is not None and all(e.stub > start for e in found)
    definitions = "\n\n".join(
        c.source for c in nb.cells
        if c.cell_type == "code" and EXPORT in tags(c)
        and CHECK_DEFINITION.search(c.source))
    cells = []
    for k, cell in enumerate(nb.cells):
        if is_solution(cell):
            continue
        kept = {EXPORT, SETUP} & set(tags(cell))
        needed = cell.cell_type == "code" and kept
        if quick and 0 < k < start and not needed:
            continue
        cell = nbformat.from_dict(cell)
        clear_outputs(cell)
        if k == 0:  # the title, without the Colab badge (this is not a Colab edition)
            title = cell.source.split("\n", 1)[0]
            cell.source = f"{title}: exercises\n\n{ASSIGNMENT_NOTE}"
        elif k in stub_of:
            exercise = stub_of[k]
            solution = "\n\n".join(nb.cells[j].source for j in exercise.solutions)
            cell.source = (f"{cell.source}\n### BEGIN SOLUTION\n{solution}\n"
                           "### END SOLUTION")
            nbgrader(cell, f"answer-{exercise.label}", solution=True)
        elif k in check_of:
            exercise = check_of[k]
            cell.source = ("### BEGIN HIDDEN TESTS\n"
                           "# The book's checks, whatever the notebook did to them:\n"
                           f"{definitions}\n### END HIDDEN TESTS\n{cell.source}")
            nbgrader(cell, f"check-{exercise.label}", grade=True, locked=True)
        elif cell.cell_type == "code":
            nbgrader(cell, f"locked-{cell.get('id', k)}", locked=True)
            if quick and k < start:
                cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
        cells.append(cell)
    out = nbformat.v4.new_notebook(cells=cells, metadata=nb.metadata)
    out.metadata.pop("widgets", None)
    out.metadata["kernelspec"] = dict(KERNELSPEC)
    return out
