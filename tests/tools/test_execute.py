"""bookkit/execute.py: the notebooks it executes are the ones the build then
finds in its cache, and a failing notebook is left for the build to report."""

from __future__ import annotations

from pathlib import Path

import nbformat
import yaml
from jupyter_cache import get_cache

from bookkit import execute as execute_notebooks
from bookkit.chapters import Chapter, chapters, notebook_paths
from bookkit.paths import IPYTHON_DIR, ROOT


def tiny_notebook(path: Path, source: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# A title"),
                nbformat.v4.new_code_cell(source)]
    nbformat.write(nb, path)
    return path


def test_an_executed_notebook_is_what_the_build_finds_in_the_cache(tmp_path) -> None:
    """MyST-NB's cache mode looks the notebook up as read from disk
    (match_cache_notebook); the cached copy carries the outputs."""
    source = "import os\nprint(6 * 7, os.getcwd())"
    path = tiny_notebook(tmp_path / "01_ok.ipynb", source)
    done, executed, seconds, error = execute_notebooks.execute(path, timeout=60)
    assert done == path and error is None and seconds > 0
    cache = get_cache(tmp_path / ".jupyter_cache")
    execute_notebooks.store(cache, path, executed, seconds)
    record = cache.match_cache_notebook(nbformat.read(path, as_version=4))
    _, merged = cache.merge_match_into_notebook(nbformat.read(path, as_version=4))
    assert record.data["execution_seconds"] == seconds
    text = merged.cells[1].outputs[0].text
    assert text.startswith("42 ") and str(tmp_path) not in text  # ran in a temp folder


def test_export_writes_executed_notebooks_with_outputs(tmp_path, monkeypatch) -> None:
    """What the build's jupyter_execute/ must hold: outputs and execution counts."""
    path = tiny_notebook(tmp_path / "01_ok.ipynb", "print('from the cache')")
    monkeypatch.setattr(execute_notebooks, "page_paths", lambda: [path])
    cache = get_cache(tmp_path / ".jupyter_cache")
    out = tmp_path / "jupyter_execute"
    assert execute_notebooks.export(cache, out) == 1  # not executed yet: reported
    _, executed, seconds, _ = execute_notebooks.execute(path, timeout=60)
    execute_notebooks.store(cache, path, executed, seconds)
    assert execute_notebooks.export(cache, out) == 0
    cell = nbformat.read(out / path.name, as_version=4).cells[1]
    assert cell.execution_count == 1 and cell.outputs[0].text == "from the cache\n"


def test_a_failing_notebook_returns_its_traceback(tmp_path) -> None:
    path = tiny_notebook(tmp_path / "02_fails.ipynb", "raise ValueError('planted')")
    _, _, _, error = execute_notebooks.execute(path, timeout=60)
    assert error is not None and "planted" in error


def test_the_long_chapters_have_a_lane_of_their_own() -> None:
    """Chapters granted more than the default budget run first, longest budget first;
    the others follow in book order."""

    def made(number: int, budget: int) -> Chapter:
        return Chapter(number, f"{number:02d}_x", "Part", "Title", budget, False)

    book = (made(1, 60), made(2, 180), made(3, 60), made(4, 300), made(5, 180))
    priority, background = execute_notebooks.lanes(book)
    assert [p.name[:2] for p in priority] == ["04", "02", "05"]
    assert [p.name[:2] for p in background] == ["01", "03"]
    # the book's own: Chapter 8 (300 s) before Chapter 9 (180 s), the rest behind
    priority, background = execute_notebooks.lanes(chapters())
    long = sorted((c for c in chapters() if c.lane == "priority"),
                  key=lambda c: (-c.budget, c.number))
    assert [p.stem for p in priority] == [c.stem for c in long]
    assert priority[0].stem.startswith("08")  # 300 s, the longest budget
    assert sorted(priority + background) == sorted(notebook_paths())


def test_the_background_lane_runs_its_kernels_at_the_lowest_priority(
    tmp_path, monkeypatch
) -> None:
    """The kernel a background worker starts runs at nice 19, and so does its session
    (its autogroup, where Linux has them): otherwise the kernel would still take a
    whole core from a two-thread chapter running beside it."""
    monkeypatch.setenv("IPYTHONDIR", str(IPYTHON_DIR))
    source = (
        "import os\n"
        "group = open('/proc/self/autogroup').read().split()[-1] "
        "if os.path.exists('/proc/self/autogroup') else 'none'\n"
        "print(os.nice(0), group)"
    )
    path = tiny_notebook(tmp_path / "01_nice.ipynb", source)
    with execute_notebooks.background_lane() as lane:
        job = lane.submit(execute_notebooks.execute, path, 60)
        _, executed, _, error = job.result()
    assert error is None, error
    printed = nbformat.reads(executed, as_version=4).cells[1].outputs[0].text.split()
    assert int(printed[0]) == execute_notebooks.BACKGROUND_NICE == 19
    if Path("/proc/self/autogroup").exists():
        assert printed[1] == "19"


def test_settings_come_from_the_books_config() -> None:
    """The same timeout and error rule as the build's own execution (_config.yml)."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]
    assert execute_notebooks.execution_settings() == (config["timeout"], False)
    assert config["execute_notebooks"] == "cache" and config["run_in_temp"] is True


def test_make_bench_reads_the_lines_the_executor_prints() -> None:
    """`make bench` times each page from the build's log: a chapter and a guide, as
    bookkit.execute prints them, and nothing from a failure line."""
    from bookkit.measure.bench import EXECUTED_LINE

    for name, seconds in (("08_does_position_matter", 211.4), ("rope_recipes", 21.0)):
        line = execute_notebooks.executed_line(Path(f"/x/{name}.ipynb"), seconds)
        match = EXECUTED_LINE.match(line)
        assert match and match.groups() == (name, str(round(seconds)))
    assert EXECUTED_LINE.match("rope_recipes.ipynb: executed in 21 s")
    failure = "09_context_extension.ipynb: failed after 12 s; the build reruns it"
    assert EXECUTED_LINE.match(failure) is None
