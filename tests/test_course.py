"""The course pages stay in step with the chapters: every chapter is linked from the
course
index, every Colab link on the running page is the one the chapter's badge uses, and
every
exercise the schedule and the instructor notes name exists."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT
from nbtools import notebook_paths, read
from sync_notebooks import colab_url

COURSE = ROOT / "book" / "course"
PAGES = ["index", "schedule", "running", "instructor"]
PATHS = notebook_paths()
EXERCISE_LABEL = re.compile(r"\{exercise(?:-start)?\}[^\n]*\n:label:\s*(\S+)")


def page(name: str) -> str:
    return (COURSE / f"{name}.md").read_text()


def exercise_labels() -> set[str]:
    labels = set()
    for path in PATHS:
        for cell in read(path).cells:
            if cell.cell_type == "markdown":
                labels.update(EXERCISE_LABEL.findall(cell.source))
    return labels


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_index_links_every_chapter(path) -> None:
    assert f"<../../notebooks/{path.stem}>`" in page("index"), (
        f"book/course/index.md has no {{doc}} link to {path.stem}"
    )


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_running_page_has_the_colab_link(path) -> None:
    assert f"]({colab_url(path)})" in page("running"), (
        f"book/course/running.md lacks the Colab link {colab_url(path)} "
        "(it must match the badge that tools/sync_notebooks.py writes)"
    )


def test_course_pages_link_each_other_and_the_reference_pages() -> None:
    index = page("index")
    for target in (
        "schedule",
        "running",
        "instructor",
        "../notation",
        "../glossary",
        "../bibliography",
    ):
        assert f"<{target}>`" in index, f"the course index does not link {target}"
    for name in PAGES[1:]:
        others = [p for p in PAGES[1:] if p != name]
        assert any(
            f"<{p}>`" in page(name) or f"<../{p}>`" in page(name)
            for p in others + ["../notation", "../glossary"]
        ), f"{name}.md links nowhere"


@pytest.mark.parametrize("name", ["schedule", "instructor"])
def test_named_exercises_exist(name: str) -> None:
    named = set(re.findall(r"\{ref\}`(ex-[^`]+)`", page(name)))
    assert named, f"{name}.md names no exercise"
    missing = sorted(named - exercise_labels())
    assert not missing, (
        f"book/course/{name}.md refers to exercises no chapter defines: {missing}"
    )


def test_instructor_table_covers_every_exercise() -> None:
    listed = set(re.findall(r"^\| \{ref\}`(ex-[^`]+)`", page("instructor"), re.M))
    missing = sorted(exercise_labels() - listed)
    assert not missing, f"the answer table of book/course/instructor.md lacks {missing}"
