"""Every chapter runs as a learner would run it, and the build executed it cleanly.

- Standalone: each notebook alone in an empty temporary folder, top to bottom, offline
  (HF_HUB_OFFLINE is set by the Makefile and by the notebook's own setup cell): no error, no stderr.
- Build: the notebooks jupyter-book executed (in _build/jupyter_execute) carry no error or stderr
  output. (That every solution passes its check there is tested in tests/test_student.py.)
"""
from __future__ import annotations

import os

import nbformat
import pytest
from conftest import EXECUTED
from nbtools import notebook_paths
from run_notebook import execute_standalone


def text_outputs(nb) -> list[str]:
    """The printed text of every code cell (streams and text-only results), cell by cell."""
    texts = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        parts = []
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                parts.append(output.text)
            elif set(output.get("data", {})) == {"text/plain"}:
                parts.append(output["data"]["text/plain"])
        texts.append("".join(parts))
    return texts


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_runs_standalone_in_an_empty_folder(path) -> None:
    """Alone in an empty folder, offline: no error, no stderr, and the same printed output as
    the build's execution (outputs are deterministic: every random draw is seeded)."""
    assert os.environ.get("HF_HUB_OFFLINE") == "1", "run the tests offline (make test sets HF_HUB_OFFLINE=1)"
    result = execute_standalone(path, allow_errors=True)
    print(f"{path.name}: {result.seconds:.1f} s standalone")
    assert not result.errors, f"{path.name}: errors in cells {result.errors}"
    assert not result.stderr, f"{path.name}: stderr output {result.stderr}"
    build = executed(path)
    for index, (mine, theirs) in enumerate(zip(text_outputs(result.notebook), text_outputs(build))):
        assert mine == theirs, f"{path.name}: code cell {index} printed differently in two runs"


def executed(path):
    target = EXECUTED / "notebooks" / path.name
    if not target.is_file():
        pytest.fail(f"{target} missing: the build did not execute {path.name} (run make test)")
    return nbformat.read(target, as_version=4)


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_build_outputs_are_clean(path) -> None:
    nb = executed(path)
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            assert output.output_type != "error", f"{path.name} cell {index}: {output.get('ename')}"
            if output.output_type == "stream":
                assert output.name != "stderr", f"{path.name} cell {index}: stderr {output.text[:200]!r}"
                assert "Warning" not in output.text, f"{path.name} cell {index}: warning printed"
