"""The house rules of bookkit (bookkit/__init__.py): every rule in one place, imports
that follow the layers, no sys.path edits, no chapter list written into the code.

These tests read the code as text and as syntax trees; they run nothing of it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from bookkit.paths import PACKAGE, ROOT

MODULES = sorted(PACKAGE.rglob("*.py"))
TESTS = sorted((ROOT / "tests").rglob("*.py"))

# The five layers of bookkit/__init__.py; a module imports only from its own layer and
# the ones above it (smaller numbers).
LAYERS = {
    "paths": 1,
    "config": 1,
    "site": 1,
    "notebook": 2,
    "chapters": 2,
    "course": 2,
    "licence": 2,
    "sync": 3,
    "editions": 3,
    "leaks": 3,
    "execute": 4,
    "run": 4,
    "autograde": 4,
    "guard": 4,
    "grading": 4,
    "testing": 5,
    "measure": 5,
    "sphinx": 5,
    "ipython": 5,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def layer(name: str) -> int:
    """The layer of ``bookkit.x.y`` (by its first part below ``bookkit``)."""
    parts = name.split(".")
    if len(parts) < 2:
        return 0  # the package itself
    return LAYERS[parts[1]]


def bookkit_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of a bookkit module in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] == "bookkit":
                names = [f"{node.module}.{a.name}" for a in node.names]
                # `from bookkit.editions import slides`: the module is bookkit.x.slides
                for name in names:
                    found.append((node.lineno, name if _is_module(name) else
                                  node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names
                      if a.name.split(".")[0] == "bookkit"]
    return found


def _is_module(name: str) -> bool:
    path = PACKAGE.parent / Path(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_every_module_has_a_layer() -> None:
    for path in MODULES:
        name = module_name(path)
        if name != "bookkit":
            assert name.split(".")[1] in LAYERS, (
                f"{path.relative_to(ROOT)}: give bookkit.{name.split('.')[1]} a layer "
                "in bookkit/__init__.py and in LAYERS here"
            )


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_follow_the_layers(path: Path) -> None:
    own = layer(module_name(path))
    for line, name in bookkit_imports(path):
        assert layer(name) <= own, (
            f"{path.relative_to(ROOT)}:{line} imports {name} (layer {layer(name)}) "
            f"from layer {own}: a module imports only from its own layer or above"
        )


def test_the_layer_rule_catches_an_upward_import(tmp_path: Path) -> None:
    """The probe works: an import from a lower layer is seen."""
    probe = tmp_path / "probe.py"
    probe.write_text("from bookkit.editions import slides\nimport bookkit.run\n")
    names = [name for _, name in bookkit_imports(probe)]
    assert names == ["bookkit.editions.slides", "bookkit.run"]
    assert layer("bookkit.editions.slides") > layer("bookkit.notebook")


@pytest.mark.parametrize(
    "path", MODULES + TESTS, ids=lambda p: str(p.relative_to(ROOT))
)
def test_no_sys_path_edits(path: Path) -> None:
    """Everything imports as bookkit.x (installed by make setup): no path juggling."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "path":
            if isinstance(node.value, ast.Name) and node.value.id == "sys":
                raise AssertionError(
                    f"{path.relative_to(ROOT)}:{node.lineno} uses sys.path"
                )


# Each rule lives in one module; these patterns may appear only there.
RULES = {
    "the Colab badge and links to the editions": (
        re.compile(r"colab\.research\.google\.com"), {"bookkit/notebook.py"}),
    "a tag tested by its literal name": (
        re.compile(r"""["'](?:solution|exercise-check|remove-cell|remove-input|export|"""
                   r"""hide-input|name|copy)["']\s+(?:not\s+)?in\s+tags\("""),
        set()),
    "a tag list spelled out": (
        re.compile(r"""["'](?:remove-cell|exercise-check|hide-input)["']"""),
        {"bookkit/notebook.py"}),
    "clearing outputs": (
        re.compile(r"\.outputs\s*=\s*\[\]|execution_count\s*=\s*None"),
        {"bookkit/notebook.py"}),
    "reading _config.yml or _toc.yml": (
        re.compile(r"""["']_(?:config|toc)\.yml["']"""), {"bookkit/paths.py"}),
    "the student note": (
        re.compile(r"Student version\."), {"bookkit/notebook.py"}),
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_each_rule_lives_in_one_module(rule: str) -> None:
    pattern, home = RULES[rule]
    found = [
        f"{path.relative_to(ROOT)}:{k}"
        for path in MODULES
        for k, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
        and path.relative_to(ROOT).as_posix() not in home
        and not line.lstrip().startswith("#")
    ]
    assert not found, f"{rule} is written outside {sorted(home)}: {found}"


def test_no_chapter_is_named_in_the_machinery() -> None:
    """Chapters come from the registry (bookkit.chapters); the one tool made for one
    chapter (Chapter 11's benchmark) is the exception."""
    stem = re.compile(r"""["'/][0-9]{2}_[a-z][a-z0-9_]*(?:\.ipynb)?["']""")
    found = [
        f"{path.relative_to(ROOT)}:{k}: {line.strip()}"
        for path in MODULES
        if path.name != "bench_rope.py"
        for k, line in enumerate(path.read_text().splitlines(), 1)
        if stem.search(line) and not line.lstrip().startswith("#")
    ]
    assert not found, "chapters named in the machinery:\n" + "\n".join(found)
    ranges = [
        f"{path.relative_to(ROOT)}"
        for path in MODULES
        if re.search(r"range\(\s*\d+\s*,\s*1[0-9]\s*\)", path.read_text())
    ]
    assert not ranges, f"a hard-coded chapter range in {ranges}"


@pytest.mark.parametrize(
    "path", MODULES + TESTS, ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_import_resolves(path: Path) -> None:
    """Every module imported anywhere in a file (inside functions too) exists: no
    leftover bare name of the old tools/ folder (``from vendor_assets import ...``)."""
    import importlib.util

    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    tops = {n.split(".")[0] for n in names}
    missing = sorted(n for n in tops if importlib.util.find_spec(n) is None)
    assert not missing, f"{path.relative_to(ROOT)} imports {missing}: no such module"
