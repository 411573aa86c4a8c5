"""Benchmark (not a test): how long a fresh `make test` and each notebook take here.

    make bench                 # rm -rf _build, time `make test`, per-notebook times
    make determinism           # run each notebook again alone; same printed output?

`make bench` reads each notebook's execution time from the build's own log (every
notebook executes once per `make test`, two at a time: bookkit.execute's lanes),
prints a table and writes _build/bench.json. `make determinism` runs each notebook
alone (the budget's measure) and prints its time.
Timings vary with the machine and its load: reported in notes, never asserted in tests.
The .venv and the vendored JavaScript are kept (a fresh clone adds about a minute of
pip install).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

from bookkit.chapters import page_paths
from bookkit.notebook import read
from bookkit.paths import BUILD, EXECUTED_NOTEBOOKS, ROOT
from bookkit.run import execute_standalone

ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colours, should the log have any
# what bookkit.execute prints for every page it executes (chapters and guides)
EXECUTED_LINE = re.compile(r"^(\w+)\.ipynb: executed in ([\d.]+) s$")


def fresh_make_test() -> tuple[float, dict[str, float], int]:
    """Remove the build, run `make test`; return seconds, notebook times, status."""
    shutil.rmtree(BUILD, ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.Popen(
        ["make", "test"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    times: dict[str, float] = {}
    for line in proc.stdout:
        sys.stdout.write(line)
        match = EXECUTED_LINE.match(ANSI.sub("", line).strip())
        if match:
            times[match.group(1)] = float(match.group(2))
    status = proc.wait()
    return time.perf_counter() - start, times, status


def is_table(html: str) -> bool:
    """Whether an HTML output is a results table."""
    return html.lstrip().startswith("<table")


def text_outputs(nb) -> list[str]:
    """The printed text of every code cell: streams, text-only results and HTML tables
    (results shown as tables are results too)."""
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
            elif is_table(output.get("data", {}).get("text/html", "")):
                parts.append(output["data"]["text/html"])
        texts.append("".join(parts))
    return texts


def determinism() -> int:
    """Run every notebook alone again; compare its printed output with the build's."""
    status = 0
    for path in page_paths():
        built = EXECUTED_NOTEBOOKS / path.name
        if not built.is_file():
            print(f"{built} missing: run `make book` first")
            return 1
        run = execute_standalone(path, allow_errors=True)
        differ = [
            k
            for k, (a, b) in enumerate(
                zip(text_outputs(run.notebook), text_outputs(read(built)))
            )
            if a != b
        ]
        ok = not differ and not run.errors and not run.stderr
        status |= not ok
        verdict = (
            "same output" if ok else f"DIFFERS in code cells {differ} {run.errors}"
        )
        print(f"{path.stem:<34} {run.seconds:6.1f} s  {verdict}")
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--determinism",
        action="store_true",
        help="run every notebook again and compare with the build",
    )
    args = parser.parse_args()
    if args.determinism:
        return determinism()
    seconds, times, status = fresh_make_test()
    results = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "make_test_s": round(seconds, 1),
        "make_test_status": status,
        "notebooks_s": times,
    }
    print(f"\n{'notebook':<34} {'executed in':>12}")
    for stem, value in times.items():
        print(f"{stem:<34} {value:10.1f} s")
    print(f"{'all notebooks':<34} {sum(times.values()):10.1f} s")
    print(f"{'fresh make test':<34} {seconds:10.1f} s (exit status {status})")
    out = BUILD / "bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"wrote {out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
