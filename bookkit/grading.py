"""Inside a grading kernel: one coding exercise graded case by case.

A hand-out's check cell (``bookkit.editions.handouts``) carries, in nbgrader's
hidden-test block that no student ever sees, the chapter's own solution as a reference
and, where the chapter has one, a generator of hidden cases. At grading it calls
:func:`grade`, which

1. restores the modules the checks rely on (``bookkit.guard``) — the notebook has run
   the submission by now;
2. runs the visible check on the reference, to count its cases (they must all pass);
3. runs the visible check on the submission with every case run, not only up to the
   first failure (``ExerciseCheck.keep_going``), and counts the cases passed;
4. calls the submission and the reference on the hidden cases (random inputs drawn with
   a fixed seed; each call gets its own deep copy of them, so an answer that writes into
   its input changes neither the reference's nor the next case's) and counts the
   agreements (:func:`agree`, with the case's own tolerance where it gives one);
5. restores the modules again: a submission that patched one while it was called scores
   nothing;
6. prints one line ``BOOK-SCORE: visible k/N hidden h/H`` that ``bookkit.autograde``
   turns into points, and raises the first failure (so nbgrader's feedback names it).

Only answers that are right in general pass the hidden cases: a submission that looks up
the visible inputs passes the visible check and fails the hidden cases.

**Hidden cases.** A chapter's ``hidden-cases`` cell after an exercise's solution defines
``hidden_cases_<name>(rng)``: a list of ``(args, kwargs)`` or ``(args, kwargs,
options)``, inputs drawn from ``rng`` only. ``options`` says how the two answers are
compared when the rule of 16 unit roundoffs of the largest value does not fit the
exercise, with the same words as the visible check's ``ExerciseCheck.close``:
``scale`` (the size the rounding is relative to, such as the largest angle), ``atol``
and ``rtol`` (a root finder's tolerance, a derived bound), and ``view``, a function
applied to both answers before they are compared (the dtypes and values of a model's
weights and buffers; the keys of a configuration that the exercise fixes).
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import random
from collections.abc import Callable, Iterable

import numpy as np

from bookkit import guard

SCORE = "BOOK-SCORE: "


def as_float_array(value: object) -> np.ndarray | None:
    """A tensor, array, number or nested list as float64 numpy; None if it is not
    numeric (a dict, a string, ...)."""
    if hasattr(value, "detach"):
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        value = value.numpy()
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):
        return None
    if array.dtype.kind not in "biuf":
        return None
    return array.astype(np.float64)


def unit_roundoff(value: object) -> float:
    """The unit roundoff of a value's floating dtype (float64 for Python numbers)."""
    name = str(getattr(value, "dtype", "float64")).removeprefix("torch.")
    return {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-24}.get(
        name, 2.0**-53
    )


def agree(got: object, want: object, roundings: int = 16, *, atol: float = 0.0,
          rtol: float = 0.0, scale: float | None = None) -> bool:
    """Whether an answer agrees with the reference: the same structure, equal
    non-numeric parts, and numbers within ``atol + rtol |want|`` plus 16 unit
    roundoffs of the less precise side times ``scale`` (default: the reference's
    largest magnitude, at least 1): the rule of the chapters' checks
    (``ExerciseCheck.close``). Equal values agree (infinities included), and so do
    NaNs in the same places."""
    options = {"atol": atol, "rtol": rtol, "scale": scale}
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and set(got) == set(want)
            and all(agree(got[k], want[k], roundings, **options) for k in want)
        )
    if isinstance(want, (tuple, list)) and not _numeric_list(want):
        return (
            isinstance(got, (tuple, list))
            and len(got) == len(want)
            and all(agree(g, w, roundings, **options)
                    for g, w in zip(got, want, strict=True))
        )
    want_array, got_array = as_float_array(want), as_float_array(got)
    if want_array is None or got_array is None:
        return got == want
    if want_array.shape != got_array.shape:
        return False
    u = max(unit_roundoff(got), unit_roundoff(want))
    size = scale if scale is not None else max(
        1.0, float(np.max(np.abs(want_array[np.isfinite(want_array)]), initial=0.0)))
    with np.errstate(invalid="ignore"):
        gap = np.abs(got_array - want_array)
        tolerance = atol + rtol * np.abs(want_array) + roundings * u * size
        same = (got_array == want_array) | (np.isnan(got_array)
                                            & np.isnan(want_array))
        return bool(np.all((gap <= tolerance) | same))


def _numeric_list(value: Iterable) -> bool:
    """A flat list of numbers or booleans (compared as one array)."""
    return all(isinstance(v, (int, float, np.number, np.bool_)) for v in value)


def run_check(check: Callable, candidate: Callable, keep_going: bool) -> tuple[
    int, int, str
]:
    """(cases passed, cases run, first failure) of a visible check on a candidate."""
    exercise_check = check.__globals__["ExerciseCheck"]
    exercise_check.keep_going = keep_going
    exercise_check.last = None
    failure = ""
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            check(candidate)
        except NotImplementedError as error:
            failure = f"NotImplementedError: {error}"
        except AssertionError as error:
            failure = str(error)
        except Exception as error:  # noqa: BLE001 - the submission's own error
            failure = f"{type(error).__name__}: {error}"
        finally:
            exercise_check.keep_going = False
    last = exercise_check.last
    passed = last.passed if last is not None else 0
    failed = len(last.failures) if last is not None else 0
    return passed, passed + failed, failure


COMPARISON = ("atol", "rtol", "scale")


def run_hidden(candidate: Callable, reference: Callable,
               cases: Iterable[tuple]) -> tuple[int, int, str]:
    """(agreements, cases, first disagreement) of candidate and reference on cases
    ``(args, kwargs)`` or ``(args, kwargs, options)`` (see the module docstring); each
    call gets its own deep copy of the inputs."""
    agreed, total, first = 0, 0, ""
    for case in cases:
        args, kwargs, *rest = case
        options = dict(rest[0]) if rest else {}
        view = options.pop("view", None)
        unknown = set(options) - set(COMPARISON)
        if unknown:
            raise ValueError(f"hidden case options {sorted(unknown)}: use "
                             f"{', '.join(COMPARISON)} or view")
        total += 1
        want = reference(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                got = candidate(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        except NotImplementedError as error:
            return 0, total, f"NotImplementedError: {error}"
        except Exception as error:  # noqa: BLE001 - the submission's own error
            first = first or f"hidden case {total}: {type(error).__name__}: {error}"
            continue
        try:
            same = agree(view(got), view(want), **options) if view else agree(
                got, want, **options)
        except Exception:  # noqa: BLE001 - an answer the view cannot read differs
            same = False
        if same:
            agreed += 1
        elif not first:
            first = (f"hidden case {total}: your answer differs from the reference on "
                     "an input the visible checks do not use")
    return agreed, total, first


def grade(check: Callable, candidate: Callable, reference: Callable,
          hidden: Callable[[random.Random], Iterable[tuple]] | None = None,
          seed: int = 0) -> None:
    """Grade one exercise (see the module docstring); print the score line, raise
    the first failure."""
    guard.restore()
    total = run_check(check, reference, keep_going=False)
    if total[2] or total[0] == 0:
        raise RuntimeError(f"the reference solution fails its own check: {total[2]}")
    cases = total[0]
    passed, _, failure = run_check(check, candidate, keep_going=True)
    agreed, hidden_total, hidden_failure = 0, 0, ""
    if hidden is not None:
        rng = random.Random(seed)
        agreed, hidden_total, hidden_failure = run_hidden(
            candidate, reference, list(hidden(rng))
        )
    tampered = guard.restore()
    if tampered:
        passed = agreed = 0
        failure = failure or "a library was patched while the checks ran"
    print(f"{SCORE}visible {passed}/{cases} hidden {agreed}/{hidden_total}")
    message = failure or hidden_failure
    if message.startswith("NotImplementedError: "):  # the stub: not attempted
        raise NotImplementedError(message.removeprefix("NotImplementedError: "))
    if message:
        raise AssertionError(message)


def points(line: str, weight: float, hidden_share: float) -> float:
    """Points from a score line: the visible cases' share of the weight and the hidden
    cases' share (``hidden_share`` of it when there are hidden cases)."""
    parts = line.removeprefix(SCORE).split()
    values = dict(zip(parts[::2], parts[1::2], strict=True))
    visible = [int(x) for x in values["visible"].split("/")]
    hidden = [int(x) for x in values["hidden"].split("/")]
    share = hidden_share if hidden[1] else 0.0
    got = (1 - share) * visible[0] / max(visible[1], 1)
    if hidden[1]:
        got += share * hidden[0] / hidden[1]
    return math.floor(weight * got * 100 + 1e-9) / 100
