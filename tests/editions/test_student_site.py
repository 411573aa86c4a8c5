"""The student edition of the site (`make book-no-solutions`), end to end.

The module builds it once with bookkit/editions/student_site.py from the full build's
executed notebooks (no notebook runs again; `make test` has just built the site), then:

- no solution text in any file of the output: pages, `_sources/` (the downloads), the
  search index, the slides, the staged sources (bookkit/leaks.py; that the
  same search finds the solutions in the full site shows it would see a leak);
- no instructor page: not built, not linked, not in the search index;
- the search index holds no word that only solutions use;
- each chapter's download is its student notebook, its Colab badge opens
  `colab/student/`, its page shows no check output of a removed solution;
- every local link of every page and deck resolves (slides included, no PDF links).

Unit tests of the pieces (no build) are marked `unit`.
"""

from __future__ import annotations

import html
import json
import re
import time
from pathlib import Path

import nbformat
import pytest

from bookkit import leaks as solution_leaks
from bookkit.chapters import notebook_paths
from bookkit.editions import student_site as make_student_site
from bookkit.notebook import (
    CHECK,
    NOTEBOOK_NAME,
    SOLUTION,
    notebook_bytes,
    read,
    student_notebook,
    tags,
)
from bookkit.paths import BUILD, EXECUTED_NOTEBOOKS, SITE

PATHS = notebook_paths()
OUT = BUILD / "no-solutions"
HTML = OUT / "_build" / "html"
WITHHELD = make_student_site.WITHHELD_PAGES
HREF = re.compile(r"""(?:href|src)="([^"#?]+)[^"]*\"""")


@pytest.fixture(scope="module")
def secrets() -> solution_leaks.Secrets:
    """Fingerprints of every solution; with the build's outputs counted as public."""
    executed = EXECUTED_NOTEBOOKS if EXECUTED_NOTEBOOKS.is_dir() else None
    return solution_leaks.fingerprints(WITHHELD, executed)


@pytest.fixture(scope="module")
def student_site() -> Path:
    """Build the student edition once (needs the full build's executed notebooks)."""
    if not all((EXECUTED_NOTEBOOKS / p.name).is_file() for p in PATHS):
        pytest.skip(f"no executed notebooks in {EXECUTED_NOTEBOOKS}: run `make book`")
    start = time.monotonic()
    assert make_student_site.main(["--out", str(OUT)]) == 0
    print(f"student edition built in {time.monotonic() - start:.0f} s")
    return HTML


# ------------------------------------------------------------------ end to end


@pytest.mark.site
def test_no_solution_text_anywhere(student_site: Path, secrets) -> None:
    leaks = solution_leaks.scan(OUT, secrets)
    assert not leaks, "solution text in the student edition:\n" + solution_leaks.report(
        leaks
    )


@pytest.mark.site
def test_the_search_finds_every_solution_in_the_full_site(secrets) -> None:
    """The same search finds every solution and the instructor page in the full site,
    so it would see any of them in the student edition."""
    if not (SITE / "notebooks").is_dir():
        pytest.skip("no full site: run `make book`")
    leaks = solution_leaks.scan(SITE, secrets)
    every = {where for table in secrets.by_length.values() for where in table.values()}
    secret, _ = solution_leaks.collect(WITHHELD)
    assert not secrets.unmatched, f"secrets without a fingerprint: {secrets.unmatched}"
    assert every == {w for w, text in secret.items() if solution_leaks.has_text(text)}
    assert len(every) > 50
    missing = sorted(every - set(leaks))
    assert not missing, f"the search does not find these in the full site: {missing}"


@pytest.mark.site
def test_no_instructor_page(student_site: Path) -> None:
    for page in WITHHELD:
        stem = page.removesuffix(".md")
        assert not (student_site / f"{stem}.html").exists()
        assert not (student_site / "_sources" / page).exists()
        name = Path(stem).name
        linked = [
            p.relative_to(student_site).as_posix()
            for p in student_site.rglob("*.html")
            if re.search(rf'href="[^"]*\b{name}\.html', p.read_text(errors="replace"))
        ]
        assert not linked, f"pages link to {stem}.html: {linked}"
    index = (student_site / "searchindex.js").read_text()
    docnames = json.loads(re.search(r'"docnames":\s*(\[[^\]]*\])', index)[1])
    assert not set(docnames) & {p.removesuffix(".md") for p in WITHHELD}


def stems_of(texts: list[str], shortest: int = 1) -> set[str]:
    """The stems Sphinx's English search stores for the words of ``texts``."""
    from sphinx.search.en import SearchEnglish

    stem = SearchEnglish({}).stem
    word = re.compile(rf"[a-z]{{{shortest},}}")
    return {stem(w) for t in texts for w in word.findall(t.lower())}


@pytest.mark.site
def test_search_index_has_no_solution_only_words(student_site: Path) -> None:
    secret, public = solution_leaks.collect(WITHHELD)
    executed = [
        "".join(o.get("text", "") for o in c.get("outputs", []))
        for p in PATHS
        for c in read(EXECUTED_NOTEBOOKS / p.name).cells
        if SOLUTION not in tags(c)
    ]
    only = stems_of(list(secret.values()), 4) - stems_of(public + executed)
    assert len(only) > 50, "the test needs words that only solutions use"
    index = (student_site / "searchindex.js").read_text()
    terms = set(json.loads(re.search(r'"terms":\s*(\{[^}]*\})', index)[1]))
    leaked = sorted(only & terms)
    assert not leaked, f"solution-only words in the search: {leaked}"


@pytest.mark.site
@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_chapter_page_and_download(student_site: Path, path: Path) -> None:
    page = (student_site / "notebooks" / f"{path.stem}.html").read_text()
    badges = re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', page)
    assert badges and all(
        b.endswith(f"/colab/student/{path.name}") for b in badges
    ), badges
    download = student_site / "_sources" / "notebooks" / path.name
    assert download.read_bytes() == notebook_bytes(student_notebook(read(path)))
    assert f"_sources/notebooks/{path.name}" in page, "the download button"
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    assert not re.search(r"All \d+ checks passed", text), (
        "a check's output reports on a removed solution"
    )


@pytest.mark.site
def test_every_colab_link_opens_a_student_edition(student_site: Path) -> None:
    colab = re.compile(r'href="(https://colab\.research\.google\.com/[^"]+)"')
    links = {
        link
        for page in student_site.rglob("*.html")
        for link in colab.findall(page.read_text(errors="replace"))
    }
    assert len(links) >= len(PATHS)
    # A chapter's Colab edition holds its solutions: the student site links the student
    # one. A guide has no solutions and no student edition: its link stays.
    full = sorted(
        link for link in links
        if "/colab/student/" not in link and "/colab/handouts/" not in link
        and NOTEBOOK_NAME.match(link.rsplit("/", 1)[-1])
    )
    assert not full, f"links to Colab editions with solutions: {full[:5]}"


@pytest.mark.site
def test_every_local_link_resolves(student_site: Path) -> None:
    pages = sorted(p for p in student_site.rglob("*.html") if "_static" not in p.parts)
    assert (student_site / "slides" / "index.html") in pages, "no slides"
    broken = []
    for page in pages:
        for target in HREF.findall(page.read_text(errors="replace")):
            if re.match(r"[a-z]+:|//", target) or not target:
                continue
            if not (page.parent / html.unescape(target)).exists():
                broken.append(f"{page.relative_to(student_site)} -> {target}")
    assert not broken, f"{len(broken)} broken links: {broken[:10]}"


# ------------------------------------------------------------------ the pieces


@pytest.mark.unit
def test_leak_search_sees_rendered_solutions(tmp_path: Path, secrets) -> None:
    """A solution's code rendered as highlighted HTML, or in a notebook, is found."""
    where, path = next(
        (f"{p.name} cell {k}", p)
        for p in PATHS
        for k, c in enumerate(read(p).cells)
        if SOLUTION in tags(c) and c.cell_type == "code"
    )
    source = read(path).cells[int(where.split()[-1])].source
    spans = "".join(
        f'<span class="n">{html.escape(t)}</span>' for t in re.split(r"(\W+)", source)
    )
    (tmp_path / "page.html").write_text(f"<html><pre>{spans}</pre></html>")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nbformat.write(nb, tmp_path / "x.ipynb")
    (tmp_path / "clean.html").write_text("<p>The chapter's text.</p>")
    leaks = solution_leaks.scan(tmp_path, secrets)
    assert set(leaks[where]) == {"page.html", "x.ipynb"}


@pytest.mark.unit
def test_a_slides_exercise_line_is_public(tmp_path: Path, secrets) -> None:
    """The slides compose "Exercise 13.2 · <title> (code, 25 min)" from the chapter's
    title and the schedule's note; the instructor page's table says "<title> | code":
    the same words, yet nothing withheld."""
    line = "- Exercise 13.2 · Migrating a Gemma 3 configuration (code, 25 min)"
    slide = f"<section><p>{html.escape(line)}</p></section>"
    (tmp_path / "slide.html").write_text(slide)
    assert solution_leaks.scan(tmp_path, secrets) == {}


@pytest.mark.unit
def test_staged_chapter_has_no_solution_and_no_check_output() -> None:
    path = PATHS[1]
    executed = read(path)
    for cell in executed.cells:
        if cell.cell_type == "code":
            passed = nbformat.v4.new_output("stream", text="All 3 checks passed.")
            cell.outputs = [passed]
    page = make_student_site.student_page(executed, read(path), path.name)
    assert not [c for c in page.cells if SOLUTION in tags(c)]
    checks = [c for c in page.cells if CHECK in tags(c)]
    assert checks and all(c.outputs == [] for c in checks)
    kept = [c for c in page.cells if c.cell_type == "code" and CHECK not in tags(c)]
    assert all(c.outputs for c in kept), "other outputs stay"
    assert f"/colab/student/{path.name}" in page.cells[0].source
    failed = nbformat.from_dict(executed)
    failed.cells[3].outputs = [nbformat.v4.new_output(
        "error", ename="CellTimeoutError", evalue="", traceback=[])]
    with pytest.raises(make_student_site.StaleBuild, match="failed"):
        make_student_site.student_page(failed, read(path), path.name)
    executed.cells[3].source += "\n# edited"
    with pytest.raises(make_student_site.StaleBuild, match="make book"):
        make_student_site.student_page(executed, read(path), path.name)


@pytest.mark.unit
def test_student_config_and_toc() -> None:
    import yaml

    from bookkit.paths import ROOT

    config = make_student_site.student_config(
        yaml.safe_load((ROOT / "_config.yml").read_text())
    )
    assert config["execute"]["execute_notebooks"] == "off"
    from bookkit.config import student_site_url

    assert config["html"]["baseurl"] == student_site_url()
    assert config["html"]["use_repository_button"] is False
    assert set(WITHHELD) <= set(config["exclude_patterns"])
    assert config["sphinx"]["config"]["hide_solutions_withheld"]["labels"]
    toc = make_student_site.toc_without(
        yaml.safe_load((ROOT / "_toc.yml").read_text()), {"book/course/instructor"}
    )
    files = json.dumps(toc)
    assert "book/course/instructor" not in files and "book/course/schedule" in files


def test_the_student_edition_extension_removes_every_solution_cell() -> None:
    """With ``book_student_edition`` (the student site's configuration), the Sphinx
    extension tags every `solution` cell `remove-cell` (it still runs, so checks pass)
    and nothing else, and switches on sphinx-exercise's hide_solutions; without it,
    nothing changes."""
    import json
    import types

    from bookkit.sphinx import hide_solutions

    path = notebook_paths()[5]

    def app(student: bool):
        from sphinx.util.tags import Tags

        return types.SimpleNamespace(
            env=types.SimpleNamespace(doc2path=lambda name: str(path)),
            config=types.SimpleNamespace(book_student_edition=student),
            tags=Tags(),
        )

    source = [path.read_text()]
    hide_solutions._hide(app(False), "notebooks/x", source)
    assert source[0] == path.read_text(), "outside the student edition nothing changes"
    hide_solutions._hide(app(True), "notebooks/x", source)
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
    for student in (False, True):
        config = types.SimpleNamespace(
            hide_solutions=False, book_student_edition=student
        )
        sphinx_app = app(student)
        hide_solutions._configure(sphinx_app, config)
        assert config.hide_solutions is student
        # the tag of {only} blocks: the course pages' full-site sentences
        assert sphinx_app.tags.has(hide_solutions.STUDENT_TAG) is student


ONLY = re.compile(r"^(`{3,}|:{3,})\{only\}\s*(.*)$")
FULL_SITE_ONLY = re.compile(r"drop-?downs?|solutions? (?:are|is) (?:in|hidden)", re.I)


def full_site_lines(text: str) -> list[tuple[int, str]]:
    """Numbered lines of a page that the student site shows too: all but those inside
    an ``{only} not student_edition`` block."""
    out, closing = [], None  # closing: the fence that ends the block being skipped
    for k, line in enumerate(text.splitlines(), start=1):
        found = ONLY.match(line)
        if closing is None and found and found[2].strip() == "not student_edition":
            closing = found[1]
        elif closing is not None and line.strip() == closing:
            closing = None
        elif closing is None:
            out.append((k, line))
    return out


@pytest.mark.unit
@pytest.mark.parametrize("name", ["index", "running", "schedule"])
def test_course_pages_say_solutions_are_in_drop_downs_only_on_the_full_site(
        name: str) -> None:
    """The student site is built from the same course pages with the Sphinx tag
    student_edition: every sentence that says where solutions are shown sits in an
    ``{only} not student_edition`` block (the instructor page is not built there)."""
    from bookkit.paths import COURSE_PAGES

    text = (COURSE_PAGES / f"{name}.md").read_text()
    said = [f"{name}.md:{k}: {line}" for k, line in full_site_lines(text)
            if FULL_SITE_ONLY.search(line)]
    assert not said, "outside {only} not student_edition:\n" + "\n".join(said)


@pytest.mark.site
def test_student_site_course_pages_promise_no_solutions(student_site: Path) -> None:
    for name in ("index", "running", "schedule"):
        text = (student_site / "book" / "course" / f"{name}.html").read_text()
        shown = re.sub(r"<(script|style)\b.*?</\1>", " ", text, flags=re.S)
        words = re.sub(r"<[^>]+>", " ", shown)  # what a reader reads, not the scripts
        assert not FULL_SITE_ONLY.search(words), f"{name}.html: {FULL_SITE_ONLY}"
