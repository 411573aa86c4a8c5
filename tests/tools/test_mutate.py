"""The mutation tool plants the change it reports, and only that change."""

from __future__ import annotations

import ast
import difflib

from bookkit.measure import mutate

SOURCE = '''import numpy as np


def f(x, base=10000.0):
    """θ = base**(-2i/d)."""
    if x < 0:
        raise ValueError(f"x must be >= 0, got {x * 2}")
    y = np.cos(2 * x) - x[..., 0::2]
    return np.stack([y, x[:3]], axis=-1).real


def check_answer(candidate):
    assert candidate(1) == 2


def plot_it(x):
    return x + 1
'''


def collect(source: str, include_checks: bool = False):
    collector = mutate._Collector(include_checks, set())
    collector.visit(ast.parse(source))
    return collector.found


def test_every_kind_is_generated_and_skips_hold() -> None:
    found = collect(SOURCE)
    kinds = {kind for _, kind, _, _ in found}
    assert {
        "guard",
        "default",
        "op",
        "factor",
        "swap",
        "layout",
        "const",
        "cmp",
    } <= kinds
    whats = {what for _, _, what, _ in found}
    assert ".cos → .sin" in whats and ".real → .imag" in whats
    assert "[0::2] → [1::2]" in whats and "[:3] → [3:]" in whats
    assert "parts of stack swapped" in whats and "factor 2 dropped" in whats
    assert "10000.0 → 20000.0" in whats
    # nothing from the raise message, the docstring, the check or the plot helper
    lines = {node.lineno for node, *_ in found}
    assert lines <= set(range(4, 11)) and 7 not in lines
    assert any(n.lineno == 13 for n, *_ in collect(SOURCE, include_checks=True))


def test_apply_splices_one_change_that_still_compiles() -> None:
    lines = SOURCE.splitlines(keepends=True)
    for node, kind, what, text in collect(SOURCE):
        start = (node.lineno, mutate._char_col(lines, node.lineno, node.col_offset))
        end = (
            node.end_lineno,
            mutate._char_col(lines, node.end_lineno, node.end_col_offset),
        )
        mutant = mutate.Mutant(
            "t:0", "x", 0, node.lineno, "f", kind, what, start, end, text
        )
        changed = mutate.apply(SOURCE, mutant)
        assert changed != SOURCE
        compile(changed, "mutant", "exec")
        diff = list(difflib.ndiff(SOURCE.splitlines(), changed.splitlines()))
        removed = [line for line in diff if line.startswith("- ")]
        added = [line for line in diff if line.startswith("+ ")]
        assert len(added) == 1 and len(removed) == (2 if kind == "guard" else 1)


def test_exercise_checks_are_recognised_by_calling_their_argument() -> None:
    tree = ast.parse(
        SOURCE + "\n\ndef check_rope_inputs(x, base):\n    if base <= 0:\n"
        "        raise ValueError('base')\n"
    )
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert mutate.is_exercise_check(functions["check_answer"])
    assert not mutate.is_exercise_check(functions["check_rope_inputs"])
    assert mutate.sample(list(range(10)), 0, 0) == list(range(10))
