"""Benchmark (not a test): how long a fresh build and each notebook take on this machine.

    make bench                      # everything: fresh site build, then each notebook alone
    python tools/bench.py --notebooks-only

Prints a table and writes _build/bench.json. Timings vary with the machine and its load; they
are reported in notes, never asserted in tests.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbtools import ROOT, notebook_paths  # noqa: E402
from run_notebook import execute_standalone  # noqa: E402


def fresh_build_seconds() -> float:
    """Remove _build and time `jupyter-book build` (which executes every notebook)."""
    shutil.rmtree(ROOT / "_build", ignore_errors=True)
    start = time.perf_counter()
    subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT),
                    "--path-output", str(ROOT), "-W", "-n", "--keep-going", "-q"], check=True,
                   cwd=ROOT, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description="time the build and each notebook")
    parser.add_argument("--notebooks-only", action="store_true", help="skip the fresh build")
    args = parser.parse_args()
    results: dict[str, object] = {"cpus": os.cpu_count(), "python": platform.python_version()}
    if not args.notebooks_only:
        results["fresh_build_s"] = round(fresh_build_seconds(), 1)
        print(f"fresh site build (executes every notebook): {results['fresh_build_s']:.1f} s")
    rows = {}
    for path in notebook_paths():
        run = execute_standalone(path, allow_errors=False)
        rows[path.stem] = round(run.seconds, 1)
        print(f"{path.stem:<34} {run.seconds:6.1f} s standalone")
    results["notebooks_s"] = rows
    print(f"{'total':<34} {sum(rows.values()):6.1f} s")
    out = ROOT / "_build" / "bench.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
