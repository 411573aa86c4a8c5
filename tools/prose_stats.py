"""Words of prose and lines of visible code per chapter notebook.

Usage: ``.venv/bin/python tools/prose_stats.py [notebooks/NN_x.ipynb ...]``
(default: every chapter). Prints one row per chapter and a total.

Counting rules (stated here so before/after tables compare like with like):

- **Words** (the budget of issue #9) are whitespace-separated tokens of markdown
  cells, everything included (math, directive syntax): what a reader scrolls past.
- **Prose** words are the same tokens after removing
  literal code fences (a fence whose info string does not start with ``{``, so
  ``{prf:theorem}``, ``{exercise}``, ``{note}`` bodies count as prose), display
  math (``$$ … $$`` and ``{math}`` fences), HTML comments and MyST targets
  (``(label)=``). Inline math ``$…$`` counts as one word.
- **Visible code lines** are source lines (blank ones included) of code cells
  not tagged ``remove-cell``, ``remove-input`` or ``hide-input`` (those are
  hidden or folded on the site). Solution cells count: they sit in dropdowns.
- ``main`` columns stop at the ``## Exercises`` heading; ``all`` columns cover
  the whole chapter.
- The licence footer that ``make sync`` appends to every chapter is not counted.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

from licence import FOOTER_ID

ROOT = Path(__file__).resolve().parents[1]
KEYS = ("words", "words_main", "prose", "prose_main", "lines", "lines_main")
HIDDEN = {"remove-cell", "remove-input", "hide-input"}
FENCE = re.compile(r"^(`{3,}|~{3,})\s*(.*)$")
DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.DOTALL)
INLINE_MATH = re.compile(r"\$[^$\n]+\$")
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
TARGET = re.compile(r"^\([^)]*\)=\s*$", re.MULTILINE)


def _strip_fences(text: str) -> str:
    """Drop literal code and ``{math}`` fences; keep directive bodies."""
    kept: list[str] = []
    stack: list[tuple[str, bool]] = []  # (fence marker, is_dropped)
    for line in text.splitlines():
        match = FENCE.match(line.strip())
        if match:
            marker, info = match.groups()
            if stack and marker == stack[-1][0] and not info:
                stack.pop()
                continue
            if not (stack and stack[-1][1]):
                drop = not info.startswith("{") or info.startswith("{math}")
                stack.append((marker, drop))
                continue
        if any(dropped for _, dropped in stack):
            continue
        if line.lstrip().startswith(":") and stack:
            continue  # directive options such as :label:
        kept.append(line)
    return "\n".join(kept)


def markdown_words(text: str) -> int:
    """Number of prose words in one markdown cell, by the rules above."""
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    text = COMMENT.sub(" ", text)
    text = TARGET.sub(" ", text)
    text = _strip_fences(text)
    text = DISPLAY_MATH.sub(" ", text)
    text = INLINE_MATH.sub(" MATH ", text)
    return len(re.findall(r"\S+", re.sub(r"[#*|>`_-]{1,}(?=\s|$)", " ", text)))


def visible_lines(cell: nbformat.NotebookNode) -> int:
    """Non-blank source lines of a code cell a reader sees unfolded (0 if hidden)."""
    tags = set(cell.get("metadata", {}).get("tags", []))
    if cell.cell_type != "code" or tags & HIDDEN:
        return 0
    return len(cell.source.splitlines())


def chapter_stats(path: Path) -> dict[str, int]:
    """Words and visible code lines of one notebook, main text and whole chapter."""
    nb = nbformat.read(path, as_version=4)
    stats = dict.fromkeys(KEYS, 0)
    in_main = True
    for cell in nb.cells:
        if cell.get("id") == FOOTER_ID:
            continue
        is_md = cell.cell_type == "markdown"
        if is_md and re.search(r"^##\s+Exercises", cell.source, re.MULTILINE):
            in_main = False
        counts = {
            "words": len(cell.source.split()) if is_md else 0,
            "prose": markdown_words(cell.source) if is_md else 0,
            "lines": visible_lines(cell),
        }
        for key, value in counts.items():
            stats[key] += value
            if in_main:
                stats[key + "_main"] += value
    return stats


def main(argv: list[str]) -> None:
    """Print the table for the given notebooks (default: chapters 01–07)."""
    default = sorted((ROOT / "notebooks").glob("0[1-7]_*.ipynb"))
    paths = [Path(a) for a in argv] or default
    total = dict.fromkeys(KEYS, 0)
    print(f"{'chapter':30s}" + "".join(f"{k:>12s}" for k in KEYS))
    for path in paths:
        stats = chapter_stats(path)
        for key in KEYS:
            total[key] += stats[key]
        print(f"{path.stem[:30]:30s}" + "".join(f"{stats[k]:12d}" for k in KEYS))
    print(f"{'total':30s}" + "".join(f"{total[k]:12d}" for k in KEYS))


if __name__ == "__main__":
    main(sys.argv[1:])
