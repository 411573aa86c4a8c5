"""The grading machinery, without a kernel: the guard (bookkit.guard), the comparison
and scoring of bookkit.grading, the course model read from the instructor page
(bookkit.course). The end-to-end grading of real submissions is
tests/editions/test_autograde.py."""

from __future__ import annotations

import builtins
import math
import random
import re

import numpy as np
import pytest
import torch

from bookkit import grading, guard
from bookkit.chapters import chapters
from bookkit.course import course_exercises
from bookkit.editions.handouts import definitions, exercises
from bookkit.notebook import HIDDEN_CASES, read, tags
from bookkit.testing import load_chapter

ExerciseCheck = load_chapter(1).ExerciseCheck


@pytest.fixture
def snapshot():
    guard.snapshot()
    yield
    guard.restore(report=False)
    guard._SNAPSHOT.clear()


def test_guard_puts_back_what_a_submission_replaced(snapshot, capsys) -> None:
    real_all, real_abs, real_allclose = np.all, builtins.abs, torch.allclose
    np.all = lambda *a, **k: True
    builtins.abs = lambda v: 0.0
    del math.pi
    torch.Tensor.allclose = lambda *a, **k: True
    try:
        assert sorted(guard.changes()) == [
            "builtins.abs replaced", "math.pi deleted", "numpy.all replaced",
            "torch.Tensor.allclose replaced"]
        found = guard.restore()
    finally:
        math.pi = math.pi if hasattr(math, "pi") else 3.141592653589793
    assert np.all is real_all and builtins.abs is real_abs
    assert math.pi == 3.141592653589793 and guard.changes() == []
    assert torch.allclose is real_allclose and "allclose" not in vars(torch.Tensor)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [guard.MARK + line for line in found]
    assert "numpy.all replaced" in found


def test_guard_does_not_take_a_library_for_the_submission() -> None:
    """torch._dynamo wraps torch.manual_seed when it is first imported (transformers
    and torch.compile import it): a kernel that imports it after the snapshot must
    report nothing. A fresh interpreter, where it is not imported yet."""
    import subprocess
    import sys

    code = ("from bookkit import guard; guard.snapshot(); import torch._dynamo; "
            "import transformers.modeling_utils; print(guard.changes())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


def test_guard_ignores_what_was_added(snapshot) -> None:
    np.book_probe = 1  # new names do not change what the checks call
    try:
        assert guard.changes() == []
    finally:
        del np.book_probe


def test_agree_follows_the_checks_rounding_rule() -> None:
    want = np.array([1.0, -2.0, 3.0])
    assert grading.agree(want.astype(np.float32), want)  # float32: 16 u of float32
    assert not grading.agree(want + 1e-3, want)
    assert not grading.agree(want[:2], want)  # shape
    assert grading.agree({"a": 1, "b": [1.0, 2.0]}, {"a": 1, "b": [1.0, 2.0]})
    assert not grading.agree({"a": 1}, {"a": 1, "b": 2})
    assert grading.agree(("x", torch.tensor([1.0])), ("x", np.array([1.0])))
    assert not grading.agree("linear", "yarn")
    assert grading.agree(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))


def test_agree_takes_the_checks_tolerances() -> None:
    """A case's options widen the comparison the way ExerciseCheck.close does: a
    rounding scale (angles of 300 radians in float32), an absolute or relative
    tolerance (a root finder's); equal infinities agree (a causal mask); a list of
    booleans agrees with an array of them."""
    want = np.array([0.5, -0.25])
    off = want + 100 * 2.0**-24  # float32 rounding of an angle near 300 radians
    assert not grading.agree(off.astype(np.float32), want)
    assert grading.agree(off.astype(np.float32), want, scale=300.0)
    assert not grading.agree(want + 1e-8, want)
    assert grading.agree(want + 1e-8, want, atol=2e-8)
    assert grading.agree(want * (1 + 1e-7), want, rtol=1e-6)
    assert not grading.agree(want * (1 + 1e-5), want, rtol=1e-6)
    masked = torch.tensor([[0.0, -np.inf], [-0.5, 0.0]])
    assert grading.agree(masked.double(), masked)
    assert not grading.agree(torch.zeros(2, 2), masked)
    assert grading.agree(np.array([True, False, True]), [True, False, True])
    assert not grading.agree(np.array([True, True, True]), [True, False, True])


def test_hidden_cases_give_each_call_its_own_inputs() -> None:
    """An answer that writes into its input (an in-place exercise) is compared on the
    same input as the reference, and the next case is not affected."""
    def double_in_place(x):
        x *= 2
        return x

    x = np.arange(3.0)
    cases = [((x,), {}), ((x,), {})]
    assert grading.run_hidden(double_in_place, double_in_place, cases)[:2] == (2, 2)
    assert np.array_equal(x, np.arange(3.0)), "the case's own input is untouched"


def test_hidden_cases_compare_through_a_view() -> None:
    """A view compares what the exercise fixes (some keys of a dict) and nothing
    else; an answer the view cannot read differs."""
    def keys(p: dict) -> dict:
        return {"factor": p["factor"]}

    cases = [((4,), {}, {"view": keys})]
    more = lambda n: {"factor": n, "beta_fast": 32}  # noqa: E731 - allowed extras
    assert grading.run_hidden(more, lambda n: {"factor": n}, cases)[:2] == (1, 1)
    assert grading.run_hidden(lambda n: n, lambda n: {"factor": n}, cases)[:2] == (0, 1)
    with pytest.raises(ValueError, match="options"):
        grading.run_hidden(lambda n: n, lambda n: n, [((4,), {}, {"tol": 1})])


def test_points_share_visible_and_hidden_cases() -> None:
    line = grading.SCORE + "visible 3/4 hidden 5/10"
    expected = 20 * (0.5 * 0.75 + 0.5 * 0.5)
    assert grading.points(line, 20.0, 0.5) == pytest.approx(expected)
    no_hidden = grading.SCORE + "visible 3/4 hidden 0/0"
    assert grading.points(no_hidden, 20.0, 0.5) == 15.0
    assert grading.points(grading.SCORE + "visible 0/4 hidden 0/0", 20.0, 0.5) == 0.0


def test_hidden_cases_compare_with_the_reference() -> None:
    cases = [((np.arange(d, dtype=float),), {}) for d in (2, 3, 4)]
    right = grading.run_hidden(lambda x: 2 * x, lambda x: x + x, cases)
    assert right == (3, 3, "")
    agreed, total, first = grading.run_hidden(
        lambda x: 2 * x if len(x) < 4 else x, lambda x: 2 * x, cases)
    assert (agreed, total) == (2, 3) and first.startswith("hidden case 3")
    raises = grading.run_hidden(lambda x: 1 / 0, lambda x: x, cases)
    assert raises[0] == 0 and "ZeroDivisionError" in raises[2]


def check_double(candidate) -> None:
    """A check of the book's kind: four cases, then done()."""
    check = ExerciseCheck("Exercise 0.1")
    for x in (1.0, 2.0, 3.0, 4.0):
        check.close(f"x = {x}", str(x), candidate(x), 2 * x)
    check.done()


check_double.__globals__["ExerciseCheck"] = ExerciseCheck


def test_keep_going_counts_every_case(capsys) -> None:
    """A learner's run stops at the first failure; a grader's counts every case."""
    wrong_on_two = lambda x: 2 * x if x not in (2.0, 3.0) else 0.0  # noqa: E731
    with pytest.raises(AssertionError, match="case x = 2.0"):
        check_double(wrong_on_two)
    assert ExerciseCheck.last.passed == 1
    assert grading.run_check(check_double, wrong_on_two, keep_going=True)[:2] == (2, 4)
    assert ExerciseCheck.keep_going is False, "reset after grading"
    passed, cases, failure = grading.run_check(check_double, lambda x: 2 * x, False)
    assert (passed, cases, failure) == (4, 4, "")


def test_grade_prints_the_score_and_raises_the_first_failure(snapshot, capsys) -> None:
    def hidden(rng: random.Random):
        return [((rng.uniform(-5, 5),), {}) for _ in range(6)]

    grading.grade(check_double, lambda x: x + x, lambda x: 2 * x, hidden)
    assert grading.SCORE + "visible 4/4 hidden 6/6" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="case x = 3.0"):
        grading.grade(check_double, lambda x: 2 * x if x != 3.0 else 0.0,
                      lambda x: 2 * x, hidden)
    assert grading.SCORE + "visible 3/4 hidden 6/6" in capsys.readouterr().out

    def patching(x):
        np.all = lambda *a, **k: True  # while the check calls it
        return 2 * x

    with pytest.raises(AssertionError, match="patched"):
        grading.grade(check_double, patching, lambda x: 2 * x, hidden)
    out = capsys.readouterr().out
    assert grading.SCORE + "visible 0/4 hidden 0/6" in out
    assert guard.MARK + "numpy.all replaced" in out


def test_the_instructor_page_gives_every_exercise_its_weight() -> None:
    """Every exercise of every chapter has a row (kind, minutes) on the instructor
    page, and every written one a rubric row."""
    table = course_exercises()
    for chapter in chapters():
        text = "\n".join(c.source for c in read(chapter.path).cells)
        numbers = re.findall(r"\{exercise(?:-start)?\} (\d+\.\d+) ·", text)
        for number in numbers:
            assert number in table, f"Exercise {number}: no row on the instructor page"
        checked = {e.number for e in exercises(read(chapter.path), chapter.name)}
        for number in numbers:
            exercise = table[number]
            if number in checked:
                assert "code" in exercise.kind, f"{number}: a check, but not code"
            if exercise.written:
                assert exercise.rubric_points, f"Exercise {number}: no rubric row"


def test_shares_add_up() -> None:
    for exercise in course_exercises().values():
        for checked in (False, True):
            assert sum(exercise.shares(checked).values()) == pytest.approx(1.0)



def chapter_exercises():
    """(chapter, exercise) for every checked exercise of the book."""
    return [(chapter, exercise) for chapter in chapters()
            for exercise in exercises(read(chapter.path), chapter.name)]


@pytest.mark.parametrize(
    "chapter, exercise", chapter_exercises(),
    ids=[e.number for _, e in chapter_exercises()])
def test_every_checked_exercise_has_hidden_cases(chapter, exercise) -> None:
    """After its solution, each checked exercise has a hidden-cases cell defining
    hidden_cases_<name>(rng): 5 to 8 valid inputs (the chapter's solution answers
    them), drawn from rng alone (the same seed gives the same inputs, another seed
    others), with known comparison options."""
    nb = read(chapter.path)
    _, name = exercise.names(nb)
    assert exercise.hidden, f"Exercise {exercise.number}: no hidden-cases cell"
    assert all(exercise.solutions[-1] < j < exercise.check for j in exercise.hidden)
    assert all(HIDDEN_CASES in tags(nb.cells[j]) for j in exercise.hidden)
    space = dict(vars(load_chapter(chapter.number)))
    solution = "\n\n".join(nb.cells[j].source for j in exercise.solutions)
    exec(definitions(solution), space)  # noqa: S102 - the book's own solution
    exec("\n\n".join(nb.cells[j].source for j in exercise.hidden), space)  # noqa: S102
    generate = space[f"hidden_cases_{name}"]
    cases = list(generate(random.Random(0)))
    assert 5 <= len(cases) <= 8, f"Exercise {exercise.number}: {len(cases)} cases"
    for case in cases:
        assert len(case) in (2, 3) and isinstance(case[0], tuple)
        assert isinstance(case[1], dict)
        assert set(case[2] if len(case) == 3 else {}) <= {*grading.COMPARISON, "view"}
    reference = space[name]
    assert grading.run_hidden(reference, reference, cases)[:2] == (len(cases),) * 2
    assert repr(list(generate(random.Random(0)))) == repr(cases)
    assert repr(list(generate(random.Random(1)))) != repr(cases)
