"""The repository keeps its promises: pins agree, notebooks clean and in sync."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bookkit import sync as bookkit_sync
from bookkit.chapters import notebook_paths
from bookkit.notebook import read, tags
from bookkit.paths import ROOT

PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;#]+)")


def pins(lines: list[str]) -> dict[str, str]:
    """name -> version for every `name==version` line."""
    found = {}
    for line in lines:
        match = PIN.match(line.strip().lstrip("- ").strip())
        if match:
            found[match.group(1).lower().replace("_", "-")] = match.group(2)
    return found


def test_environment_yml_takes_its_pins_from_requirements() -> None:
    """One source for the pins: environment.yml installs requirements.txt by pip."""
    text = (ROOT / "environment.yml").read_text()
    env = yaml.safe_load(text)
    pip_section = next(
        d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d
    )
    assert pip_section == ["-r requirements.txt"], (
        f"environment.yml's pip section must be ['-r requirements.txt'], "
        f"got {pip_section}"
    )
    pinned_here = pins(str(d) for d in env["dependencies"])
    assert not pinned_here, f"pins belong in requirements.txt: {pinned_here}"
    assert "pip install --no-deps -r requirements-nodeps.txt" in text, (
        "environment.yml must say how to install the --no-deps packages"
    )
    required = pins((ROOT / "requirements.txt").read_text().splitlines())
    assert required["torch"] == "2.13.0", "torch stays pinned to the CPU wheel 2.13.0"
    assert required["jupyter-book"].startswith("1."), "the book is a Jupyter Book 1.x"
    assert "ruff" in required, "ruff (make check, make test) must be pinned"


def test_readme_leads_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    head = readme[:1500]
    assert "make book" in head and "make test" in head, (
        "README must open with make book / make test"
    )
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_ci_installs_the_debian_tools_the_tests_use() -> None:
    """The browser tests drive Debian's chromium; the PDF test reads with poppler."""
    ci = (ROOT / ".ci" / "run").read_text()
    for package in ("chromium", "poppler-utils"):
        assert re.search(rf"apt-get install[^\n]*\b{package}\b", ci), package
    assert "command -v pdftotext" in ci, ".ci/run installs poppler-utils when absent"


def test_toc_lists_every_notebook_and_only_existing_files() -> None:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [
        c["file"] for part in toc["parts"] for c in part["chapters"]
    ]
    for f in files:
        assert any((ROOT / f).with_suffix(s).is_file() for s in (".md", ".ipynb")), (
            f"_toc.yml names missing {f}"
        )
    for path in notebook_paths():
        assert f"notebooks/{path.stem}" in files, f"{path.name} is not in _toc.yml"


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_notebook_is_committed_clean(path) -> None:
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert not cell.get("outputs"), f"{path.name}: committed outputs"
            assert cell.get("execution_count") is None, (
                f"{path.name}: committed execution count"
            )
    text = path.read_text()
    assert not re.search(r"from_pretrained\(\s*\\?[\"'][\w.-]+/[\w.-]+", text), (
        f"{path.name} loads from a hub id"
    )


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_notebook_follows_the_chapter_template(path) -> None:
    nb = read(path)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert nb.cells[0].source.startswith("# "), "first cell is the title"
    assert "colab.research.google.com/github/" in nb.cells[0].source, (
        "title cell has the Colab badge"
    )
    assert "remove-cell" in tags(first_code), "first code cell is the hidden setup cell"
    for heading in ("## Summary", "## Exercises", "## References"):
        assert heading in markdown, f"{path.name} lacks a '{heading}' section"
    assert re.search(r"objectives", markdown, re.I), (
        f"{path.name} states no learning objectives"
    )
    assert re.search(r"prerequisites", markdown, re.I), (
        f"{path.name} states no prerequisites"
    )
    assert "notation" in markdown and "glossary" in markdown, (
        f"{path.name} must link notation and glossary"
    )
    exercises = len(re.findall(r"\{exercise(?:-start)?\}", markdown))
    assert exercises >= 3, f"{path.name} has {exercises} exercises, needs at least 3"
    assert (
        "```{prf:" in markdown or "````{prf:" in markdown or path.stem.startswith("02")
    ), f"{path.name}: theorems belong in prf: directives"


def test_notebooks_in_sync() -> None:
    """Setup cells, Colab badges and copied functions match their single source."""
    result = subprocess.run(
        [sys.executable, "-m", "bookkit.sync", "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_copies_are_detected_when_they_drift(tmp_path, monkeypatch) -> None:
    """The sync check really fails on drift: edit a copy, then sync reports it."""
    paths = notebook_paths()
    nbs = {p: read(p) for p in paths}
    names = bookkit_sync.named_cells(nbs)
    copies = [
        (p, c)
        for p, nb in nbs.items()
        for c in nb.cells
        if any(t.startswith("copy:") for t in tags(c))
    ]
    if not copies:
        pytest.skip("no copied cells yet")
    path, cell = copies[0]
    cell.source += "\n# drift"
    changes = bookkit_sync.sync(nbs[path], path, names)
    assert any(change.startswith("copy of") for change in changes)


def test_a_function_defined_in_two_chapters_is_refused() -> None:
    import nbformat

    def notebook(*cells):
        return nbformat.v4.new_notebook(cells=list(cells))

    define = nbformat.v4.new_code_cell("def f():\n    return 1", metadata={"tags": []})
    again = nbformat.v4.new_code_cell("def f():\n    return 2", metadata={"tags": []})
    nbs = {Path("03_a.ipynb"): notebook(define), Path("04_b.ipynb"): notebook(again)}
    problems = bookkit_sync.duplicate_definitions(nbs)
    assert len(problems) == 1 and "03_a.ipynb and 04_b.ipynb" in problems[0]
    again.metadata["tags"] = ["copy:f", "export"]
    assert bookkit_sync.duplicate_definitions(nbs) == []
    one_chapter = {Path("03_a.ipynb"): notebook(define, again)}  # stub and solution
    again.metadata["tags"] = ["solution"]
    assert bookkit_sync.duplicate_definitions(one_chapter) == []


def test_every_copy_names_its_source() -> None:
    paths = notebook_paths()
    nbs = {p: read(p) for p in paths}
    chapters = {
        name: path.name[:2]
        for path, nb in nbs.items()
        for cell in nb.cells
        for name in (t.split(":", 1)[1] for t in tags(cell) if t.startswith("name:"))
    }
    for path, nb in nbs.items():
        for cell in nb.cells:
            for tag in tags(cell):
                if tag.startswith("copy:"):
                    name = tag.split(":", 1)[1]
                    first = cell.source.split("\n")[0]
                    want = bookkit_sync.COPY_HEADER.format(
                        chapter=int(chapters[name]), name=name
                    ).strip()
                    assert first == want, f"{path.name}: {name}'s copy starts {first!r}"


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_setup_cell_is_short_and_plain(path) -> None:
    """What a learner sees first: <= 12 lines, nothing that only the website needs."""
    setup = next(c for c in read(path).cells if c.cell_type == "code")
    lines = setup.source.split("\n")
    assert len(lines) <= 12, f"{path.name}: the setup cell has {len(lines)} lines"
    for website_only in ("plotly", "rcParams", "Renderer", "warnings"):
        assert website_only not in setup.source, (
            f"{path.name}: {website_only!r} belongs in bookkit/ipython (the build)"
        )


def test_figure_metadata_is_where_myst_nb_reads_it() -> None:
    """A figure's caption, name and alt text live under the cell's ``mystnb`` key
    (CONTRIBUTING.md): an ``image`` or ``figure`` key beside it is ignored by myst-nb,
    and the site then shows a file name as the alt text, or no text alternative."""
    misplaced, without_alt = [], []
    for path in notebook_paths():
        for cell in read(path).cells:
            where = f"{path.name} cell {cell.get('id')}"
            if {"image", "figure"} & set(cell.metadata):
                misplaced.append(where)
            options = cell.metadata.get("mystnb", {})
            if (
                "figure" in options
                and not options.get("image", {}).get("alt", "").strip()
            ):
                without_alt.append(where)
    assert not misplaced, f"move image/figure under mystnb: {misplaced}"
    assert not without_alt, f"figures without mystnb.image.alt: {without_alt}"
