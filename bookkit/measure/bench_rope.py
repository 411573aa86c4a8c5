"""Benchmark (not a test): Chapter 11's RoPE implementations against the copy bound.

    make bench-rope
    python -m bookkit.measure.bench_rope --shape 1 32 2048 128 --runs 5 --repeats 5
    python -m bookkit.measure.bench_rope --shape 1 2 16 8 --repeats 1   # smoke test

Runs the code of the chapter itself: the ``export`` cells of
``notebooks/11_rope_at_speed.ipynb`` are executed as a module (as the tests load
them), so the implementations, their checks against ``transformers`` and the timing
harness are exactly the ones the book shows. ``torch.compile`` is tried once; where it
fails, or its kernel disagrees with ``transformers``, the compiled kernel is left out
and the reason printed. Every implementation is verified against
``apply_rotary_pos_emb`` before it is timed.

One *run* is the chapter's measurement: both dtypes, every implementation timed
round-robin with the two bounds, each ratio the median over the rounds of time / time
of ``x.clone()`` in the same round. The benchmark makes ``--runs`` (at least 5) such
runs, prints the table of the last one and the spread of the summary over the runs, and
judges the targets below at the **median over the runs**. It ends with exactly one line

    fastest_fp32=<ratio> fastest_bf16=<ratio> speedup_vs_transformers=<ratio>

(the medians). The targets are the benchmark's goals; the chapter shows observations
only and never a verdict. Timings depend on the machine and its load: they are
reported, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import types

import torch

from bookkit.notebook import export_source
from bookkit.paths import NOTEBOOKS

CHAPTER = NOTEBOOKS / "11_rope_at_speed.ipynb"
MIN_RUNS = 5
# The goals, judged at the median over the runs: the fastest bit-identical out-of-place
# implementation of the chapter within these ratios to the clone bound, and this much
# faster than transformers in float32.
TARGETS = {"fastest_fp32": 1.15, "fastest_bf16": 1.3}
MIN_SPEEDUP = 5.0
KEYS = ("fastest_fp32", "fastest_bf16", "speedup_vs_transformers")


def load_chapter() -> types.ModuleType:
    """Execute the chapter's export cells as a module (see bookkit/testing.py)."""
    module = types.ModuleType("chapter_11_rope_at_speed")
    module.__file__ = str(CHAPTER)
    sys.modules[module.__name__] = module  # dataclasses look their module up by name
    code = compile(export_source(CHAPTER), f"{CHAPTER.name}[export]", "exec")
    exec(code, vars(module))  # noqa: S102 - the notebook is this repository's own code
    return module


def fastest_ours(rows: list) -> object:
    """The fastest out-of-place implementation taught in the chapter that is
    bit-identical to transformers in float32 (its BenchRow)."""
    eligible = [r for r in rows if r.ours and r.out_of_place and r.exact]
    return min(eligible, key=lambda r: r.ratio)


def run_summary(fp32: list, bf16: list, transformers: str) -> dict[str, float]:
    """fastest_fp32 and fastest_bf16 (ratios to the clone bound) and
    speedup_vs_transformers (float32: transformers' ratio over the fastest's)."""
    hf = next(r for r in fp32 if r.name == transformers)
    best = fastest_ours(fp32)
    return {
        "fastest_fp32": best.ratio,
        "fastest_bf16": fastest_ours(bf16).ratio,
        "speedup_vs_transformers": hf.ratio / best.ratio,
    }


def median_summary(summaries: list[dict[str, float]]) -> dict[str, float]:
    """The median of every key over the runs."""
    return {key: statistics.median(s[key] for s in summaries) for key in KEYS}


def summary_line(summary: dict[str, float]) -> str:
    """fastest_fp32=<ratio> fastest_bf16=<ratio> speedup_vs_transformers=<ratio>."""
    return " ".join(f"{key}={summary[key]:.2f}" for key in KEYS)


def verdict(summary: dict[str, float], runs: int) -> list[str]:
    """The benchmark's targets, met or missed at the median over `runs` runs."""
    lines = [
        f"{key}: {summary[key]:.3f}x the clone bound, median of {runs} runs "
        f"(target <= {limit}): " + ("met" if summary[key] <= limit else "MISSED")
        for key, limit in TARGETS.items()
    ]
    speedup = summary["speedup_vs_transformers"]
    lines.append(
        f"speedup_vs_transformers: {speedup:.1f}x, median of {runs} runs "
        f"(target >= {MIN_SPEEDUP:.0f}): "
        + ("met" if speedup >= MIN_SPEEDUP else "MISSED")
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shape",
        type=int,
        nargs=4,
        default=[1, 32, 2048, 128],
        metavar=("B", "H", "T", "D"),
        help="shape of q and of k (default: 1 32 2048 128)",
    )
    parser.add_argument(
        "--runs", type=int, default=MIN_RUNS,
        help=f"independent runs, judged at their median (at least {MIN_RUNS})",
    )
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds per run")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up rounds per run")
    parser.add_argument(
        "--threads", type=int, default=0, help="torch threads (0: torch's default)"
    )
    parser.add_argument(
        "--device", default="cpu", help="cpu, or cuda where a GPU is present"
    )
    args = parser.parse_args(argv)
    if args.runs < MIN_RUNS:
        parser.error(f"--runs must be at least {MIN_RUNS}: the targets are judged at "
                     "the median of several runs")
    if args.threads:
        torch.set_num_threads(args.threads)
    chapter = load_chapter()
    kept = chapter.keep_freed_memory()
    compiled = chapter.compile_rope_kernel()
    shape = tuple(args.shape)
    print(
        f"q, k of shape {shape} on {args.device}, {torch.get_num_threads()} threads, "
        f"torch {torch.__version__}; {args.runs} runs of {args.repeats} interleaved "
        f"rounds after {args.warmup} warm-up round(s); freed memory kept: {kept}"
    )
    print(f"torch.compile: {compiled.note}")
    summaries, verified, checked = [], 0, 0
    for _ in range(args.runs):
        results = {
            dtype: chapter.rope_benchmark(
                shape, dtype, args.device, repeats=args.repeats, warmup=args.warmup,
                compiled=compiled.kernel,
            )
            for dtype in (torch.float32, torch.bfloat16)
        }
        timed = sum(r.check != "bound" for rs in results.values() for r in rs.rows)
        verified += timed
        checked += timed + sum(len(rs.excluded) for rs in results.values())
        summaries.append(
            run_summary(results[torch.float32].rows, results[torch.bfloat16].rows,
                        chapter.TRANSFORMERS)
        )
    for dtype, result in results.items():
        print(chapter.format_table(result.rows, f"last run, {dtype}"))
        for name, reason in result.excluded.items():
            print(f"left out: {name}: {reason}")
    print(f"verified against transformers before timing: {verified} of {checked} "
          "(implementation, dtype, run) triples")
    for key in KEYS:
        values = [s[key] for s in summaries]
        print(f"{key} over the runs: median {statistics.median(values):.3f}, "
              f"range {min(values):.3f}-{max(values):.3f}")
    summary = median_summary(summaries)
    print("\n".join(verdict(summary, args.runs)))
    print(summary_line(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
