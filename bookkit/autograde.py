"""Autograding with nbgrader: assignments from the chapters' exercises, batch grading.

    python -m bookkit.autograde assignments [--out DIR] [--chapters 03 07] [--validate]
    python -m bookkit.autograde grade SUBMISSIONS [--csv FILE] [--course DIR]
    (``make assignments``; ``make autograde SUBMISSIONS=folder``)

**Assignments.** For each chapter this writes the nbgrader *source* notebook of its
hand-out (``bookkit.editions.handouts``) and releases it with nbgrader
(``DIR/release/NN_topic/NN_topic.ipynb``: what students get).

At grading a deleted test cell is put back where it was (``restore_missing``) and
nbgrader puts back the source of every read-only and test cell (``OverwriteCells``), so
a student cannot edit or delete a check away. Derivation exercises have no check: they
are graded by hand (the instructor page gives rubric points).

**Grading.** ``SUBMISSIONS/<student>/NN_topic.ipynb`` (the released notebook, worked
in) for any students and chapters. The assignments are generated again into a course
folder (default ``_build/autograde``; its ``autograded/`` keeps the executed
submissions), nbgrader autogrades each submission, and a CSV (default
``SUBMISSIONS/grades.csv``) gets one row per student, chapter and exercise: points, the
check's message (its first failing case, or "All N checks passed.") and what was
tampered with, then a total row per student and chapter.
"""

from __future__ import annotations

import argparse
import csv
import functools
import os
import re
import shutil
import sys
import time
import warnings
from pathlib import Path

import nbformat

from bookkit.chapters import notebook_paths
from bookkit.editions.handouts import POINTS, assignment_source, exercises
from bookkit.notebook import NOTEBOOK_NAME, read
from bookkit.paths import ASSIGNMENTS, AUTOGRADE

COURSE = AUTOGRADE  # make autograde's course folders
REDEFINITION = re.compile(
    r"^\s*(?:def\s+(check_\w+)|class\s+(ExerciseCheck)\b|(check_\w+|ExerciseCheck)\s*=)",
    re.M,
)
CALLED = re.compile(r"\b(check_\w+)\(")


def grader(course: Path, timeout: int = 600):
    """nbgrader's API on a course folder (its own gradebook.db)."""
    import nbgrader.api
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from sqlalchemy.exc import SAWarning
    from traitlets.config import Config

    # nbgrader's own session handling, harmless here (its issue, not the submission's)
    warnings.filterwarnings("ignore", category=SAWarning)

    # nbgrader runs `alembic` (the gradebook's migrations) from PATH: this venv's.
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    # ... once per process: it is asked at every opening of the gradebook (~1 s each).
    if not hasattr(nbgrader.api.get_alembic_version, "cache_info"):
        nbgrader.api.get_alembic_version = functools.cache(
            nbgrader.api.get_alembic_version)
    config = Config()
    config.CourseDirectory.root = str(course)
    config.ClearSolutions.code_stub = {"python": ""}  # the stub above stays
    config.OverwriteCells.add_missing_cells = True
    config.Execute.timeout = timeout
    config.Execute.allow_errors = True
    config.Autograde.create_student = True
    config.NbGraderAPI.log_level = "ERROR"
    return NbGraderAPI(CourseDirectory(config=config), config=config)


def generate(course: Path, chapters: list[Path]) -> object:
    """Write the source notebooks and release them; return the API."""
    shutil.rmtree(course, ignore_errors=True)
    for path in chapters:
        folder = course / "source" / path.stem
        folder.mkdir(parents=True)
        nbformat.write(assignment_source(path), folder / path.name)
    api = grader(course)
    for path in chapters:
        result = api.generate_assignment(path.stem)
        if not result["success"]:
            raise RuntimeError(f"nbgrader could not generate {path.stem}:\n"
                               f"{result['error']}\n{result['log']}")
    return api


def grade_ids(nb: nbformat.NotebookNode) -> dict[str, nbformat.NotebookNode]:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if "grade_id" in c.metadata.get("nbgrader", {})}


def restore_missing(submitted: nbformat.NotebookNode,
                    release: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The submission with every deleted test cell put back after the nearest cell of
    the release before it (nbgrader's own ``add_missing_cells`` fails when that cell is
    gone too). nbgrader then restores the source of every test cell."""
    out = nbformat.from_dict(submitted)
    for k, cell in enumerate(release.cells):
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("grade") or meta["grade_id"] in grade_ids(out):
            continue
        where = {gid: j for j, c in enumerate(out.cells)
                 if (gid := c.metadata.get("nbgrader", {}).get("grade_id"))}
        anchors = [where[g] for c in release.cells[:k]
                   if (g := c.metadata.get("nbgrader", {}).get("grade_id")) in where]
        out.cells.insert(anchors[-1] + 1 if anchors else len(out.cells),
                         nbformat.from_dict(cell))
    return out


def tampering(submitted: nbformat.NotebookNode, release: nbformat.NotebookNode,
              grade_id: str) -> list[str]:
    """What the submission did to the check of ``grade_id`` (restored for grading)."""
    cells, original = grade_ids(submitted), grade_ids(release)
    notes = []
    if grade_id not in cells:
        notes.append("check cell deleted")
    elif cells[grade_id].source.strip() != original[grade_id].source.strip():
        notes.append("check cell edited")
    return notes


def notebook_tampering(submitted: nbformat.NotebookNode,
                       release: nbformat.NotebookNode) -> list[str]:
    """Read-only cells edited or deleted, checks redefined (all undone for grading)."""
    cells, original = grade_ids(submitted), grade_ids(release)
    notes = [] if cells else ["not the released notebook (no nbgrader cells): the "
                              "checks were appended at its end"]
    for grade_id, cell in original.items():
        meta = cell.metadata["nbgrader"]
        if meta["locked"] and not meta["grade"]:
            if grade_id not in cells:
                notes.append(f"read-only cell {grade_id} deleted")
            elif cells[grade_id].source.strip() != cell.source.strip():
                notes.append(f"read-only cell {grade_id} edited")
    ours = {gid for gid, c in original.items() if c.metadata["nbgrader"]["locked"]}
    for cell in submitted.cells:
        if cell.cell_type != "code":
            continue
        if cell.metadata.get("nbgrader", {}).get("grade_id") in ours:
            continue
        for match in REDEFINITION.finditer(cell.source):
            name = next(g for g in match.groups() if g)
            notes.append(f"redefines {name}")
    return notes


def message(cell: nbformat.NotebookNode | None) -> tuple[str, str]:
    """(status, feedback) of an executed test cell."""
    if cell is None:
        return "not run", "the check did not run"
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            text = " ".join(f"{output.ename}: {output.evalue}".split())[:500]
            # the stub's own error: the exercise was not attempted
            if output.ename == "NotImplementedError":
                return "not attempted", text
            return "failed", text
    text = "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.output_type == "stream")
    return "passed", " ".join(text.split())[-500:]


FIELDS = ["student", "chapter", "exercise", "check", "points", "max_points", "status",
          "tampering", "feedback"]


def grade(submissions: Path, csv_path: Path, course: Path = COURSE) -> list[dict]:
    """Autograde every ``SUBMISSIONS/<student>/NN_topic.ipynb``; write the CSV."""
    chapters = {p.name: p for p in notebook_paths()}
    work = sorted(
        (folder.name, path)
        for folder in submissions.iterdir() if folder.is_dir()
        for path in folder.glob("*.ipynb") if NOTEBOOK_NAME.match(path.name)
    )
    unknown = sorted({p.name for _, p in work} - set(chapters))
    if unknown:
        raise ValueError(f"submissions of no chapter: {unknown}; name them "
                         "NN_topic.ipynb as released")
    if not work:
        raise ValueError(f"no submissions in {submissions}: expected "
                         "<student>/NN_topic.ipynb")
    used = sorted({p.name for _, p in work})
    api = generate(course, [chapters[n] for n in used])
    numbers = {n: {f"check-{e.label}": e.number
                   for e in exercises(read(chapters[n]), n)} for n in used}
    rows = []
    for student, path in work:
        aid = path.stem
        target = course / "submitted" / student / aid / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        release = read(course / "release" / aid / path.name)
        try:
            submitted = read(path)
        except Exception as error:  # noqa: BLE001 - any unreadable file scores 0
            submitted, broken = None, f"unreadable notebook: {error}"
        else:
            broken = None
            nbformat.write(restore_missing(submitted, release), target)
        result = api.autograde(aid, student) if submitted is not None else None
        graded_path = course / "autograded" / student / aid / path.name
        if result is not None and not (result["success"] and graded_path.is_file()):
            broken = f"nbgrader could not grade it: {result['error'].strip()[-300:]}"
        graded = grade_ids(read(graded_path)) if broken is None else {}
        scores = {}
        if broken is None:
            with api.gradebook as gb:
                notebook = gb.find_submission_notebook(aid, aid, student)
                scores = {g.name: (g.score, g.max_score) for g in notebook.grades}
        general = notebook_tampering(submitted, release) if submitted else []
        total = max_total = 0.0
        for grade_id, number in numbers[path.name].items():
            score, max_score = scores.get(grade_id, (0.0, float(POINTS)))
            status, feedback = message(graded.get(grade_id))
            if broken:
                status, feedback = "not graded", broken
            notes = tampering(submitted, release, grade_id) if submitted else []
            called = CALLED.findall(grade_ids(release)[grade_id].source)
            notes += [n for n in general
                      if n.split()[-1] in called or n.endswith("ExerciseCheck")]
            total, max_total = total + score, max_total + max_score
            rows.append({"student": student, "chapter": aid, "exercise": number,
                         "check": grade_id, "points": score, "max_points": max_score,
                         "status": status, "tampering": "; ".join(notes),
                         "feedback": feedback})
        rows.append({"student": student, "chapter": aid, "exercise": "total",
                     "check": "", "points": total, "max_points": max_total,
                     "status": "", "tampering": "; ".join(general), "feedback": ""})
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    with csv_path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return rows


def correct_submission(path: Path, release: nbformat.NotebookNode
                       ) -> nbformat.NotebookNode:
    """The released notebook with the chapter's own solutions in the answer cells."""
    nb = read(path)
    answers = {f"answer-{e.label}": "\n\n".join(nb.cells[j].source for j in e.solutions)
               for e in exercises(nb, path.name)}
    out = nbformat.from_dict(release)
    for cell in out.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    return out


def select(chapters: list[str] | None) -> list[Path]:
    paths = notebook_paths()
    if not chapters:
        return paths
    chosen = [p for p in paths if p.name[:2] in {c.zfill(2) for c in chapters}]
    if len(chosen) != len(chapters):
        raise ValueError(f"unknown chapters in {chapters}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("assignments", help="write and release the assignments")
    make.add_argument("--out", type=Path, default=ASSIGNMENTS)
    make.add_argument("--chapters", nargs="*", help="e.g. 03 07 (default: all)")
    make.add_argument("--validate", action="store_true",
                      help="grade the chapters' own solutions: full marks expected")
    run = sub.add_parser("grade", help="autograde SUBMISSIONS/<student>/NN_topic.ipynb")
    run.add_argument("submissions", type=Path)
    run.add_argument("--csv", type=Path, help="default: SUBMISSIONS/grades.csv")
    run.add_argument("--course", type=Path, default=COURSE)
    args = parser.parse_args(argv)
    start = time.monotonic()
    if args.command == "assignments":
        chapters = select(args.chapters)
        generate(args.out, chapters)
        print(f"assignments: {args.out / 'release'} ({len(chapters)} chapters)")
        if args.validate:
            folder = args.out / "validate" / "solutions"
            shutil.rmtree(folder.parent, ignore_errors=True)
            folder.mkdir(parents=True)
            for path in chapters:
                release = read(args.out / "release" / path.stem / path.name)
                nbformat.write(correct_submission(path, release), folder / path.name)
            rows = grade(folder.parent, folder.parent / "grades.csv",
                         args.out / "validate" / "course")
            bad = [r for r in rows if r["exercise"] != "total"
                   and r["points"] != r["max_points"]]
            for row in bad:
                print(f"{row['chapter']} {row['exercise']}: {row['feedback']}",
                      file=sys.stderr)
            print(f"validate: {len(rows) - len(chapters) - len(bad)} of "
                  f"{len(rows) - len(chapters)} solutions pass "
                  f"({time.monotonic() - start:.0f} s)")
            return 1 if bad else 0
        return 0
    csv_path = args.csv or args.submissions / "grades.csv"
    rows = grade(args.submissions, csv_path, args.course)
    for row in rows:
        if row["exercise"] == "total":
            print(f"{row['student']} {row['chapter']}: "
                  f"{row['points']:g}/{row['max_points']:g}")
    print(f"grades: {csv_path} ({time.monotonic() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
