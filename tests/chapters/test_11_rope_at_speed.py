"""Tests for Chapter 11, "RoPE at speed"
(notebooks/11_rope_at_speed.ipynb).

Only the notebook's ``export`` cells are executed (bookkit.testing.load_chapter). The
reference is ``transformers``' own ``LlamaRotaryEmbedding`` and
``apply_rotary_pos_emb``; the tolerances come from the rounding bound stated here (each
implementation rounds a product and a sum at most once: |y - y'| <= 4u(1 + u)(|x_j| +
|x_j+D/2|), u the unit roundoff of the dtype), never from the module. Timings are never
asserted.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import re
import subprocess
import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import (
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)

from bookkit.measure import bench_rope
from bookkit.paths import NOTEBOOKS, ROOT
from bookkit.testing import fails, load_chapter, passes

ch = load_chapter("11_rope_at_speed")
ch06 = load_chapter("06_rope_in_code")

UNIT_ROUNDOFF = {torch.float32: 2.0**-24, torch.bfloat16: 2.0**-8}  # stated here
SETTINGS = settings(max_examples=25, deadline=None)
half_dims = st.integers(min_value=1, max_value=12)
seeds = st.integers(min_value=0, max_value=2**32 - 1)


def hf_tables(T: int, D: int, dtype=torch.float32, base: float = 10000.0):
    """transformers' cos and sin, (1, T, D) in dtype, for positions 0..T-1."""
    config = LlamaConfig(
        head_dim=D,
        hidden_size=D,
        num_attention_heads=1,
        num_key_value_heads=1,
        rope_parameters={"rope_type": "default", "rope_theta": base},
    )
    probe = torch.zeros(1, dtype=dtype)
    return LlamaRotaryEmbedding(config)(probe, torch.arange(T)[None])


def hf_rope(q, k, base: float = 10000.0):
    """transformers' apply_rotary_pos_emb on q and k with the first halves of its own
    tables repeated to width D (so that both sides of a comparison read the same table
    values), and those (T, D/2) halves."""
    T, D = q.shape[2], q.shape[3]
    cos, sin = (t[0, :, : D // 2] for t in hf_tables(T, D, q.dtype, base))
    wide = torch.cat((cos, cos), -1)[None], torch.cat((sin, sin), -1)[None]
    q_rot, k_rot = apply_rotary_pos_emb(q, k, *wide)
    return (q_rot, k_rot), cos, sin


def angle_table_gap(T: int, base: float = 10000.0) -> float:
    """How far float32 tables of positions 0..T-1 may be from cos(m theta_i): the angle
    rounded with relative error (ln b + 7)u (exponent, power, reciprocal, product), then
    cos or sin within 2 ulp (4u)."""
    u = UNIT_ROUNDOFF[torch.float32]
    return (T - 1) * (math.log(base) + 7) * u + 4 * u


def bound(x):
    """4u(1 + u)(|x_j| + |x_j+D/2|) for every coordinate of x, computed here."""
    u = UNIT_ROUNDOFF[x.dtype]
    h = x.shape[-1] // 2
    a = x.double().abs()
    pair = a[..., :h] + a[..., h:]
    return 4 * u * (1 + u) * torch.cat((pair, pair), dim=-1)


def random_qk(seed, B, Hq, Hk, T, D, dtype=torch.float32):
    """Asymmetric random q and k (different heads, scales and offsets)."""
    g = torch.Generator().manual_seed(seed)
    q = 3 * torch.randn(B, Hq, T, D, generator=g) + 0.5
    k = 0.7 * torch.randn(B, Hk, T, D, generator=g) - 0.25
    return q.to(dtype), k.to(dtype)


def assert_within_bound(got, want, x):
    gap = (got.double() - want.double()).abs()
    assert bool((gap <= bound(x)).all()), f"max gap {gap.max().item():.3g}"


# --- tables and cache
# ------------------------------------------------------------------


TWO_COSINES = 8 * UNIT_ROUNDOFF[torch.float32]  # 2 ulp per side (book/checking.md)


@SETTINGS
@given(T=st.integers(1, 300), h=half_dims, base=st.sampled_from([10000.0, 500000.0]))
def test_rope_tables_match_transformers_within_two_cosines(T, h, base):
    D = 2 * h
    cos_hf, sin_hf = hf_tables(T, D, torch.float32, base)
    cos, sin = ch.rope_tables(T, D, base)
    assert cos.shape == (T, h) and cos.dtype == torch.float32
    # the same angles, cos taken on tensors of two shapes: within 8u, both halves
    for wide, table in ((cos_hf[0], cos), (sin_hf[0], sin)):
        gap = (wide - torch.cat((table, table), -1)).abs()
        assert gap.max() <= TWO_COSINES


def test_rope_tables_default_base_and_bfloat16():
    cos_hf, sin_hf = hf_tables(40, 6, torch.bfloat16)
    cos, sin = ch.rope_tables(40, 6, dtype=torch.bfloat16)
    assert cos.dtype == torch.bfloat16
    # float32 values within 8u, then one rounding to bfloat16 each: one bfloat16 unit in
    # the last place of a value below 1 (2u) at most
    limit = TWO_COSINES + 2 * UNIT_ROUNDOFF[torch.bfloat16]
    for wide, table in ((cos_hf, cos), (sin_hf, sin)):
        assert (wide[0, :, :3].float() - table.float()).abs().max() <= limit
    cos32, sin32 = ch.rope_tables(3, 2)  # defaults: base 10000, float32, cpu
    angles = torch.tensor([0.0, 1.0, 2.0])
    assert torch.allclose(cos32[:, 0], angles.cos()) and torch.allclose(
        sin32[:, 0], angles.sin()
    )


@pytest.mark.parametrize(
    "args", [(0, 8), (-3, 8), (2.0, 8), (True, 8), (5, 7), (5, 0), (5, 3.0)]
)
def test_rope_tables_rejects_bad_sizes(args):
    with pytest.raises(ValueError, match="seq_len|head_dim"):
        ch.rope_tables(*args)


def test_rope_cache_builds_once_and_slices():
    cache = ch.RopeCache()
    c10, s10 = cache(10, 8)
    assert cache.builds == 1 and c10.shape == (10, 4)
    c50, s50 = cache(50, 8)
    c20, s20 = cache(20, 8)
    c50b, _ = cache(50, 8)
    assert cache.builds == 2
    assert c20.data_ptr() == c50.data_ptr() and c50b.data_ptr() == c50.data_ptr()
    assert torch.equal(c20, ch.rope_tables(20, 8)[0])
    assert torch.equal(s20, ch.rope_tables(20, 8)[1])
    cb, _ = cache(20, 8, torch.bfloat16)  # another dtype: its own tables
    assert cache.builds == 3 and cb.dtype == torch.bfloat16
    cache(5, 6)
    assert cache.builds == 4
    other = ch.RopeCache(base=100.0)
    assert torch.equal(other(7, 4)[1], ch.rope_tables(7, 4, 100.0)[1])


# --- the implementations against transformers
# -------------------------------------------


@SETTINGS
@given(
    seed=seeds,
    B=st.integers(1, 2),
    Hq=st.integers(1, 4),
    Hk=st.integers(1, 3),
    T=st.integers(1, 9),
    h=half_dims,
)
def test_eager_and_into_equal_transformers_in_float32(seed, B, Hq, Hk, T, h):
    q, k = random_qk(seed, B, Hq, Hk, T, 2 * h)
    (q_hf, k_hf), cos, sin = hf_rope(q, k)
    q_e, k_e = ch.rope_qk_eager(q, k, cos, sin)
    assert torch.equal(q_e, q_hf) and torch.equal(k_e, k_hf)
    out_q, out_k = torch.full_like(q, 7.0), torch.full_like(k, 7.0)
    got = ch.rope_qk_into(q, k, cos, sin, out_q, out_k)  # default: its own scratch
    assert got[0] is out_q and got[1] is out_k
    assert torch.equal(out_q, q_hf) and torch.equal(out_k, k_hf)
    scratch = torch.empty(B, max(Hq, Hk), T, h)
    ch.rope_qk_into(q, k, cos, sin, out_q, out_k, scratch)
    assert torch.equal(out_q, q_hf) and torch.equal(out_k, k_hf)


@SETTINGS
@given(
    seed=seeds,
    Hq=st.integers(1, 3),
    Hk=st.integers(1, 3),
    T=st.integers(1, 7),
    h=half_dims,
)
def test_eager_and_into_within_bound_in_bfloat16(seed, Hq, Hk, T, h):
    q, k = random_qk(seed, 1, Hq, Hk, T, 2 * h, torch.bfloat16)
    (q_hf, k_hf), cos, sin = hf_rope(q, k)
    q_e, k_e = ch.rope_qk_eager(q, k, cos, sin)
    assert q_e.dtype == torch.bfloat16
    assert_within_bound(q_e, q_hf, q)
    assert_within_bound(k_e, k_hf, k)
    out_q, out_k = torch.empty_like(q), torch.empty_like(k)
    ch.rope_qk_into(q, k, cos, sin, out_q, out_k)
    assert_within_bound(out_q, q_hf, q)
    assert_within_bound(out_k, k_hf, k)


@SETTINGS
@given(
    seed=seeds,
    Hq=st.integers(1, 4),
    T=st.integers(1, 9),
    h=half_dims,
    dtype=st.sampled_from([torch.float32, torch.float64, torch.bfloat16]),
)
def test_flipped_spelling_equals_rotate_halves_bit_for_bit(seed, Hq, T, h, dtype):
    """The compiled kernel's eager spelling makes rotate_halves' roundings exactly."""
    q, _ = random_qk(seed, 2, Hq, 1, T, 2 * h, dtype)
    cos, sin = (t.to(dtype) for t in ch.rope_tables(T, 2 * h))
    x1, x2 = q[..., :h], q[..., h:]
    by_hand = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
    got = ch.rotate_halves_flipped(q, cos, sin)
    assert got.shape == q.shape and got.dtype == dtype
    assert torch.equal(got, by_hand)
    assert torch.equal(got, ch06.rotate_halves(q, cos, sin))


@pytest.fixture(scope="module")
def compiled():
    """The chapter's attempt at torch.compile on this machine (either outcome)."""
    return ch.compile_rope_kernel()


# With ATEN_CPU_CAPABILITY forced below the CPU's own level, this machine once saw the
# compiled kernel fail to build or disagree; a fresh TORCHINDUCTOR_CACHE_DIR (or
# TORCHINDUCTOR_FX_GRAPH_CACHE=0) made both forced levels compile and agree, which
# points at inductor's on-disk FX graph cache. That was observed by hand, not isolated
# by a reproduction here: so Chapter 11 leaves such a kernel out, and only at the CPU's
# own level is the compiler's output held to the bound.
FORCED_CAPABILITY = "ATEN_CPU_CAPABILITY" in os.environ


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_compiled_equals_transformers(compiled, dtype):
    if compiled.kernel is None:
        assert compiled.note.startswith(("torch.compile failed", "the compiled kernel"))
        pytest.skip(f"torch.compile left out on this machine: {compiled.note}")
    q, k = random_qk(
        11, 2, 3, 1, 5, 8, dtype
    )  # grouped-query: 3 query heads, 1 key head
    (q_hf, k_hf), cos, sin = hf_rope(q, k)
    q_c, k_c = ch.rope_qk_compiled(q, k, cos, sin, compiled.kernel)
    assert q_c.dtype == dtype and q_c.shape == q.shape and k_c.shape == k.shape
    if FORCED_CAPABILITY:
        pytest.skip(
            "ATEN_CPU_CAPABILITY forced: the compiler's output is not held here"
        )
    if dtype == torch.float32 and ch.contraction_off():
        # transformers' products and sums on the same tables, no fused multiply-add
        assert torch.equal(q_c, q_hf) and torch.equal(k_c, k_hf)
    else:
        assert_within_bound(q_c, q_hf, q)
        assert_within_bound(k_c, k_hf, k)
    assert not torch.equal(q_c, q)  # it did rotate


def test_a_failing_compiler_leaves_the_kernel_out_quietly(capsys):
    def no_compiler(function, **options):
        print("g++: command not found", file=sys.stderr)
        logging.getLogger("torch._inductor").error("a C++ compile error")
        raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found")

    result = ch.compile_rope_kernel(compiler=no_compiler)
    assert result.kernel is None
    assert result.note.startswith("torch.compile failed here (RuntimeError: Invalid")
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""  # nothing printed
    q, k = random_qk(4, 1, 2, 1, 5, 8)
    names = [c.name for c in ch.rope_candidates(q, k, compiled=result.kernel)]
    assert ch.COMPILED not in names and len(names) == 6
    bench = ch.rope_benchmark((1, 2, 5, 8), repeats=1, warmup=0, compiled=None)
    assert ch.COMPILED not in {r.name for r in bench.rows} and not bench.excluded


def test_a_kernel_that_disagrees_is_left_out():
    def off_by_a_little(q, k, cos, sin):
        q_rot, k_rot = ch.rope_qk_kernel(q, k, cos, sin)
        return q_rot * 1.1, k_rot  # 10 %: far outside the bound in any dtype

    result = ch.compile_rope_kernel(
        compiler=lambda function, **options: off_by_a_little
    )
    assert result.kernel is None and "differs from transformers" in result.note
    bench = ch.rope_benchmark(
        (1, 2, 5, 8), repeats=1, warmup=0, compiled=off_by_a_little
    )
    assert ch.COMPILED not in {r.name for r in bench.rows}
    assert bench.excluded[ch.COMPILED].startswith("q differs from transformers")
    bench = ch.rope_benchmark(
        (1, 2, 5, 8), torch.bfloat16, repeats=1, warmup=0, compiled=off_by_a_little
    )
    assert "farther from transformers" in bench.excluded[ch.COMPILED]


def test_an_exact_compiler_stand_in_is_accepted():
    result = ch.compile_rope_kernel(compiler=lambda function, **options: function)
    assert result.kernel is ch.rope_qk_kernel and "equal to transformers" in result.note


@SETTINGS
@given(
    seed=seeds,
    T=st.integers(1, 7),
    h=half_dims,
    dtype=st.sampled_from([torch.float32, torch.bfloat16]),
)
def test_complex_form_on_interleaved_pairs_within_bound(seed, T, h, dtype):
    q, k = random_qk(seed, 2, 2, 1, T, 2 * h, dtype)
    (q_hf, k_hf), cos, sin = hf_rope(q, k)
    rotations = ch.rope_rotations(cos, sin)
    assert rotations.dtype == torch.complex64
    assert torch.equal(rotations.real, cos.float()) and torch.equal(
        rotations.imag, sin.float()
    )
    for x, want in ((q, q_hf), (k, k_hf)):
        # the split-halves pair (j, j + h) sits at (2j, 2j + 1) in the interleaved
        # layout
        order = torch.stack((torch.arange(h), torch.arange(h) + h), -1).flatten()
        got = ch.rope_complex_meta(x[..., order], rotations)
        assert got.dtype == dtype
        back = torch.cat((got[..., 0::2], got[..., 1::2]), dim=-1)
        assert_within_bound(back, want, x)


def test_complex_form_matches_chapter6_interleaved_rope():
    q, _ = random_qk(3, 1, 2, 1, 6, 8, torch.float64)
    cos, sin = ch.rope_tables(6, 8, dtype=torch.float64)  # float32 angles, widened
    got = ch.rope_complex_meta(q.float(), ch.rope_rotations(cos, sin))
    want = ch06.apply_rope_interleaved(q, torch.arange(6)[None])  # float64 throughout
    # float32 tables within g of the exact ones; the float32 product within the lemma
    u, g = UNIT_ROUNDOFF[torch.float32], angle_table_gap(6)
    pair = q.abs()[..., 0::2] + q.abs()[..., 1::2]
    limit = (2 * u * (1 + u) * (1 + g) + g) * pair.repeat_interleave(2, -1)
    assert bool(((got.double() - want).abs() <= limit).all())


def test_layout_conversions_by_hand():
    x = torch.arange(8.0)
    assert ch.halves_to_interleaved(x).tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    assert ch.interleaved_to_halves(x).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    y = torch.randn(2, 3, 10)
    assert torch.equal(ch.interleaved_to_halves(ch.halves_to_interleaved(y)), y)


def test_chapter6_function_is_the_copy_and_matches():
    q, k = random_qk(5, 1, 2, 2, 4, 6)
    (q_hf, _), _, _ = hf_rope(q, k)
    # its own tables (cos of another shape, within 8u of transformers'), the lemma's
    # third statement
    u, g = UNIT_ROUNDOFF[torch.float32], TWO_COSINES
    limit = (4 * u * (1 + u) * (1 + g) + g) / (4 * u * (1 + u)) * bound(q)
    got = ch.apply_rope_halves(q, torch.arange(4)[None])
    assert bool(((got.double() - q_hf.double()).abs() <= limit).all())
    assert ch.apply_rope_halves.__doc__ == ch06.apply_rope_halves.__doc__  # the copy


# --- bad input
# --------------------------------------------------------------------------


def good():
    q, k = random_qk(0, 1, 2, 1, 4, 6)
    cos, sin = ch.rope_tables(4, 6)
    return q, k, cos, sin


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda q, k, c, s: (q[..., :5], k[..., :5], c, s), "even"),
        (lambda q, k, c, s: (q, k[:, :, :3], c, s), "share"),
        (lambda q, k, c, s: (q, k.double(), c, s), "dtype"),
        (lambda q, k, c, s: (q, k, c[:3], s), "shape"),
        (lambda q, k, c, s: (q, k, c, torch.cat((s, s), -1)), "shape"),
        (lambda q, k, c, s: (q, k, c.double(), s), "dtype"),
        (lambda q, k, c, s: (q[0], k, c, s), "floating tensor"),
        (lambda q, k, c, s: (q, k.long(), c, s), "floating tensor"),
        (lambda q, k, c, s: (q.tolist(), k, c, s), "floating tensor"),
        (lambda q, k, c, s: (q, k, c.tolist(), s), "shape"),
    ],
)
def test_bad_input_raises_value_error_saying_what_to_fix(change, words):
    args = change(*good())
    compiled = functools.partial(ch.rope_qk_compiled, kernel=ch.rope_qk_kernel)
    for function in (ch.rope_qk_eager, compiled, ch.check_qk):
        with pytest.raises(ValueError, match=words):
            function(*args)
    q, k, _, _ = good()
    with pytest.raises(ValueError, match=words):
        ch.rope_qk_into(*args, torch.empty_like(q), torch.empty_like(k))


def test_into_rejects_bad_buffers():
    q, k, cos, sin = good()
    with pytest.raises(ValueError, match="out_q must be a tensor of shape"):
        ch.rope_qk_into(q, k, cos, sin, torch.empty_like(k), torch.empty_like(k))
    with pytest.raises(ValueError, match="out_k must be a tensor of shape"):
        ch.rope_qk_into(q, k, cos, sin, torch.empty_like(q), k.double())
    with pytest.raises(ValueError, match="scratch must have shape"):
        ch.rope_qk_into(
            q,
            k,
            cos,
            sin,
            torch.empty_like(q),
            torch.empty_like(k),
            torch.empty(1, 1, 4, 3),
        )
    with pytest.raises(ValueError, match="scratch must have shape"):
        ch.rope_qk_into(
            q,
            k,
            cos,
            sin,
            torch.empty_like(q),
            torch.empty_like(k),
            torch.empty(1, 2, 4, 3, dtype=torch.float64),
        )


def test_complex_form_rejects_bad_input():
    rotations = ch.rope_rotations(*ch.rope_tables(4, 6))
    with pytest.raises(ValueError, match="head_dim even"):
        ch.rope_complex_meta(torch.ones(1, 1, 4, 5), rotations)
    with pytest.raises(ValueError, match="head_dim even"):
        ch.rope_complex_meta(torch.ones(4, 6), rotations)
    with pytest.raises(ValueError, match="rotations must have shape"):
        ch.rope_complex_meta(torch.ones(1, 1, 5, 6), rotations)


# --- the arithmetic of the bound
# ----------------------------------------------------------


def test_intensity_and_table_share_by_hand():
    assert ch.rope_intensity(4) == 0.375 and ch.rope_intensity(2) == 0.75
    assert ch.rope_intensity(8) == 3 / 16
    assert ch.table_traffic_fraction(32, 32) == 1 / 128  # default batch 1
    assert ch.table_traffic_fraction(32, 8, batch=2) == 1 / 160
    for bad in (0, -4, 2.0, True):
        with pytest.raises(ValueError, match="itemsize"):
            ch.rope_intensity(bad)
    with pytest.raises(ValueError, match="positive"):
        ch.table_traffic_fraction(0, 8)
    with pytest.raises(ValueError, match="positive"):
        ch.table_traffic_fraction(8, 8, batch=0)


def test_machine_balance_is_a_positive_ratio():
    assert ch.machine_balance(size=32, copy_mib=1, repeats=1) > 0


def test_machine_balance_is_flop_rate_over_bandwidth(monkeypatch):
    """With a clock that advances 0.5 s per reading, every timed call lasts 0.5 s: the
    balance is (2 * 32**3 flops / 0.5 s) / (2 * 2**18 floats * 4 bytes / 0.5 s)."""
    ticks = iter(range(10_000))
    monkeypatch.setattr(ch.time, "perf_counter", lambda: 0.5 * next(ticks))
    assert ch.machine_balance(size=32, copy_mib=1, repeats=3) == 32**3 / (4 * 2**18)


def test_rope_tolerance_by_hand():
    x = torch.tensor([[1.0, -2.0, 3.0, 0.5]])
    u = 2.0**-24
    want = 4 * u * (1 + u) * torch.tensor([[4.0, 2.5, 4.0, 2.5]], dtype=torch.float64)
    assert torch.allclose(ch.rope_tolerance(x), want, rtol=1e-12, atol=0)
    xb = x.to(torch.bfloat16)
    ub = 2.0**-8
    assert torch.allclose(
        ch.rope_tolerance(xb), want / (4 * u * (1 + u)) * 4 * ub * (1 + ub)
    )
    g = 8 * u  # own tables in float32: two cosines of one angle
    own = (4 * u * (1 + u) * (1 + g) + g) / (4 * u * (1 + u)) * want
    assert torch.allclose(ch.rope_tolerance(x, own_tables=True), own, rtol=1e-12)
    gb = 8 * u + 2 * ub  # then rounded to bfloat16: one more unit in the last place
    own_b = (4 * ub * (1 + ub) * (1 + gb) + gb) / (4 * u * (1 + u)) * want
    assert torch.allclose(ch.rope_tolerance(xb, own_tables=True), own_b, rtol=1e-12)
    assert ch.table_gap(torch.float32) == g and ch.table_gap(torch.bfloat16) == gb
    with pytest.raises(ValueError, match="floating"):
        ch.rope_tolerance(torch.ones(2, dtype=torch.int64))


# --- verification and the harness
# -------------------------------------------------------


def test_candidates_are_the_eight_ways():
    q, k = random_qk(1, 1, 2, 2, 4, 6)
    candidates = ch.rope_candidates(q, k, compiled=ch.rope_qk_kernel)  # a stand-in
    names = [c.name for c in candidates]
    assert names[0] == ch.TRANSFORMERS and len(names) == 7 == len(set(names))
    flags = {
        c.name: (c.exact, c.out_of_place, c.layout, c.ours, c.own_tables)
        for c in candidates
    }
    assert flags[ch.TRANSFORMERS] == (True, True, "halves", False, False)
    assert flags["Ch. 6 apply_rope_halves"] == (False, True, "halves", True, True)
    assert flags["rope_complex_meta (interleaved)"] == (
        False,
        True,
        "interleaved",
        True,
        False,
    )
    assert flags["rope_complex_meta + conversions"] == (
        False,
        True,
        "halves",
        True,
        False,
    )
    assert flags["rope_qk_into (out=, no allocation)"] == (
        True,
        False,
        "halves",
        True,
        False,
    )
    assert flags[ch.COMPILED] == (ch.contraction_off(), True, "halves", True, False)
    assert len(ch.rope_candidates(q, k)) == 6  # no compiled kernel given
    reference = ch.rope_candidates(q, k)[0].run()
    expected = {
        ch.TRANSFORMERS: "exact",
        "Ch. 6 apply_rope_halves": "4u+tables",
        "rope_complex_meta (interleaved)": "4u",
        "rope_complex_meta + conversions": "4u",
    }
    for c in candidates:
        assert ch.verify_candidate(c, q, k, reference) == expected.get(c.name, "exact")
    qb, kb = q.to(torch.bfloat16), k.to(torch.bfloat16)
    reference = ch.rope_candidates(qb, kb)[0].run()
    for c in ch.rope_candidates(qb, kb, compiled=ch.rope_qk_kernel):
        assert ch.verify_candidate(c, qb, kb, reference) == (
            "4u+tables" if c.own_tables else "4u"
        )


def test_verify_candidate_catches_wrong_answers():
    q, k = random_qk(2, 1, 2, 1, 5, 8)
    (q_hf, k_hf), cos, sin = hf_rope(q, k)
    reference = (q_hf, k_hf)
    wrong_way = ch.Candidate("wrong way", lambda: ch.rope_qk_eager(q, k, cos, -sin))
    with pytest.raises(AssertionError, match="wrong way: q differs"):
        ch.verify_candidate(wrong_way, q, k, reference)
    nudged = ch.Candidate("nudged k", lambda: (q_hf, k_hf + 1e-6 * k_hf.abs().max()))
    with pytest.raises(AssertionError, match="nudged k: k differs"):
        ch.verify_candidate(nudged, q, k, reference)
    far = ch.Candidate("far", lambda: (q_hf, k_hf + 1e-3), exact=False)
    with pytest.raises(AssertionError, match="far: k is farther"):
        ch.verify_candidate(far, q, k, reference)
    tiny = ch.Candidate("tiny", lambda: (q_hf, k_hf + 1e-9), exact=False)
    assert ch.verify_candidate(tiny, q, k, reference) == "4u"
    # 1e-6 is outside 4u(1+u)(...) here but inside the own-tables bound's 8u term
    pair = bound(k) / (4 * 2.0**-24 * (1 + 2.0**-24))
    step = (8 * 2.0**-24 * pair).float()
    loose = ch.Candidate(
        "tables", lambda: (q_hf, k_hf + step), exact=False, own_tables=True
    )
    assert ch.verify_candidate(loose, q, k, reference) == "4u+tables"
    strict = ch.Candidate("strict", lambda: (q_hf, k_hf + step), exact=False)
    with pytest.raises(AssertionError, match="strict: k is farther"):
        ch.verify_candidate(strict, q, k, reference)
    shaped = ch.Candidate("shape", lambda: (q_hf[..., :4], k_hf))
    with pytest.raises(AssertionError, match="shape: q came back with shape"):
        ch.verify_candidate(shaped, q, k, reference)
    typed = ch.Candidate("dtype", lambda: (q_hf, k_hf.double()))
    with pytest.raises(AssertionError, match="dtype: k came back"):
        ch.verify_candidate(typed, q, k, reference)
    qb, kb = q.to(torch.bfloat16), k.to(torch.bfloat16)
    ref_b, cos_b, sin_b = hf_rope(qb, kb)
    wrong_b = ch.Candidate("bf16", lambda: ch.rope_qk_eager(qb, kb, cos_b, -sin_b))
    with pytest.raises(AssertionError, match="farther"):
        ch.verify_candidate(wrong_b, qb, kb, ref_b)


def test_time_calls_interleaves_and_counts():
    order = []
    calls = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    timed = ch.time_calls(calls, repeats=3, warmup=1)
    assert order == ["a", "b"] * 4
    assert set(timed) == {"a", "b"}
    for seconds, faults in timed.values():
        assert len(seconds) == 3 and min(seconds) >= 0 and faults >= 0
    order.clear()
    ch.time_calls(calls)  # defaults: 2 warm-up rounds, 7 repeats
    assert order == ["a", "b"] * 9
    synced = []
    ch.time_calls(
        {"a": lambda: None}, repeats=2, warmup=0, sync=lambda: synced.append(1)
    )
    assert len(synced) == 4  # before and after every call
    with pytest.raises(ValueError, match="repeats"):
        ch.time_calls(calls, repeats=0)
    with pytest.raises(ValueError, match="warmup"):
        ch.time_calls(calls, warmup=-1)


def test_time_calls_keeps_every_round_in_order(monkeypatch):
    ticks = iter([0, 1, 10, 13, 20, 22, 30, 30.5, 40, 50])  # calls of 1, 3, 2, .5, 10 s
    monkeypatch.setattr(ch.time, "perf_counter", lambda: float(next(ticks)))
    seconds, faults = ch.time_calls({"x": lambda: None}, 5, 0)["x"]
    assert seconds == [1.0, 3.0, 2.0, 0.5, 10.0]


def test_round_ratios_pair_each_round_with_its_bound():
    assert ch.round_ratios([2.0, 3.0, 9.0], [1.0, 3.0, 3.0]) == [2.0, 1.0, 3.0]
    with pytest.raises(ValueError):
        ch.round_ratios([1.0, 2.0], [1.0])


def test_without_glibc_or_resource(monkeypatch):
    def no_libc(name):
        raise OSError(f"{name}: not found")

    monkeypatch.setattr(ch.ctypes, "CDLL", no_libc)
    assert ch.keep_freed_memory() is False
    monkeypatch.setattr(ch, "resource", None)
    assert ch.page_faults() == 0


def test_page_faults_and_keep_freed_memory():
    assert isinstance(ch.page_faults(), int) and ch.page_faults() >= 0
    kept = ch.keep_freed_memory()
    assert isinstance(kept, bool)
    if sys.platform == "linux":  # glibc
        assert kept


def row(name, ratio, ours=True, out_of_place=True, exact=True, check="exact"):
    return ch.BenchRow(
        name, ratio, ratio * 0.9, ratio * 1.1, 0.0, check, out_of_place, exact, ours
    )


def test_format_table_shows_ratio_spread_check_and_faults():
    rows = [row(ch.CLONE, 1.0, check="bound"), row("fast", 1.04, check="4u")]
    lines = ch.format_table(rows, "bfloat16").splitlines()
    assert len(lines) == 4 and lines[0].startswith("bfloat16")
    assert "1.04x [0.94-1.14]" in lines[3] and lines[3].split()[-2:] == ["4u", "0"]
    assert lines[2].split()[-2:] == ["-", "0"]  # a bound has no check
    assert all(len(line) <= 88 for line in lines)


def test_bench_cells_feed_both_the_text_and_the_html_table():
    rows = [row(ch.CLONE, 1.0, check="bound"), row("fast", 1.04, check="4u")]
    assert ch.bench_cells(rows) == [
        [ch.CLONE, "1.00x [0.90-1.10]", "-", "0"],
        ["fast", "1.04x [0.94-1.14]", "4u", "0"],
    ]
    html = ch.bench_table(ch.BenchResult(rows), "bfloat16", (1, 2, 6, 8)).data
    assert html.count("<tr>") == 3 and html.count("<th>") == 4
    assert "<caption>bfloat16, q and k of shape (1, 2, 6, 8)" in html
    assert "<td>1.04x [0.94-1.14]</td>" in html


def test_rope_benchmark_verifies_then_times_on_a_tiny_shape():
    result = ch.rope_benchmark(
        (1, 2, 6, 8), torch.float32, repeats=2, warmup=0, compiled=ch.rope_qk_kernel
    )  # an eager stand-in
    rows = result.rows
    names = [r.name for r in rows]
    assert names[:3] == [ch.CLONE, ch.COPY, ch.TRANSFORMERS] and len(rows) == 9
    assert rows[0].ratio == rows[0].low == rows[0].high == 1.0
    assert rows[0].check == rows[1].check == "bound" and not result.excluded
    checks = {r.name: r.check for r in rows}
    assert checks[ch.COMPILED] == ("exact" if ch.contraction_off() else "4u")
    assert checks["rope_complex_meta (interleaved)"] == "4u"
    assert checks["rope_complex_meta + conversions"] == "4u"
    assert checks["Ch. 6 apply_rope_halves"] == "4u+tables"
    assert all(0 < r.low <= r.ratio <= r.high for r in rows)


def test_scaling_sweep_reports_bytes_and_times():
    results = ch.scaling_sweep([(1, 2, 6, 8)], repeats=1)
    (r,) = results
    assert r["shape"] == (1, 2, 6, 8) and "compiled" not in r
    assert r["mib"] == 2 * 2 * (2 * 6 * 8) * 4 / 2**20
    assert all(r[name] > 0 for name in ("clone", "transformers"))
    (r,) = ch.scaling_sweep([(1, 2, 6, 8)], repeats=1, compiled=ch.rope_qk_kernel)
    assert r["compiled"] > 0


def test_bench_rope_smoke():
    """bookkit/measure/bench_rope.py on a tiny shape: every pair verified, the last
    line's form."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bookkit.measure.bench_rope",
            "--shape",
            "1",
            "2",
            "6",
            "8",
            "--repeats",
            "1",
            "--warmup",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert re.fullmatch(
        r"fastest_fp32=\d+\.\d\d fastest_bf16=\d+\.\d\d "
        r"speedup_vs_transformers=\d+\.\d\d",
        lines[-1],
    ), lines[-1]
    verified = re.search(
        r"verified against transformers before timing: (\d+) of (\d+)", proc.stdout
    )
    assert verified and verified[1] == verified[2] and int(verified[1]) >= 5 * 10
    assert "median of 5 runs (target <= 1.15)" in proc.stdout
    too_few = subprocess.run(
        [sys.executable, "-m", "bookkit.measure.bench_rope", "--runs", "4"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert too_few.returncode == 2 and "at least 5" in too_few.stderr


def test_bench_rope_judges_at_the_median():
    fp32 = [
        row(ch.CLONE, 1.0, ours=False, check="bound"),
        row(ch.TRANSFORMERS, 7.0, ours=False),
        row("complex", 0.9, exact=False),
        row("into", 0.5, out_of_place=False),
        row("slow", 3.0),
        row("fast", 1.4),
    ]
    bf16 = [row("fast", 1.25), row("slow", 1.2), row("complex", 0.3, exact=False)]
    assert bench_rope.fastest_ours(fp32).name == "fast"
    summary = bench_rope.run_summary(fp32, bf16, ch.TRANSFORMERS)
    assert summary == {
        "fastest_fp32": 1.4,
        "fastest_bf16": 1.2,
        "speedup_vs_transformers": 5.0,
    }
    runs = [dict(summary, fastest_fp32=r) for r in (1.0, 1.3, 1.1, 2.0, 1.12)]
    median = bench_rope.median_summary(runs)
    assert median["fastest_fp32"] == 1.12  # one slow or fast run does not decide
    assert bench_rope.summary_line(median) == (
        "fastest_fp32=1.12 fastest_bf16=1.20 speedup_vs_transformers=5.00"
    )
    lines = bench_rope.verdict(median, 5)
    assert [line.split(": ")[-1] for line in lines] == ["met", "met", "met"]
    at_target = {
        "fastest_fp32": 1.16,
        "fastest_bf16": 1.3,
        "speedup_vs_transformers": 4.99,
    }
    assert [v.split(": ")[-1] for v in bench_rope.verdict(at_target, 5)] == [
        "MISSED",
        "met",
        "MISSED",
    ]


def test_the_chapter_holds_no_target():
    """Targets and verdicts live in bookkit/measure/bench_rope.py only."""
    for name in ("TARGETS", "MIN_SPEEDUP", "verdict", "bench_summary"):
        assert not hasattr(ch, name)
    text = (NOTEBOOKS / "11_rope_at_speed.ipynb").read_text()
    assert "MISSED" not in text and "target <=" not in text


# --- the check of Exercise 11.2
# -----------------------------------------------------------


def inplace_reference(x, cos, sin):
    """A correct answer written here: the old first half saved, both halves updated."""
    if x.shape[-1] % 2:
        raise ValueError(f"head_dim must be even, got {x.shape[-1]}")
    h = x.shape[-1] // 2
    old = x[..., :h].clone()
    x[..., :h] = old * cos - x[..., h:] * sin
    x[..., h:] = x[..., h:] * cos + old * sin
    return x


def inplace_in_float64(x, cos, sin):
    """Another correct answer: the rotation computed in float64, rounded once, written
    back half by half (float64 halves: half the elements of x, though as many bytes)."""
    if x.shape[-1] % 2:
        raise ValueError("head_dim must be even")
    h = x.shape[-1] // 2
    c, s = cos.double(), sin.double()
    old = x[..., :h].clone()
    x[..., :h] = (x[..., :h].double() * c - x[..., h:].double() * s).to(x.dtype)
    x[..., h:] = (x[..., h:].double() * c + old.double() * s).to(x.dtype)
    return x


def check_fails(candidate, *needles):
    with pytest.raises(AssertionError) as info:
        ch.check_rope_inplace(candidate)
    message = str(info.value)
    assert "input:" in message and "Exercise 11.2" in message, message
    for needle in needles:
        assert needle in message, message
    return message


def test_check_rope_inplace_passes_correct_answers(capsys):
    for answer in (inplace_reference, inplace_in_float64):
        ch.check_rope_inplace(answer)
        assert capsys.readouterr().out.strip() == "All 10 checks passed."


def test_check_rope_inplace_expected_values_are_transformers_rotation():
    """The literals of the check against transformers on the same inputs and tables,
    within the check's own bound."""
    for shape, expected in ch.INPLACE_EXPECTED.items():
        x = ch.grid_input(shape, torch.float32)
        cos, sin = ch.rope_tables(shape[2], shape[3])
        wide = torch.cat((cos, cos), -1)[None], torch.cat((sin, sin), -1)[None]
        want, _ = apply_rotary_pos_emb(x, x, *wide)
        gap = (
            torch.tensor(expected, dtype=torch.float64).reshape(shape) - want.double()
        ).abs()
        assert bool((gap <= ch.inplace_bound(x)).all())


def test_check_rope_inplace_names_the_mistakes():
    def overwrites_first(x, cos, sin):
        if x.shape[-1] % 2:
            raise ValueError("head_dim must be even")
        h = x.shape[-1] // 2
        x[..., :h] = x[..., :h] * cos - x[..., h:] * sin
        x[..., h:] = x[..., h:] * cos + x[..., :h] * sin
        return x

    def wrong_way(x, cos, sin):
        return inplace_reference(x, cos, -sin)

    def first_sign(x, cos, sin):
        h = x.shape[-1] // 2
        old = x[..., :h].clone()
        x[..., :h] = old * cos + x[..., h:] * sin
        x[..., h:] = x[..., h:] * cos + old * sin
        return x

    def second_sign(x, cos, sin):
        h = x.shape[-1] // 2
        old = x[..., :h].clone()
        x[..., :h] = old * cos - x[..., h:] * sin
        x[..., h:] = x[..., h:] * cos - old * sin
        return x

    def full_copy(x, cos, sin):
        old = x.clone()  # a full-size buffer
        h = x.shape[-1] // 2
        x[..., :h] = old[..., :h] * cos - old[..., h:] * sin
        x[..., h:] = old[..., h:] * cos + old[..., :h] * sin
        return x

    def new_tensor(x, cos, sin):
        return inplace_reference(x.clone(), cos, sin)

    def no_check(x, cos, sin):
        return inplace_reference(x, cos, sin) if x.shape[-1] % 2 == 0 else x

    def library_error(x, cos, sin):
        x1, _ = x.chunk(2, dim=-1)  # D = 7: halves of 4 and 3
        x1 * cos  # torch's own size mismatch, not a ValueError of the candidate
        return inplace_reference(x, cos, sin)

    check_fails(overwrites_first, "looks like the first half was overwritten")
    check_fails(wrong_way, "looks like both signs flipped")
    message = check_fails(
        first_sign, "looks like one sign flipped: the first half", "at [0, 0, 1, 0]"
    )  # position 0 is the identity
    assert "expected: -0.9825 at [0, 0, 1, 0]" not in message
    check_fails(
        second_sign, "looks like one sign flipped: the second half", "at [0, 0, 1, 2]"
    )
    check_fails(
        full_copy,
        "no tensor larger than half of x",
        "a full-size buffer",
        "32 elements (clone)",
    )
    check_fails(new_tensor, "returns x itself", "a new tensor")
    check_fails(no_check, "odd head_dim", "a ValueError", "no error")
    check_fails(library_error, "odd head_dim", "a ValueError", "RuntimeError")

    def float32_copy(x, cos, sin):  # bfloat16: a float32 copy of all of x
        if x.dtype == torch.bfloat16:
            x.copy_(inplace_reference(x.float(), cos.float(), sin.float()))
            return x
        return inplace_reference(x, cos, sin)

    check_fails(float32_copy, "bfloat16, (1, 2, 3, 6): no tensor larger than half")
    with pytest.raises(NotImplementedError):
        ch.check_rope_inplace(
            lambda x, c, s: (_ for _ in ()).throw(NotImplementedError)
        )


# --- the Triton kernel
# ------------------------------------------------------------------


def test_triton_rope_is_none_without_triton(monkeypatch):
    monkeypatch.setattr(ch, "TRITON", False)
    assert ch.triton_rope() is None


def test_triton_rope_in_the_interpreter_matches_transformers():
    """Runs only where Triton is installed (it is not pinned): the interpreter's float32
    products and sums round as transformers' do, within the lemma's bound."""
    pytest.importorskip("triton")
    assert ch.TRITON and os.environ.get("TRITON_INTERPRET") is None  # restored
    rope = ch.triton_rope()
    q, k = random_qk(8, 2, 3, 1, 7, 10)
    (q_hf, _), cos, sin = hf_rope(q, k)
    got = rope(q, cos, sin)
    assert got.shape == q.shape and not torch.equal(got, q)
    assert_within_bound(got, q_hf, q)
    with pytest.raises(ValueError, match="shape"):
        rope(q, cos[:3], sin)


# --- what one pass costs, the compiled kernel's controls, transformers' path ----------


def test_pass_costs_lists_each_operation_with_its_traffic():
    costs = ch.pass_costs((1, 2, 6, 8), torch.float32, repeats=3, warmup=0)
    # traffic counted here, in tensors the size of x read or written once
    assert [(c.name, c.traffic) for c in costs] == [
        ("x.clone()", 2),
        ("x * cos, whole tensors", 2),
        ("x + y, whole tensors", 3),
        ("-x2, x2 a strided half-view", 1),
        ("cat of two halves", 2),
        ("x1 * cos, x1 a strided half-view", 1),
        ("x1 * cos, x1 a contiguous half", 1),
        ("x1 - x2, contiguous halves", 1.5),
    ]
    assert costs[0].used_by == "the bound" and costs[0].ratios == [1.0, 1.0, 1.0]
    assert all(len(c.ratios) == 3 and min(c.ratios) > 0 for c in costs)
    assert ch.pass_costs((1, 1, 4, 4), torch.bfloat16, repeats=1, warmup=0)[
        0
    ].ratios == [1.0]


def test_ratio_text_is_median_and_range():
    assert ch.ratio_text([1.5, 1.0, 3.25]) == "1.50x [1.00-3.25]"


def test_rope_qk_no_tables_by_hand():
    q, k = random_qk(5, 1, 2, 1, 3, 4)
    got_q, got_k = ch.rope_qk_no_tables(q, k)
    for x, got in ((q, got_q), (k, got_k)):
        first, second = x[..., :2], x[..., 2:]
        # the same two products and sum per element, written out: equal bit for bit
        want = torch.cat((first * 0.5 + second * 0.25, second * 0.5 + first * 0.25), -1)
        assert torch.equal(got, want)


def test_compiled_controls_with_an_exact_stand_in():
    q, k = random_qk(6, 1, 2, 2, 5, 8)
    cos, sin = ch.rope_tables(5, 8)
    ratios, left_out = ch.compiled_controls(
        q,
        k,
        cos,
        sin,
        ch.rope_qk_kernel,
        compiler=lambda f, **options: f,
        repeats=2,
        warmup=0,
    )
    assert not left_out
    assert list(ratios) == [
        ch.CLONE,
        "compiled copy (dynamic shapes)",
        "kernel without tables, this shape only",
        "kernel, this shape only (dynamic=False)",
        "the kernel (dynamic shapes)",
    ]
    assert ratios[ch.CLONE] == [1.0, 1.0] and all(len(r) == 2 for r in ratios.values())


def test_compiled_controls_leave_out_failures_and_wrong_results():
    q, k = random_qk(7, 1, 2, 2, 5, 8)
    cos, sin = ch.rope_tables(5, 8)

    def flaky(function, **options):
        if function is ch.rope_qk_kernel:
            raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found")
        if function is ch.rope_qk_no_tables:
            return function
        return lambda *args: tuple(t + 1 for t in function(*args))  # a wrong copy

    ratios, left_out = ch.compiled_controls(
        q, k, cos, sin, ch.rope_qk_kernel, compiler=flaky, repeats=1, warmup=0
    )
    assert set(left_out) == {
        "compiled copy (dynamic shapes)",
        "kernel, this shape only (dynamic=False)",
    }
    assert left_out["kernel, this shape only (dynamic=False)"].startswith(
        "RuntimeError: InvalidCxxCompiler"
    )
    assert "differs" in left_out["compiled copy (dynamic shapes)"]
    assert set(ratios) == {
        ch.CLONE,
        "kernel without tables, this shape only",
        "the kernel (dynamic shapes)",
    }


def test_transformers_rope_path_names_the_python_body(monkeypatch):
    assert "its own Python body" in ch.transformers_rope_path()

    class Wrapped:
        def __call__(self, *args):
            return args

    monkeypatch.setattr(ch, "apply_rotary_pos_emb", Wrapped())
    assert "a Wrapped object" in ch.transformers_rope_path()


def test_pass_costs_runs_on_the_threads_asked_and_restores_them(monkeypatch):
    seen = []
    timer = ch.time_calls

    def watching(calls, repeats, warmup):
        seen.append(torch.get_num_threads())
        return timer(calls, repeats, warmup)

    monkeypatch.setattr(ch, "time_calls", watching)
    before = torch.get_num_threads()
    ch.pass_costs((1, 1, 4, 4), repeats=1, warmup=0, threads=1)
    assert seen == [1] and torch.get_num_threads() == before
    with pytest.raises(ValueError, match="threads"):
        ch.pass_costs((1, 1, 4, 4), threads=0)


# ------------------------------------------------------ exercise checks


def rope_in_place(x, cos, sin):
    """Exercise 11.2 written here: save the first half, then update both halves."""
    if x.shape[-1] % 2:
        raise ValueError(f"head_dim must be even, got {x.shape[-1]}")
    x1, x2 = x.chunk(2, dim=-1)
    saved = x1.clone()
    x1.mul_(cos).sub_(x2 * sin)
    x2.mul_(cos).add_(saved * sin)
    return x


def test_ex_11_2_literals_are_the_rotation_in_float64() -> None:
    """The check's expected values against the rotation computed here in float64 from
    the exact angles m * 10000 ** (-2i/d), on the check's own inputs."""
    for shape, expected in ch.INPLACE_EXPECTED.items():
        x = ch.grid_input(shape, torch.float64)
        d = shape[-1]
        angles = torch.arange(shape[2], dtype=torch.float64)[:, None] * 10000.0 ** (
            -torch.arange(0, d, 2, dtype=torch.float64) / d
        )
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        c, s = angles.cos(), angles.sin()
        want = torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), -1)
        got = torch.tensor(expected, dtype=torch.float64).reshape(shape)
        assert torch.allclose(got, want, rtol=0, atol=1e-11)


def test_ex_11_2_right_answers_pass_and_the_named_mistakes_fail(capsys) -> None:
    passes(ch.check_rope_inplace, rope_in_place, 10, capsys)
    check = ch.check_rope_inplace

    def full_buffer(x, cos, sin):  # right values, but a full-size copy of x
        if x.shape[-1] % 2:
            raise ValueError("head_dim must be even")
        old = x.clone()
        h = x.shape[-1] // 2
        x[..., :h] = old[..., :h] * cos - old[..., h:] * sin
        x[..., h:] = old[..., h:] * cos + old[..., :h] * sin
        return x

    fails(check, full_buffer, "no tensor larger than half of x", "a full-size buffer")

    def second_sign(x, cos, sin):  # one flipped sign: the second half subtracts
        h = x.shape[-1] // 2
        saved = x[..., :h].clone()
        x[..., :h] = saved * cos - x[..., h:] * sin
        x[..., h:] = x[..., h:] * cos - saved * sin
        return x

    message = fails(
        check,
        second_sign,
        "Exercise 11.2",
        "looks like one sign flipped",
        "the second half",
    )
    # position 0 is the identity: the first difference shown is at position 1
    assert re.search(r"at \[0, 0, [1-9]", message), message
