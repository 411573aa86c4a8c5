"""Autograding (bookkit/autograde.py, nbgrader), end to end on Chapter 3's exercises.

One course, three submissions of the released notebook, one batch run to a CSV:

- *correct*: the chapter's own solutions in the answer cells: full marks;
- *wrong*: plausible mistakes (3.2 keeps the 2 x 2 blocks whole, 3.3 returns the
  identity): no points, and the feedback names the mistake;
- *tampered*: the same wrong answers, with 3.2's check cell deleted and
  `check_relative_part` redefined in the answer cell to print a pass, 3.3's check cell
  edited to print a pass, and the feedback machinery (`ExerciseCheck`) made to pass
  everything in its read-only cell: no points, each tampering reported.

Offline. The three submissions run in nbgrader's kernels (about a minute under load),
so these tests are marked `site`: `make test` runs them, `make check` does not. The
structural tests of every chapter's assignment need no kernel (`unit`).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import nbformat
import pytest

from bookkit import autograde
from bookkit import leaks as solution_leaks
from bookkit.chapters import notebook_paths
from bookkit.notebook import CHECK, SOLUTION, WITHHELD_PAGES, read, tags

CHAPTER = next(p for p in notebook_paths() if p.name.startswith("03_"))
WRONG = {
    "answer-ex-03-which-h": (
        "def relative_part(H: np.ndarray) -> np.ndarray:\n"
        "    return np.asarray(H, dtype=float)  # the whole blocks\n"
    ),
    "answer-ex-03-layout-permutation": (
        "def layout_permutation(d: int) -> np.ndarray:\n"
        "    return np.arange(d)  # the identity\n"
    ),
}
FAKE_PASS = 'print("All 9 checks passed.")'


def grade_id(cell: nbformat.NotebookNode) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def answered(release: nbformat.NotebookNode, answers: dict[str, str]):
    nb = nbformat.from_dict(release)
    for cell in nb.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    return nb


def tampered(release: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb = answered(release, WRONG)
    cells = []
    for cell in nb.cells:
        gid = grade_id(cell) or ""
        if gid == "check-ex-03-which-h":
            continue  # deleted
        if gid == "check-ex-03-layout-permutation":
            cell.source = FAKE_PASS  # edited
        if "class ExerciseCheck" in cell.source:  # a read-only cell, made to pass
            cell.source += "\n\nExerciseCheck.fail = lambda self, *a, **k: None\n"
        if gid == "answer-ex-03-which-h":  # a check of one's own, above the check
            cell.source += (
                "\n\ndef check_relative_part(candidate):\n"
                '    print("All 4 checks passed.")\n'
            )
        cells.append(cell)
    nb.cells = cells
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("autograde")
    course = root / "course"
    autograde.generate(course, [CHAPTER])
    release = read(course / "release" / CHAPTER.stem / CHAPTER.name)
    submissions = {
        "correct": autograde.correct_submission(CHAPTER, release),
        "wrong": answered(release, WRONG),
        "tampered": tampered(release),
    }
    for student, nb in submissions.items():
        (root / "in" / student).mkdir(parents=True)
        nbformat.write(nb, root / "in" / student / CHAPTER.name)
    csv_path = root / "grades.csv"
    autograde.grade(root / "in", csv_path, root / "graded")
    with csv_path.open() as handle:
        rows = list(csv.DictReader(handle))
    return {"rows": rows, "release": release, "course": course}


def rows_of(graded: dict, student: str) -> dict[str, dict]:
    return {r["exercise"]: r for r in graded["rows"] if r["student"] == student}


@pytest.mark.site
def test_correct_submission_gets_full_marks(graded: dict) -> None:
    rows = rows_of(graded, "correct")
    assert set(rows) == {"3.2", "3.3", "total"}
    assert rows["total"]["points"] == rows["total"]["max_points"] == "2.0"
    for number in ("3.2", "3.3"):
        assert rows[number]["status"] == "passed"
        assert re.fullmatch(r"All \d+ checks passed\.", rows[number]["feedback"])
        assert rows[number]["tampering"] == ""


@pytest.mark.site
def test_wrong_submission_gets_feedback(graded: dict) -> None:
    rows = rows_of(graded, "wrong")
    assert rows["total"]["points"] == "0.0"
    assert rows["3.2"]["feedback"].startswith("AssertionError: Exercise 3.2")
    assert "kept whole" in rows["3.2"]["feedback"]
    assert rows["3.3"]["feedback"].startswith("AssertionError: Exercise 3.3")
    assert "identity" in rows["3.3"]["feedback"]
    assert all(r["tampering"] == "" for r in rows.values())


@pytest.mark.site
def test_tampered_submission_is_graded_by_the_books_checks(graded: dict) -> None:
    rows, wrong = rows_of(graded, "tampered"), rows_of(graded, "wrong")
    assert rows["total"]["points"] == "0.0", "tampering must not earn points"
    for number in ("3.2", "3.3"):
        assert rows[number]["status"] == "failed"
        assert rows[number]["feedback"] == wrong[number]["feedback"]
    assert "check cell deleted" in rows["3.2"]["tampering"]
    assert "redefines check_relative_part" in rows["3.2"]["tampering"]
    assert "check cell edited" in rows["3.3"]["tampering"]
    assert "read-only cell" in rows["total"]["tampering"]


@pytest.mark.site
def test_release_hides_solutions_and_hidden_tests(graded: dict) -> None:
    release = graded["release"]
    text = "\n".join(c.source for c in release.cells)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    secrets = solution_leaks.fingerprints(WITHHELD_PAGES)
    leaks = solution_leaks.scan(graded["course"] / "release", secrets)
    assert not leaks, solution_leaks.report(leaks)
    checks = [c for c in release.cells if (grade_id(c) or "").startswith("check-")]
    assert [c.source for c in checks] == [
        c.source for c in read(CHAPTER).cells if CHECK in tags(c)
    ]
    assert all(c.metadata["nbgrader"]["locked"] for c in checks)


@pytest.mark.unit
@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_every_chapter_has_an_assignment(path: Path) -> None:
    """One answer cell per stub and one test cell per check, hidden tests inside."""
    source = autograde.assignment_source(path)
    nb = read(path)
    assert not [c for c in source.cells if SOLUTION in tags(c)]
    checks = [c for c in nb.cells if CHECK in tags(c)]
    tests = [c for c in source.cells if (grade_id(c) or "").startswith("check-")]
    answers = [c for c in source.cells if (grade_id(c) or "").startswith("answer-")]
    assert len(tests) == len(answers) == len(checks) > 0
    for test, check in zip(tests, checks, strict=True):
        meta = test.metadata["nbgrader"]
        assert meta["grade"] and meta["locked"] and meta["points"] > 0
        hidden, visible = test.source.split("### END HIDDEN TESTS\n")
        assert visible == check.source
        assert "### BEGIN HIDDEN TESTS" in hidden
        called = re.match(r"\s*(check_\w+)\(", check.source)[1]
        assert f"def {called}(" in hidden, "the hidden tests define the check again"
    for answer in answers:
        assert answer.metadata["nbgrader"]["solution"]
        stub, solution = answer.source.split("\n### BEGIN SOLUTION\n")
        assert "NotImplementedError" in stub and solution.endswith("### END SOLUTION")
    ids = [grade_id(c) for c in source.cells if grade_id(c)]
    assert len(ids) == len(set(ids)), "grade ids are unique"


@pytest.mark.unit
def test_feedback_of_a_test_cell() -> None:
    def cell(*outputs):
        return nbformat.v4.new_code_cell("check_f(f)", outputs=list(outputs))

    stub = nbformat.v4.new_output("error", ename="NotImplementedError",
                                  evalue="Exercise 3.2: write it", traceback=[])
    wrong = nbformat.v4.new_output("error", ename="AssertionError",
                                   evalue="Exercise 3.2, case d = 2:\n  expected 1",
                                   traceback=[])
    passed = nbformat.v4.new_output("stream", name="stdout",
                                    text="All 4 checks passed.\n")
    assert autograde.message(cell(stub)) == (
        "not attempted", "NotImplementedError: Exercise 3.2: write it")
    assert autograde.message(cell(wrong)) == (
        "failed", "AssertionError: Exercise 3.2, case d = 2: expected 1")
    assert autograde.message(cell(passed)) == ("passed", "All 4 checks passed.")
    assert autograde.message(None)[0] == "not run"


@pytest.mark.unit
def test_deleted_checks_go_back_where_they_were() -> None:
    release = autograde.assignment_source(CHAPTER)
    ids = [grade_id(c) for c in release.cells]
    gone = {"answer-ex-03-which-h", "check-ex-03-which-h",
            "check-ex-03-layout-permutation"}
    submitted = nbformat.from_dict(release)
    submitted.cells = [c for c in submitted.cells if grade_id(c) not in gone]
    back = autograde.restore_missing(submitted, release)
    restored = [grade_id(c) for c in back.cells]
    assert [i for i in restored if i] == [
        i for i in ids if i and i != "answer-ex-03-which-h"
    ], "each test cell returns after the nearest nbgrader cell of the release before it"
    after = restored.index("answer-ex-03-layout-permutation") + 1
    assert restored[after] == "check-ex-03-layout-permutation"
    plain = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    restored = autograde.restore_missing(plain, release)
    assert [grade_id(c) for c in restored.cells] == [None] + [
        i for i in ids if (i or "").startswith("check-")
    ]
    notes = autograde.notebook_tampering(plain, release)
    assert notes[0].startswith("not the released notebook")


@pytest.mark.unit
def test_an_answer_holds_only_its_own_solution() -> None:
    """Chapter 6's derivation 6.1 has solution code before 6.2's stub: not 6.2's."""
    path = next(p for p in notebook_paths() if p.name.startswith("06_"))
    nb = read(path)
    found = {e.number: e for e in autograde.exercises(nb, path.name)}
    assert all(j > found["6.2"].stub for j in found["6.2"].solutions)
    assert [nb.cells[j].source for j in found["6.2"].solutions] == [
        c.source for c in nb.cells
        if SOLUTION in tags(c) and c.source.startswith("def convert_qk_weight(")
    ]


@pytest.fixture(scope="module")
def fingerprints() -> solution_leaks.Secrets:
    return solution_leaks.fingerprints(WITHHELD_PAGES)


@pytest.mark.unit
@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_every_hand_out_is_free_of_solutions(
    path: Path, tmp_path: Path, fingerprints: solution_leaks.Secrets
) -> None:
    """nbgrader's release steps (solutions and hidden tests cleared) on each chapter's
    assignment leave no solution text (bookkit/leaks.py) and the stubs as they
    are in the student notebook."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    nb = autograde.assignment_source(path)
    nb, _ = ClearSolutions(code_stub={"python": ""}).preprocess(nb, {})
    nb, _ = ClearHiddenTests().preprocess(nb, {})
    nbformat.write(nb, tmp_path / path.name)
    leaks = solution_leaks.scan(tmp_path, fingerprints)
    assert not leaks, solution_leaks.report(leaks)
    stubs = [c.source for c in nb.cells if (grade_id(c) or "").startswith("answer-")]
    original = read(path)
    assert [s.rstrip("\n") for s in stubs] == [
        original.cells[e.stub].source for e in autograde.exercises(original, path.name)
    ]
