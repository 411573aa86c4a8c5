"""Execute notebooks the way a learner would: each alone, in an empty folder, top to
bottom.

    python -m bookkit.run notebooks/01_attention_cant_see_order.ipynb [...]
    python -m bookkit.run --plain notebooks/...   # without the build's profile

Prints the wall time of each notebook and fails on any error or any stderr output.
Kernels run with the build's IPython profile (bookkit/ipython, as `make book` does)
unless ``--plain`` is given (then plotly and matplotlib use their defaults, as in
Colab). Tests and ``bookkit.measure.bench`` use ``execute_standalone`` and
``execute_notebook``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from bookkit.paths import kernel_env


@dataclass
class RunResult:
    """What one standalone run produced."""

    path: Path
    seconds: float
    notebook: nbformat.NotebookNode
    # (cell index, ename, tags) of each error, then "ename: evalue" of each, in order
    errors: list[tuple[int, str, str]] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    stderr: list[tuple[int, str]] = field(default_factory=list)  # (cell index, text)


def execute_notebook(
    nb: nbformat.NotebookNode,
    name: str,
    allow_errors: bool = False,
    timeout: int = 600,
    plain: bool = False,
) -> RunResult:
    """Execute ``nb`` (in place) in a fresh empty folder; collect its problems."""
    env = dict(os.environ) if plain else kernel_env()
    if plain:
        env.pop("IPYTHONDIR", None)
    with tempfile.TemporaryDirectory(prefix="nbrun-") as tmp:
        nbformat.write(nb, Path(tmp) / name)
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            allow_errors=allow_errors,
            resources={"metadata": {"path": tmp}},
        )
        start = time.perf_counter()
        client.execute(env=env)
        seconds = time.perf_counter() - start
    result = RunResult(path=Path(name), seconds=seconds, notebook=nb)
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                cell_tags = ",".join(cell.metadata.get("tags", []))
                result.errors.append((index, output.ename, cell_tags))
                result.messages.append(f"{output.ename}: {output.evalue}".strip())
            elif output.output_type == "stream" and output.name == "stderr":
                result.stderr.append((index, output.text))
    return result


def execute_standalone(
    path: Path, allow_errors: bool = False, timeout: int = 600, plain: bool = False
) -> RunResult:
    """Copy ``path`` alone into a fresh temporary folder and execute it there."""
    nb = nbformat.read(path, as_version=4)
    result = execute_notebook(nb, path.name, allow_errors, timeout, plain)
    result.path = path
    return result


def report(result: RunResult) -> dict:
    """A notebook run as JSON: its time, and each error or stderr with its cell."""
    cells = result.notebook.cells

    def where(index: int) -> str:
        cell_id = cells[index].get("id", "")
        return f"cell {index}" + (f" ({cell_id})" if cell_id else "")

    return {
        "notebook": result.path.name,
        "seconds": result.seconds,
        "errors": [
            f"{where(index)}: {message}"
            for (index, _, _), message in zip(result.errors, result.messages)
        ],
        "stderr": [
            f"{where(index)}: stderr {text[:200]!r}" for index, text in result.stderr
        ],
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument(
        "--json",
        type=Path,
        help="also write each notebook's time, errors and stderr to this file",
    )
    parser.add_argument(
        "--timeout", type=int, default=600, help="seconds per cell (default 600)"
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="without the build's IPython profile (as in Colab)",
    )
    args = parser.parse_args(argv)
    status = 0
    reports = []
    for path in args.notebooks:
        result = execute_standalone(
            path, allow_errors=True, timeout=args.timeout, plain=args.plain
        )
        reports.append(report(result))
        print(f"{result.path.name}: {result.seconds:.1f} s")
        for (index, _, _), message in zip(result.errors, result.messages):
            print(f"  error in cell {index}: {message[:160]}")
            status = 1
        for index, text in result.stderr:
            print(f"  stderr in cell {index}: {text[:300]!r}")
            status = 1
    if args.json:
        args.json.write_text(json.dumps(reports, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
