"""Chapter 6's functions, taken from the notebook: four RoPE implementations, the
permutation between the interleaved and split-halves layouts, agreement with
transformers in float32 and bfloat16, the RoPE attention layer with its caches, and the
exercise checks."""

from __future__ import annotations

import io
import math
from contextlib import redirect_stdout

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import LlamaConfig

from bookkit.testing import assert_holds_values, fails, load_chapter, passes

ch = load_chapter("06_rope_in_code")
# Timing limits would make these tests fail on a busy machine, not on a bug.

SEEDS = st.integers(0, 2**31 - 1)
# Derived in the chapter (3.04 u of bfloat16 rounding plus the float32 angle error),
# written here rather than read from the module under test.
BF16_RELATIVE_TOLERANCE = 2**-6
U32, U64 = 2.0**-24, 2.0**-53
# Two float32 programs rotating by the same angles with cos and sin each within 2 ulp
# (4u) of exact: their cosines differ by at most 8u (book/checking.md).
FLOAT32_COS_SIN_GAP = 8 * U32
# (batch, heads, tokens, head_dim) with an even head_dim up to 128
SHAPES = st.tuples(
    st.integers(1, 3),
    st.integers(1, 4),
    st.integers(1, 8),
    st.integers(1, 64).map(lambda h: 2 * h),
)
INTERLEAVED = {
    "dense": ch.apply_rope_dense,
    "interleaved": ch.apply_rope_interleaved,
    "complex": ch.apply_rope_complex,
}
ALL_LAYOUTS = [(rope, "interleaved") for rope in INTERLEAVED.values()] + [
    (ch.apply_rope_halves, "halves")
]


def random_input(
    seed: int,
    shape: tuple[int, ...],
    max_position: int,
    dtype=torch.float64,
    shared_positions: bool = False,
):
    """x of the given shape and integer position_ids (B, T), or (1, T) when shared."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=generator, dtype=torch.float64).to(dtype)
    rows = 1 if shared_positions else shape[0]
    position_ids = torch.randint(0, max_position, (rows, shape[2]), generator=generator)
    return x, position_ids


def to_halves(rope, layout: str):
    """An implementation seen in the split-halves layout: permute in, rotate, permute
    out."""
    if layout == "halves":
        return rope

    def permuted(x, position_ids, base=10000.0):
        perm = ch.interleaved_to_halves_perm(x.shape[-1])
        return rope(x[..., torch.argsort(perm)], position_ids, base)[..., perm]

    return permuted


@settings(max_examples=30, deadline=None)
@given(
    shape=SHAPES,
    seed=SEEDS,
    max_position=st.sampled_from([1, 50, 8192]),
    shared=st.booleans(),
    base=st.sampled_from([10000.0, 500000.0, 100.0]),
)
def test_four_implementations_agree(shape, seed, max_position, shared, base) -> None:
    """float64: angles within angle_error_bound on each side, cos and sin within 2 ulp,
    so the lemma of the chapter bounds every gap (rounding, not a tuned tolerance)."""
    x, position_ids = random_input(seed, shape, max_position, shared_positions=shared)
    reference = ch.apply_rope_dense(x, position_ids, base)
    eta = (
        2 * ch.angle_error_bound(position_ids, shape[-1], base, torch.float64) + 8 * U64
    )
    bound = ch.rotation_gap_bound(x, "interleaved", eta[:, None])
    for name in ("interleaved", "complex"):
        ch.assert_within(
            INTERLEAVED[name](x, position_ids, base), reference, bound, name
        )
    perm = ch.interleaved_to_halves_perm(shape[-1])
    halves = ch.apply_rope_halves(x[..., perm], position_ids, base)
    ch.assert_within(halves, reference[..., perm], bound[..., perm], "halves")


@settings(max_examples=30, deadline=None)
@given(
    d=st.integers(1, 32).map(lambda h: 2 * h),
    seed=SEEDS,
    m=st.integers(0, 5000),
    n=st.integers(0, 5000),
    shift=st.integers(-3000, 3000),
)
def test_scores_depend_only_on_the_offset(d, seed, m, n, shift) -> None:
    """(R_m q)^T (R_n k) = q^T R_(n-m) k, so shifting both positions changes nothing."""
    generator = torch.Generator().manual_seed(seed)
    q, k = (
        torch.randn(1, 1, 1, d, generator=generator, dtype=torch.float64)
        for _ in range(2)
    )
    R = torch.from_numpy(ch.rope_matrix(n - m, d))
    back = torch.argsort(
        ch.interleaved_to_halves_perm(d)
    )  # split halves -> interleaved
    for rope, layout in ALL_LAYOUTS:
        qi, ki = (
            (q.flatten(), k.flatten())
            if layout == "interleaved"
            else (q.flatten()[back], k.flatten()[back])
        )
        expected = (qi @ R @ ki).item()
        for mm, nn_ in ((m, n), (m + shift, n + shift)):
            score = (
                (rope(q, torch.tensor([[mm]])) * rope(k, torch.tensor([[nn_]])))
                .sum()
                .item()
            )
            assert abs(score - expected) <= 1e-9 * max(1.0, abs(expected)), (
                rope.__name__,
                mm,
                nn_,
            )


@settings(max_examples=30, deadline=None)
@given(shape=SHAPES, seed=SEEDS, max_position=st.sampled_from([10, 100000]))
def test_rotation_preserves_norms(shape, seed, max_position) -> None:
    x, position_ids = random_input(seed, shape, max_position)
    for rope, _ in ALL_LAYOUTS:
        assert torch.allclose(
            rope(x, position_ids).norm(dim=-1), x.norm(dim=-1), rtol=1e-12
        ), rope.__name__


@settings(max_examples=30, deadline=None)
@given(shape=SHAPES, seed=SEEDS, n_heads=st.integers(1, 4), d_in=st.integers(1, 16))
def test_layout_permutation_round_trips(shape, seed, n_heads, d_in) -> None:
    x, position_ids = random_input(seed, shape, 8192, dtype=torch.float32)
    d = shape[-1]
    perm = ch.interleaved_to_halves_perm(d)
    assert sorted(perm.tolist()) == list(range(d))
    assert torch.equal(x[..., perm][..., torch.argsort(perm)], x)
    # bit for bit: interleaved RoPE, permuted == split-halves RoPE of the permuted input
    assert torch.equal(
        ch.apply_rope_interleaved(x, position_ids)[..., perm],
        ch.apply_rope_halves(x[..., perm], position_ids),
    )
    # weights: per-head permutation, its inverse, and the reshape/transpose of
    # conversion scripts
    W = torch.randn(n_heads * d, d_in, generator=torch.Generator().manual_seed(seed))
    to_halves_rows = ch.permute_head_rows(W, n_heads, perm)
    assert torch.equal(
        ch.permute_head_rows(to_halves_rows, n_heads, torch.argsort(perm)), W
    )
    script = W.view(n_heads, d // 2, 2, d_in).transpose(1, 2).reshape(n_heads * d, d_in)
    assert torch.equal(to_halves_rows, script)
    bias = torch.arange(n_heads * d, dtype=torch.float32)
    assert torch.equal(
        ch.permute_head_rows(bias, n_heads, perm),
        ch.permute_head_rows(bias[:, None], n_heads, perm)[:, 0],
    )


@settings(max_examples=25, deadline=None)
@given(
    shape=SHAPES,
    seed=SEEDS,
    max_position=st.sampled_from([1, 100, 8192]),
    shared=st.booleans(),
    offset=st.integers(0, 4000),
)
def test_matches_transformers_in_float32(
    shape, seed, max_position, shared, offset
) -> None:
    x, position_ids = random_input(
        seed, shape, max_position, dtype=torch.float32, shared_positions=shared
    )
    position_ids = position_ids + offset  # a KV-cache offset
    reference = ch.transformers_rope(x, position_ids)
    # the same float32 angles; cos and sin computed on tensors of other shapes (8u
    # apart)
    bound = ch.rotation_gap_bound(x, "halves", FLOAT32_COS_SIN_GAP)
    for rope, layout in ALL_LAYOUTS[1:]:  # the dense reference uses float64 angles
        ch.assert_within(
            to_halves(rope, layout)(x, position_ids), reference, bound, rope.__name__
        )


@settings(max_examples=25, deadline=None)
@given(shape=SHAPES, seed=SEEDS, max_position=st.sampled_from([1, 100, 4096]))
def test_bfloat16_within_the_derived_tolerance(shape, seed, max_position) -> None:
    """Each output is within 2**-6 times its pair's norm of the exact (float64) rotation
    of the bfloat16 input; see the chapter's derivation (3.04 u + the float32 angle
    error < 2**-6)."""
    x16, position_ids = random_input(seed, shape, max_position, dtype=torch.bfloat16)
    x64 = x16.double()
    exact_halves = ch.apply_rope_halves(x64, position_ids)
    for rope, layout in ALL_LAYOUTS:
        exact = (
            exact_halves
            if layout == "halves"
            else ch.apply_rope_dense(x64, position_ids)
        )
        out = rope(x16, position_ids)
        assert out.dtype == torch.bfloat16
        error = (out.double() - exact).abs()
        assert (
            error <= BF16_RELATIVE_TOLERANCE * ch.pair_norms(x64, layout) + 1e-30
        ).all(), rope.__name__
    reference = ch.transformers_rope(x16, position_ids)
    assert (
        (reference.double() - exact_halves).abs()
        <= BF16_RELATIVE_TOLERANCE * ch.pair_norms(x64, "halves") + 1e-30
    ).all()


@settings(max_examples=25, deadline=None)
@given(
    seed=SEEDS,
    lengths=st.lists(st.integers(1, 7), min_size=1, max_size=4),
    heads=st.integers(1, 3),
    d=st.sampled_from([2, 8, 64]),
)
def test_left_padding_positions_from_the_mask(seed, lengths, heads, d) -> None:
    T = max(lengths)
    mask = torch.tensor([[0] * (T - n) + [1] * n for n in lengths])
    position_ids = ch.position_ids_from_mask(mask)
    x = torch.randn(
        len(lengths), heads, T, d, generator=torch.Generator().manual_seed(seed)
    )
    rotated = ch.apply_rope_halves(x, position_ids)
    bound = ch.rotation_gap_bound(x, "halves", FLOAT32_COS_SIN_GAP)  # same angles
    ch.assert_within(
        rotated, ch.transformers_rope(x, position_ids), bound, "transformers"
    )
    for row, n in enumerate(lengths):
        assert position_ids[row, T - n :].tolist() == list(range(n))
        assert (position_ids[row, : T - n] == 0).all()
        alone = ch.apply_rope_halves(
            x[row : row + 1, :, T - n :], torch.arange(n)[None]
        )
        ch.assert_within(
            rotated[row : row + 1, :, T - n :],
            alone,
            bound[row : row + 1, :, T - n :],
            "padded row vs alone",
        )


@settings(max_examples=15, deadline=None)
@given(
    seed=SEEDS,
    factor=st.sampled_from([0.25, 0.5, 0.75, 1.0]),
    heads=st.integers(1, 3),
    T=st.integers(1, 6),
    max_position=st.sampled_from([10, 4096]),
)
def test_partial_rotary_matches_gpt_neox(seed, factor, heads, T, max_position) -> None:
    x, position_ids = random_input(
        seed, (2, heads, T, 32), max_position, dtype=torch.float32
    )
    ours = ch.apply_rope_partial(x, position_ids, 10000.0, factor)
    theirs = ch.transformers_neox_rope(x, position_ids, 10000.0, factor)
    rotated = int(32 * factor)
    bound = ch.rotation_gap_bound(x[..., :rotated], "halves", FLOAT32_COS_SIN_GAP)
    ch.assert_within(ours[..., :rotated], theirs[..., :rotated], bound, "rotated part")
    assert torch.equal(ours[..., rotated:], x[..., rotated:])  # copied, bit for bit
    assert torch.equal(theirs[..., rotated:], x[..., rotated:])


@settings(max_examples=15, deadline=None)
@given(
    seed=SEEDS,
    prompt=st.integers(1, 6),
    total=st.integers(7, 12),
    heads=st.sampled_from([1, 2, 4]),
    factor=st.sampled_from([0.5, 1.0]),
)
def test_incremental_decoding_matches_a_full_pass(
    seed, prompt, total, heads, factor
) -> None:
    """Mathematics, so float64: a wrong position or a missing key moves outputs by
    O(0.1), rounding by < 1e-14."""
    layer = ch.RopeSelfAttention(
        d_model=16, n_heads=heads, partial_rotary_factor=factor, seed=seed % 1000
    ).double()
    x = torch.randn(
        2, total, 16, generator=torch.Generator().manual_seed(seed), dtype=torch.float64
    )
    with torch.no_grad():
        full = layer(x)
        cache = ch.KVCache()
        parts = [layer(x[:, :prompt], cache=cache)]
        parts += [layer(x[:, t : t + 1], cache=cache) for t in range(prompt, total)]
    assert cache.length == total
    assert torch.allclose(torch.cat(parts, dim=1), full, rtol=0, atol=1e-10)


@settings(max_examples=15, deadline=None)
@given(seed=SEEDS, shift=st.integers(1, 4000), T=st.integers(1, 8))
def test_layer_scores_are_shift_invariant(seed, shift, T) -> None:
    """The cached rotation, shifted, changes a score q.k only by the cache's rounding:
    each rotated coordinate is within e = rotation_gap_bound (eta = u + 1e-10: a float64
    cosine rounded once) of the exact rotation, so a score moves by at most 2 sum_i (e_q
    P_k + P_q e_k + e_q e_k), P >= |a| + |b| bounding the exact coordinate."""
    layer = ch.RopeSelfAttention(
        d_model=32, n_heads=4, max_positions=4096 + 8, causal=False, seed=seed % 1000
    )
    x = torch.randn(1, T, 32, generator=torch.Generator().manual_seed(seed))
    positions = torch.arange(T)[None]
    with torch.no_grad():
        q = layer.split_heads(
            layer.q_proj(x)
        )  # projected once: only the rotation varies
        k = layer.split_heads(layer.k_proj(x))
        scores = [
            (
                layer.rotate(q, p).double()
                @ layer.rotate(k, p).double().transpose(-2, -1)
            )
            for p in (positions, positions + shift)
        ]
    e_q = ch.rotation_gap_bound(q, "halves", U32 + 1e-10)
    e_k = ch.rotation_gap_bound(k, "halves", U32 + 1e-10)
    P_q = 2**0.5 * ch.pair_norms(q.double(), "halves")
    P_k = 2**0.5 * ch.pair_norms(k.double(), "halves")
    bound = 2 * (
        e_q @ P_k.transpose(-2, -1)
        + P_q @ e_k.transpose(-2, -1)
        + e_q @ e_k.transpose(-2, -1)
    ) + 1e-12 * (P_q @ P_k.transpose(-2, -1))
    ch.assert_within(scores[1], scores[0], bound, "shifted scores")


def test_identical_tokens_differ_only_with_positions() -> None:
    embedding = torch.randn(30522, 32, generator=torch.Generator().manual_seed(0))
    ids = torch.tensor([[101, 1996, 3899, 13303, 2178, 3899, 102]])
    layer = ch.RopeSelfAttention(
        d_model=32, n_heads=4, causal=False
    ).double()  # mathematics
    with torch.no_grad():
        still = layer(embedding[ids].double(), position_ids=torch.zeros_like(ids))
        moving = layer(embedding[ids].double())
    assert torch.allclose(
        still[0, 2], still[0, 5], rtol=0, atol=1e-12
    )  # rounding: < 1e-14
    assert (moving[0, 2] - moving[0, 5]).abs().max() > 1e-2  # an effect of order 0.1


def test_tiny_llama_conversion() -> None:
    torch.manual_seed(3)
    config = ch.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        initializer_range=0.1,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
    )
    model = ch.LlamaForCausalLM(config).eval()
    ids = torch.randint(0, 64, (2, 12), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        reference = model(ids).logits
        converted = ch.with_interleaved_attention(model, convert=True)(ids).logits
        copied = ch.with_interleaved_attention(model, convert=False)(ids).logits
    # effects: float32 rounding moves these logits by ~1e-6, copied weights by ~1
    assert (converted - reference).abs().max() <= 1e-3
    assert (copied - reference)[
        :, 0
    ].abs().max() <= 1e-3  # offset 0 only: exact in theory
    assert (copied - reference).abs().max() > 0.1


def test_cache_is_correctly_rounded() -> None:
    cos, sin = ch.rope_cache(8192, 64)
    exact = ch.rope_angles(torch.arange(8192)[None], 64, dtype=torch.float64)[0]
    assert cos.dtype == sin.dtype == torch.float32
    # rounded once from float64 (u |cos| <= u); two float64 angle computations differ by
    # less than 1e-11 rad below position 8192
    assert (cos.double() - exact.cos()).abs().max() <= U32 + 1e-10
    assert (sin.double() - exact.sin()).abs().max() <= U32 + 1e-10


X = torch.zeros(1, 2, 3, 8)
POS = torch.zeros(1, 3, dtype=torch.long)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda rope: rope(torch.zeros(1, 2, 3, 7), POS), "head_dim .* must be even"),
        (
            lambda rope: rope(torch.zeros(2, 3, 8), POS),
            "shape \\(batch, heads, seq_len, head_dim\\)",
        ),
        (
            lambda rope: rope(torch.zeros(1, 2, 3, 8, dtype=torch.long), POS),
            "floating-point",
        ),
        (
            lambda rope: rope(X, torch.zeros(1, 4, dtype=torch.long)),
            "position_ids must have shape",
        ),
        (
            lambda rope: rope(X, torch.zeros(2, 3, dtype=torch.long)),
            "position_ids must have shape",
        ),
        (
            lambda rope: rope(X, torch.zeros(3, dtype=torch.long)),
            "position_ids must have shape",
        ),
        (lambda rope: rope(X, [[0, 1, 2]]), "position_ids must be a tensor"),
        (
            lambda rope: rope(X, torch.zeros(1, 3, dtype=torch.bool)),
            "integer or real positions",
        ),
        (lambda rope: rope(X, POS, 0.0), "base must be a finite positive"),
        (lambda rope: rope(X, POS, float("inf")), "base must be a finite positive"),
    ],
)
@pytest.mark.parametrize(
    "rope",
    [
        ch.apply_rope_dense,
        ch.apply_rope_interleaved,
        ch.apply_rope_complex,
        ch.apply_rope_halves,
        ch.transformers_rope,
        ch.apply_rope_partial,
        ch.transformers_neox_rope,
    ],
)
def test_bad_rope_inputs_raise(rope, call, message) -> None:
    with pytest.raises(ValueError, match=message):
        call(rope)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: ch.interleaved_to_halves_perm(7), "positive even head dimension"),
        (lambda: ch.interleaved_to_halves_perm(0), "positive even head dimension"),
        (
            lambda: ch.permute_head_rows(
                torch.zeros(30, 4), 4, ch.interleaved_to_halves_perm(8)
            ),
            "n_heads \\* head_dim",
        ),
        (lambda: ch.position_ids_from_mask(torch.tensor([[0, 2, 1]])), "0s and 1s"),
        (lambda: ch.position_ids_from_mask(torch.tensor([1, 1])), "0s and 1s"),
        (
            lambda: ch.apply_rope_partial(X, POS, 10000.0, 0.1),
            "even number of rotated coordinates",
        ),
        (
            lambda: ch.apply_rope_partial(X, POS, 10000.0, 1.5),
            "even number of rotated coordinates",
        ),
        (lambda: ch.rope_cache(0, 8), "max_positions must be a positive integer"),
        (lambda: ch.rope_cache(16, 5), "d must be a positive even integer"),
        (lambda: ch.RopeSelfAttention(d_model=30, n_heads=4), "multiple of n_heads"),
        (
            lambda: ch.RopeSelfAttention(
                d_model=24, n_heads=4, partial_rotary_factor=0.5
            ),
            "even number of rotated",
        ),
        (
            lambda: ch.RopeSelfAttention(d_model=16, n_heads=2)(torch.zeros(1, 3, 12)),
            "x must have shape",
        ),
        (
            lambda: ch.RopeSelfAttention(d_model=16, n_heads=2, max_positions=8)(
                torch.zeros(1, 3, 16), torch.tensor([[6, 7, 8]])
            ),
            "positions must lie in 0..7",
        ),
        (
            lambda: ch.RopeSelfAttention(d_model=16, n_heads=2)(
                torch.zeros(1, 3, 16), torch.zeros(1, 3)
            ),
            "integer positions",
        ),
        (
            lambda: ch.RopeSelfAttention(d_model=16, n_heads=2)(
                torch.zeros(2, 3, 16), torch.zeros(3, 3, dtype=torch.long)
            ),
            "position_ids must have shape",
        ),
        (
            lambda: ch.InterleavedLlamaAttention(
                32, n_heads=4, n_kv_heads=3, head_dim=8, base=1e4
            ),
            "multiple of n_kv_heads",
        ),
    ],
)
def test_bad_inputs_raise(call, message) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def reference_convert_qk_weight(W, n_heads, head_dim, to):
    if to not in ("halves", "interleaved"):
        raise ValueError("to must be 'halves' or 'interleaved'")
    perm = ch.interleaved_to_halves_perm(head_dim)
    return ch.permute_head_rows(
        W, n_heads, perm if to == "halves" else torch.argsort(perm)
    )


def reference_rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def run_check(check, candidate) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        check(candidate)
    return out.getvalue()


def test_checks_accept_correct_solutions() -> None:
    assert "All 8 checks passed." in run_check(
        ch.check_convert_qk_weight, reference_convert_qk_weight
    )
    assert "All 4 checks passed." in run_check(
        ch.check_rotate_half, reference_rotate_half
    )


def test_checks_reject_wrong_solutions_with_the_failing_case() -> None:
    def forgets_the_inverse(W, n_heads, head_dim, to):
        return reference_convert_qk_weight(W, n_heads, head_dim, "halves")

    def whole_matrix_not_per_head(W, n_heads, head_dim, to):
        if (
            to not in ("halves", "interleaved")
            or W.shape[0] != n_heads * head_dim
            or head_dim % 2
        ):
            raise ValueError("bad input")
        return reference_convert_qk_weight(W, 1, n_heads * head_dim, to)

    with pytest.raises(AssertionError, match="q_proj to interleaved"):
        run_check(ch.check_convert_qk_weight, forgets_the_inverse)
    with pytest.raises(AssertionError, match="q_proj to halves"):
        run_check(ch.check_convert_qk_weight, whole_matrix_not_per_head)
    with pytest.raises(AssertionError, match=r"\(1, 2, 3, 4\)"):
        run_check(
            ch.check_rotate_half,
            lambda x: torch.cat((x.chunk(2, -1)[1], -x.chunk(2, -1)[0]), -1),
        )


# --- Hand-computed cases, defaults hard-coded, and an independent attention layer
# -------------


from transformers.models.llama.modeling_llama import (  # noqa: E402
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)


def hf_cos_sin(
    x: torch.Tensor, position_ids: torch.Tensor, d: int, base: float = 10000.0
):
    """cos and sin straight from transformers' LlamaRotaryEmbedding (split halves)."""
    heads = x.shape[1]
    config = LlamaConfig(
        head_dim=d,
        hidden_size=heads * d,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        rope_parameters={"rope_type": "default", "rope_theta": base},
    )
    return LlamaRotaryEmbedding(config)(x, position_ids)


def test_one_plane_by_hand_with_the_default_base() -> None:
    x = torch.tensor([[[[1.0, 0.0, 0.0, 2.0]]]], dtype=torch.float64)  # (1, 1, 1, 4)
    m = 3
    a0, a1 = m * 1.0, m * 10000.0 ** (-2 / 4)
    interleaved = torch.tensor(
        [math.cos(a0), math.sin(a0), -2 * math.sin(a1), 2 * math.cos(a1)],
        dtype=torch.float64,
    )
    position = torch.tensor([[m]])
    for rope in INTERLEAVED.values():
        assert torch.allclose(rope(x, position)[0, 0, 0], interleaved), rope.__name__
    # split halves: pairs (0, 2) and (1, 3)
    halves = torch.tensor(
        [math.cos(a0), -2 * math.sin(a1), math.sin(a0), 2 * math.cos(a1)],
        dtype=torch.float64,
    )
    assert torch.allclose(ch.apply_rope_halves(x, position)[0, 0, 0], halves)
    assert torch.allclose(ch.apply_rope_partial(x, position)[0, 0, 0], halves)
    assert torch.allclose(
        ch.transformers_rope(x.float(), position)[0, 0, 0], halves.float()
    )
    assert torch.allclose(
        ch.transformers_neox_rope(x.float(), position)[0, 0, 0], halves.float()
    )


@settings(max_examples=15, deadline=None)
@given(shape=SHAPES, seed=SEEDS)
def test_defaults_match_transformers_with_base_10000(shape, seed) -> None:
    x, position_ids = random_input(seed, shape, 5000, dtype=torch.float32)
    cos, sin = hf_cos_sin(x, position_ids, shape[-1], 10000.0)
    expected, _ = apply_rotary_pos_emb(x, x, cos, sin)
    bound = ch.rotation_gap_bound(x, "halves", FLOAT32_COS_SIN_GAP)  # the same angles
    ch.assert_within(ch.apply_rope_halves(x, position_ids), expected, bound, "halves")
    ch.assert_within(ch.apply_rope_partial(x, position_ids), expected, bound, "partial")
    perm = ch.interleaved_to_halves_perm(shape[-1])
    back = torch.argsort(perm)
    # the dense reference uses float64 angles: widen eta by the float32 angle error
    dense_eta = ch.angle_error_bound(position_ids, shape[-1])[:, None] + 8 * U32 + 1e-10
    for rope in INTERLEAVED.values():
        got = rope(x[..., back], position_ids)[..., perm]
        eta = dense_eta if rope is ch.apply_rope_dense else FLOAT32_COS_SIN_GAP
        ch.assert_within(
            got, expected, ch.rotation_gap_bound(x, "halves", eta), rope.__name__
        )


def test_rope_angles_and_angle_dtype() -> None:
    positions = torch.tensor([[0, 1, 7]])
    angles = ch.rope_angles(positions, 6)
    assert angles.dtype == torch.float32 and angles.shape == (1, 3, 3)
    expected = torch.tensor(
        [[m / 10000.0 ** (2 * i / 6) for i in range(3)] for m in (0, 1, 7)]
    )
    assert torch.allclose(angles[0], expected)
    assert torch.allclose(
        ch.rope_angles(positions, 4, 100.0, torch.float64)[0, 2],
        torch.tensor([7.0, 0.7], dtype=torch.float64),
    )
    assert ch.angle_dtype(torch.zeros(1, dtype=torch.float64)) == torch.float64
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        assert ch.angle_dtype(torch.zeros(1, dtype=dtype)) == torch.float32


def test_quarter_turns_and_layouts_by_hand() -> None:
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert ch.rotate_pairs(x).tolist() == [-2.0, 1.0, -4.0, 3.0]
    cos, sin = torch.tensor([0.5, 1.0]), torch.tensor([2.0, 0.0])
    # pairs (1, 3) and (2, 4): (a cos - b sin, b cos + a sin)
    assert ch.rotate_halves(x, cos, sin).tolist() == [0.5 - 6.0, 2.0, 1.5 + 2.0, 4.0]
    assert ch.interleaved_to_halves_perm(6).tolist() == [0, 2, 4, 1, 3, 5]
    W = torch.arange(8.0)[:, None].repeat(1, 3)  # 2 heads of head_dim 4
    rows = ch.permute_head_rows(W, 2, torch.tensor([0, 2, 1, 3]))[:, 0].tolist()
    assert rows == [0.0, 2.0, 1.0, 3.0, 4.0, 6.0, 5.0, 7.0]


def test_position_ids_from_masks_by_hand() -> None:
    mask = torch.tensor(
        [[0, 0, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 1, 0, 1]]
    )
    assert ch.position_ids_from_mask(mask).tolist() == [
        [0, 0, 0, 1, 2],
        [0, 1, 2, 0, 0],
        [0, 1, 2, 3, 4],
        [0, 0, 1, 0, 2],
    ]
    assert ch.position_ids_from_mask(mask.bool()).tolist()[0] == [0, 0, 0, 1, 2]


def test_rope_cache_defaults_and_values() -> None:
    cos, sin = ch.rope_cache(5, 4)
    assert cos.shape == sin.shape == (5, 2)
    angles = torch.tensor([[m * 1.0, m * 0.01] for m in range(5)], dtype=torch.float64)
    # float32 rounding of values below 1: at most u = 6e-8
    assert torch.allclose(cos.double(), angles.cos(), rtol=0, atol=1e-7)
    assert torch.allclose(sin.double(), angles.sin(), rtol=0, atol=1e-7)
    cos, sin = ch.rope_cache(3, 4, 100.0)
    assert torch.allclose(
        sin[2].double(),
        torch.tensor([math.sin(2.0), math.sin(0.2)], dtype=torch.float64),
        atol=1e-7,
    )
    assert ch.rope_cache(1, 2)[0].tolist() == [[1.0]]


def test_kv_cache_concatenates_in_order() -> None:
    cache = ch.KVCache()
    assert cache.length == 0
    k1, v1 = torch.zeros(1, 2, 3, 4), torch.ones(1, 2, 3, 4)
    keys, values = cache.append(k1, v1)
    assert cache.length == 3 and torch.equal(keys, k1) and torch.equal(values, v1)
    k2, v2 = torch.full((1, 2, 1, 4), 5.0), torch.full((1, 2, 1, 4), 6.0)
    keys, values = cache.append(k2, v2)
    assert cache.length == 4 and keys.shape == (1, 2, 4, 4)
    assert keys[0, 0, :, 0].tolist() == [0.0, 0.0, 0.0, 5.0]
    assert values[0, 0, :, 0].tolist() == [1.0, 1.0, 1.0, 6.0]


def test_pair_norms_by_hand() -> None:
    x = torch.tensor([3.0, 4.0, 0.0, 1.0])
    assert ch.pair_norms(x, "interleaved").tolist() == [5.0, 5.0, 1.0, 1.0]
    assert ch.pair_norms(x, "halves").tolist() == pytest.approx(
        [3.0, 17**0.5, 3.0, 17**0.5]
    )
    with pytest.raises(ValueError, match="layout"):
        ch.pair_norms(x, "pairs")


def exact_cos_sin(position_ids: torch.Tensor, d: int, base: float = 10000.0):
    """cos and sin of m theta_i in float64, twice along the last axis (transformers'
    layout): shape (B, T, d)."""
    inv_freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = position_ids[..., None].double() * inv_freq
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos(), emb.sin()


def reference_layer(layer, x: torch.Tensor, position_ids: torch.Tensor, causal: bool):
    """The layer's forward pass rebuilt from its weights and transformers'
    apply_rotary_pos_emb, in float64 with exact cos and sin."""
    B, T, d_model = x.shape
    H = layer.n_heads
    head_dim = d_model // H
    r = layer.rotary_dim

    def split(y):
        return y.view(B, T, H, head_dim).transpose(1, 2)

    q, k, v = (
        split(x @ proj.weight.T) for proj in (layer.q_proj, layer.k_proj, layer.v_proj)
    )
    cos, sin = exact_cos_sin(position_ids, r)
    q_r, k_r = apply_rotary_pos_emb(q[..., :r], k[..., :r], cos, sin)
    q, k = torch.cat((q_r, q[..., r:]), -1), torch.cat((k_r, k[..., r:]), -1)
    raw = logits = q @ k.transpose(-2, -1) / head_dim**0.5
    if causal:
        future = torch.arange(T)[None, :] > torch.arange(T)[:, None]
        logits = logits.masked_fill(future, float("-inf"))
    weights = torch.exp(logits - logits.amax(-1, keepdim=True))
    out = (weights / weights.sum(-1, keepdim=True)) @ v
    return out.transpose(1, 2).reshape(B, T, d_model) @ layer.o_proj.weight.T, raw


@pytest.mark.parametrize("factor, causal", [(1.0, True), (0.5, True), (1.0, False)])
def test_rope_attention_layer_against_an_independent_reference(factor, causal) -> None:
    """Mathematics, so float64 throughout, with the layer's cache replaced by exact
    float64 cos and sin: rounding stays below 1e-13, a wrong rotation or mask moves
    outputs by O(0.1)."""
    kwargs = {} if causal else {"causal": False}
    if factor != 1.0:
        kwargs["partial_rotary_factor"] = factor
    layer = ch.RopeSelfAttention(d_model=24, n_heads=2, seed=5, **kwargs).double()
    assert layer.rotary_dim == int(12 * factor)
    all_cos, all_sin = exact_cos_sin(torch.arange(4096)[None], layer.rotary_dim)
    half = layer.rotary_dim // 2
    layer.cos_cached, layer.sin_cached = all_cos[0, :, :half], all_sin[0, :, :half]
    x = torch.randn(
        2, 6, 24, generator=torch.Generator().manual_seed(6), dtype=torch.float64
    )
    positions = torch.tensor([[0, 1, 2, 3, 4, 5], [7, 9, 20, 21, 400, 4095]])
    with torch.no_grad():
        expected, logits = reference_layer(layer, x, positions, causal)
        assert torch.allclose(layer(x, positions), expected, rtol=0, atol=1e-10)
        assert torch.allclose(layer.scores(x, positions), logits, rtol=0, atol=1e-10)
        if factor == 1.0:  # float64 inputs get float64 angles computed on the fly
            assert torch.allclose(
                ch.float32_angle_scores(layer, x, positions), logits, rtol=0, atol=1e-10
            )
        default, _ = reference_layer(
            layer, x, torch.arange(6)[None].expand(2, 6), causal
        )
        assert torch.allclose(layer(x), default, rtol=0, atol=1e-10)  # positions 0..T-1


def test_rope_attention_layer_defaults_and_weight_scale() -> None:
    layer = ch.RopeSelfAttention(d_model=64, n_heads=4)
    assert (
        layer.causal and layer.rotary_dim == 16 and layer.cos_cached.shape == (4096, 8)
    )
    expected_cos = torch.cos(
        torch.arange(4096, dtype=torch.float64)[:, None]
        * 10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)
    )
    # float32 rounding of values below 1 (u = 6e-8) plus float64 angle differences (<
    # 1e-11)
    assert torch.allclose(layer.cos_cached.double(), expected_cos, rtol=0, atol=1e-7)
    std = layer.q_proj.weight.std().item()
    assert abs(std - 64**-0.5) < 0.1 * 64**-0.5  # N(0, 1/d_model) weights, 4096 samples
    again = ch.RopeSelfAttention(d_model=64, n_heads=4)
    assert torch.equal(again.o_proj.weight, layer.o_proj.weight)  # seed 0 by default
    other = ch.RopeSelfAttention(d_model=64, n_heads=4, seed=1)
    assert not torch.equal(other.q_proj.weight, layer.q_proj.weight)


def test_rope_attention_layer_accepts_the_last_cached_position() -> None:
    layer = ch.RopeSelfAttention(d_model=16, n_heads=2, max_positions=8)
    with torch.no_grad():
        layer(torch.zeros(1, 3, 16), torch.tensor([[5, 6, 7]]))
        layer(
            torch.zeros(2, 3, 16), torch.tensor([[0, 1, 2]])
        )  # one row shared by the batch
        with pytest.raises(ValueError, match="positions must lie in 0..7"):
            layer(torch.zeros(1, 3, 16), torch.tensor([[-1, 0, 1]]))


def test_smallest_valid_layers_and_partial_widths() -> None:
    """Boundaries of the validation: one head, and exactly two rotated coordinates."""
    x = torch.randn(1, 3, 8, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        one_head = ch.RopeSelfAttention(d_model=8, n_heads=1)
        assert one_head(x).shape == (1, 3, 8) and one_head.head_dim == 8
        two_rotated = ch.RopeSelfAttention(
            d_model=8, n_heads=2, partial_rotary_factor=0.5
        )
        assert two_rotated.rotary_dim == 2 and two_rotated(x).shape == (1, 3, 8)
    x4 = torch.randn(1, 1, 2, 8, generator=torch.Generator().manual_seed(3))
    positions = torch.tensor([[3, 4]])
    partial = ch.apply_rope_partial(x4, positions, 10000.0, 0.25)  # rotates 2 of 8
    assert torch.equal(partial, ch.transformers_neox_rope(x4, positions, 10000.0, 0.25))
    assert torch.equal(partial[..., 2:], x4[..., 2:])
    with pytest.raises(ValueError, match="positive multiple"):
        ch.RopeSelfAttention(d_model=8, n_heads=0)


@pytest.mark.parametrize(
    "rope",
    [
        ch.apply_rope_dense,
        ch.apply_rope_interleaved,
        ch.apply_rope_complex,
        ch.apply_rope_halves,
    ],
)
def test_zero_head_dim_is_rejected_and_an_empty_batch_is_not(rope) -> None:
    with pytest.raises(ValueError, match="head_dim .* must be even and positive"):
        rope(torch.zeros(1, 2, 3, 0), POS)
    # reported: apply_rope_dense crashed here (np.stack of no matrices)
    empty = rope(torch.zeros(0, 2, 3, 8), torch.zeros(1, 3, dtype=torch.long))
    assert empty.shape == (0, 2, 3, 8)
    no_tokens = rope(torch.zeros(2, 2, 0, 8), torch.zeros(2, 0, dtype=torch.long))
    assert no_tokens.shape == (2, 2, 0, 8)


@pytest.mark.parametrize("base", [0.5, 1.0, 1e-3])
def test_check_rope_inputs_accepts_every_positive_base(base) -> None:
    x = torch.zeros(1, 1, 3, 4)
    ch.check_rope_inputs(x, torch.arange(3)[None], base)  # positive: no error
    with pytest.raises(ValueError, match="finite positive"):
        ch.check_rope_inputs(x, torch.arange(3)[None], -base)


# --- Rounding bounds of the chapter: by hand, and against float64
# ---------------------------


def test_angle_error_bound_by_hand_and_against_float64() -> None:
    positions = torch.tensor([[0, 1, 4095]])
    bound = ch.angle_error_bound(positions, 4, 100.0)
    assert bound.shape == (1, 3, 2) and bound.dtype == torch.float64
    assert bound[..., 0].tolist() == [[0.0, 0.0, 0.0]]  # b**0 = 1 and m * 1 = m: exact
    n = 0.5 * math.log(100.0) + 6  # t_1 = 2/4
    expected = 4095 * 0.1 * n * U32 / (1 - n * U32)
    assert bound[0, 2, 1].item() == pytest.approx(expected, rel=1e-12)
    assert ch.angle_error_bound(positions, 4, 100.0, torch.float64)[0, 2, 1] < 1e-10
    for d, base in ((128, 10000.0), (64, 500000.0), (16, 2.0)):
        all_positions = torch.arange(0, 8192, 7)[None]
        float32 = ch.rope_angles(all_positions, d, base).double()
        exact = ch.rope_angles(all_positions, d, base, torch.float64)
        slack = ch.angle_error_bound(all_positions, d, base, torch.float64)
        ch.assert_within(
            float32,
            exact,
            ch.angle_error_bound(all_positions, d, base) + slack,
            f"float32 angles, d = {d}, base = {base}",
        )
    # negative positions: the bound uses |m|
    assert ch.angle_error_bound(torch.tensor([-5]), 4).equal(
        ch.angle_error_bound(torch.tensor([5]), 4)
    )


def test_rotation_gap_bound_by_hand() -> None:
    gamma2 = 2 * U32 / (1 - 2 * U32)
    x = torch.tensor([3.0, 0.0, 4.0, 1.0])  # halves: pairs (3, 4) and (0, 1)
    bound = ch.rotation_gap_bound(x, "halves", 0.1)
    per_pair = (0.1 + 2 * gamma2 * 1.1) * math.sqrt(2)
    assert bound.dtype == torch.float64
    assert bound.tolist() == pytest.approx(
        [per_pair * 5, per_pair, per_pair * 5, per_pair], rel=1e-12
    )
    # interleaved: pairs (3, 0) and (4, 1); one eta per pair, spread onto both
    # coordinates
    eta = torch.tensor([0.0, 1.0])
    bound = ch.rotation_gap_bound(x, "interleaved", eta)
    first, second = (
        2 * gamma2 * math.sqrt(2) * 3,
        (1 + 2 * gamma2 * 2) * math.sqrt(2) * 17**0.5,
    )
    assert bound.tolist() == pytest.approx([first, first, second, second], rel=1e-12)
    halves = ch.rotation_gap_bound(
        x, "halves", eta
    )  # halves: eta for pair j on j and j + d/2
    assert halves[0] == halves[2] and halves[1] == halves[3] and halves[1] > halves[0]
    # the unit roundoff of the input's dtype: bfloat16 rounds far more
    assert (
        ch.rotation_gap_bound(x.bfloat16(), "halves", 0.0)
        > 1000 * ch.rotation_gap_bound(x, "halves", 0.0)
    ).all()
    with pytest.raises(ValueError, match="layout"):
        ch.rotation_gap_bound(x, "pairs", 0.1)


@settings(max_examples=20, deadline=None)
@given(shape=SHAPES, seed=SEEDS, max_position=st.sampled_from([10, 8192]))
def test_rotation_gap_bound_holds_against_the_exact_rotation(
    shape, seed, max_position
) -> None:
    """A float32 RoPE against the float64 rotation by the same float32 angles: within
    the lemma's bound with eta = 4u (cos and sin within 2 ulp of the exact ones)."""
    x, position_ids = random_input(seed, shape, max_position, dtype=torch.float32)
    angles = ch.rope_angles(position_ids, shape[-1])[
        :, None
    ].double()  # the float32 angles
    exact = ch.rotate_halves(x.double(), angles.cos(), angles.sin())
    bound = ch.rotation_gap_bound(x, "halves", 4 * U32)
    ch.assert_within(
        ch.apply_rope_halves(x, position_ids), exact, bound, "float32 halves"
    )


def test_rope_code_by_hand_and_the_wish_list_row() -> None:
    code = ch.rope_code(3, 4, 100.0)
    assert code.shape == (3, 4)
    assert code[0].tolist() == [
        1.0,
        0.0,
        1.0,
        0.0,
    ]  # position 0: cos 0, sin 0 per plane
    assert code[2].tolist() == pytest.approx(
        [math.cos(2), math.sin(2), math.cos(0.2), math.sin(0.2)]
    )
    # the code turns a vector as R_m does (Chapter 2's turn_pairs reads it so)
    v = np.arange(1.0, 9.0)
    for m in (0, 5, 700):
        turned = ch.turn_pairs(v, ch.rope_code(m + 1, 8, 50.0))[m]
        assert np.allclose(turned, ch.rope_matrix(m, 8, 50.0) @ v, rtol=0, atol=1e-12)
    # D1 within the rounding of cos and sin: no drift beyond 2 * trig_code_error
    drift = np.abs(ch.rope_code(10, 384) - ch.rope_code(100, 384)[:10]).max()
    assert drift <= 2 * ch.trig_code_error(100)
    # the verdicts of Chapter 2's rules on RoPE's codes (d = 384, 512 training
    # positions)
    m = ch.measure_code(
        lambda T: ch.rope_code(T, 384),
        ch.rope_code(32, 192),
        0,
        1.0,
        entry_error=ch.trig_code_error(1024),
        rotary=True,
    )
    assert ch.score(m) == {
        "D1": True,
        "D2": True,
        "D3": False,
        "D4": True,
        "D5": True,
        "logits": True,
    }
    # D3 on offsets: only planes with wavelengths above 2 * 511 meet new angles; the
    # faster planes stay in range (independent count from the frequencies)
    theta = 10000.0 ** (-np.arange(0, 384, 2) / 384)
    slow = 2 * np.pi / theta > 1022
    assert m["coordinates_out"] <= 2 * slow.sum() and slow.sum() == 85
    seen = np.arange(-511, 512)
    new = np.concatenate([np.arange(-1023, -511), np.arange(512, 1024)])

    def codes(offsets, planes):
        angles = np.outer(offsets, theta[planes])
        return np.concatenate([np.cos(angles), np.sin(angles)], axis=1)

    assert ch.range_excursion(codes(seen, ~slow), codes(new, ~slow)) < 0.01
    assert ch.range_excursion(codes(seen, slow), codes(new, slow)) > 2


# ------------------------------------------------------ exercise checks


def convert(W, n_heads, head_dim, to):
    if head_dim % 2:
        raise ValueError(f"head_dim must be even, got {head_dim}")
    if W.shape[0] != n_heads * head_dim:
        raise ValueError(
            f"W must have n_heads * head_dim rows, got shape {tuple(W.shape)}"
        )
    if to not in ("halves", "interleaved"):
        raise ValueError(f"to must be 'halves' or 'interleaved', got {to!r}")
    order = torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)))
    if to == "interleaved":
        order = torch.argsort(order)
    heads = W.reshape(n_heads, head_dim, -1)
    return heads[:, order].reshape(W.shape)


def test_ex_6_2(capsys) -> None:
    passes(ch.check_convert_qk_weight, convert, 8, capsys)
    check = ch.check_convert_qk_weight
    other = {"halves": "interleaved", "interleaved": "halves"}
    fails(
        check,
        lambda W, h, d, to: convert(W, h, d, other.get(to, to)),
        "direction is swapped",
        "n_heads = 4, head_dim = 8, to = 'halves'",
    )
    fails(check, lambda W, h, d, to: convert(W, 1, h * d, to), "whole matrix")
    # the failure shows the first differing entry, not the expected row order
    message = fails(
        check, lambda W, h, d, to: convert(W, h, d, to) * 0 + 1, "at [0, 0]"
    )
    assert "row order" not in message and "[0, 2, 4, 6" not in message

    def odd_first(W, h, d, to):
        convert(W, h, d, to)
        order = torch.cat((torch.arange(1, d, 2), torch.arange(0, d, 2)))
        return W.reshape(h, d, -1)[:, order].reshape(W.shape)

    fails(check, odd_first, "odd coordinates first")
    fails(check, lambda W, h, d, to: convert(W, h, d, to)[:-1], "shape")

    def library_errors(W, h, d, to):
        return (
            convert(W, h, d, to)
            if d % 2 == 0 and to in other and W.shape[0] == h * d
            else W.reshape(h, d // 2, 2, W.shape[1])
        )

    fails(check, library_errors, "W with 30 rows", "got RuntimeError")

    namespace = dict(vars(ch))
    exec(  # noqa: S102 - a learner's answer that calls the chapter's own helpers
        "def via_helpers(W, n_heads, head_dim, to):\n"
        "    convert(W, n_heads, head_dim, to)\n"
        "    perm = interleaved_to_halves_perm(head_dim)\n"
        "    perm = perm if to == 'halves' else torch.argsort(perm)\n"
        "    return permute_head_rows(W, n_heads, perm)\n",
        namespace,
    )
    namespace["convert"] = convert
    fails(
        check,
        namespace["via_helpers"],
        "reshape and transpose only",
        "permute_head_rows",
    )
    assert namespace["permute_head_rows"] is ch.permute_head_rows, (
        "the spy was not removed"
    )


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def test_ex_6_3(capsys) -> None:
    passes(ch.check_rotate_half, rotate_half, 4, capsys)
    check = ch.check_rotate_half
    fails(check, lambda x: -rotate_half(x), "wrong half", "x = (1, 2, 3, 4)")
    fails(check, lambda x: torch.cat(x.chunk(2, -1)[::-1], -1), "minus sign is missing")
    fails(
        check,
        lambda x: torch.stack((-x[..., 1::2], x[..., 0::2]), -1).flatten(-2),
        "interleaved quarter turn",
    )
    fails(
        check,
        lambda x: rotate_half(x) if x.ndim == 1 else rotate_half(x)[..., :1],
        "shape (2, 3, 5, 8)",
    )


def next_positions(mask, new):
    if mask.ndim != 2:
        raise ValueError(
            f"attention_mask must have shape (batch, seq_len), got {mask.shape}"
        )
    return mask.long().sum(1, keepdim=True) + torch.arange(new)


def test_ex_6_5(capsys) -> None:
    passes(ch.check_next_position_ids, next_positions, 7, capsys)
    check = ch.check_next_position_ids
    # float position ids have the right values but cannot index a cache
    fails(
        check, lambda m, n: next_positions(m, n).float(), "integer positions", "float32"
    )
    fails(
        check,
        lambda m, n: next_positions(m, n).double(),
        "integer positions",
        "float64",
    )
    # the first differing position is shown
    fails(
        check,
        lambda m, n: next_positions(m, n) + (torch.arange(n) > 0),
        "at position 1",
        "the values before this position are right",
    )
    fails(
        check,
        lambda m, n: m.shape[1] + torch.arange(n).expand(m.shape[0], n),
        "padding is counted",
        "attention_mask = [[0, 0, 1, 1, 1]",
    )
    fails(
        check, lambda m, n: torch.arange(n).expand(m.shape[0], n), "cache is forgotten"
    )
    fails(check, lambda m, n: next_positions(m, n) - 1, "(real tokens - 1)")
    fails(check, lambda m, n: next_positions(m, n) + 1, "not (real tokens + 1)")
    fails(
        check,
        lambda m, n: (
            m.sum(-1, keepdim=True) + torch.arange(n) if m.ndim == 2 else m.sum()
        ),
        "a 1-D mask",
        "got no error",
    )


@pytest.mark.parametrize(
    "name, forbidden",
    [
        (
            "check_convert_qk_weight",
            ("permute_head_rows(W", "interleaved_to_halves_perm(8)"),
        ),
        # 6.5: the expected ids and the mistakes' ids are held, none counted from the
        # mask
        (
            "check_next_position_ids",
            (
                "position_ids_from_mask",
                "cumsum",
                ".sum(",
                "real - 1",
                "real + 1",
                "arange(",
            ),
        ),
    ],
)
def test_checks_hold_expected_values(name, forbidden) -> None:
    """The student edition shows each check's source: it must not compute the
    answer."""
    assert_holds_values("06_rope_in_code", name, forbidden)
