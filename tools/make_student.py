"""Write the student version of every chapter: solutions removed, exercise stubs kept.

    python tools/make_student.py OUTDIR [--force]

For each ``notebooks/NN_topic.ipynb`` this writes ``OUTDIR/NN_topic.ipynb`` with

- every cell tagged ``solution`` dropped (the solution dropdowns and the solution code);
- all outputs and execution counts cleared;
- a short note after the title cell saying that this is the student version.

The ``exercise-check`` cells stay: in a student notebook they raise the stub's
``NotImplementedError`` until the student writes the function, then print
``All N checks passed.``. ``make student`` runs this with ``OUTDIR=student``.

A student's edits are never overwritten by accident: the sha256 of every notebook
written is
kept in ``OUTDIR/.generated.json``, and a notebook whose content no longer matches (it
was
edited or run) is left alone with a message unless ``--force`` is given.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
from pathlib import Path

import nbformat

from nbtools import NOTEBOOK_NAME, NOTEBOOKS, notebook_paths, read, tags

SOLUTION_TAG = "solution"
CHECK_TAG = "exercise-check"
MANIFEST = ".generated.json"
STUDENT_NOTE_MARK = "<!-- student-version -->"
STUDENT_NOTE = f"""{STUDENT_NOTE_MARK}
> **Student version.** The solutions are removed from this notebook; the exercises at
> the end are yours. Each coding exercise has a stub that raises `NotImplementedError`
> and a check cell below it: once you have written the function, run the check. It
> names the case that fails, with the expected and the obtained value, until it prints
> *All N checks passed*. Everything
> else in the notebook runs as it is. The book's website has the full chapter, solutions
> included (hidden in drop-downs)."""


def student_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of ``nb`` without solutions and outputs, a note after the title."""
    out = copy.deepcopy(nb)
    out.cells = [c for c in out.cells if SOLUTION_TAG not in tags(c)]
    if (
        not out.cells
        or out.cells[0].cell_type != "markdown"
        or not out.cells[0].source.startswith("# ")
    ):
        raise ValueError("the first cell must be the markdown title cell ('# Title')")
    for cell in out.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        for key in ("execution", "collapsed", "scrolled"):
            cell.metadata.pop(key, None)
    note = nbformat.v4.new_markdown_cell(STUDENT_NOTE)
    note.id = "student-version-note"  # fixed, so regenerating gives identical files
    out.cells.insert(1, note)
    out.metadata.pop("widgets", None)
    return out


def leftover_solutions(nb: nbformat.NotebookNode) -> list[int]:
    """Indices of cells that still look like solutions (a check on the tagging)."""
    markers = ("{solution}", "{solution-start}", "{solution-end}")
    return [
        k
        for k, c in enumerate(nb.cells)
        if c.cell_type == "markdown" and any(m in c.source for m in markers)
    ]


def notebook_bytes(nb: nbformat.NotebookNode) -> bytes:
    return (nbformat.writes(nb) + "\n").encode()


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_students(
    outdir: Path, sources: list[Path], force: bool = False
) -> list[Path]:
    """Write the student notebooks; return the paths written (edited ones skipped)."""
    outdir.mkdir(parents=True, exist_ok=True)
    manifest_path = outdir / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    written, kept = [], []
    for source in sources:
        nb = student_notebook(read(source))
        left = leftover_solutions(nb)
        if left:
            raise ValueError(
                f"{source.name}: cells {left} contain a solution directive but are "
                f"not tagged {SOLUTION_TAG!r}; tag them so students do not see them"
            )
        nbformat.validate(nb)
        target = outdir / source.name
        data = notebook_bytes(nb)
        if target.is_file() and not force:
            current = digest(target.read_bytes())
            if current != manifest.get(source.name) and target.read_bytes() != data:
                kept.append(target)
                continue
        target.write_bytes(data)
        manifest[source.name] = digest(data)
        written.append(target)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    for target in kept:
        print(
            f"kept {target}: it was changed after it was generated (your work?). "
                "Move it away "
            "and run again, or pass --force to overwrite it.",
            file=sys.stderr,
        )
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "outdir", type=Path, help="folder for the student notebooks, e.g. student"
    )
    parser.add_argument(
        "--force", action="store_true", help="overwrite notebooks edited since"
    )
    parser.add_argument(
        "--notebooks", type=Path, default=NOTEBOOKS, help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.notebooks == NOTEBOOKS:
        sources = notebook_paths()
    else:
        sources = sorted(
            p for p in args.notebooks.glob("*.ipynb") if NOTEBOOK_NAME.match(p.name)
        )
    if not sources:
        print(f"no chapter notebooks in {args.notebooks}", file=sys.stderr)
        return 1
    written = write_students(args.outdir, sources, force=args.force)
    for path in written:
        print(f"student version: {path}")
    return 0 if len(written) == len(sources) else 1


if __name__ == "__main__":
    sys.exit(main())
