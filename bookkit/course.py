"""The course's grading model, read from the instructor page (its one source).

``book/course/instructor.md`` holds two tables an instructor edits: *Where the
answers are* (every exercise: its kind, the answer in one line, the minutes it takes,
the mistakes its check names) and the rubric of *Autograding* (the points of every
written answer and what earns them). The hand-outs (``bookkit.editions.handouts``) and
the grader (``bookkit.autograde``) take from them:

- an exercise's **weight** is its minutes: a 25-minute exercise counts more than a
  15-minute one;
- its **shares**: a coding exercise with a check gives 70 % of its weight to the checks
  (graded automatically, case by case) and 30 % to the code read by a person; an
  exercise with a written part (a derivation, a decision, a "why") gets a written answer
  cell graded by hand with the rubric; when it has both, the checks give 50 %, the code
  20 % and the written answer 30 %.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from bookkit.paths import INSTRUCTOR_PAGE

ROW = re.compile(
    r"^\| \{ref\}`Exercise (?P<number>\d+\.\d+) <(?P<label>[^>]+)>`: (?P<title>[^|]*?)"
    r" \| (?P<kind>[^|]*?) \| [^|]* \| (?P<minutes>\d+) \|",
    re.M,
)
RUBRIC = re.compile(
    r"^\| \{ref\}`Exercise (?P<number>\d+\.\d+) <(?P<label>[^>]+)>`"
    r"(?: \([^)]*\))? \| (?P<points>\d+) \|",
    re.M,
)
WRITTEN_KINDS = ("derivation", "decision")


@dataclass(frozen=True)
class CourseExercise:
    number: str  # "6.5"
    label: str  # "ex-06-next-positions"
    title: str
    kind: str  # "code + decision"
    minutes: int
    rubric_points: int | None  # the rubric's points for the written part

    @property
    def written(self) -> bool:
        """Whether it has a written part (graded by hand with the rubric)."""
        return any(word in self.kind for word in WRITTEN_KINDS)

    def shares(self, checked: bool) -> dict[str, float]:
        """The weight's shares: ``checks`` (automatic), ``code`` (read by a person),
        ``written`` (the rubric); ``checked`` says whether the chapter has a check."""
        if checked and self.written:
            return {"checks": 0.5, "code": 0.2, "written": 0.3}
        if checked:
            return {"checks": 0.7, "code": 0.3, "written": 0.0}
        return {"checks": 0.0, "code": 0.0, "written": 1.0}


@functools.cache
def course_exercises() -> dict[str, CourseExercise]:
    """Every exercise of the instructor page's table, by number ("6.5")."""
    text = INSTRUCTOR_PAGE.read_text()
    rubric = {m["number"]: int(m["points"]) for m in RUBRIC.finditer(text)}
    found = {}
    for match in ROW.finditer(text):
        number = match["number"]
        found[number] = CourseExercise(
            number=number,
            label=match["label"],
            title=match["title"].strip(),
            kind=match["kind"].strip(),
            minutes=int(match["minutes"]),
            rubric_points=rubric.get(number),
        )
    return found
