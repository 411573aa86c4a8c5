"""The guide "RoPE in one evening": its functions, taken from the notebook's export
cells, against independent references: SciPy's rotations, Python's complex numbers,
Chapter 5's RoPE matrix, and transformers' own rotate-half RoPE and frequencies.

Every comparison computes in float64, except the frequencies, which transformers
computes in float32 (rounding bound stated where it is used, book/checking.md).
"""

from __future__ import annotations

import cmath

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import (
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)

from bookkit.testing import load_chapter

g = load_chapter("rope_in_one_evening")
ch5 = load_chapter("05_deriving_rope")

finite = st.floats(-1e3, 1e3, allow_nan=False)
angles = st.floats(-200.0, 200.0, allow_nan=False)
TOL = 1e-12  # float64: a few roundings of numbers below 1e3 (book/checking.md, rule 3)


@given(finite, finite, angles)
def test_turn_arrow_is_scipys_rotation_about_z(x: float, y: float, phi: float) -> None:
    expected = Rotation.from_euler("z", phi).apply([x, y, 0.0])[:2]
    scale = max(1.0, abs(x), abs(y))
    assert np.allclose(g.turn_arrow(np.array([x, y]), phi), expected, rtol=0,
                       atol=TOL * scale)


@given(finite, finite, angles)
def test_turn_arrow_is_a_complex_multiplication(x: float, y: float, phi: float
                                                ) -> None:
    z = complex(x, y) * cmath.exp(1j * phi)
    scale = max(1.0, abs(x), abs(y))
    got = g.turn_arrow(np.array([x, y]), phi)
    assert abs(got[0] - z.real) <= TOL * scale and abs(got[1] - z.imag) <= TOL * scale


def test_turn_arrow_turns_counterclockwise() -> None:
    # a quarter turn sends the x axis to the y axis (not to -y): an asymmetric input
    assert np.allclose(g.turn_arrow(np.array([1.0, 0.0]), np.pi / 2), [0.0, 1.0],
                       atol=1e-15)
    assert np.allclose(g.turn_arrow(np.array([2.0, 1.0]), np.pi), [-2.0, -1.0],
                       atol=1e-15)


@pytest.mark.parametrize("bad, match", [
    (np.zeros(3), "shape"), (np.zeros((2, 2)), "shape"), (np.zeros(1), "shape")])
def test_turn_arrow_rejects_what_is_not_one_arrow(bad, match) -> None:
    with pytest.raises(ValueError, match=match):
        g.turn_arrow(bad, 0.5)
    with pytest.raises(ValueError, match="finite"):
        g.turn_arrow(np.ones(2), float("nan"))


@pytest.mark.parametrize("d", [2, 8, 64, 128])
@pytest.mark.parametrize("m", [0, 1, -3, 2.5, 4096])
@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_rope_pairs_is_chapter_5s_rope_matrix(d: int, m: float, base: float) -> None:
    x = np.random.default_rng(d).standard_normal((3, d))
    expected = x @ ch5.rope_matrix(m, d, base).T
    assert np.allclose(g.rope_pairs(x, m, base), expected, rtol=0, atol=1e-11)


def test_rope_pairs_at_position_zero_is_the_identity() -> None:
    x = np.random.default_rng(1).standard_normal(16)
    # exact: cos 0 = 1 and sin 0 = 0 in IEEE 754, so x * 1 + swapped * 0 == x
    assert np.array_equal(g.rope_pairs(x, 0), x)


def test_rope_pairs_uses_transformers_frequencies() -> None:
    """Read theta_i back from position 1 (each angle below pi) and compare with
    transformers' inv_freq, computed in float32. For these d the exponents 2i/d are
    dyadic, exact in float32; the power and the division round within one ulp each,
    at most 2u relative apiece (u = 2^-24), hence 4u."""
    for d, base in ((8, 10000.0), (64, 10000.0), (128, 500000.0)):
        pairs = g.rope_pairs(np.tile([1.0, 0.0], d // 2), 1, base)
        theta = np.arctan2(pairs[1::2], pairs[0::2])
        rope = {"rope_type": "default", "rope_theta": base}
        config = LlamaConfig(hidden_size=d, num_attention_heads=1, rope_parameters=rope)
        inv_freq = LlamaRotaryEmbedding(config).inv_freq.double().numpy()
        assert np.all(np.abs(theta - inv_freq) <= 4 * 2.0**-24 * inv_freq + 1e-15)


def test_rope_pairs_matches_transformers_rotate_half_up_to_the_layout() -> None:
    """transformers rotates coordinate i with i + d/2 (split halves); the guide rotates
    2i with 2i + 1. Listing the even coordinates first, then the odd ones, turns one
    into the other (NOTES.md). cos and sin are computed here in float64."""
    d, T = 16, 11
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, T, d))
    perm = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    positions = np.arange(T) + 40  # a KV-cache offset: positions 40..50
    angles = np.concatenate([np.outer(positions, theta)] * 2, axis=-1)[None]
    cos, sin = torch.from_numpy(np.cos(angles)), torch.from_numpy(np.sin(angles))
    halves = torch.from_numpy(x[..., perm])
    hf_q, _ = apply_rotary_pos_emb(halves, halves, cos, sin)
    ours = np.stack([g.rope_pairs(x[0, :, t], positions[t]) for t in range(T)], axis=1)
    assert np.allclose(ours[..., perm], hf_q[0].numpy(), rtol=0, atol=1e-12)


@given(st.integers(-5000, 5000), st.integers(-5000, 5000), st.integers(-5000, 5000))
def test_rope_scores_depend_on_the_offset_only(m: int, n: int, shift: int) -> None:
    rng = np.random.default_rng(abs(m) + 1)
    q, k = rng.standard_normal((2, 32))
    here = g.rope_pairs(q, m) @ g.rope_pairs(k, n)
    there = g.rope_pairs(q, m + shift) @ g.rope_pairs(k, n + shift)
    # float64: angles up to 1e4 rad carry errors of ~1e-12; 32 products of order 1
    assert abs(here - there) < 1e-8


@given(st.integers(1, 64), angles)
def test_rope_pairs_keeps_lengths(half: int, m: float) -> None:
    x = np.random.default_rng(half).standard_normal(2 * half)
    assert abs(np.linalg.norm(g.rope_pairs(x, m)) - np.linalg.norm(x)) < 1e-12 * (
        1 + np.linalg.norm(x))


@pytest.mark.parametrize("x, m, base, match", [
    (np.zeros(7), 1, 10000.0, "even length"),
    (np.zeros(0), 1, 10000.0, "even length"),
    (np.float64(1.0), 1, 10000.0, "even length"),
    (np.zeros(4), float("inf"), 10000.0, "position m"),
    (np.zeros(4), 1, 0.0, "base"),
    (np.zeros(4), 1, -10.0, "base"),
])
def test_rope_pairs_rejects_bad_input(x, m, base, match) -> None:
    with pytest.raises(ValueError, match=match):
        g.rope_pairs(x, m, base)
