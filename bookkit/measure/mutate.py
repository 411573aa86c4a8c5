"""Mutation testing for the chapter code: do the unit tests catch realistic bugs?

The functions a chapter exports live in its notebook's ``export`` cells, which no
off-the-shelf mutation tool reads. This tool plants one realistic bug at a time in those
cells, in a temporary copy of the repository (never in the working notebooks), runs that
chapter's unit tests (``pytest -x -q tests/chapters/test_NN_topic.py``, with a time
limit) and counts the mutant as *killed* when a test fails. The copy is a sandbox with
``BOOK_ROOT`` pointing at it (``bookkit.paths``), so the tests load the mutated
notebook.

Mutants are generated from the AST of every ``export`` cell, sorted by position,
shuffled with a fixed seed and sampled (``--sample`` per chapter), so the set is
reproducible and not hand-picked. Kinds of mutation (the label printed for each mutant):

- ``op``: flipped operator ``+ ↔ -``, ``* ↔ /``, ``// → /``; augmented assignments too.
- ``sign``: unary minus removed (``-x → x``).
- ``factor``: a constant factor dropped (``2 * i → i``: the ``i/d`` vs ``2i/d``
  mistake).
- ``const``: numeric constant changed (``k → k + 1``; floats doubled; a small tolerance
  ``≤ 1e-3`` loosened ×1000); ``default`` is the same in a default argument.
- ``bool``: ``True ↔ False``; ``and ↔ or``.
- ``cmp``: comparison changed (``< ↔ <=``, ``> ↔ >=``, ``== ↔ !=``, ``is ↔ is not``).
- ``swap``: function swapped (``cos ↔ sin``, ``real ↔ imag``, ``min ↔ max``, ``argmin ↔
  argmax``, ``floor ↔ ceil``); ``conj`` dropped.
- ``layout``: two positional arguments swapped, the two parts of a ``stack``/``cat``
  swapped, a slice swapped (``0::2 ↔ 1::2``, ``[:h] ↔ [h:]``).
- ``range``: off-by-one in the stop of ``range``/``arange`` (``stop → stop - 1``).
- ``guard``: a validation branch disabled (an ``if`` whose body raises becomes
  ``pass``).

Documented skip rules (mutants not generated, so they never count either way):

1. Exercise check functions (``check_*`` functions that call their argument, the
   reader's candidate) and private helpers that only they call (such as ``_report``):
   the course's own tests exercise them (each chapter's test file);
   ``--include-checks`` adds them.
2. Plotting and interactive helpers (function names containing ``plot``, ``figure``,
   ``explorer``, ``html`` or ``interactive``): their output is a picture; the book
   build checks they run. The numbers they draw come from tested functions (Chapter
   10's ``interactive_score_maps`` draws ``query_score_maps``).
3. Cells tagged ``copy:X``: sync regenerates them from the defining cell, which is
   mutated.
4. Code inside ``raise`` statements, f-strings, annotations, docstrings, and cosmetic
   keyword arguments (``stacklevel``, ``figsize``, ``color``, …): changing it changes no
   result.
5. Swapping the arguments of symmetric functions (``allclose``, ``maximum``, ``hypot``,
   …): equivalent by construction.

Usage::

    python -m bookkit.measure.mutate            # every chapter with tests, 20 each
    python -m bookkit.measure.mutate 03 06 --sample 40
    python -m bookkit.measure.mutate 04 --list  # list the sampled mutants, run nothing
    python -m bookkit.measure.mutate 04 --only 04:17 --diff  # one mutant, its change
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import dataclasses
import difflib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from bookkit.chapters import chapters
from bookkit.notebook import COPY, EXPORT, tags
from bookkit.paths import CONFIG_FILE, NOTEBOOKS, ROOT, TOC_FILE

SKIP_FUNCTION = re.compile(r"plot|figure|explorer|html|interactive")
COSMETIC_KEYWORDS = {
    "stacklevel",
    "figsize",
    "dpi",
    "color",
    "colors",
    "alpha",
    "linewidth",
    "lw",
    "fontsize",
    "title",
    "label",
    "width",
    "height",
    "marker",
    "markersize",
    "s",
    "ncols",
    "nrows",
    "cmap",
    "zorder",
    "ls",
    "linestyle",
    "bins",
    "pad",
    "size",
}
SYMMETRIC = {
    "allclose",
    "isclose",
    "array_equal",
    "maximum",
    "minimum",
    "max",
    "min",
    "hypot",
    "add",
    "multiply",
    "isinstance",
    "assert_allclose",
    "gcd",
    "fmax",
    "fmin",
}
NAME_SWAPS = {
    "cos": "sin",
    "sin": "cos",
    "real": "imag",
    "imag": "real",
    "min": "max",
    "max": "min",
    "argmin": "argmax",
    "argmax": "argmin",
    "floor": "ceil",
    "ceil": "floor",
    "minimum": "maximum",
    "maximum": "minimum",
    "amin": "amax",
    "amax": "amin",
}
STACKERS = {"stack", "cat", "concatenate", "hstack", "vstack", "column_stack", "dstack"}
BINOP_SWAPS = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
}
CMP_SWAPS = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
SYMBOL = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}


@dataclasses.dataclass
class Mutant:
    """One single change to one export cell."""

    ident: str  # "CC:k", the chapter number and the index in the sorted list of mutants
    chapter: str  # notebook stem
    cell: int  # index of the cell in the notebook
    line: int  # line in the cell (1-based)
    function: str  # enclosing function ("<module>" at top level)
    kind: str
    what: str  # human-readable description of the change
    start: tuple[int, int]  # (line, char column) in the cell source, 1-based line
    end: tuple[int, int]
    replacement: str


def _char_col(lines: list[str], lineno: int, byte_col: int) -> int:
    """Convert the AST's UTF-8 byte column into a character column."""
    return len(lines[lineno - 1].encode()[:byte_col].decode())


def _callee(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


class _Collector(ast.NodeVisitor):
    """Walk one cell's AST and record every candidate mutation."""

    def __init__(self, include_checks: bool, check_helpers: set[str]) -> None:
        self.include_checks = include_checks
        self.check_helpers = check_helpers
        self.function = "<module>"
        self.found: list[
            tuple[ast.AST, str, str, str]
        ] = []  # node, kind, what, new source
        self.defaults: set[int] = set()

    def add(self, node: ast.AST, kind: str, what: str, new: ast.AST | str) -> None:
        text = new if isinstance(new, str) else ast.unparse(new)
        if isinstance(node, ast.expr) and not isinstance(node, ast.Slice):
            text = f"({text})"
        self.found.append((node, kind, what, text))

    # ---- structure: what to skip ----
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        name = node.name
        if (
            not self.include_checks
            and self.function == "<module>"
            and (is_exercise_check(node) or name in self.check_helpers)
        ):
            return
        if SKIP_FUNCTION.search(name):
            return
        outer, self.function = (
            self.function,
            (name if self.function == "<module>" else f"{self.function}.{name}"),
        )
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.defaults.update(id(n) for n in ast.walk(default))
            self.visit(default)
        body = node.body
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            body = body[1:]  # docstring
        for statement in body:
            self.visit(statement)
        self.function = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        outer, self.function = self.function, node.name
        body = node.body
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            body = body[1:]
        for statement in body:
            self.visit(statement)
        self.function = outer

    def visit_Raise(self, node: ast.Raise) -> None:
        return

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        return

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    def visit_Import(self, node: ast.AST) -> None:
        return

    visit_ImportFrom = visit_Import

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg in COSMETIC_KEYWORDS:
            return
        self.visit(node.value)

    # ---- mutations ----
    def visit_If(self, node: ast.If) -> None:
        if not node.orelse and any(isinstance(s, ast.Raise) for s in node.body):
            self.add(
                node, "guard", f"`if {ast.unparse(node.test)}: raise` disabled", "pass"
            )
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        new_op = BINOP_SWAPS.get(type(node.op))
        if new_op is not None:
            mutated = copy.deepcopy(node)
            mutated.op = new_op()
            self.add(node, "op", f"{SYMBOL[type(node.op)]} → {SYMBOL[new_op]}", mutated)
        if isinstance(node.op, ast.Mult):
            for const, other in ((node.left, node.right), (node.right, node.left)):
                if (
                    isinstance(const, ast.Constant)
                    and isinstance(const.value, (int, float))
                    and not isinstance(const.value, bool)
                    and const.value not in (0, 1, -1)
                ):
                    self.add(node, "factor", f"factor {const.value} dropped", other)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        new_op = BINOP_SWAPS.get(type(node.op))
        if new_op is not None:
            mutated = copy.deepcopy(node)
            mutated.op = new_op()
            old, new = SYMBOL[type(node.op)], SYMBOL[new_op]
            self.add(node, "op", f"{old}= → {new}=", mutated)
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.USub):
            if isinstance(node.operand, ast.Constant):
                pass  # -1 as a literal: handled as a constant
            else:
                self.add(
                    node, "sign", f"-{ast.unparse(node.operand)} → +", node.operand
                )
        elif isinstance(node.op, ast.Not):
            self.add(node, "bool", "`not` dropped", node.operand)
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            self._constant(node, -node.operand.value)
            return
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        self._constant(node, node.value)

    def _constant(self, node: ast.AST, value: object) -> None:
        kind = "default" if id(node) in self.defaults else "const"
        if isinstance(value, bool):
            self.add(
                node,
                "bool" if kind == "const" else kind,
                f"{value} → {not value}",
                ast.Constant(not value),
            )
        elif isinstance(value, int):
            self.add(node, kind, f"{value} → {value + 1}", ast.Constant(value + 1))
        elif isinstance(value, float):
            if 0 < abs(value) <= 1e-3:
                new, what = value * 1000, "tolerance loosened ×1000"
            elif value == 0:
                new, what = 1.0, "0.0 → 1.0"
            else:
                new, what = value * 2, f"{value!r} → {value * 2!r}"
            self.add(node, kind, what, ast.Constant(new))

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        mutated = copy.deepcopy(node)
        mutated.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        self.add(node, "bool", "and ↔ or", mutated)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        for k, op in enumerate(node.ops):
            new_op = CMP_SWAPS.get(type(op))
            if new_op is not None:
                mutated = copy.deepcopy(node)
                mutated.ops[k] = new_op()
                what = f"{SYMBOL[type(op)]} → {SYMBOL[new_op]}"
                self.add(node, "cmp", what, mutated)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        new = NAME_SWAPS.get(node.attr)
        if new is not None:
            mutated = copy.deepcopy(node)
            mutated.attr = new
            self.add(node, "swap", f".{node.attr} → .{new}", mutated)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        for part in parts:
            if not isinstance(part, ast.Slice):
                continue
            step = part.step
            if isinstance(step, ast.Constant) and step.value == 2:
                lower = part.lower.value if isinstance(part.lower, ast.Constant) else 0
                simple = part.lower is None or isinstance(part.lower, ast.Constant)
                if simple and lower in (0, 1):
                    mutated = ast.Slice(ast.Constant(1 - lower), part.upper, step)
                    what = f"[{ast.unparse(part)}] → [{ast.unparse(mutated)}]"
                    self.add(part, "layout", what, mutated)
            elif step is None and (part.lower is None) != (part.upper is None):
                mutated = ast.Slice(part.upper, part.lower, None)
                what = f"[{ast.unparse(part)}] → [{ast.unparse(mutated)}]"
                self.add(part, "layout", what, mutated)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _callee(node)
        if name == "print":
            return
        if name in {"conj", "conjugate"}:
            if isinstance(node.func, ast.Attribute) and not node.args:
                self.add(node, "swap", "conj() dropped", node.func.value)
            elif len(node.args) == 1:
                self.add(node, "swap", "conj() dropped", node.args[0])
        if name in {"range", "arange"} and node.args and not node.keywords:
            stop_index = 1 if len(node.args) >= 2 else 0
            mutated = copy.deepcopy(node)
            stop = mutated.args[stop_index]
            mutated.args[stop_index] = ast.BinOp(stop, ast.Sub(), ast.Constant(1))
            self.add(node, "range", f"{name} stop → stop - 1", mutated)
        if (
            name in STACKERS
            and node.args
            and isinstance(node.args[0], (ast.List, ast.Tuple))
        ):
            elts = node.args[0].elts
            if len(elts) == 2 and ast.dump(elts[0]) != ast.dump(elts[1]):
                mutated = copy.deepcopy(node)
                mutated.args[0].elts.reverse()
                self.add(node, "layout", f"parts of {name} swapped", mutated)
        positional = [a for a in node.args if not isinstance(a, ast.Starred)]
        if (
            name not in SYMMETRIC
            and name not in STACKERS
            and len(positional) >= 2
            and len(positional) == len(node.args)
            and not any(isinstance(a, ast.Constant) for a in positional[:2])
            and ast.dump(positional[0]) != ast.dump(positional[1])
        ):
            mutated = copy.deepcopy(node)
            mutated.args[0], mutated.args[1] = mutated.args[1], mutated.args[0]
            self.add(
                node,
                "layout",
                f"arguments 1 and 2 of {name or 'call'} swapped",
                mutated,
            )
        self.generic_visit(node)


def chapter_stems() -> list[str]:
    """Chapters that have a test file (``Chapter.test_file``)."""
    return [c.stem for c in chapters() if c.test_file.is_file()]


def resolve_chapter(token: str) -> str:
    """Accept ``3``, ``03`` or ``03_deriving_sinusoidal``."""
    prefix = token.split("_")[0].zfill(2)
    for stem in chapter_stems():
        if stem.startswith(prefix + "_"):
            return stem
    raise SystemExit(
        f"no chapter with tests matches {token!r}; choose from {chapter_stems()}"
    )


def is_exercise_check(node: ast.AST) -> bool:
    """An exercise check: a ``check_*`` function that calls one of its own arguments
    (the candidate). Validation helpers such as ``check_rope_inputs`` call none.
    """
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if not node.name.startswith("check_"):
        return False
    params = {a.arg for a in node.args.args + node.args.kwonlyargs}
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in params
        for n in ast.walk(node)
    )


def check_helpers(sources: list[str]) -> set[str]:
    """Private top-level functions (``_name``) used only by ``check_*`` functions."""
    users: dict[str, set[str]] = {}
    defined: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Name):
                        users.setdefault(inner.id, set()).add(node.name)
            else:
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Name):
                        users.setdefault(inner.id, set()).add("<module>")
    helpers = {n for n in defined if n.startswith("_")}
    checks = {
        n.name for source in sources for n in _top_level(source) if is_exercise_check(n)
    }
    changed = True
    while changed:
        changed = False
        for name in list(helpers):
            callers = users.get(name, set()) - {name}
            if not callers or not all(
                c in checks or c in helpers - {name} for c in callers
            ):
                helpers.discard(name)
                changed = True
    return helpers


def _top_level(source: str) -> list[ast.stmt]:
    try:
        return ast.parse(source).body
    except SyntaxError:
        return []


def mutants_of(stem: str, include_checks: bool = False) -> list[Mutant]:
    """Every candidate mutant of one chapter, in a stable order (cell, line, column)."""
    nb = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    exported = [
        c.source for c in nb.cells if c.cell_type == "code" and EXPORT in tags(c)
    ]
    helpers = check_helpers(exported)
    found: list[Mutant] = []
    for index, cell in enumerate(nb.cells):
        cell_tags = tags(cell)
        if cell.cell_type != "code" or EXPORT not in cell_tags:
            continue
        if any(t.startswith(COPY + ":") for t in cell_tags):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            print(
                f"warning: {stem} cell {index} does not parse; skipped", file=sys.stderr
            )
            continue
        collector = _Collector(include_checks, helpers)
        collector.visit(tree)
        lines = cell.source.splitlines(keepends=True) or [""]
        for node, kind, what, text in collector.found:
            start = (node.lineno, _char_col(lines, node.lineno, node.col_offset))
            end = (
                node.end_lineno,
                _char_col(lines, node.end_lineno, node.end_col_offset),
            )
            found.append(
                Mutant("", stem, index, node.lineno, "", kind, what, start, end, text)
            )
            found[-1].function = _enclosing(tree, node)
    found.sort(key=lambda m: (m.cell, m.start, m.end, m.kind, m.what))
    unique: list[Mutant] = []
    seen = set()
    for mutant in found:
        key = (mutant.cell, mutant.start, mutant.end, mutant.replacement)
        if key in seen:
            continue
        seen.add(key)
        mutant.ident = f"{stem[:2]}:{len(unique)}"
        unique.append(mutant)
    return unique


def _enclosing(tree: ast.AST, target: ast.AST) -> str:
    """Qualified name of the function (or class) around ``target``."""

    def walk(node: ast.AST, path: list[str]) -> list[str] | None:
        if node is target:
            return path
        for child in ast.iter_child_nodes(node):
            defines = isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            )
            result = walk(child, path + [child.name] if defines else path)
            if result is not None:
                return result
        return None

    return ".".join(walk(tree, []) or []) or "<module>"


def apply(source: str, mutant: Mutant) -> str:
    """The cell source with the mutant's change spliced in."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    begin = offsets[mutant.start[0] - 1] + mutant.start[1]
    finish = offsets[mutant.end[0] - 1] + mutant.end[1]
    return source[:begin] + mutant.replacement + source[finish:]


def sample(mutants: list[Mutant], size: int, seed: int) -> list[Mutant]:
    """A reproducible random subset (all of them if ``size`` is 0 or larger)."""
    if size <= 0 or size >= len(mutants):
        return list(mutants)
    chosen = random.Random(seed).sample(mutants, size)
    return sorted(chosen, key=lambda m: int(m.ident.split(":")[1]))


def make_sandbox() -> Path:
    """A throw-away copy of what the unit tests need: the notebooks, the tests, the
    table of contents and configuration, pyproject.toml (pytest's settings). The
    machinery (bookkit) is imported from the installed package, pointed at the
    sandbox by ``BOOK_ROOT``."""
    sandbox = Path(tempfile.mkdtemp(prefix="mutate-"))
    for folder in ("notebooks", "tests"):
        shutil.copytree(
            ROOT / folder,
            sandbox / folder,
            ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"),
        )
    for path in (TOC_FILE, CONFIG_FILE, ROOT / "pyproject.toml"):
        shutil.copy(path, sandbox / path.name)
    return sandbox


def test_command(stem: str, timeout: float) -> list[str]:
    test_file = next(c for c in chapters() if c.stem == stem).test_file
    files = [str(test_file.relative_to(ROOT))]
    return [
        sys.executable,
        "-m",
        "pytest",
        *files,
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        "--hypothesis-seed=0",
        f"--timeout={int(timeout)}",
    ]


ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "MPLBACKEND": "Agg",
}


def preload(stems: list[str]) -> None:
    """Import, once, every module the chapters' export cells and tests import.

    Forked test runs then start in a fraction of a second instead of re-importing torch,
    scipy and transformers for every mutant.
    """
    os.environ.update(ENV)
    names: set[str] = set()
    sources = []
    for stem in stems:
        nb = nbformat.read(NOTEBOOKS / f"{stem}.ipynb", as_version=4)
        sources += [
            c.source for c in nb.cells if c.cell_type == "code" and EXPORT in tags(c)
        ]
        sources += [
            c.test_file.read_text() for c in chapters() if c.stem == stem
        ]
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
    for name in sorted(names | {"pytest", "hypothesis"}):
        if name.split(".")[0] in {"bookkit", "conftest", "__future__"}:
            continue
        with contextlib.suppress(Exception):  # a failing import fails in the test too
            __import__(name)


def _forget_repository_modules(sandbox: Path) -> None:
    """Point the machinery at the sandbox (``BOOK_ROOT``) and drop this repository's
    own modules (bookkit's, the tests', the loaded chapters) from the import system, so
    that a forked test run reads the sandbox's notebooks."""
    os.environ["BOOK_ROOT"] = str(sandbox)
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if name == "__main__":
            continue
        if name.startswith(("bookkit", "chapter_")) or (
            file and ROOT / "tests" in Path(file).resolve().parents
        ):
            del sys.modules[name]


class Run:
    """One test run of one chapter in a sandbox, forked from this process or spawned."""

    def __init__(self, sandbox: Path, stem: str, timeout: float, fork: bool) -> None:
        self.began = time.perf_counter()
        self.timeout = timeout
        command = test_command(stem, timeout)
        if fork:
            self.process = None
            self.pid = os.fork()
            if self.pid == 0:  # the child: a fresh pytest session in the sandbox
                code = 98
                try:
                    os.chdir(sandbox)
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, 1)
                    os.dup2(null, 2)
                    _forget_repository_modules(sandbox)  # re-imported
                    import pytest
                    from hypothesis import settings

                    # a busy machine must not fail a test on time: no deadlines
                    settings.register_profile("mutate", deadline=None, database=None)
                    settings.load_profile("mutate")
                    code = int(pytest.main(command[3:]))
                finally:
                    os._exit(code)
        else:
            self.process = subprocess.Popen(
                command,
                cwd=sandbox,
                env=dict(os.environ, **ENV, BOOK_ROOT=str(sandbox)),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        self.code: int | None = None

    def poll(self) -> str | None:
        """None while running, then "passed", "failed", "timeout" or "invalid"."""
        if self.code is None:
            if self.process is not None:
                self.code = self.process.poll()
            else:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.code = os.waitstatus_to_exitcode(status)
        if self.code is None:
            if time.perf_counter() - self.began > self.timeout + 30:
                if self.process is not None:
                    self.process.kill()
                    self.process.wait()
                else:
                    os.kill(self.pid, signal.SIGKILL)
                    os.waitpid(self.pid, 0)
                self.code = -signal.SIGKILL
                return "timeout"
            return None
        if self.code == 0:
            return "passed"
        if self.code == 98:
            return "invalid"
        if self.code < 0:
            return "timeout"
        return "failed"

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.began


def run_tests(
    sandbox: Path, stem: str, timeout: float, fork: bool
) -> tuple[str, float]:
    """Run the chapter's unit tests once and wait: (status, seconds)."""
    run = Run(sandbox, stem, timeout, fork)
    while (status := run.poll()) is None:
        time.sleep(0.05)
    return status, run.seconds


def mutated_notebook(sandbox: Path, mutant: Mutant) -> None:
    path = sandbox / "notebooks" / f"{mutant.chapter}.ipynb"
    nb = nbformat.read(NOTEBOOKS / f"{mutant.chapter}.ipynb", as_version=4)
    nb.cells[mutant.cell].source = apply(nb.cells[mutant.cell].source, mutant)
    nbformat.write(nb, path)


def restore_notebook(sandbox: Path, stem: str) -> None:
    shutil.copy(NOTEBOOKS / f"{stem}.ipynb", sandbox / "notebooks" / f"{stem}.ipynb")


def diff(mutant: Mutant) -> str:
    nb = nbformat.read(NOTEBOOKS / f"{mutant.chapter}.ipynb", as_version=4)
    before = nb.cells[mutant.cell].source
    after = apply(before, mutant)
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            f"{mutant.chapter} cell {mutant.cell}",
            "mutant",
            n=1,
        )
    )


def describe(mutant: Mutant) -> str:
    return (
        f"{mutant.ident:>6} cell {mutant.cell:>2} line {mutant.line:>3} "
        f"{mutant.function:<28} {mutant.kind:<7} {mutant.what}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "chapters", nargs="*", help="chapter numbers or stems (default: all)"
    )
    parser.add_argument(
        "--sample",
        type=int,
        default=20,
        help="mutants per chapter, sampled with --seed (0: all)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--timeout",
        type=float,
        default=0,
        help="seconds per test run (default: 4× the unmutated run, ≥ 60)",
    )
    parser.add_argument("--jobs", type=int, default=1, help="mutants run in parallel")
    parser.add_argument(
        "--only", default="", help="comma-separated mutant ids, e.g. 04:17"
    )
    parser.add_argument(
        "--list", action="store_true", help="list the mutants, run nothing"
    )
    parser.add_argument(
        "--diff", action="store_true", help="print each mutant's change"
    )
    parser.add_argument(
        "--include-checks",
        action="store_true",
        help="also mutate the exercise check functions (check_*)",
    )
    parser.add_argument(
        "--spawn",
        action="store_true",
        help="start a new Python per run instead of forking a preloaded one",
    )
    parser.add_argument("--json", type=Path, help="write every result to this file")
    args = parser.parse_args(argv)

    stems = [resolve_chapter(c) for c in args.chapters] or chapter_stems()
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    plan: dict[str, list[Mutant]] = {}
    for stem in stems:
        every = mutants_of(stem, args.include_checks)
        chosen = (
            [m for m in every if m.ident in only]
            if only
            else sample(every, args.sample, args.seed)
        )
        if chosen:
            plan[stem] = chosen
        print(
            f"{stem}: {len(every)} candidate mutants, {len(chosen)} chosen", flush=True
        )
    if args.list or args.diff and not only:
        for mutants in plan.values():
            for mutant in mutants:
                print(describe(mutant))
                if args.diff:
                    print(diff(mutant))
        return 0

    fork = args.jobs >= 1 and hasattr(os, "fork") and not args.spawn
    if fork:
        preload(list(plan))
    results: list[dict] = []
    totals: dict[str, list[int]] = {}
    for stem, mutants in plan.items():
        sandboxes = [make_sandbox() for _ in range(max(1, args.jobs))]
        try:
            status, seconds = run_tests(sandboxes[0], stem, 1800, fork)
            if status != "passed":
                print(
                    f"{stem}: the unmutated tests do not pass ({status}); skipped",
                    flush=True,
                )
                continue
            timeout = args.timeout or max(60.0, 4 * seconds)
            print(
                f"{stem}: unmutated tests pass in {seconds:.1f} s; "
                f"time limit {timeout:.0f} s",
                flush=True,
            )
            killed = total = 0
            pending = list(mutants)
            running: dict[int, tuple[Mutant, Run]] = {}
            while pending or running:
                for slot in range(len(sandboxes)):
                    if slot not in running and pending:
                        mutant = pending.pop(0)
                        mutated_notebook(sandboxes[slot], mutant)
                        running[slot] = (
                            mutant,
                            Run(sandboxes[slot], stem, timeout, fork),
                        )
                time.sleep(0.05)
                for slot, (mutant, run) in list(running.items()):
                    status = run.poll()
                    if status is None:
                        continue
                    del running[slot]
                    restore_notebook(sandboxes[slot], stem)
                    if status == "invalid":
                        print(f"INVALID  {describe(mutant)}", flush=True)
                        continue
                    total += 1
                    killed += status != "passed"
                    label = {
                        "failed": "killed",
                        "timeout": "killed (timeout)",
                        "passed": "SURVIVED",
                    }[status]
                    print(
                        f"{label:<16} {describe(mutant)}  [{run.seconds:.0f} s]",
                        flush=True,
                    )
                    if args.diff or status == "passed":
                        print(diff(mutant), end="", flush=True)
                    results.append(
                        dict(
                            dataclasses.asdict(mutant),
                            status=status,
                            seconds=round(run.seconds, 1),
                        )
                    )
            totals[stem] = [killed, total]
        finally:
            for sandbox in sandboxes:
                shutil.rmtree(sandbox, ignore_errors=True)

    print()
    for stem, (killed, total) in totals.items():
        print(f"{stem:<34} killed {killed:>3} of {total:>3}")
    killed = sum(k for k, _ in totals.values())
    total = sum(t for _, t in totals.values())
    share = 100 * killed / total if total else 0.0
    print(
        f"score: killed {killed} of {total} mutants ({share:.1f} %), "
        f"seed {args.seed}, sample {args.sample} per chapter"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
