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
EXERCISE_TITLE = re.compile(
    r"\{exercise(?:-start)?\} (\d+)\.(\d+) · [^\n]*\n:label:\s*(\S+)"
)
REF = re.compile(r"\{ref\}`(?:([^`<]*?)\s*<)?(ex-[^`>]+)>?`")


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
    edition = ROOT / "colab" / path.name  # the Colab edition the badge opens
    assert f"]({colab_url(edition)})" in page("running"), (
        f"book/course/running.md lacks the Colab link {colab_url(edition)} "
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
    named = {label for _, label in REF.findall(page(name))}
    assert named, f"{name}.md names no exercise"
    missing = sorted(named - exercise_labels())
    assert not missing, (
        f"book/course/{name}.md refers to exercises no chapter defines: {missing}"
    )


def test_instructor_table_covers_every_exercise() -> None:
    listed = {
        label
        for line in page("instructor").splitlines()
        if line.startswith("| {ref}")
        for _, label in REF.findall(line)[:1]
    }
    missing = sorted(exercise_labels() - listed)
    assert not missing, f"the answer table of book/course/instructor.md lacks {missing}"


# Every chapter carries the number in every exercise title ("6.2 · Title",
# with :nonumber:).
NUMBERED = PATHS


def exercise_numbers() -> dict[str, str]:
    """Label -> "N.k" from each exercise's title, checked against its place."""
    numbers = {}
    for path in NUMBERED:
        chapter = int(path.stem[:2])
        found = [
            m
            for c in read(path).cells
            if c.cell_type == "markdown"
            for m in EXERCISE_TITLE.findall(c.source)
        ]
        for k, (n, j, label) in enumerate(found, start=1):
            assert (int(n), int(j)) == (chapter, k), (
                f"{path.name}: exercise {label} is titled {n}.{j} "
                f"but is exercise {chapter}.{k}"
            )
            numbers[label] = f"{n}.{j}"
    return numbers


def test_every_exercise_title_carries_its_number() -> None:
    numbered = {
        label
        for path in NUMBERED
        for cell in read(path).cells
        if cell.cell_type == "markdown"
        for label in EXERCISE_LABEL.findall(cell.source)
    }
    assert set(exercise_numbers()) == numbered, (
        "every exercise title starts with 'N.k · ' (N the chapter, k its place in it)"
    )


@pytest.mark.parametrize("path", NUMBERED, ids=[p.stem for p in NUMBERED])
def test_stub_messages_use_the_exercise_number(path) -> None:
    """A stub's NotImplementedError names the number of the exercise it belongs to."""
    numbers = exercise_numbers()
    current = None
    for cell in read(path).cells:
        found = (
            EXERCISE_TITLE.findall(cell.source) if cell.cell_type == "markdown" else []
        )
        if found:
            current = numbers[found[-1][2]]
        stub = re.search(r'NotImplementedError\(\s*"Exercise (\d+\.\d+)', cell.source)
        if cell.cell_type == "code" and stub:
            assert stub.group(1) == current, (
                f"{path.name}: a stub says Exercise {stub.group(1)} "
                f"under Exercise {current}"
            )


@pytest.mark.parametrize("name", ["schedule", "instructor"])
def test_references_name_the_right_number(name: str) -> None:
    numbers = exercise_numbers()
    for text, label in REF.findall(page(name)):
        if text and label in numbers:
            assert text == f"Exercise {numbers[label]}", (
                f"{name}.md calls {label} '{text}', but it is Exercise {numbers[label]}"
            )


WORDS_PER_MINUTE = {
    1: 100, 2: 100, 3: 70, 4: 100, 5: 70, 6: 100, 7: 70, 8: 100, 9: 100, 10: 70,
    11: 100, 12: 100,
}


def prose_words(path) -> int:
    """Words of the chapter's prose before its exercises (solutions excluded)."""
    words = 0
    for cell in read(path).cells:
        if "## Exercises" in cell.source:
            return words + len(cell.source.split("## Exercises")[0].split())
        if cell.cell_type == "markdown" and "solution" not in cell.metadata.get(
            "tags", []
        ):
            words += len(cell.source.split())
    return words


def test_reading_times_follow_the_word_counts() -> None:
    """The schedule's table of words and minutes stays within 15 % of the chapters."""
    rows = {
        int(k): v
        for k, v in re.findall(
            r"^\| (\d+)\. [^|]+\| ([\d ]+ \| \d+) min \|$", page("schedule"), re.M
        )
    }
    assert len(rows) == len(NUMBERED), "the schedule's reading-time table is missing"
    for path in NUMBERED:
        chapter = int(path.stem[:2])
        stated_words, stated_minutes = (
            int(x.replace(" ", "")) for x in rows[chapter].split("|")
        )
        actual = prose_words(path)
        expected_minutes = round(actual / WORDS_PER_MINUTE[chapter])
        assert abs(stated_words - actual) <= 0.15 * actual and abs(
            stated_minutes - expected_minutes
        ) <= max(2, 0.15 * expected_minutes), (
            f"schedule.md, Chapter {chapter}: update the row to "
            f"{round(actual, -1):,} words, {expected_minutes} min "
            f"(stated {stated_words} words, {stated_minutes} min)"
        )


def test_build_without_solutions_removes_every_solution_cell(monkeypatch) -> None:
    """`make book-no-solutions` sets BOOK_HIDE_SOLUTIONS=1; the extension then tags
    every
    `solution` cell `remove-cell` (it still runs, so checks pass) and nothing else."""
    import importlib.util
    import json
    import types

    spec = importlib.util.spec_from_file_location(
        "hide_solutions", COURSE / "_ext" / "hide_solutions.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = PATHS[5]
    app = types.SimpleNamespace(
        env=types.SimpleNamespace(doc2path=lambda name: str(path))
    )
    source = [path.read_text()]
    module._hide(app, "notebooks/x", source)
    assert source[0] == path.read_text(), "without the variable nothing changes"
    monkeypatch.setenv("BOOK_HIDE_SOLUTIONS", "1")
    module._hide(app, "notebooks/x", source)
    cells = json.loads(source[0])["cells"]
    before = json.loads(path.read_text())["cells"]
    for cell, old in zip(cells, before, strict=True):
        tags, old_tags = (
            cell["metadata"].get("tags", []),
            old["metadata"].get("tags", []),
        )
        if "solution" in old_tags:
            assert "remove-cell" in tags, tags
        else:
            assert tags == old_tags, "only solution cells may change"
    assert sum("solution" in c["metadata"].get("tags", []) for c in cells) >= 5
    config = types.SimpleNamespace(hide_solutions=False)
    module._configure(app, config)
    assert config.hide_solutions is True
