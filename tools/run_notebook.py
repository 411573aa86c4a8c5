"""Execute notebooks the way a learner would: each alone, in an empty folder, top to bottom.

    python tools/run_notebook.py notebooks/01_attention_cant_see_order.ipynb [...]

Prints the wall time of each notebook and fails on any error or any stderr output.
Tests and tools/bench.py use ``execute_standalone``.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient


@dataclass
class RunResult:
    """What one standalone run produced."""

    path: Path
    seconds: float
    notebook: nbformat.NotebookNode
    errors: list[tuple[int, str, str]] = field(default_factory=list)  # (cell index, ename, tags)
    messages: list[str] = field(default_factory=list)  # "ename: evalue" of each error, in order
    stderr: list[tuple[int, str]] = field(default_factory=list)  # (cell index, text)


def execute_standalone(path: Path, allow_errors: bool = False, timeout: int = 600) -> RunResult:
    """Copy ``path`` alone into a fresh temporary folder and execute it there."""
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="nbrun-") as tmp:
        shutil.copy(path, Path(tmp) / path.name)
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                allow_errors=allow_errors, resources={"metadata": {"path": tmp}})
        start = time.perf_counter()
        client.execute()
        seconds = time.perf_counter() - start
    result = RunResult(path=path, seconds=seconds, notebook=nb)
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                result.errors.append((index, output.ename, ",".join(cell.metadata.get("tags", []))))
                result.messages.append(f"{output.ename}: {output.evalue}".strip())
            elif output.output_type == "stream" and output.name == "stderr":
                result.stderr.append((index, output.text))
    return result


def main(argv: list[str]) -> int:
    status = 0
    for arg in argv:
        result = execute_standalone(Path(arg), allow_errors=True)
        print(f"{result.path.name}: {result.seconds:.1f} s")
        for (index, _, _), message in zip(result.errors, result.messages):
            print(f"  error in cell {index}: {message[:160]}")
            status = 1
        for index, text in result.stderr:
            print(f"  stderr in cell {index}: {text[:300]!r}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
