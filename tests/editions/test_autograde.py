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
from bookkit.paths import COLAB_HANDOUTS, COLAB_STUDENT

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


SOLUTION_32 = (
    "def relative_part(H: np.ndarray) -> np.ndarray:\n"
    "    H = np.asarray(H, dtype=np.float64)\n"
    "    if H.ndim != 2 or H.shape[0] != H.shape[1] or H.shape[0] % 2:\n"
    "        raise ValueError('H must be a square matrix with an even size')\n"
    "    out, d = np.zeros_like(H), H.shape[0]\n"
    "    for i in range(0, LIMIT, 2):\n"
    "        re = (H[i, i] + H[i + 1, i + 1]) / 2\n"
    "        im = (H[i + 1, i] - H[i, i + 1]) / 2\n"
    "        out[i, i] = out[i + 1, i + 1] = re\n"
    "        out[i + 1, i], out[i, i + 1] = im, -im\n"
    "    return out\n"
)
# Right for every input, written its own way (a loop, no indexing tricks).
RIGHT = {
    "answer-ex-03-which-h": SOLUTION_32.replace("LIMIT", "d"),
    "answer-ex-03-layout-permutation": (
        "def layout_permutation(d):\n"
        "    if isinstance(d, bool) or not isinstance(d, int) or d <= 0 or d % 2:\n"
        "        raise ValueError('d must be a positive even number')\n"
        "    return np.array([*range(0, d, 2), *range(1, d, 2)])\n"
    ),
}
# Right on the first plane only: some cases pass, others fail.
PARTLY = {"answer-ex-03-which-h": SOLUTION_32.replace("LIMIT", "min(d, 2)")}
# The visible inputs have integer entries: right on them, zeros elsewhere (a lookup
# of the visible cases would behave the same).
LOOKUP = {"answer-ex-03-which-h": SOLUTION_32.replace("LIMIT", "d").replace(
    "    return out\n",
    "    return out if np.array_equal(H, np.round(H)) else np.zeros_like(H)\n")}
# Identity answers, with numpy's and Python's deciders made to agree with anything.
PATCHED = {
    "answer-ex-03-which-h": (
        "import builtins\n\n"
        "np.all = lambda *a, **k: True\n"
        "builtins.abs = lambda v: 0.0\n\n"
        "def relative_part(H):\n    return H\n"
    ),
    "answer-ex-03-layout-permutation": (
        "def layout_permutation(d):\n"
        "    torch.equal = lambda *a: True\n"
        "    return np.arange(d)\n"
    ),
}


def batch(root: Path, name: str, submissions: dict[str, nbformat.NotebookNode],
          course: Path) -> dict[str, dict[tuple[str, str], dict]]:
    """Grade one folder of submissions; rows by student, then (exercise, part)."""
    folder = root / name
    for student, nb in submissions.items():
        (folder / student).mkdir(parents=True)
        nbformat.write(nb, folder / student / CHAPTER.name)
    autograde.grade(folder, folder / "grades.csv", course)
    with (folder / "grades.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    out: dict[str, dict[tuple[str, str], dict]] = {}
    for row in rows:
        out.setdefault(row["student"], {})[(row["exercise"], row["part"])] = row
    return out


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("autograde")
    course = root / "course"
    autograde.generate(course, [CHAPTER])
    release = read(course / "release" / CHAPTER.stem / CHAPTER.name)
    colab = read(COLAB_STUDENT / CHAPTER.name)
    for cell in colab.cells:  # the right answers typed into the Colab student edition
        if cell.cell_type == "code" and "raise NotImplementedError" in cell.source:
            name = re.search(r"def (\w+)\(", cell.source)[1]
            cell.source = {
                "relative_part": RIGHT["answer-ex-03-which-h"],
                "layout_permutation": RIGHT["answer-ex-03-layout-permutation"],
            }[name]
    first = {
        "correct": autograde.correct_submission(CHAPTER, release),
        "right": answered(release, RIGHT),
        "wrong": answered(release, WRONG),
        "tampered": tampered(release),
        "partly": answered(release, PARTLY),
        "lookup": answered(release, LOOKUP),
        "patched": answered(release, PATCHED),
        "colab": colab,
    }
    rows = batch(root, "week1", first, root / "graded" / "week1")
    again = batch(root, "week2", {"late": answered(release, RIGHT)},
                  root / "graded" / "week2")
    return {"rows": rows, "again": again, "release": release, "course": course,
            "root": root}


def rows_of(graded: dict, student: str) -> dict[tuple[str, str], dict]:
    return graded["rows"][student]


def number(text: str) -> float:
    return float(text) if text else 0.0


@pytest.mark.site
def test_correct_submission_gets_full_marks(graded: dict) -> None:
    """The chapter's solutions and a right answer written another way: every check
    point; the written 3.1 is left to a person; the maxima follow the weights (the
    instructor page's minutes: 70 % checks, 30 % code read by a person)."""
    for student in ("correct", "right"):
        rows = rows_of(graded, student)
        assert set(rows) == {("3.1", "written"), ("3.2", "checks"),
                             ("3.3", "checks"), ("total", "")}
        assert rows[("3.2", "checks")]["max_points"] == "17.5"  # 0.7 x 25 minutes
        assert rows[("3.2", "checks")]["review_max"] == "7.5"
        assert rows[("3.3", "checks")]["max_points"] == "10.5"  # 0.7 x 15 minutes
        assert rows[("3.1", "written")]["max_points"] == "20.0"
        assert rows[("3.1", "written")]["points"] == ""
        assert number(rows[("total", "")]["points"]) == 28.0
        assert number(rows[("total", "")]["max_points"]) == 60.0
        for key in (("3.2", "checks"), ("3.3", "checks")):
            assert rows[key]["status"] == "passed"
            assert rows[key]["points"] == rows[key]["max_points"]
            assert re.fullmatch(r"visible (\d+)/\1 hidden (\d+)/\2",
                                rows[key]["cases"]), rows[key]["cases"]
            assert rows[key]["tampering"] == ""


@pytest.mark.site
def test_wrong_submission_gets_feedback(graded: dict) -> None:
    """Mistakes lose the cases they get wrong: the whole blocks (3.2) pass no case; the
    identity (3.3) is right for d = 2 only, a few points of 10.5."""
    rows = rows_of(graded, "wrong")
    assert number(rows[("3.2", "checks")]["points"]) == 0.0
    assert 0 < number(rows[("3.3", "checks")]["points"]) < 0.4 * 10.5
    first, second = rows[("3.2", "checks")], rows[("3.3", "checks")]
    assert first["feedback"].startswith("AssertionError: Exercise 3.2")
    assert "kept whole" in first["feedback"]
    assert second["feedback"].startswith("AssertionError: Exercise 3.3")
    assert "identity" in second["feedback"]
    assert all(r["tampering"] == "" for r in rows.values())


@pytest.mark.site
def test_tampered_submission_is_graded_by_the_books_checks(graded: dict) -> None:
    rows, wrong = rows_of(graded, "tampered"), rows_of(graded, "wrong")
    assert rows[("total", "")]["points"] == wrong[("total", "")]["points"], (
        "tampering earns nothing: the points of the same wrong answers")
    for key in (("3.2", "checks"), ("3.3", "checks")):
        assert rows[key]["status"] == "failed"
        assert rows[key]["feedback"] == wrong[key]["feedback"]
    assert "check cell deleted" in rows[("3.2", "checks")]["tampering"]
    assert "redefines check_relative_part" in rows[("3.2", "checks")]["tampering"]
    assert "check cell edited" in rows[("3.3", "checks")]["tampering"]
    assert "read-only cell" in rows[("total", "")]["tampering"]


@pytest.mark.site
def test_a_partly_correct_answer_gets_partial_points(graded: dict) -> None:
    """Right on the first plane only: the d = 2 case and the ValueError pass, d = 4
    and d = 8 fail; the hidden cases of size 2 agree, the others not."""
    row = rows_of(graded, "partly")[("3.2", "checks")]
    visible, hidden = re.fullmatch(r"visible (\d+/\d+) hidden (\d+/\d+)",
                                   row["cases"]).groups()
    assert visible == "2/4"
    assert 0 < number(row["points"]) < number(row["max_points"])
    assert row["status"] == "failed" and "case d = 4" in row["feedback"]
    assert row["tampering"] == ""


@pytest.mark.site
def test_looking_up_the_visible_cases_earns_nothing_and_is_flagged(
    graded: dict
) -> None:
    row = rows_of(graded, "lookup")[("3.2", "checks")]
    assert row["cases"].startswith("visible 4/4 hidden 0/"), row["cases"]
    assert number(row["points"]) == 0.0
    assert "hidden" in row["tampering"], row["tampering"]


@pytest.mark.site
def test_patching_a_library_earns_nothing_and_is_flagged(graded: dict) -> None:
    """np.all and the built-in abs replaced in an answer cell, torch.equal replaced
    while the check calls the answer: each put back before (or after) the checks,
    each reported, no point."""
    rows = rows_of(graded, "patched")
    assert number(rows[("total", "")]["points"]) == 0.0
    first, second = rows[("3.2", "checks")], rows[("3.3", "checks")]
    assert first["status"] == second["status"] == "failed"
    assert "numpy.all replaced" in first["tampering"], first["tampering"]
    assert "builtins.abs replaced" in first["tampering"]
    assert "patches np.all" in first["tampering"]
    assert "torch.equal replaced" in second["tampering"], second["tampering"]


@pytest.mark.site
def test_a_colab_edition_hand_in_gets_one_note(graded: dict) -> None:
    """Not the hand-out: graded by appending the checks, said once in the total row,
    and no per-check tampering notes; its right answers earn their points."""
    rows = rows_of(graded, "colab")
    assert rows[("total", "")]["tampering"].startswith("not the released hand-out")
    assert all(rows[k]["tampering"] == "" for k in rows if k != ("total", ""))
    assert number(rows[("total", "")]["points"]) == 28.0


@pytest.mark.site
def test_a_second_batch_keeps_the_first(graded: dict) -> None:
    root = graded["root"]
    assert (root / "graded" / "week1" / "gradebook.db").is_file()
    assert (root / "graded" / "week2" / "gradebook.db").is_file()
    assert (root / "graded" / "week1" / "autograded" / "correct").is_dir()
    assert number(graded["again"]["late"][("total", "")]["points"]) == 28.0
    with pytest.raises(FileExistsError, match="kept"):
        autograde.batch_folder(root / "graded", root / "week1")
    gradebook = (root / "week1" / "gradebook.csv").read_text().splitlines()
    assert gradebook[0] == f"username,{CHAPTER.stem} (checks)"
    assert "correct,28.0" in gradebook


@pytest.mark.site
def test_release_hides_solutions_and_hidden_tests(graded: dict) -> None:
    release = graded["release"]
    text = "\n".join(c.source for c in release.cells)
    assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
    assert "hidden_cases_" not in text and "_book_grading" not in text
    secrets = solution_leaks.fingerprints(WITHHELD_PAGES)
    leaks = solution_leaks.scan(graded["course"] / "release", secrets)
    assert not leaks, solution_leaks.report(leaks)
    checks = [c for c in release.cells if (grade_id(c) or "").startswith("check-")]
    assert [c.source for c in checks] == [
        c.source for c in read(CHAPTER).cells if CHECK in tags(c)
    ]
    assert all(c.metadata["nbgrader"]["locked"] for c in checks)
    assert "{exercise}" not in text and "{ref}" not in text, "CommonMark, no MyST"


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
    score = nbformat.v4.new_output(
        "stream", name="stdout",
        text="BOOK-TAMPERING: numpy.all replaced\nBOOK-SCORE: visible 2/4 hidden 1/6\n")
    assert autograde.message(cell(stub))[:2] == (
        "not attempted", "NotImplementedError: Exercise 3.2: write it")
    assert autograde.message(cell(wrong))[:2] == (
        "failed", "AssertionError: Exercise 3.2, case d = 2: expected 1")
    assert autograde.message(cell(passed))[:2] == ("passed", "All 4 checks passed.")
    assert autograde.message(cell(score, wrong)) == (
        "failed", "AssertionError: Exercise 3.2, case d = 2: expected 1",
        "BOOK-SCORE: visible 2/4 hidden 1/6", ["numpy.all replaced"])
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
        i for i in ids if (i or "").startswith(("check-", "written-"))
    ], "every graded cell comes back: the checks and the written answers"
    notes = autograde.notebook_tampering(plain, release)
    assert notes == [autograde.NOT_A_RELEASE], "one note, not one per check"
    assert autograde.tampering(plain, release, "check-ex-03-which-h") == []


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


@pytest.mark.unit
def test_committed_hand_outs_hold_no_solution(
    fingerprints: solution_leaks.Secrets,
) -> None:
    """colab/handouts/ (what Colab opens for a hand-in) is public: no solution text,
    no hidden test."""
    leaks = solution_leaks.scan(COLAB_HANDOUTS, fingerprints)
    assert not leaks, solution_leaks.report(leaks)
    for path in COLAB_HANDOUTS.glob("*.ipynb"):
        text = path.read_text()
        assert "HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text, path.name


@pytest.mark.site
def test_committed_hand_out_is_nbgrader_s_release(graded: dict) -> None:
    """The committed hand-out has nbgrader's release cells: the same ids, sources and
    grading metadata, so a hand-in opened from Colab is graded as a release."""
    ours = read(COLAB_HANDOUTS / CHAPTER.name)

    def graded_cells(nb):
        return [(grade_id(c), c.source, c.metadata["nbgrader"].get("points"))
                for c in nb.cells if grade_id(c)]

    assert graded_cells(ours) == graded_cells(graded["release"])
