"""Do the book's numbers hold on other CPUs? Run every notebook and the unit tests under
the numeric environments one machine can imitate (not a test of speed).

    make portability                            # every environment below
    python -m bookkit.measure.portability --env sse42-1thread
    python -m bookkit.measure.portability --env native-1thread notebooks/06_*.ipynb
    python -m bookkit.measure.portability --list

Float32 results differ in their last bits between machines: MKL picks its matrix kernels
by instruction set (``MKL_ENABLE_INSTRUCTIONS``), ATen picks its vectorised loops
(``ATEN_CPU_CAPABILITY``), and the number of threads (``OMP_NUM_THREADS``) changes how
reductions are split. Every environment below is one a reader's machine can have; an
assertion that passes in all of them rests on a rounding bound, not on one CPU's digits.
(ARM64 cannot be imitated here; the bounds cover it because they assume only IEEE-754
arithmetic.)

Each notebook runs standalone (alone, in an empty folder, as ``bookkit/run.py``
does), in a fresh process with the environment set; the unit tests run as
``pytest -m unit``. The table shows ``ok`` and the seconds, or the first failing cell.
Jobs with one thread run two at a time on a 2-core machine. Exit status 1 on any
failure.
Writes ``_build/portability.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from threading import Lock, Semaphore

from bookkit.chapters import page_paths
from bookkit.paths import BUILD, ROOT

# name -> (environment variables, what it imitates). Order: as printed.
ENVIRONMENTS: dict[str, tuple[dict[str, str], str]] = {
    "native": ({}, "this CPU's own kernels, all its threads"),
    "native-1thread": ({"OMP_NUM_THREADS": "1"}, "this CPU, one thread"),
    "sse42-1thread": (
        {
            "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
            "ATEN_CPU_CAPABILITY": "default",
            "OMP_NUM_THREADS": "1",
        },
        "an old x86-64 CPU: SSE4.2 MKL, ATen's plain loops, one thread",
    ),
    "avx2-2threads": (
        {"MKL_ENABLE_INSTRUCTIONS": "AVX2", "OMP_NUM_THREADS": "2"},
        "an AVX2 laptop's MKL, two threads",
    ),
    "avx2-aten-1thread": (
        {
            "MKL_ENABLE_INSTRUCTIONS": "AVX2",
            "ATEN_CPU_CAPABILITY": "avx2",
            "OMP_NUM_THREADS": "1",
        },
        "an AVX2 CPU throughout (MKL and ATen), one thread",
    ),
}
UNIT = "unit tests"


@dataclass
class Outcome:
    """One notebook (or the unit tests) under one environment."""

    environment: str
    job: str
    ok: bool
    seconds: float
    detail: str = ""


def threads(environment: str) -> int:
    """How many cores a job of this environment keeps busy."""
    return int(ENVIRONMENTS[environment][0].get("OMP_NUM_THREADS", os.cpu_count() or 1))


def job_env(environment: str, inductor_cache: Path) -> dict[str, str]:
    """This process's environment with the numeric settings of ``environment``, and
    ``inductor_cache`` (an empty folder) as torch.compile's cache.

    Every job compiles afresh, as on a reader's new machine. A shared cache is not
    safe across environments: it does not keep kernels compiled under
    ``avx2-aten-1thread`` apart from native ones, and on this AVX-512 machine such a
    kernel, loaded by a ``native-1thread`` process, crashed it (segmentation fault in
    Chapter 11).
    """
    env = dict(os.environ)
    for key in ("MKL_ENABLE_INSTRUCTIONS", "ATEN_CPU_CAPABILITY", "OMP_NUM_THREADS"):
        env.pop(key, None)
    env.update(ENVIRONMENTS[environment][0])
    env["TORCHINDUCTOR_CACHE_DIR"] = str(inductor_cache)
    return env


def run_notebook(environment: str, path: Path) -> Outcome:
    """Execute one notebook standalone in a fresh process under ``environment``."""
    with tempfile.TemporaryDirectory(prefix="portability-") as tmp:
        report = Path(tmp) / "report.json"
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "bookkit.run", "--json",
             str(report), "--timeout", "3600", str(path)],
            env=job_env(environment, Path(tmp) / "inductor"), cwd=ROOT,
            capture_output=True, text=True,
        )
        seconds = time.perf_counter() - start
        if not report.is_file():
            lines = [
                line for line in (proc.stderr + proc.stdout).splitlines()
                if line.strip() and not set(line.strip()) <= set("-=^~")
            ]
            return Outcome(environment, path.stem, False, seconds,
                           (lines[-1] if lines else "no report")[:200])
        result = json.loads(report.read_text())[0]
    problems = result["errors"] + result["stderr"]
    return Outcome(
        environment, path.stem, not problems, result["seconds"],
        problems[0][:200] if problems else "",
    )


def run_unit_tests(environment: str) -> Outcome:
    """``pytest -m unit`` under ``environment``; the first failing test as detail."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="portability-") as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-m", "unit", "-q", "-p",
             "no:cacheprovider", "-o", "addopts=", "-rf"],
            env=job_env(environment, Path(tmp) / "inductor"), cwd=ROOT,
            capture_output=True, text=True,
        )
    seconds = time.perf_counter() - start
    failed = [line for line in proc.stdout.splitlines() if line.startswith("FAILED")]
    detail = failed[0][:200] if failed else ""
    if proc.returncode and not detail:
        detail = (proc.stdout.strip().splitlines() or ["pytest failed"])[-1][:200]
    return Outcome(environment, UNIT, proc.returncode == 0, seconds, detail)


def table(outcomes: list[Outcome], environments: list[str], jobs: list[str]) -> str:
    """Markdown table: a row per job, a column per environment."""
    found = {(o.environment, o.job): o for o in outcomes}
    lines = [
        "| | " + " | ".join(environments) + " |",
        "|---|" + "---|" * len(environments),
    ]
    for job in jobs:
        cells = []
        for environment in environments:
            outcome = found.get((environment, job))
            if outcome is None:
                cells.append("-")
            elif outcome.ok:
                cells.append(f"ok {outcome.seconds:.0f} s")
            else:
                cells.append(f"FAIL {outcome.detail}")
        lines.append(f"| {job} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def machine() -> str:
    """The CPU model and torch's vector capability, for the report."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    capability = subprocess.run(
        [sys.executable, "-c",
         "import torch; print(torch.backends.cpu.get_cpu_capability())"],
        capture_output=True, text=True,
    ).stdout.strip()
    return f"{model}, torch capability {capability}, {os.cpu_count()} cores"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument(
        "--env", action="append", choices=list(ENVIRONMENTS),
        help="an environment to run (repeatable; default: all)",
    )
    parser.add_argument("--no-unit", action="store_true", help="skip the unit tests")
    parser.add_argument("--list", action="store_true", help="list the environments")
    args = parser.parse_args(argv)
    if args.list:
        for name, (settings, what) in ENVIRONMENTS.items():
            shown = " ".join(f"{k}={v}" for k, v in settings.items()) or "(none)"
            print(f"{name:18} {shown:70} {what}")
        return 0
    environments = args.env or list(ENVIRONMENTS)
    notebooks = args.notebooks or page_paths()
    tasks = [(env, nb) for env in environments for nb in notebooks]
    if not args.no_unit:
        tasks += [(env, None) for env in environments]
    cores = os.cpu_count() or 1
    slots = Semaphore(cores)
    taking = Lock()  # one job gathers its slots at a time, so two never deadlock

    def run(task: tuple[str, Path | None]) -> Outcome:
        environment, path = task
        need = min(threads(environment), cores)
        with taking:
            for _ in range(need):
                slots.acquire()
        try:
            outcome = (
                run_unit_tests(environment) if path is None
                else run_notebook(environment, path)
            )
        finally:
            for _ in range(need):
                slots.release()
        mark = "ok" if outcome.ok else f"FAIL {outcome.detail}"
        print(f"{environment:18} {outcome.job:32} {outcome.seconds:6.1f} s  {mark}",
              flush=True)
        return outcome

    print(f"machine: {machine()}", flush=True)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=cores) as pool:
        outcomes = list(pool.map(run, tasks))
    jobs = [nb.stem for nb in notebooks] + ([] if args.no_unit else [UNIT])
    print()
    print(table(outcomes, environments, jobs))
    print(f"\n{len(tasks)} runs in {time.perf_counter() - start:.0f} s")
    BUILD.mkdir(parents=True, exist_ok=True)
    (BUILD / "portability.json").write_text(
        json.dumps({"machine": machine(), "outcomes": [asdict(o) for o in outcomes]},
                   indent=1)
    )
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
