"""Benchmark (not a test): Chapter 11's RoPE implementations against the copy bound.

    make bench-rope
    .venv/bin/python tools/bench_rope.py --shape 1 32 2048 128 --repeats 5
    .venv/bin/python tools/bench_rope.py --shape 1 2 16 8 --repeats 1   # smoke test

Runs the code of the chapter itself: the ``export`` cells of
``notebooks/11_rope_at_speed.ipynb`` are executed as a module (as the tests load
them), so the implementations, their checks against ``transformers`` and the timing
harness are exactly the ones the book shows. Every implementation is verified against
``apply_rotary_pos_emb`` before it is timed. Prints the table (ratios to ``x.clone()``
of q and k, measured in the same run), the verdict on the chapter's targets, and ends
with exactly one line

    fastest_fp32=<ratio> fastest_bf16=<ratio> speedup_vs_transformers=<ratio>

Timings depend on the machine and its load: they are reported, never asserted.
"""

from __future__ import annotations

import argparse
import sys
import types

import torch

from nbtools import NOTEBOOKS, export_source

CHAPTER = NOTEBOOKS / "11_rope_at_speed.ipynb"


def load_chapter() -> types.ModuleType:
    """Execute the chapter's export cells as a module (see tests/nbload.py)."""
    module = types.ModuleType("chapter_11_rope_at_speed")
    module.__file__ = str(CHAPTER)
    sys.modules[module.__name__] = module  # dataclasses look their module up by name
    code = compile(export_source(CHAPTER), f"{CHAPTER.name}[export]", "exec")
    exec(code, vars(module))  # noqa: S102 - the notebook is this repository's own code
    return module


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
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up rounds")
    parser.add_argument(
        "--threads", type=int, default=0, help="torch threads (0: torch's default)"
    )
    parser.add_argument(
        "--device", default="cpu", help="cpu, or cuda where a GPU is present"
    )
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    chapter = load_chapter()
    kept = chapter.keep_freed_memory()
    shape = tuple(args.shape)
    print(
        f"q, k of shape {shape} on {args.device}, {torch.get_num_threads()} threads, "
        f"torch {torch.__version__}; medians of {args.repeats} interleaved repeats "
        f"after {args.warmup} warm-up round(s); freed memory kept: {kept}"
    )
    rows = {
        dtype: chapter.rope_benchmark(
            shape, dtype, args.device, repeats=args.repeats, warmup=args.warmup
        )
        for dtype in (torch.float32, torch.bfloat16)
    }
    print(chapter.format_table(rows[torch.float32], rows[torch.bfloat16]))
    checked = [r for dtype_rows in rows.values() for r in dtype_rows]
    verified = sum(r.check in ("exact", "4u") for r in checked)
    print(f"verified against transformers before timing: {verified} of "
          f"{sum(r.check != 'bound' for r in checked)} (implementation, dtype) pairs")
    summary = chapter.bench_summary(rows[torch.float32], rows[torch.bfloat16])
    print("\n".join(chapter.verdict(summary)))
    print(chapter.summary_line(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
