"""Execute every chapter notebook, in two lanes, into the cache the book's build reads.

`make book` empties the build's jupyter-cache, runs this script, then runs
``jupyter-book build`` with ``execute_notebooks: cache``. Every build executes every
notebook, as MyST-NB itself would (``single_nb_execution`` on the notebook as read from
disk, in an empty temporary folder, with the timeout of ``_config.yml``), but in two
lanes side by side instead of one after the other, so both cores of a 2-core machine
stay busy:

- the *priority* lane runs the long chapters (those granted more than the default
  budget, ``bookkit.chapters``), longest budget first, at the normal priority; they
  train models on both cores and have time budgets of their own;
- the *background* lane runs the short chapters at the lowest CPU priority
  (``nice`` 19), so they use the time the long chapters leave free instead of taking
  it from them.

A notebook whose execution fails is not cached: the build then executes it again itself
and reports the failure the usual way (a warning, which ``-W`` turns into an error).

In cache mode MyST-NB writes its copies in ``_build/jupyter_execute/`` without outputs,
so after the build ``--export DIR`` writes the executed notebooks there from the cache
(the tests, the slides and the student edition read them).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import nbformat
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.executors.utils import single_nb_execution

from bookkit.chapters import Chapter, page_paths, pages
from bookkit.config import execution_settings

BACKGROUND_NICE = 19  # the background lane's niceness: the lowest CPU priority


def execute(
    path: Path, timeout: int, allow_errors: bool = False
) -> tuple[Path, str, float, str | None]:
    """Execute one notebook in an empty temporary folder, as MyST-NB does.

    Returns (path, executed notebook as JSON, seconds, traceback or None)."""
    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as cwd:
        result = single_nb_execution(
            notebook,
            cwd=cwd,
            timeout=timeout,
            allow_errors=allow_errors,
            meta_override=True,
        )
    return path, nbformat.writes(result.nb), result.time, result.exc_string


def store(cache, path: Path, executed: str, seconds: float) -> None:
    """Put an executed notebook (JSON) into the cache as MyST-NB's cache mode would."""
    record = cache.add_nb_to_project(str(path))
    cache.cache_notebook_bundle(
        CacheBundleIn(
            nbformat.reads(executed, as_version=4),
            record.uri,
            data={"execution_seconds": seconds},
        ),
        check_validity=False,
        overwrite=True,
    )


def export(cache, folder: Path) -> int:
    """Write every chapter's executed notebook from the cache into folder; 1 if one is
    missing (its execution failed, and the build has reported it)."""
    folder.mkdir(parents=True, exist_ok=True)
    status = 0
    for path in page_paths():
        try:
            source = nbformat.read(path, as_version=4)
            _, executed = cache.merge_match_into_notebook(source)
        except KeyError:
            print(f"{path.name}: no executed copy in the cache")
            status = 1
            continue
        nbformat.write(executed, folder / path.name)
    return status


def lanes(book: tuple[Chapter, ...]) -> tuple[list[Path], list[Path]]:
    """(priority lane, background lane): the long chapters, longest budget first, then
    the others in chapter order."""
    priority = sorted(
        (c for c in book if c.lane == "priority"), key=lambda c: (-c.budget, c.number)
    )
    background = [c for c in book if c.lane != "priority"]
    return [c.path for c in priority], [c.path for c in background]


def lower_priority() -> None:
    """Run this process, and every kernel it starts, at nice BACKGROUND_NICE. The
    build's kernel profile (bookkit/ipython) reads BOOK_KERNEL_NICE: a kernel runs in a
    session of its own, whose nice value Linux's autogroup scheduling also needs."""
    os.nice(BACKGROUND_NICE)
    os.environ["BOOK_KERNEL_NICE"] = str(BACKGROUND_NICE)


def background_lane() -> ProcessPoolExecutor:
    """One worker whose kernels run at the lowest CPU priority (lower_priority)."""
    return ProcessPoolExecutor(1, initializer=lower_priority)


def executed_line(path: Path, seconds: float) -> str:
    """The line printed for each executed page (`make bench` reads it from the log)."""
    return f"{path.name}: executed in {seconds:.0f} s"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=Path, help="the build's .jupyter_cache folder")
    parser.add_argument(
        "--export",
        type=Path,
        metavar="DIR",
        help="instead of executing, write the cached executed notebooks into DIR",
    )
    args = parser.parse_args(argv)
    cache = get_cache(args.cache)
    if args.export:
        return export(cache, args.export)
    timeout, allow_errors = execution_settings()
    start = time.perf_counter()
    failed = []
    priority, background = lanes(pages())
    with ProcessPoolExecutor(1) as first, background_lane() as rest:
        futures = [first.submit(execute, p, timeout, allow_errors) for p in priority]
        futures += [rest.submit(execute, p, timeout, allow_errors) for p in background]
        for future in as_completed(futures):
            path, executed, seconds, error = future.result()
            if error is not None:
                failed.append(path.name)
                print(f"{path.name}: failed after {seconds:.0f} s; the build reruns it")
                continue
            store(cache, path, executed, seconds)
            print(executed_line(path, seconds), flush=True)
    total = time.perf_counter() - start
    print(f"{len(futures)} notebooks in {total:.0f} s, in two lanes"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
