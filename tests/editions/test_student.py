"""Student notebooks and exercises.

- `bookkit/editions/student.py` removes every solution and keeps everything else;
- each student notebook, run alone as a learner would, raises only the stubs'
  NotImplementedError, only in `exercise-check` cells, and every such cell raises it. To
  run each chapter's heavy cells once per `make test`, the run is *quick*: the setup and
  `export` cells, then everything from the "## Exercises" heading on. The cells it skips
  are identical to the instructor notebook's, which the build executed cleanly
  (tests/site/test_notebooks.py), because no solution precedes the exercises (checked
  here). If the quick run shows any other error (an exercise needs earlier state), the
  whole student notebook runs instead;
- every chapter has at least three exercises, and every coding exercise has a stub,
  solution cells and then its check;
- in the executed instructor notebooks of the book build, every check passes.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from bookkit.chapters import notebook_paths
from bookkit.editions.student import write_students
from bookkit.notebook import (
    CHECK,
    SOLUTION,
    STUDENT_NOTE_MARK,
    is_solution,
    read,
    student_notebook,
    tags,
)
from bookkit.paths import EXECUTED, ROOT
from bookkit.run import RunResult, execute_notebook, execute_standalone

PATHS = notebook_paths()
IDS = [p.stem for p in PATHS]
EXERCISE = re.compile(r"^\s*(`{3,}|:{3,})\{(exercise|exercise-start)\}", re.M)
STUB = re.compile(r"raise\s+NotImplementedError\(")


def check_cells(nb: nbformat.NotebookNode) -> list[int]:
    return [k for k, c in enumerate(nb.cells) if CHECK in tags(c)]


def source_head(cell: nbformat.NotebookNode) -> str:
    return cell.source.strip().split("\n")[0][:80]


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The student notebooks, written once for this module."""
    out = tmp_path_factory.mktemp("student")
    written = write_students(out, PATHS)
    assert len(written) == len(PATHS)
    return out


EXERCISES_HEADING = re.compile(r"^## Exercises", re.M)


def exercises_start(nb: nbformat.NotebookNode) -> int | None:
    """Index of the markdown cell that opens the exercises section."""
    return next(
        (
            k
            for k, c in enumerate(nb.cells)
            if c.cell_type == "markdown" and EXERCISES_HEADING.search(c.source)
        ),
        None,
    )


def quick_version(nb: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
    """Setup and ``export`` cells, then the exercises; None if that is not enough."""
    start = exercises_start(nb)
    if start is None or any(
        {SOLUTION, CHECK} & set(tags(c)) for c in nb.cells[:start]
    ):
        return None  # exercises inside the text (Chapter 12's lab): run it whole
    quick = nbformat.from_dict(nb)
    quick.cells = [
        c
        for k, c in enumerate(nb.cells)
        if k >= start
        or (c.cell_type == "code" and {"export", "remove-cell"} & set(tags(c)))
    ]
    return quick


def unexpected_errors(run: RunResult) -> list[tuple[int, str, str]]:
    """Errors other than a stub's NotImplementedError in an exercise-check cell."""
    return [
        (k, ename, source_head(run.notebook.cells[k]))
        for k, ename, _ in run.errors
        if CHECK not in tags(run.notebook.cells[k])
        or ename != "NotImplementedError"
    ]


class StudentRuns(dict):
    """Student notebooks executed alone in an empty folder, errors allowed; each runs at
    most once per module, when a test first asks for it (so `-k 03_` runs only chapter
    3). Quick runs (see the module docstring) unless that leaves other errors."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder

    def __missing__(self, stem: str) -> RunResult:
        path = self.folder / f"{stem}.ipynb"
        quick = quick_version(read(path))
        run = None
        if quick is not None:
            run = execute_notebook(quick, path.name, allow_errors=True)
        if run is None or unexpected_errors(run) or run.stderr:
            run = execute_standalone(path, allow_errors=True)  # the whole notebook
        self[stem] = run
        return run


@pytest.fixture(scope="module")
def student_runs(student_dir: Path) -> StudentRuns:
    """The runs of every student notebook, shared by all tests of this module."""
    return StudentRuns(student_dir)


# --------------------------------------------------------------------------- the
# generator


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_student_version_drops_solutions_only(path: Path, student_dir: Path) -> None:
    original = read(path)
    student = read(student_dir / path.name)
    assert not [k for k, c in enumerate(student.cells) if is_solution(c)]
    for k, cell in enumerate(student.cells):
        for marker in ("{solution}", "{solution-start}", "{solution-end}"):
            assert marker not in cell.source, (
                f"cell {k} still holds {marker}: {source_head(cell)!r}"
            )
    title = student.cells[0].source  # its Colab badge opens the student edition
    assert f"/colab/student/{path.name}" in title, "the badge must open colab/student/"
    title = title.replace("/colab/student/", "/colab/")
    assert title == original.cells[0].source, "the title cell must come first"
    assert STUDENT_NOTE_MARK in student.cells[1].source, (
        "the student note must follow the title"
    )
    kept = [c.source for c in original.cells if not is_solution(c)]
    assert [title] + [c.source for c in student.cells[2:]] == kept, (
        "cells other than solutions were changed, dropped or reordered"
    )
    for k, cell in enumerate(student.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"cell {k} has outputs"
            )


def test_edited_student_notebook_is_not_overwritten(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# Title\n\n<!-- colab-badge -->"),
            nbformat.v4.new_code_cell("x = 1"),
            nbformat.v4.new_code_cell("x = 2", metadata={"tags": [SOLUTION]}),
        ]
    )
    source = tmp_path / "src" / "01_demo.ipynb"
    source.parent.mkdir()
    nbformat.write(nb, source)
    out = tmp_path / "student"
    assert write_students(out, [source]) == [out / source.name]
    assert write_students(out, [source]) == [out / source.name], (
        "an untouched copy is refreshed"
    )
    target = out / source.name
    edited = read(target)
    edited.cells[2].source = "x = 'my work'"
    nbformat.write(edited, target)
    assert write_students(out, [source]) == [], (
        "an edited student notebook must be kept"
    )
    assert "my work" in target.read_text()
    assert write_students(out, [source], force=True) == [target]
    assert "my work" not in target.read_text()


def test_untagged_solution_directive_is_refused(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# Title"),
            nbformat.v4.new_markdown_cell(
                "````{solution} ex-01-x\n:class: dropdown\n\nAnswer.\n````"
            ),
        ]
    )
    source = tmp_path / "01_demo.ipynb"
    nbformat.write(nb, source)
    with pytest.raises(ValueError, match="not tagged 'solution'"):
        write_students(tmp_path / "student", [source])


def test_title_cell_is_required() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    with pytest.raises(ValueError, match="title cell"):
        student_notebook(nb)


# --------------------------------------------------------------------------- exercise
# format


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_at_least_three_exercises(path: Path) -> None:
    nb = read(path)
    count = sum(
        len(EXERCISE.findall(c.source)) for c in nb.cells if c.cell_type == "markdown"
    )
    assert count >= 3, (
        f"{path.name} has {count} exercises; every chapter needs at least 3"
    )


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_every_check_follows_a_stub_and_its_solution(path: Path) -> None:
    nb = read(path)
    previous = 0
    for k in check_cells(nb):
        between = nb.cells[previous:k]
        where = f"{path.name}, exercise-check cell {k} ({source_head(nb.cells[k])!r})"
        assert is_solution(nb.cells[k - 1]), (
            f"{where}: the cell before it must be a solution (or its hidden cases)"
        )
        assert any(
            c.cell_type == "code" and SOLUTION in tags(c) for c in between
        ), f"{where}: no solution code cell before it"
        assert any(
            c.cell_type == "code"
            and not is_solution(c)
            and STUB.search(c.source)
            for c in between
        ), f"{where}: no stub raising NotImplementedError before it"
        assert any(
            c.cell_type == "markdown" and EXERCISE.search(c.source) for c in between
        ), f"{where}: no exercise directive before it"
        assert nb.cells[k].cell_type == "code" and "check_" in nb.cells[k].source, (
            f"{where}: an exercise-check cell calls a check_<name> function"
        )
        previous = k + 1


# --------------------------------------------------------------------------- running
# them


@pytest.mark.site
@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_student_notebook_raises_only_in_checks(
    path: Path, student_dir: Path, student_runs: StudentRuns
) -> None:
    run = student_runs[path.stem]
    nb = run.notebook  # the cells that ran (quick or whole)
    unexpected = unexpected_errors(run)
    assert not unexpected, (
        f"{path.name} (student version): errors other than the stubs' "
        f"NotImplementedError in exercise-check cells: {unexpected}"
    )
    checks = set(check_cells(nb))
    assert len(checks) == len(check_cells(read(student_dir / path.name))), (
        f"{path.name}: the run lost exercise-check cells"
    )
    raised = {k for k, _, _ in run.errors}
    silent = [(k, source_head(nb.cells[k])) for k in sorted(checks - raised)]
    assert not silent, (
        f"{path.name} (student version): these checks did not raise "
        f"NotImplementedError, so a stub is missing or already solved: {silent}"
    )
    for k in checks:
        errors = [o for o in nb.cells[k].outputs if o.output_type == "error"]
        assert errors[0].evalue.startswith("Exercise"), (
            f"{path.name}: cell {k} raised NotImplementedError({errors[0].evalue!r}); "
            "stubs say "
            'NotImplementedError("Exercise N.k: ...")'
        )
    assert not run.stderr, (
        f"{path.name} (student version) wrote to stderr: {run.stderr}"
    )


def test_quick_version_keeps_what_a_student_runs() -> None:
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# Title"),
            nbformat.v4.new_code_cell("setup", metadata={"tags": ["remove-cell"]}),
            nbformat.v4.new_code_cell("def f(): pass", metadata={"tags": ["export"]}),
            nbformat.v4.new_code_cell("heavy()"),
            nbformat.v4.new_markdown_cell("## Exercises"),
            nbformat.v4.new_code_cell("check_f(f)", metadata={"tags": [CHECK]}),
        ]
    )
    quick = quick_version(nb)
    assert [c.source for c in quick.cells] == [
        "setup",
        "def f(): pass",
        "## Exercises",
        "check_f(f)",
    ]
    nb.cells.insert(
        3, nbformat.v4.new_code_cell("x", metadata={"tags": [SOLUTION]})
    )
    assert quick_version(nb) is None, "a solution before the exercises: run everything"


@pytest.mark.site
@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_solutions_pass_their_checks(path: Path) -> None:
    executed = EXECUTED / "notebooks" / path.name
    if not executed.is_file():
        pytest.skip(
            f"no executed notebook at {executed}: run `make book` (make test does) "
            "to check "
            "the solutions against their checks"
        )
    nb = read(executed)
    checks = check_cells(nb)
    assert checks == check_cells(read(path)), (
        f"{executed} is stale: run `make book` again"
    )
    for k in checks:
        outputs = nb.cells[k].outputs
        errors = [f"{o.ename}: {o.evalue}" for o in outputs if o.output_type == "error"]
        assert not errors, (
            f"{path.name}, cell {k}: the solution fails its check: {errors}"
        )
        text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
        assert "checks passed" in text.lower(), (
            f"{path.name}, cell {k} ({source_head(nb.cells[k])!r}) printed {text!r}, "
            "expected 'All N checks passed.'"
        )


# Chapters 1-7 use the shared ExerciseCheck helper; Part IV chapters are to follow.
CHECKED = [p for p in PATHS if int(p.stem[:2]) <= 7]


@pytest.mark.parametrize("path", CHECKED, ids=[p.stem for p in CHECKED])
def test_check_definitions_are_folded_and_out_of_the_way(path: Path) -> None:
    """Check functions hide their expected answers: each cell defining one is an
    `export` cell folded on the site (`hide-input`) and in JupyterLab (`source_hidden`),
    placed before the chapter's first exercise, never between a stub and its check."""
    nb = read(path)
    first_exercise = next(
        k
        for k, c in enumerate(nb.cells)
        if c.cell_type == "markdown" and EXERCISE.search(c.source)
    )
    defined = set()
    for k, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "ExerciseCheck(" not in cell.source:
            continue
        where = f"{path.name}, cell {k} ({source_head(cell)!r})"
        assert {"export", "hide-input"} <= set(tags(cell)), (
            f"{where}: tag it export and hide-input"
        )
        assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, (
            f"{where}: set metadata jupyter.source_hidden = true"
        )
        assert k < first_exercise, f"{where}: define checks before the first exercise"
        defined.update(re.findall(r"^def (check_\w+)\(", cell.source, re.M))
    called = {
        re.match(r"\s*(check_\w+)\(", nb.cells[k].source).group(1)
        for k in check_cells(nb)
    }
    assert called <= defined, (
        f"{path.name}: checks {sorted(called - defined)} are not folded checks"
    )


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_colab_student_edition_folds_the_checks(path: Path) -> None:
    """Colab ignores ``jupyter.source_hidden``; it folds forms (``cellView: "form"``).
    Every cell folded in the student notebook (the check definitions among them) is a
    form with a title in the Colab student edition."""
    colab = read(ROOT / "colab" / "student" / path.name)
    folded = [
        c
        for c in student_notebook(read(path)).cells
        if c.cell_type == "code" and c.metadata.get("jupyter", {}).get("source_hidden")
    ]
    forms = {
        c.source.split("\n", 1)[1]: c
        for c in colab.cells
        if c.cell_type == "code" and c.metadata.get("cellView") == "form"
    }
    assert folded, f"{path.name}: no folded cell (the check definitions are folded)"
    for cell in folded:
        assert cell.source in forms, (
            f"{path.name}: the folded cell {source_head(cell)!r} is not a Colab form "
            "in colab/student/: run make sync"
        )
        assert forms[cell.source].source.startswith("# @title ")


def test_student_site_address_is_configurable(monkeypatch) -> None:
    """course.student_site in _config.yml sets the student site (a slash added);
    without it the default; the student notebook's note links it, not the website."""
    from bookkit import config, notebook

    assert config.student_site_url() == (
        config.book_config()["course"]["student_site"].rstrip("/") + "/")
    monkeypatch.setattr(config, "book_config", lambda: {
        "course": {"student_site": "https://course.example.org/rope"}})
    assert config.student_site_url() == "https://course.example.org/rope/"
    note = notebook.student_note()
    assert "](https://course.example.org/rope/)" in note
    assert "https://course.example.org/rope/book/course/running.html" in note
    assert "website" not in note and "drop-down" not in note
    monkeypatch.setattr(config, "book_config", lambda: {"html": {}})
    assert config.student_site_url() == config.DEFAULT_STUDENT_SITE
    monkeypatch.setattr(config, "book_config", lambda: {
        "course": {"student_site": "http://insecure.example.org/"}})
    with pytest.raises(ValueError, match="course.student_site"):
        config.student_site_url()
