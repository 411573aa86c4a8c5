"""The course pages stay in step with the chapters: every chapter is linked from the
course index, every Colab link on the running page is the one the chapter's badge uses,
and every exercise the schedule and the instructor notes name exists."""

from __future__ import annotations

import re

import pytest

from bookkit import autograde
from bookkit.chapters import chapters, notebook_paths, pages
from bookkit.course import CourseExercise
from bookkit.measure import prose_stats
from bookkit.notebook import colab_url, read
from bookkit.paths import BOOK, COLAB_HANDOUTS, COURSE_PAGES, ROOT
from bookkit.sphinx.course_tables import colab_rows
from bookkit.sphinx.reading_paths import reading_time_rows

COURSE = COURSE_PAGES
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


def test_running_page_lists_every_page_in_colab() -> None:
    """The running page's Colab table is made from the registry ({colab-links},
    bookkit/sphinx/course_tables.py): every chapter with its Colab edition (the one its
    badge opens), student edition and hand-out; every guide with its Colab edition; on
    the student site no link to an edition with solutions."""

    assert "```{colab-links}" in page("running")
    full, student = colab_rows(False), colab_rows(True)
    assert len(full) == len(student) == len(pages())
    for page_, row in zip(pages(), full, strict=True):
        links = [link for _, link in row if link]
        assert colab_url(f"colab/{page_.name}") in links
        if page_.is_chapter:
            assert colab_url(f"colab/student/{page_.name}") in links
            assert colab_url(f"colab/handouts/{page_.name}") in links
    for page_, row in zip(pages(), student, strict=True):
        links = [link for _, link in row if link]
        if page_.is_chapter:
            assert colab_url(f"colab/{page_.name}") not in links


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_running_page_links_the_hand_out(path) -> None:
    """One hand-in path: the running page's table opens every chapter's hand-out in
    Colab (the committed release in colab/handouts/, what the grader recognises)."""

    handout = COLAB_HANDOUTS / path.name
    assert handout.is_file(), f"no hand-out {handout}: run python -m bookkit.editions"
    link = colab_url(f"colab/handouts/{path.name}")
    assert "```{colab-links}" in page("running")
    rows = [[url for _, url in row if url] for row in colab_rows(False)]
    assert any(link in urls and colab_url(f"colab/{path.name}") in urls
               for urls in rows), f"the running page's table lacks {link}"


def test_running_page_names_one_hand_in_path() -> None:
    """Students hand in the hand-out, by its name, and nothing else."""
    text = " ".join(page("running").split())
    assert "colab/handouts/NN_topic.ipynb" in text
    assert "Hand in the hand-out and nothing else" in text
    assert "Download .ipynb" in text and "Keep the name `NN_topic.ipynb`" in text


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


def notebook_file(tmp_path, cells):
    """A small notebook of (kind, source, metadata) cells, written to tmp_path."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    for kind, source, metadata in cells:
        v4 = nbformat.v4
        make = v4.new_markdown_cell if kind == "md" else v4.new_code_cell
        nb.cells.append(make(source, metadata=metadata))
    path = tmp_path / "99_sample.ipynb"
    nbformat.write(nb, path)
    return path


def test_reading_rule_counts_words_code_figures_and_equations(tmp_path) -> None:
    """The rule on a notebook whose counts are known by construction: 300 prose words,
    48 visible code lines (a hidden cell does not count), 2 figures, 3 equations."""
    figure = {"mystnb": {"figure": {"caption": "c", "name": "fig-99-a"}}}
    path = notebook_file(tmp_path, [
        ("md", "# Title\n\n" + "word " * 149 + "\n\n$$\na = b\n$$\n", {}),
        ("code", "\n".join(["x = 1"] * 24), figure),
        ("code", "\n".join(["y = 2"] * 100), {"tags": ["hide-input"]}),
        ("md", "## Middle\n\n" + "word " * 149 + "\n\n$$\nc\n$$\n\n```{math}\nd\n```\n",
         {}),
        ("code", "\n".join(["z = 3"] * 24), figure),
        ("md", "## Exercises\n\n" + "word " * 500, {}),
    ])
    stats = prose_stats.chapter_stats(path)
    assert (stats["prose_main"], stats["lines_main"], stats["figures_main"],
            stats["equations_main"]) == (300, 48, 2, 3)
    # 300 / 100 + 48 / 24 + 2 + 3 = 10 minutes
    assert prose_stats.reading_minutes(stats) == 10
    middle = prose_stats.chapter_stats(path, "Middle", "Exercises")
    counts = [middle[k] for k in ("prose", "lines", "figures", "equations")]
    assert counts == [150, 24, 1, 2]
    assert prose_stats.reading_minutes(middle, main=False) == round(1.5 + 1 + 1 + 2)
    with pytest.raises(ValueError, match="no start heading 'Nowhere'"):
        prose_stats.chapter_stats(path, "Nowhere")
    with pytest.raises(ValueError, match="chapter_stats"):
        prose_stats.reading_minutes({"prose": 1})


def test_reading_times_follow_the_rule() -> None:
    """The schedule's table is the {reading-times} directive, computed from the
    notebooks at build time (bookkit/sphinx/reading_paths.py); its rows follow the rule
    the page states, recomputed here from the counts."""

    assert "```{reading-times}" in page("schedule"), "the table is not generated"
    assert "100 words a minute" in page("schedule") and "24 lines a minute" in page(
        "schedule"), "the schedule must state the reading rule"
    rows = reading_time_rows()
    assert len(rows) == len(NUMBERED)
    for path, row in zip(NUMBERED, rows, strict=True):
        stats = prose_stats.chapter_stats(path)
        minutes = round(stats["prose_main"] / 100 + stats["lines_main"] / 24
                        + stats["figures_main"] + stats["equations_main"])
        assert row[0].startswith(f"{int(path.stem[:2])}. ")
        assert row[-1] == f"{minutes} min", (path.stem, row)


def modules(text: str) -> list[str]:
    """The sessions and modules of the schedule, one text block each."""
    parts = re.split(r"^(?=## Session \d|### Module:)", text, flags=re.M)
    return [p for p in parts if p.startswith(("## Session", "### Module:"))]


def test_every_session_and_module_has_objectives() -> None:
    blocks = modules(page("schedule"))
    sessions = [b for b in blocks if b.startswith("## Session")]
    assert len(sessions) == 4, f"expected 4 sessions, found {len(sessions)}"
    taught = {int(n) for b in blocks if b.startswith("### Module:")
              for n in re.findall(r"\d+", b.splitlines()[0].split("—")[0])}
    later = {c.number for c in chapters() if c.number > 7}
    assert taught == later, (
        f"schedule.md: modules teach Chapters {sorted(taught)}, "
        f"the book has {sorted(later)}")
    for block in blocks:
        title = block.splitlines()[0]
        assert "**Objectives.**" in block, f"schedule.md: {title} has no Objectives"
        assert re.search(r"\*\*Read before\*\* \(about \d+ minutes\)", block), (
            f"schedule.md: {title} does not say how long its reading takes")


def test_course_pages_describe_the_whole_book() -> None:
    for name in PAGES:
        text = page(name)
        for stale in ("four 90-minute sessions", "seven runnable", "form three parts",
                      "seven chapters", "six stations"):
            assert stale not in text, f"{name}.md still says {stale!r}"
    assert "fifteen runnable chapters in five parts" in page("index")
    assert "| IV. In practice | 8–12 |" in page("index")
    assert "| V. Positions in today's models | 13–15 |" in page("index")
    assert not re.search(r"make student .*07_long_range_decay", page("instructor"))


def test_one_run_time_per_chapter() -> None:
    """Run times appear in the instructor page's table only, once per chapter."""
    text = page("instructor")
    rows = re.findall(r"^\| (\d+)\. [^|]+\| (\d+)[^|]*\|", text, re.M)
    assert sorted(int(n) for n, _ in rows) == list(range(1, len(NUMBERED) + 1))
    loose = re.findall(r"(?:ran|runs) alone in \d+ s|in \d+ s[,.]", text)
    assert not loose, f"instructor.md gives run times outside its table: {loose}"


def test_running_page_says_each_thing_once() -> None:
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", page("running"))
                 if len(s.split()) > 6]
    repeated = {s for s in sentences if sentences.count(s) > 1}
    assert not repeated, f"running.md repeats {repeated}"
    assert "A failing check names the case and shows what was expected" not in page(
        "running")


def test_instructor_page_explains_grading_as_it_works() -> None:
    """The instructor page describes the grader the code implements: every column of
    grades.csv, the LMS file, the shares of bookkit/course.py, the hidden cases'
    half of the checks, batches kept; not the old one point per check."""

    text = " ".join(page("instructor").split())
    for field in autograde.FIELDS:
        assert f"`{field}`" in text, f"the instructor page does not explain {field}"
    assert "gradebook.csv" in text and "Moodle" in text and "Canvas" in text
    code = CourseExercise("0.1", "ex", "t", "code", 20, None)
    written = CourseExercise("0.2", "ex", "t", "code + decision", 20, 3)
    assert code.shares(True) == {"checks": 0.7, "code": 0.3, "written": 0.0}
    assert written.shares(True) == {"checks": 0.5, "code": 0.2, "written": 0.3}
    assert "| code | 70 % | 30 % | |" in text
    assert "| 50 % | 20 % | 30 % |" in text
    assert autograde.HIDDEN_SHARE == 0.5 and "half by the **hidden cases**" in text
    assert "never graded over" in text and "tampering" in text
    for gone in ("worth 1 point", "cannot see is a solution that special-cases"):
        assert gone not in text, f"the instructor page still says {gone!r}"


def test_run_time_claims_agree_with_the_budgets() -> None:
    """A page that says notebooks run in under a minute says "most" (or names the
    chapters) whenever the registry grants a chapter more than a minute (Chapter 8 300
    s, Chapter 9 180 s), and none says that no notebook takes more than a minute."""

    if max(c.budget for c in chapters()) <= 60:
        pytest.skip("every chapter's budget is a minute")
    pages = [*BOOK.glob("*.md"), *COURSE.glob("*.md"), ROOT / "README.md"]
    for path in pages:
        text = " ".join(path.read_text().split())
        assert "no notebook takes more than a minute" not in text, path.name
        for sentence in re.split(r"(?<=[.;])\s", text):
            if "under a minute" in sentence:
                most = r"\bmost\b|ten of them|Chapters 1–7"
                assert re.search(most, sentence, re.I), (
                    f"{path.name}: {sentence!r} claims every notebook runs in under "
                    "a minute")


def test_intensive_plan_schedules_every_core_hand_in() -> None:
    """The intensive plan of the schedule (one week, two weeks) gives every day a
    session and a hand-in, and keeps every exercise the weekly sessions hand in."""
    text = page("schedule")
    section = text[text.index("(course-intensive)="):text.index("## Part IV")]
    weekly = {}
    for row in re.findall(r"^\| (\d) \| [\d, ]+ \| [^|]+ \| ([^|]+) \|$", text, re.M):
        weekly[int(row[0])] = re.findall(r"\d+\.\d+", row[1])
    core = [x for session in range(1, 5) for x in weekly[session]]
    assert len(core) == 15, weekly
    tables = re.split(r"\*\*Two weeks", section)
    for table, days in zip(tables, (5, 10), strict=True):
        rows = [[cell.strip() for cell in line.strip("|").split("|")]
                for line in table.splitlines() if re.match(r"\| \d+ \|", line)]
        assert [int(r[0]) for r in rows] == list(range(1, days + 1))
        handed = " ".join(r[3] for r in rows)
        missing = [x for x in core if x not in handed]
        assert not missing, f"{days}-day plan: no hand-in of {missing}"
        assert all(r[1] for r in rows), "a day without a morning session"
