"""Autograding with nbgrader: assignments from the chapters' exercises, batch grading.

    python -m bookkit.autograde assignments [--out DIR] [--chapters 03 07] [--validate]
    python -m bookkit.autograde grade SUBMISSIONS [--csv FILE] [--course DIR]
    (``make assignments``; ``make autograde SUBMISSIONS=folder``)

**Assignments.** For each chapter this writes the nbgrader *source* notebook of its
hand-out (``bookkit.editions.handouts``) and releases it with nbgrader
(``DIR/release/NN_topic/NN_topic.ipynb``: what students get; the same notebooks are
committed in ``colab/handouts/`` for Colab).

At grading a deleted test cell is put back where it was (``restore_missing``) and
nbgrader puts back the source of every read-only and test cell (``OverwriteCells``), so
a student cannot edit or delete a check away. The kernels run with ``BOOK_GRADING=1``:
the modules the checks rely on are recorded before the first cell and restored before
each check (``bookkit.guard``), and each check cell grades its exercise case by case,
hidden cases included (``bookkit.grading``).

**Grading.** ``SUBMISSIONS/<student>/NN_topic.ipynb`` (the released notebook, worked
in) for any students and chapters. The assignments are generated again into a course
folder of its own for this batch (default ``_build/autograde/<SUBMISSIONS folder
name>``; its ``autograded/`` keeps the executed submissions; a batch already graded is
never overwritten), nbgrader autogrades each submission, and ``grades.csv`` gets one
row per student, chapter and exercise: the points of the checks (the cases passed of
the visible and hidden ones, times the checks' share of the exercise's weight), the
code's and the written answer's maxima with a blank for the person who reads them, the
check's message and what was tampered with; then a total row per student and chapter.
``gradebook.csv`` has one row per student and one column per chapter, for an LMS
(Moodle's grade import, or Canvas after adding its student IDs).
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
from nbformat.corpus.words import generate_corpus_id

from bookkit.chapters import notebook_paths
from bookkit.course import course_exercises
from bookkit.editions.handouts import assignment_source, exercises, weights
from bookkit.grading import SCORE, points
from bookkit.notebook import NOTEBOOK_NAME, read
from bookkit.paths import ASSIGNMENTS, AUTOGRADE, IPYTHON_DIR

COURSE = AUTOGRADE  # make autograde's course folders
REDEFINITION = re.compile(
    r"^\s*(?:def\s+(check_\w+)|class\s+(ExerciseCheck)\b"
    r"|(check_\w+|ExerciseCheck)\s*=)",
    re.M,
)
# A library patched in the submission's own cells (restored for grading anyway).
PATCH = re.compile(
    r"^\s*(?P<target>(?:np|numpy|torch|math|builtins|F|scipy(?:\.\w+)?)"
    r"(?:\.\w+)+)\s*=(?!=)"
    r"|\bsetattr\(\s*(?P<module>np|numpy|torch|math|builtins|F)\b",
    re.M,
)
TAMPERING = "BOOK-TAMPERING: "
HIDDEN_SHARE = 0.5  # of the checks' points, when an exercise has hidden cases
NOT_A_RELEASE = ("not the released hand-out (no nbgrader cells; a Colab edition or a "
                 "student notebook?): graded by appending the checks; hand in the "
                 "hand-out notebook")
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
    # Grading kernels take the snapshot of bookkit.guard before the first cell.
    os.environ["BOOK_GRADING"] = "1"
    os.environ.setdefault("IPYTHONDIR", str(IPYTHON_DIR))
    config.Autograde.create_student = True
    config.NbGraderAPI.log_level = "ERROR"
    return NbGraderAPI(CourseDirectory(config=config), config=config)


def generate(course: Path, chapters: list[Path], fresh: bool = True) -> object:
    """Write the source notebooks and release them; return the API. ``fresh``
    empties the folder first (hand-outs); a grading batch's folder must be new."""
    if fresh:
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
    gone too). nbgrader then restores the source of every test cell. A restored cell
    whose id the submission already uses (a Colab edition shares the release's ids)
    gets a fresh one."""
    out = nbformat.from_dict(submitted)
    for k, cell in enumerate(release.cells):
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("grade") or meta["grade_id"] in grade_ids(out):
            continue
        where = {gid: j for j, c in enumerate(out.cells)
                 if (gid := c.metadata.get("nbgrader", {}).get("grade_id"))}
        anchors = [where[g] for c in release.cells[:k]
                   if (g := c.metadata.get("nbgrader", {}).get("grade_id")) in where]
        restored = nbformat.from_dict(cell)
        if restored.get("id") in {c.get("id") for c in out.cells}:
            restored["id"] = generate_corpus_id()
        out.cells.insert(anchors[-1] + 1 if anchors else len(out.cells), restored)
    return out


def is_release(nb: nbformat.NotebookNode) -> bool:
    """Whether a notebook is the released hand-out (it has nbgrader's cells)."""
    return bool(grade_ids(nb))


def tampering(submitted: nbformat.NotebookNode, release: nbformat.NotebookNode,
              grade_id: str) -> list[str]:
    """What the submission did to the check of ``grade_id`` (restored for grading)."""
    if not is_release(submitted):
        return []  # said once, in the total row (NOT_A_RELEASE)
    cells, original = grade_ids(submitted), grade_ids(release)
    notes = []
    if grade_id not in cells:
        notes.append("check cell deleted")
    elif cells[grade_id].source.strip() != original[grade_id].source.strip():
        notes.append("check cell edited")
    return notes


def notebook_tampering(submitted: nbformat.NotebookNode,
                       release: nbformat.NotebookNode) -> list[str]:
    """Read-only cells edited or deleted, checks redefined, libraries patched (all
    undone for grading)."""
    cells, original = grade_ids(submitted), grade_ids(release)
    if not cells:
        return [NOT_A_RELEASE]  # its own copies of the checks are not tampering
    notes = []
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
        for match in PATCH.finditer(cell.source):
            notes.append(f"patches {match['target'] or match['module']}")
    return notes


def message(cell: nbformat.NotebookNode | None) -> tuple[str, str, str, list[str]]:
    """(status, feedback, score line, tampering found at run time) of an executed
    test cell."""
    if cell is None:
        return "not run", "the check did not run", "", []
    text = "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.output_type == "stream")
    lines = text.splitlines()
    score = next((ln for ln in lines if ln.startswith(SCORE)), "")
    found = sorted({ln.removeprefix(TAMPERING) for ln in lines
                    if ln.startswith(TAMPERING)})
    shown = [ln for ln in lines if not ln.startswith((SCORE, TAMPERING))]
    for output in cell.get("outputs", []):
        if output.output_type == "error":
            error = " ".join(f"{output.ename}: {output.evalue}".split())[:500]
            # the stub's own error: the exercise was not attempted
            if output.ename == "NotImplementedError":
                return "not attempted", error, score, found
            return "failed", error, score, found
    return "passed", " ".join(" ".join(shown).split())[-500:], score, found


FIELDS = ["student", "chapter", "exercise", "part", "weight", "cases", "points",
          "max_points", "review_points", "review_max", "status", "tampering",
          "feedback"]


def looked_up(score: str) -> bool:
    """Every visible case passed, fewer than half of the hidden ones: an answer made
    for the inputs it was shown."""
    parts = score.removeprefix(SCORE).split()
    visible, hidden = (tuple(map(int, x.split("/"))) for x in (parts[1], parts[3]))
    return visible[0] == visible[1] > 0 and hidden[1] > 0 and 2 * hidden[0] < hidden[1]


def batch_folder(course: Path, submissions: Path) -> Path:
    """The course folder of one batch of submissions: new, never a graded one."""
    folder = course / submissions.resolve().name
    if (folder / "gradebook.db").exists():
        raise FileExistsError(
            f"{folder} holds a graded batch already: it is kept; grade this batch "
            "under another folder name (or pass --course to choose where)"
        )
    return folder


def check_row(student: str, chapter: str, exercise, table, graded, release,
              submitted, general, broken) -> dict:
    """The row of one checked exercise."""
    grade_id = f"check-{exercise.label}"
    course = table.get(exercise.label)
    share = weights(course, True)
    status, feedback, score, found = message(graded.get(grade_id))
    if broken:
        status, feedback, score, found = "not graded", broken, "", []
    notes = tampering(submitted, release, grade_id) if submitted else []
    called = re.findall(r"\b(check_\w+)\(", grade_ids(release)[grade_id].source)
    notes += [n for n in general if n.split()[-1] in called
              or n.endswith("ExerciseCheck") or n.startswith("patches ")]
    notes += [f"{n} (put back for grading)" for n in found]
    earned = points(score, share["checks"], HIDDEN_SHARE) if score else 0.0
    if score and looked_up(score):
        earned = 0.0
        notes.append("passes every visible case but few hidden ones: the visible "
                     "inputs looked up? (no points; read the code)")
    cases = score.removeprefix(SCORE) if score else ""
    return {"student": student, "chapter": chapter, "exercise": exercise.number,
            "part": "checks", "weight": course.minutes if course else "",
            "cases": cases, "points": earned, "max_points": share["checks"],
            "review_points": "", "review_max": share["code"], "status": status,
            "tampering": "; ".join(notes), "feedback": feedback}


def written_row(student: str, chapter: str, course, checked: bool) -> dict:
    """The row of an exercise's written part: graded by a person."""
    share = weights(course, checked)
    rubric = (f"the rubric's {course.rubric_points} points"
              if course.rubric_points else "the rubric")
    return {"student": student, "chapter": chapter, "exercise": course.number,
            "part": "written", "weight": course.minutes, "cases": "",
            "points": "", "max_points": share["written"], "review_points": "",
            "review_max": 0.0 if checked else share["code"], "status": "by hand",
            "tampering": "", "feedback": f"read the answer cell; {rubric}, scaled "
            f"to {share['written']:g}"}


def grade(submissions: Path, csv_path: Path, course: Path = COURSE) -> list[dict]:
    """Autograde every ``SUBMISSIONS/<student>/NN_topic.ipynb`` in a new course folder
    of its own; write the CSV and the gradebook CSV next to it."""
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
    api = generate(course, [chapters[n] for n in used], fresh=False)
    table = {e.label: e for e in course_exercises().values()}
    found_exercises = {n: exercises(read(chapters[n]), n) for n in used}
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
        general = notebook_tampering(submitted, release) if submitted else []
        chapter_rows = []
        checked = {e.label for e in found_exercises[path.name]}
        for exercise in found_exercises[path.name]:
            chapter_rows.append(check_row(student, aid, exercise, table, graded,
                                          release, submitted, general, broken))
        prefix = f"{int(aid[:2])}."
        for course_exercise in table.values():
            if course_exercise.number.startswith(prefix) and course_exercise.written:
                chapter_rows.append(written_row(student, aid, course_exercise,
                                                course_exercise.label in checked))
        chapter_rows.sort(key=lambda r: [int(x) for x in r["exercise"].split(".")])
        total = sum(r["points"] for r in chapter_rows if r["points"] != "")
        most = sum(r["max_points"] + r["review_max"] for r in chapter_rows)
        rows += chapter_rows
        rows.append({"student": student, "chapter": aid, "exercise": "total",
                     "part": "", "weight": "", "cases": "", "points": round(total, 2),
                     "max_points": round(most, 2), "review_points": "",
                     "review_max": "", "status": "", "tampering": "; ".join(general),
                     "feedback": "points: the checks only; add the code and written "
                     "parts read by a person"})
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    with csv_path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    write_gradebook(rows, csv_path.with_name("gradebook.csv"))
    return rows


def write_gradebook(rows: list[dict], path: Path) -> None:
    """One row per student, one column per chapter (the checks' points): what an LMS
    imports (Moodle: map ``username`` to the user's username; Canvas: add its ID
    column)."""
    totals = {(r["student"], r["chapter"]): r["points"] for r in rows
              if r["exercise"] == "total"}
    chapters = sorted({c for _, c in totals})
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["username", *[f"{c} (checks)" for c in chapters]])
        for student in sorted({s for s, _ in totals}):
            marks = [totals.get((student, c), "") for c in chapters]
            writer.writerow([student, *marks])


def correct_submission(path: Path, release: nbformat.NotebookNode
                       ) -> nbformat.NotebookNode:
    """The released notebook with the chapter's own solutions in the answer cells."""
    nb = read(path)
    answers = {
        f"answer-{e.label}": "\n\n".join(nb.cells[j].source for j in e.solutions)
        for e in exercises(nb, path.name)
    }
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
    run.add_argument("--course", type=Path,
                     help="the batch's course folder (default: "
                          "_build/autograde/<SUBMISSIONS folder name>; never reused)")
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
            bad = [r for r in rows if r["part"] == "checks"
                   and r["points"] != r["max_points"]]
            for row in bad:
                print(f"{row['chapter']} {row['exercise']}: {row['feedback']}",
                      file=sys.stderr)
            checks = [r for r in rows if r["part"] == "checks"]
            print(f"validate: {len(checks) - len(bad)} of {len(checks)} solutions "
                  f"pass ({time.monotonic() - start:.0f} s)")
            return 1 if bad else 0
        return 0
    csv_path = args.csv or args.submissions / "grades.csv"
    try:
        course = args.course or batch_folder(COURSE, args.submissions)
        if args.course and (args.course / "gradebook.db").exists():
            course = batch_folder(args.course.parent, Path(args.course.name))
    except FileExistsError as error:
        print(error, file=sys.stderr)
        return 2
    rows = grade(args.submissions, csv_path, course)
    for row in rows:
        if row["exercise"] == "total":
            print(f"{row['student']} {row['chapter']}: "
                  f"{row['points']:g}/{row['max_points']:g}")
    print(f"grades: {csv_path} ({time.monotonic() - start:.0f} s); graded notebooks "
          f"in {course / 'autograded'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
