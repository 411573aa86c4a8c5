"""Words of prose and lines of visible code per chapter notebook.

Usage: ``.venv/bin/python -m bookkit.measure.prose_stats [notebooks/NN_x.ipynb ...]``
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
- **Figures** are code cells with a numbered figure (``mystnb.figure`` metadata);
  **equations** are display-math blocks (``$$ … $$`` and ``{math}`` fences) in
  markdown cells.
- ``main`` columns stop at the ``## Exercises`` heading; ``all`` columns cover
  the whole chapter.
- The licence footer that ``make sync`` appends to every chapter is not counted.

**Reading time** (the schedule's rule, stated on the page): a careful first read
of the main text takes

    words / 100 + visible code lines / 24 + 1 per figure + 1 per display equation

minutes: prose at 100 words a minute, code at 24 lines a minute (2.5 s a line),
a minute to read each figure against its caption and each displayed equation
with pen and paper. ``reading_minutes`` computes it; ``--minutes`` prints it.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

from bookkit.chapters import page_paths
from bookkit.licence import FOOTER_ID
from bookkit.notebook import HIDE_INPUT, REMOVE_INPUT, SETUP

KEYS = ("words", "words_main", "prose", "prose_main", "lines", "lines_main",
        "figures", "figures_main", "equations", "equations_main")
WORDS_PER_MINUTE = 100
CODE_LINES_PER_MINUTE = 24
MINUTES_PER_FIGURE = 1
MINUTES_PER_EQUATION = 1
HIDDEN = {SETUP, REMOVE_INPUT, HIDE_INPUT}
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


def display_equations(text: str) -> int:
    """Number of display-math blocks in one markdown cell."""
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    text = COMMENT.sub(" ", text)
    fenced = len(re.findall(r"^\s*(?:`{3,}|~{3,})\s*\{math\}", text, re.MULTILINE))
    return len(DISPLAY_MATH.findall(text)) + fenced


def is_figure(cell: nbformat.NotebookNode) -> bool:
    """True for a code cell that makes a numbered figure (mystnb figure metadata)."""
    return cell.cell_type == "code" and "figure" in cell.get("metadata", {}).get(
        "mystnb", {})


def _headings(cell: nbformat.NotebookNode) -> list[str]:
    if cell.cell_type != "markdown":
        return []
    found = re.findall(r"^#{1,6}\s+(.*)$", cell.source, re.MULTILINE)
    return [h.strip() for h in found]


def chapter_stats(path: Path, start: str | None = None,
                  stop: str | None = None) -> dict[str, int]:
    """Words, visible code lines, figures and display equations of one notebook, main
    text and whole chapter.

    With ``start`` and/or ``stop`` (the beginning of a heading's text), only the cells
    from the first one whose heading starts with ``start`` up to, not including, the
    next one whose heading starts with ``stop`` are counted: a reading assignment.
    """
    nb = nbformat.read(path, as_version=4)
    stats = dict.fromkeys(KEYS, 0)
    in_main = True
    counting = start is None
    found = {"start": start is None, "stop": stop is None}
    for cell in nb.cells:
        if cell.get("id") == FOOTER_ID:
            continue
        heads = _headings(cell)
        if not found["start"] and any(h.startswith(start) for h in heads):
            counting, found["start"] = True, True
        if found["start"] and not found["stop"] and any(
            h.startswith(stop) for h in heads
        ):
            counting, found["stop"] = False, True
        is_md = cell.cell_type == "markdown"
        if is_md and re.search(r"^##\s+Exercises", cell.source, re.MULTILINE):
            in_main = False
        if not counting:
            continue
        counts = {
            "words": len(cell.source.split()) if is_md else 0,
            "prose": markdown_words(cell.source) if is_md else 0,
            "lines": visible_lines(cell),
            "figures": int(is_figure(cell)),
            "equations": display_equations(cell.source) if is_md else 0,
        }
        for key, value in counts.items():
            stats[key] += value
            if in_main:
                stats[key + "_main"] += value
    missing = [f"{k} heading {v!r}" for k, v in (("start", start), ("stop", stop))
               if not found[k]]
    if missing:
        raise ValueError(f"{path.name} has no {' and no '.join(missing)}")
    return stats


def reading_minutes(stats: dict[str, int], main: bool = True) -> int:
    """Minutes for a careful first read, by the rule in this module's docstring."""
    suffix = "_main" if main else ""
    try:
        words, lines = stats["prose" + suffix], stats["lines" + suffix]
        figures, equations = stats["figures" + suffix], stats["equations" + suffix]
    except KeyError as error:
        raise ValueError(
            f"stats must come from chapter_stats; missing {error}") from None
    minutes = (words / WORDS_PER_MINUTE + lines / CODE_LINES_PER_MINUTE
               + figures * MINUTES_PER_FIGURE + equations * MINUTES_PER_EQUATION)
    return round(minutes)


def main(argv: list[str]) -> None:
    """Print the table for the given notebooks (default: every chapter); with
    ``--minutes``, the reading-time columns of the schedule instead."""
    minutes = "--minutes" in argv
    argv = [a for a in argv if a != "--minutes"]
    paths = [Path(a) for a in argv] or page_paths()
    if minutes:
        print("| chapter | words | code lines | figures | equations | reading time |")
        for path in paths:
            s = chapter_stats(path)
            print(f"| {path.stem} | {s['prose_main']} | {s['lines_main']} | "
                  f"{s['figures_main']} | {s['equations_main']} | "
                  f"{reading_minutes(s)} min |")
        return
    total = dict.fromkeys(KEYS, 0)
    print(f"{'chapter':30s}" + "".join(f"{k[:11]:>12s}" for k in KEYS))
    for path in paths:
        stats = chapter_stats(path)
        for key in KEYS:
            total[key] += stats[key]
        print(f"{path.stem[:30]:30s}" + "".join(f"{stats[k]:12d}" for k in KEYS))
    print(f"{'total':30s}" + "".join(f"{total[k]:12d}" for k in KEYS))


if __name__ == "__main__":
    main(sys.argv[1:])
