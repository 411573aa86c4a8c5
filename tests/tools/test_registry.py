"""The chapter registry (bookkit.chapters) and what adding a chapter takes.

Adding a chapter means a notebook, a `_toc.yml` line and a test file. The last test
proves it: in a temporary copy of the book it adds a dummy chapter that way, then runs
the sync, the edition writers and the student-site generator on the copy
(``BOOK_ROOT`` points the machinery at it), and finds the new chapter everywhere.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from bookkit.chapters import DEFAULT_BUDGET, chapter, chapters
from bookkit.notebook import BADGE_MARK, SETUP, STUDENT_NOTE_MARK
from bookkit.paths import ROOT


def test_registry_follows_the_table_of_contents() -> None:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    listed = [
        entry["file"].removeprefix("notebooks/")
        for part in toc["parts"]
        for entry in part["chapters"]
        if entry["file"].startswith("notebooks/")
    ]
    assert [c.stem for c in chapters()] == listed
    assert [c.number for c in chapters()] == list(range(1, len(listed) + 1))
    parts = {
        entry["file"].removeprefix("notebooks/"): part["caption"]
        for part in toc["parts"]
        for entry in part["chapters"]
    }
    assert all(c.part == parts[c.stem] for c in chapters())


def test_budgets_and_lanes_come_from_the_notebooks() -> None:
    for c in chapters():
        settings = json.loads(c.path.read_text())["metadata"].get("book", {})
        assert c.budget == settings.get("budget_seconds", DEFAULT_BUDGET)
        assert (c.lane == "priority") == (c.budget > DEFAULT_BUDGET)
    assert chapter(8).budget > DEFAULT_BUDGET and chapter("08").lane == "priority"
    assert chapter("06_rope_in_code").number == 6
    with pytest.raises(KeyError, match="no chapter"):
        chapter(99)


def dummy_chapter(number: int) -> nbformat.NotebookNode:
    """A small chapter in the book's template: title with the badge line, an empty
    setup cell, an export cell, an exercise with stub, solution and check."""
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    cells = [
        md(f"# A dummy chapter\n\n*It only proves the machinery.*\n\n{BADGE_MARK}"),
        md("**Learning objectives.** None."),
        code("", metadata={"tags": [SETUP]}),
        code("def twice(x: float) -> float:\n    \"\"\"2x.\"\"\"\n    return 2 * x",
             metadata={"tags": ["export"]}),
        md("## Exercises"),
        md(f"````{{exercise}} {number}.1 · Thrice\n:label: ex-{number}-thrice\n\n"
           "Write `thrice`.\n````"),
        code("def thrice(x):\n    raise NotImplementedError(\"Exercise: thrice\")"),
        md(f"```{{solution-start}} ex-{number}-thrice\n:class: dropdown\n```",
           metadata={"tags": ["solution"]}),
        code("def thrice(x):\n    return 3 * x  # the dummy's secret answer",
             metadata={"tags": ["solution"]}),
        md("```{solution-end}\n```", metadata={"tags": ["solution"]}),
        code("assert thrice(2) == 6", metadata={"tags": ["exercise-check"]}),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["book"] = {"budget_seconds": 90}
    return nb


def run(copy: Path, *args: str) -> str:
    """A bookkit tool on the copy (BOOK_ROOT), as `make` would run it."""
    env = {"BOOK_ROOT": str(copy), "PATH": str(Path(sys.executable).parent),
           "HOME": str(copy)}
    done = subprocess.run([sys.executable, *args], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_adding_a_chapter_is_a_notebook_a_toc_line_and_a_test_file(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "book"
    for folder in ("notebooks", "book", "colab", "tests"):
        shutil.copytree(ROOT / folder, copy / folder,
                        ignore=shutil.ignore_patterns("vendor", "__pycache__"))
    for name in ("_config.yml", "_toc.yml", "pyproject.toml"):
        shutil.copy(ROOT / name, copy / name)
    number = len(chapters()) + 1
    stem = f"{number:02d}_dummy_chapter"
    nbformat.write(dummy_chapter(number), copy / "notebooks" / f"{stem}.ipynb")
    guide = dummy_chapter(number)
    guide.cells = guide.cells[:4]  # a guide: no exercises
    guide.cells[0].source = f"# A dummy guide\n\n{BADGE_MARK}"
    guide.cells[3].source = "def half(x: float) -> float:\n    return x / 2"
    nbformat.write(guide, copy / "notebooks" / "dummy_guide.ipynb")
    toc = yaml.safe_load((copy / "_toc.yml").read_text())
    toc["parts"].insert(-2, {"caption": "Part X: Dummies", "numbered": True,
                             "chapters": [{"file": f"notebooks/{stem}"}]})
    toc["parts"][0]["chapters"].append({"file": "notebooks/dummy_guide"})
    (copy / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    (copy / "tests" / "chapters" / f"test_{stem}.py").write_text(
        "from bookkit.testing import load_chapter\n\n\n"
        f"def test_twice():\n    assert load_chapter({stem!r}).twice(2) == 4\n"
    )

    listed = run(copy, "-c", "from bookkit.chapters import pages; "
                 "print([(c.number, c.stem, c.part, c.lane) for c in pages()])")
    assert f"({number}, '{stem}', 'Part X: Dummies', 'priority')" in listed
    assert "(None, 'dummy_guide'," in listed  # a guide: an unnumbered page

    # make sync: the sources, then the committed editions
    run(copy, "-m", "bookkit.sync")
    synced = nbformat.read(copy / "notebooks" / f"{stem}.ipynb", as_version=4)
    assert "import numpy as np" in synced.cells[2].source  # the setup cell, written
    assert f"colab/{stem}.ipynb" in synced.cells[0].source  # the badge
    assert "licence-footer" in synced.cells[-1].source
    run(copy, "-m", "bookkit.editions")
    colab = (copy / "colab" / f"{stem}.ipynb").read_text()
    student_colab = (copy / "colab" / "student" / f"{stem}.ipynb").read_text()
    assert f"Exercise {number}.1" in colab and "secret answer" in colab
    assert "secret answer" not in student_colab
    assert f"colab/student/{stem}.ipynb" in student_colab
    guide_colab = (copy / "colab" / "dummy_guide.ipynb").read_text()
    assert "colab/dummy_guide.ipynb" in guide_colab
    assert not (copy / "colab" / "student" / "dummy_guide.ipynb").exists()
    synced_guide = nbformat.read(copy / "notebooks" / "dummy_guide.ipynb", as_version=4)
    assert "import numpy as np" in synced_guide.cells[2].source
    run(copy, "-m", "bookkit.sync", "--check")
    run(copy, "-m", "bookkit.editions", "--check")

    # make student
    run(copy, "-m", "bookkit.editions.student", str(copy / "student"))
    student = (copy / "student" / f"{stem}.ipynb").read_text()
    assert STUDENT_NOTE_MARK in student and "secret answer" not in student

    # the student site's source tree, from "executed" notebooks (here: the sources)
    run(copy, "-c", "from pathlib import Path; "
        "from bookkit.editions.student_site import stage; "
        f"stage(Path({str(copy / 'site')!r}), Path({str(copy / 'notebooks')!r}))")
    page = (copy / "site" / "notebooks" / f"{stem}.ipynb").read_text()
    assert "secret answer" not in page and "twice" in page
    staged_toc = (copy / "site" / "_toc.yml").read_text()
    assert f"notebooks/{stem}" in staged_toc
    assert (copy / "site" / "notebooks" / "dummy_guide.ipynb").is_file()

    # the hand-out and the chapter's own test file
    handout = run(copy, "-c", "from bookkit.chapters import chapter; "
                  "from bookkit.editions.handouts import assignment_source; "
                  f"nb = assignment_source(chapter({number}).path); "
                  "print(sum('nbgrader' in c.metadata for c in nb.cells))")
    assert int(handout) >= 3
    tested = run(copy, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 f"tests/chapters/test_{stem}.py")
    assert "1 passed" in tested
