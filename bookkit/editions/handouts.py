"""The nbgrader hand-outs: each chapter's exercises as an nbgrader *source* notebook.

``bookkit.autograde`` releases them with nbgrader (``make assignments``; the committed
copies in ``colab/handouts/`` are what Colab opens) and grades the students' work
(``make autograde``). A hand-out is the chapter cut to what its exercises need: the
setup cell, the chapter's ``export`` cells (imports and definitions, folded), then the
"Exercises" section (a chapter whose exercises sit inside the text, like Chapter 12's
lab, keeps the whole notebook). Its Markdown is the CommonMark of the Colab editions
(``bookkit.editions.colab``): numbered titles and links, no MyST. In it

- each stub is an nbgrader *answer* cell: students write there; the instructor's
  solution follows it between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` in the
  source, so the release shows the stub only;
- each ``exercise-check`` cell is an *autograder test* cell, read-only. In the source it
  first grades the exercise (``bookkit.grading.grade``) inside nbgrader's hidden-test
  block, which no release contains: the modules the checks use restored
  (``bookkit.guard``), the chapter's imports and checks defined again, the chapter's
  solution as the reference, the chapter's hidden cases; then the visible check runs,
  as the student saw it;
- each exercise with a written part (a derivation, a decision, a "why"; the instructor
  page's table) gets a Markdown answer cell graded by hand with the rubric;
- every other code cell (setup, definitions, the checks' definitions) is read-only.

Points (``bookkit.course``): an exercise's weight is its minutes, shared between the
checks, the code read by a person and the written answer.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from bookkit.chapters import chapter, page_paths
from bookkit.config import student_site_url
from bookkit.course import CourseExercise, course_exercises
from bookkit.editions.colab import Converter, make_book
from bookkit.notebook import (
    CHECK,
    EXPORT,
    HIDDEN_CASES,
    KERNELSPEC,
    SETUP,
    clear_outputs,
    is_solution,
    read,
    tags,
)

EXERCISES_HEADING = re.compile(r"^## Exercises", re.M)
EXERCISE = re.compile(
    r"^\s*(?:`{3,}|:{3,})\{exercise(?:-start)?\}\s*(?P<title>.*)$"
    r"(?P<options>(?:\n\s*:.*)*)",
    re.M,
)
LABEL = re.compile(r"^\s*:label:\s*(\S+)", re.M)
NUMBER = re.compile(r"^(\d+\.\d+)")
STUB = re.compile(r"raise\s+NotImplementedError\(")
CALL = re.compile(r"^\s*(check_\w+)\((\w+)\)\s*$", re.M)
# A cell that defines exercise checks or the feedback machinery they use.
CHECK_DEFINITION = re.compile(
    r"^(?:def (?:_?check_\w+)\(|class ExerciseCheck\b)|ExerciseCheck\(", re.M
)
IMPORTS = re.compile(r"^(?:import|from) \w", re.M)
ASSIGNMENT_NOTE = """\
> **Hand-in notebook.** The exercises of this chapter, with the chapter's definitions
> folded above them (run every cell from the top). Read the chapter on the
> [course's student site]({site}) or in your student notebook. Write each function in
> the cell of its stub (replace the `raise NotImplementedError`), then run the check
> below it; write each derivation or decision in the answer cell under its exercise.
> The check cells are read-only: when your notebook is graded, every check runs as it
> is here, on more inputs than it shows, whatever the notebook does to it. Hand in this
> notebook, under its own name."""
WRITTEN_ANSWER = "YOUR ANSWER HERE"


def nbgrader(cell: nbformat.NotebookNode, grade_id: str, *, grade: bool = False,
             solution: bool = False, locked: bool = False,
             points: float = 0.0) -> None:
    meta = {"grade": grade, "solution": solution, "locked": locked,
            "grade_id": grade_id, "schema_version": 3, "task": False}
    if grade:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta


@dataclass
class Exercise:
    number: str  # "3.2"
    label: str  # "ex-03-which-h"
    stub: int  # index of the stub cell in the instructor notebook
    solutions: list[int]  # solution code cells
    hidden: list[int]  # hidden-cases cells
    check: int  # the exercise-check cell

    def names(self, nb: nbformat.NotebookNode) -> tuple[str, str]:
        """(check function, function the student writes) of the check cell."""
        found = CALL.search(nb.cells[self.check].source)
        if not found:
            raise ValueError(
                f"Exercise {self.number}: its check cell must be one call "
                "check_<name>(<name>)"
            )
        return found[1], found[2]


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
        after = [j for j in between if stubs and j > stubs[-1]]
        solutions = [j for j in after if nb.cells[j].cell_type == "code"
                     and is_solution(nb.cells[j])
                     and HIDDEN_CASES not in tags(nb.cells[j])]
        hidden = [j for j in after if HIDDEN_CASES in tags(nb.cells[j])]
        if directive is None or not stubs or not solutions:
            raise ValueError(f"{name}, cell {k}: a check needs an exercise, a stub "
                             "and a solution before it")
        label = LABEL.search(directive["options"])
        number = NUMBER.match(directive["title"])
        found.append(Exercise(number[1] if number else "?",
                              label[1] if label else f"cell-{k}",
                              stubs[-1], solutions, hidden, k))
        previous, directive = k + 1, None
    return found


def definitions(source: str) -> str:
    """The imports, functions and classes of a solution, without the demonstration
    around them (which may use names of the chapter's text the hand-out leaves out)."""
    kinds = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef,
             ast.ClassDef)
    tree = ast.parse(source)
    kept = [ast.get_source_segment(source, node, padded=True) for node in tree.body
            if isinstance(node, kinds)]
    decorated = [node for node in tree.body if isinstance(node, kinds[2:])
                 and node.decorator_list]
    if decorated:  # get_source_segment leaves decorators out
        raise ValueError("a solution's function has a decorator: unsupported")
    return "\n\n\n".join(kept)


def grading_block(nb: nbformat.NotebookNode, exercise: Exercise) -> str:
    """The hidden-test block of a check cell: grade the exercise as the book does."""
    check, name = exercise.names(nb)
    code = [c for c in nb.cells if c.cell_type == "code" and EXPORT in tags(c)]
    imports = [c.source for c in code if IMPORTS.search(c.source)
               and not CHECK_DEFINITION.search(c.source)]
    checks = [c.source for c in code if CHECK_DEFINITION.search(c.source)]
    solution = definitions("\n\n".join(nb.cells[j].source for j in exercise.solutions))
    hidden = "\n\n".join(nb.cells[j].source for j in exercise.hidden)
    cases = f"hidden_cases_{name}" if hidden else "None"
    return "\n".join([
        "### BEGIN HIDDEN TESTS",
        "# Graded as the book grades it (bookkit.grading): the modules restored, the",
        "# chapter's imports and checks again, its solution as the reference.",
        "from bookkit import guard as _book_guard",
        "_book_guard.restore()",
        *imports, *checks,
        "from bookkit import grading as _book_grading",
        "_book_space = dict(globals())",
        f"exec({solution!r}, _book_space)",
        *([hidden] if hidden else []),
        f"_book_grading.grade({check}, {name}, _book_space[{name!r}], {cases})",
        "### END HIDDEN TESTS",
    ])


def written_cell(exercise: CourseExercise, points: float) -> nbformat.NotebookNode:
    """The answer cell of an exercise's written part, graded by hand."""
    cell = nbformat.v4.new_markdown_cell(
        f"**Your answer to Exercise {exercise.number}** (graded by hand; "
        f"{points:g} points). Replace this text.\n\n{WRITTEN_ANSWER}"
    )
    cell.id = f"written-{exercise.label}"[:64]
    nbgrader(cell, f"written-{exercise.label}", grade=True, solution=True,
             points=points)
    return cell


def weights(exercise: CourseExercise | None, checked: bool) -> dict[str, float]:
    """Points of each part of an exercise (see the module docstring)."""
    if exercise is None:
        return {"checks": 1.0, "code": 0.0, "written": 0.0}
    return {part: round(share * exercise.minutes, 2)
            for part, share in exercise.shares(checked).items()}


def assignment_source(path: Path) -> nbformat.NotebookNode:
    """The nbgrader source notebook of one chapter (solutions inside the answers)."""
    nb = read(path)
    found = exercises(nb, path.name)
    stub_of = {e.stub: e for e in found}
    check_of = {e.check: e for e in found}
    checked = {e.label for e in found}
    table = {e.label: e for e in course_exercises().values()}
    start = next((k for k, c in enumerate(nb.cells) if c.cell_type == "markdown"
                  and EXERCISES_HEADING.search(c.source)), None)
    quick = start is not None and all(e.stub > start for e in found)
    site = student_site_url()  # a hand-out is for students: no link to the answers
    converter = Converter(make_book({p: read(p) for p in page_paths()}, site),
                          chapter(path.stem).number)
    cells = []
    for k, cell in enumerate(nb.cells):
        text = converter.convert(cell.source) if cell.cell_type == "markdown" else ""
        if is_solution(cell):
            continue
        kept = {EXPORT, SETUP} & set(tags(cell))
        needed = cell.cell_type == "code" and kept
        if quick and 0 < k < start and not needed:
            continue
        cell = nbformat.from_dict(cell)
        clear_outputs(cell)
        if cell.cell_type == "markdown":
            cell.source = text
        if k == 0:  # the title, without the Colab badge (the note says what this is)
            title = cell.source.split("\n", 1)[0]
            cell.source = f"{title}: exercises\n\n{ASSIGNMENT_NOTE.format(site=site)}"
        elif k in stub_of:
            exercise = stub_of[k]
            solution = "\n\n".join(nb.cells[j].source for j in exercise.solutions)
            cell.source = (f"{cell.source}\n### BEGIN SOLUTION\n{solution}\n"
                           "### END SOLUTION")
            nbgrader(cell, f"answer-{exercise.label}", solution=True)
        elif k in check_of:
            exercise = check_of[k]
            points = weights(table.get(exercise.label), True)["checks"]
            cell.source = f"{grading_block(nb, exercise)}\n{cell.source}"
            nbgrader(cell, f"check-{exercise.label}", grade=True, locked=True,
                     points=points)
        elif cell.cell_type == "code":
            nbgrader(cell, f"locked-{cell.get('id', k)}", locked=True)
            if quick and k < start:
                cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
        cells.append(cell)
        match = EXERCISE.search(nb.cells[k].source) if k else None
        label = LABEL.search(match["options"]) if match else None
        written = table.get(label[1]) if label else None
        if written is not None and written.written:
            points = weights(written, written.label in checked)["written"]
            cells.append(written_cell(written, points))
    out = nbformat.v4.new_notebook(cells=cells, metadata=nb.metadata)
    out.metadata.pop("widgets", None)
    out.metadata.pop("book", None)
    out.metadata["kernelspec"] = dict(KERNELSPEC)
    return out


def release(source: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """What nbgrader releases from a source notebook: solutions and hidden tests
    cleared, read-only cells locked, checksums computed (its generate_assignment steps
    that need no gradebook, in its order). Committed in ``colab/handouts/``: what Colab
    opens, and what the grader recognises as the hand-out."""
    from nbgrader.preprocessors import (
        CheckCellMetadata,
        ClearHiddenTests,
        ClearMarkScheme,
        ClearOutput,
        ClearSolutions,
        ComputeChecksums,
        LockCells,
    )

    nb, resources = nbformat.from_dict(source), {}
    steps = [LockCells(), ClearSolutions(code_stub={"python": ""}), ClearOutput(),
             CheckCellMetadata(), ComputeChecksums(), ClearHiddenTests(),
             ClearMarkScheme(), ComputeChecksums(), CheckCellMetadata()]
    for step in steps:
        nb, resources = step.preprocess(nb, resources)
    return nb


def write_handouts(check: bool = False) -> list[str]:
    """Write (or with ``check``, compare) every chapter's hand-out in
    ``colab/handouts/``; return what was stale."""
    from bookkit.chapters import chapters
    from bookkit.notebook import notebook_bytes
    from bookkit.paths import COLAB_HANDOUTS, ROOT

    stale, wanted = [], set()
    for page in chapters():
        target = COLAB_HANDOUTS / page.name
        wanted.add(target)
        data = notebook_bytes(release(assignment_source(page.path)))
        if not target.is_file() or target.read_bytes() != data:
            stale.append(f"{target.relative_to(ROOT)}: stale hand-out")
            if not check:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
    for extra in sorted(set(COLAB_HANDOUTS.glob("*.ipynb")) - wanted):
        stale.append(f"{extra.relative_to(ROOT)}: no chapter of that name")
        if not check:
            extra.unlink()
    return stale
