"""Every chapter ran as a learner would run it, once, in the build.

jupyter-book executes each notebook alone in an empty temporary folder (``run_in_temp``
in _config.yml), offline (the Makefile sets HF_HUB_OFFLINE), with the build's IPython
profile (bookkit/ipython). These tests read what that single run produced
(_build/jupyter_execute): no error, no stderr, no printed warning, and every code cell
executed.

Determinism (a second standalone run prints the same) is checked on demand by
``make determinism`` (bookkit.measure.bench --determinism), not on every
``make test``.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from bookkit.chapters import notebook_paths
from bookkit.notebook import read
from bookkit.paths import EXECUTED_NOTEBOOKS

PATHS = notebook_paths()


@pytest.fixture(params=PATHS, ids=[p.stem for p in PATHS])
def executed_notebook(request) -> tuple[Path, nbformat.NotebookNode]:
    """A chapter as the build executed it."""
    path: Path = request.param
    target = EXECUTED_NOTEBOOKS / path.name
    if not target.is_file():
        pytest.fail(
            f"{target} missing: the build did not execute {path.name} "
            "(run make test or make book)"
        )
    return path, read(target)


def test_build_outputs_are_clean(executed_notebook) -> None:
    path, nb = executed_notebook
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            where = f"{path.name} cell {index}"
            assert output.output_type != "error", f"{where}: {output.get('ename')}"
            if output.output_type == "stream":
                assert output.name != "stderr", f"{where}: stderr {output.text[:200]!r}"
                assert "Warning" not in output.text, f"{where}: warning printed"


def test_every_code_cell_ran(executed_notebook) -> None:
    """The build ran the notebook as committed, top to bottom, every cell."""
    path, nb = executed_notebook
    source = read(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.source for c in code] == [
        c.source for c in source.cells if c.cell_type == "code"
    ], f"{path.name}: the executed notebook is stale; run make book"
    counts = [
        c.execution_count for c in code if c.source.strip()
    ]  # nbclient skips empty
    assert None not in counts, f"{path.name}: code cells that did not run"
    assert counts == sorted(counts), f"{path.name}: cells ran out of order"
