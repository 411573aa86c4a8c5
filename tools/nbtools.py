"""Shared helpers for the book's notebook tooling (sync, student versions, slides, tests).

Conventions, all carried by cell tags so they survive Jupyter, Colab and jupytext:

- ``remove-cell`` on the first code cell: the hidden setup cell (identical in every notebook,
  generated from ``SETUP_TEMPLATE``).
- ``export``: a cell of imports and definitions only. Tests execute exactly these cells, so the
  functions a reader sees are the functions that are tested.
- ``name:X``: the defining cell of ``X`` (a name unique across the book).
- ``copy:X``: a later chapter's copy of the cell named ``X``; ``tools/sync_notebooks.py`` keeps
  it identical and ``--check`` fails on drift.
- ``solution``: removed from student notebooks (solution code and the markdown around it).
- ``exercise-check``: a cell that calls a check function; in a student notebook it is the only
  kind of cell allowed to raise ``NotImplementedError``.
"""
from __future__ import annotations

import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
NOTEBOOK_NAME = re.compile(r"^\d\d_[a-z0-9_]+\.ipynb$")


def notebook_paths() -> list[Path]:
    """All chapter notebooks, in chapter order."""
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    bad = [p.name for p in paths if not NOTEBOOK_NAME.match(p.name)]
    if bad:
        raise ValueError(f"notebooks must be named NN_topic.ipynb; rename {bad}")
    return paths


def read(path: Path) -> nbformat.NotebookNode:
    """Read a notebook as nbformat v4."""
    return nbformat.read(path, as_version=4)


def write(nb: nbformat.NotebookNode, path: Path) -> None:
    """Write a notebook with stable formatting (one-space JSON indent as Jupyter does)."""
    nbformat.write(nb, path)


def tags(cell: nbformat.NotebookNode) -> list[str]:
    """The tags of a cell (empty list if none)."""
    return list(cell.get("metadata", {}).get("tags", []))


def tag_values(cell: nbformat.NotebookNode, prefix: str) -> list[str]:
    """Values of tags of the form ``prefix:value``."""
    return [t.split(":", 1)[1] for t in tags(cell) if t.startswith(prefix + ":")]


def export_source(path: Path) -> str:
    """The concatenated source of a notebook's ``export`` cells, in order."""
    nb = read(path)
    parts = [c.source for c in nb.cells if c.cell_type == "code" and "export" in tags(c)]
    return "\n\n".join(parts) + "\n"
