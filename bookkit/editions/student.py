"""The student notebooks: every chapter without its solutions, for ``student/``.

    python -m bookkit.editions.student [OUTDIR] [--force]     (``make student``)

Each ``OUTDIR/NN_topic.ipynb`` is ``bookkit.notebook.student_notebook`` of the chapter:
no ``solution`` cell, no output, a note after the title, the Colab badge opening the
student edition ``colab/student/``. The ``exercise-check`` cells stay: they raise the
stub's ``NotImplementedError`` until the student writes the function, then print
``All N checks passed.``.

A student's edits are never overwritten by accident: the sha256 of every notebook
written is kept in ``OUTDIR/.generated.json``, and a notebook whose content no longer
matches (it was edited or run) is left alone with a message unless ``--force`` is given.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import nbformat

from bookkit.chapters import notebook_paths
from bookkit.notebook import (
    NOTEBOOK_NAME,
    SOLUTION,
    leftover_solutions,
    notebook_bytes,
    read,
    student_notebook,
)
from bookkit.paths import NOTEBOOKS, STUDENT

MANIFEST = ".generated.json"


def checked_student_notebook(source: Path) -> nbformat.NotebookNode:
    """The student notebook of a chapter, refused if a solution was left untagged."""
    nb = student_notebook(read(source))
    left = leftover_solutions(nb)
    if left:
        raise ValueError(
            f"{source.name}: cells {left} contain a solution directive but are "
            f"not tagged {SOLUTION!r}; tag them so students do not see them"
        )
    nbformat.validate(nb)
    return nb


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
        target = outdir / source.name
        data = notebook_bytes(checked_student_notebook(source))
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
            "Move it away and run again, or pass --force to overwrite it.",
            file=sys.stderr,
        )
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "outdir", type=Path, nargs="?", default=STUDENT,
        help="folder for the student notebooks (default: student/)",
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
