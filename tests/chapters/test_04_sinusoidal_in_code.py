"""Tests for Chapter 4, "The sinusoidal encoding in code" (the notebook's export
cells)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bookkit.testing import fails, load_chapter, passes

ch = load_chapter("04_sinusoidal_in_code")
# Timing limits would make these tests fail on a busy machine, not on a bug.

even_d = st.integers(1, 32).map(lambda half: 2 * half)
bases = st.floats(2.0, 1e6)
lengths = st.integers(0, 40)
reals = st.floats(-1000.0, 1000.0)
FAST = settings(max_examples=40, deadline=None)
U64 = 2.0**-53  # unit roundoff of float64


def angle_table_bound(max_angle: float, exponent_terms: float = 0.0) -> float:
    """How far two float64 sinusoidal tables may differ (book/checking.md): per side,
    theta_i from pow within 4 ulp (8u) and the angle product (u), sin and cos within
    4 ulp (8u); exponent_terms adds the relative error of a different exponent."""
    return ((18 + exponent_terms) * max_angle + 16) * U64


# --- the encoding
# -------------------------------------------------------------------------


@FAST
@given(T=lengths, d=even_d, base=bases)
def test_shape_and_dtype(T, d, base):
    pe = ch.sinusoidal_encoding(T, d, base)
    assert pe.shape == (T, d) and pe.dtype == np.float64
    for dtype in (torch.float32, torch.float64):
        pt = ch.sinusoidal_encoding_torch(T, d, base, dtype=dtype)
        assert pt.shape == (T, d) and pt.dtype == dtype


@FAST
@given(T=st.integers(1, 300), d=even_d, base=bases)
def test_numpy_and_torch_agree(T, d, base):
    pe = ch.sinusoidal_encoding(T, d, base)
    pt64 = ch.sinusoidal_encoding_torch(T, d, base, torch.float64).numpy()
    bound = angle_table_bound(T - 1)  # theta_0 = 1: the largest angle is T - 1
    assert np.abs(pt64 - pe).max() <= bound
    pt32 = ch.sinusoidal_encoding_torch(T, d, base).double().numpy()
    assert np.abs(pt32 - pe).max() <= 2.0**-25 + bound  # one rounding to float32


@FAST
@given(T=st.integers(0, 60), d=even_d)
def test_matches_paper_loops_and_tutorial(T, d):
    pe = ch.sinusoidal_encoding(T, d)
    paper = np.array(ch.pe_paper_loops(T, d)).reshape(T, d)
    assert np.abs(paper - pe).max(initial=0.0) <= angle_table_bound(T)
    # the tutorial's exp also rounds ln b, / d and * 2i: 4u ln b more on the exponent
    tutorial_bound = angle_table_bound(T, 5 * np.log(10000.0))
    assert (
        np.abs(ch.pe_pytorch_tutorial(T, d).numpy() - pe).max(initial=0.0)
        <= tutorial_bound
    )


@FAST
@given(T=st.integers(1, 100), d=even_d, base=bases)
def test_position_zero_and_constant_norm(T, d, base):
    pe = ch.sinusoidal_encoding(T, d, base)
    # exact: sin(0) = 0 and cos(0) = 1 are special values IEEE 754 prescribes
    assert np.array_equal(pe[0], np.tile([0.0, 1.0], d // 2))
    # rounding: within (14 + d/4) u relative, below 3e-14 here
    assert np.allclose(np.linalg.norm(pe, axis=1), np.sqrt(d / 2), atol=1e-12)
    ch.check_encoding_basics(pe)  # the chapter's own assertion helper accepts it too


def test_layout_is_sin_then_cos():
    pe = ch.sinusoidal_encoding_at([3.0], 6, 100.0)[0]
    theta = 100.0 ** (-np.array([0, 2, 4]) / 6)
    assert np.allclose(pe[0::2], np.sin(3 * theta)) and np.allclose(
        pe[1::2], np.cos(3 * theta)
    )


@FAST
@given(d=even_d, base=bases)
def test_wavelengths_geometric_and_short_of_2pi_b(d, base):
    lam = ch.wavelengths(d, base)
    assert lam[0] == pytest.approx(2 * np.pi)
    if d > 2:
        assert np.allclose(lam[1:] / lam[:-1], base ** (2 / d), rtol=1e-10)
    assert lam[-1] == pytest.approx(2 * np.pi * base ** ((d - 2) / d), rel=1e-10)
    assert lam[-1] < 2 * np.pi * base


# --- shifts, rotations and the dot product
# -------------------------------------------------


@FAST
@given(p=reals, delta=reals, d=even_d, base=bases)
def test_shift_is_rotation(p, delta, d, base):
    M = ch.shift_matrix(delta, d, base)
    pe_p = ch.sinusoidal_encoding_at([p], d, base)[0]
    pe_shifted = ch.sinusoidal_encoding_at([p + delta], d, base)[0]
    assert np.allclose(M @ pe_p, pe_shifted, atol=1e-9)  # angles below 2000: 1e-12
    # c^2 + s^2 with c and s within 4 ulp: below 30 u from 1
    assert np.allclose(M.T @ M, np.eye(d), atol=1e-12)


@FAST
@given(first=reals, second=reals, d=even_d, base=bases)
def test_shift_matrices_compose(first, second, d, base):
    assert np.allclose(
        ch.shift_matrix(first, d, base) @ ch.shift_matrix(second, d, base),
        ch.shift_matrix(first + second, d, base),
        atol=1e-9,
    )
    # cos and sin of the negated angle: at most 4 ulp each from the mirrored values
    assert np.allclose(
        ch.shift_matrix(-second, d, base),
        ch.shift_matrix(second, d, base).T,
        atol=1e-12,
    )


def test_shift_matrix_blocks_are_transposed_rotations():
    theta = ch.frequencies(8, 50.0)
    M = ch.shift_matrix(1.7, 8, 50.0)
    for i in range(4):
        assert np.allclose(
            M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2], ch.rotation(1.7 * theta[i]).T
        )
    off_block = M.copy()
    for i in range(4):
        off_block[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = 0
    assert not off_block.any()


@FAST
@given(m=reals, n=reals, s=reals, d=even_d, base=bases)
def test_dot_product_depends_on_offset_only_and_is_even(m, n, s, d, base):
    pe = ch.sinusoidal_encoding_at([m, n, m + s, n + s], d, base)
    dot = pe[0] @ pe[1]
    assert dot == pytest.approx(pe[2] @ pe[3], abs=1e-8)
    assert dot == pytest.approx(ch.offset_similarity(m - n, d, base), abs=1e-8)
    # the same angles negated exactly; cosines within 4 ulp: sum of 32 below 1e-13
    assert ch.offset_similarity(m - n, d, base) == pytest.approx(
        ch.offset_similarity(n - m, d, base), abs=1e-12
    )


# --- the four terms of a logit
# --------------------------------------------------------------


@FAST
@given(seed=st.integers(0, 2**32 - 1), d=even_d)
def test_attention_logit_terms_sum_to_logit(seed, d):
    rng = np.random.default_rng(seed)
    x_m, x_n, W_q, W_k = (
        rng.normal(size=d),
        rng.normal(size=d),
        rng.normal(size=(d, d)),
        rng.normal(size=(d, d)),
    )
    p_m, p_n = ch.sinusoidal_encoding_at(rng.uniform(0, 500, size=2), d)
    terms = ch.attention_logit_terms(x_m, x_n, p_m, p_n, W_q, W_k)
    assert list(terms) == [
        "content",
        "content-position",
        "position-content",
        "position",
    ]
    assert all(isinstance(v, float) for v in terms.values())
    logit = (W_q @ (x_m + p_m)) @ (W_k @ (x_n + p_n))
    assert sum(terms.values()) == pytest.approx(logit, rel=1e-10, abs=1e-9)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_logit_grid_matches_loop_and_dependence(seed):
    rng = np.random.default_rng(seed)
    d, T = 8, 12
    W_q, W_k = rng.normal(size=(d, d)), rng.normal(size=(d, d))
    x_q, x_k = rng.normal(size=d), rng.normal(size=d)
    P = ch.sinusoidal_encoding(T, d)
    loop = ch.logit_terms_loop(x_q, x_k, P, W_q, W_k)
    grid = ch.logit_terms_grid(x_q, x_k, P, W_q, W_k)
    for name in ch.TERM_NAMES:
        assert np.allclose(loop[name], grid[name], atol=1e-10)
    assert np.ptp(grid["content"]) == 0  # exact: np.full repeats one number
    assert np.allclose(grid["content-position"], grid["content-position"][:1])
    assert np.allclose(grid["position-content"], grid["position-content"][:, :1])
    identity = ch.logit_terms_grid(x_q, x_k, P, np.eye(d), np.eye(d))["position"]
    assert ch.diagonal_spread(identity) < 1e-9  # float64: rounding near 1e-15


def test_term_shares_sum_to_one():
    rng = np.random.default_rng(1)
    d = 8
    sizes, variations = ch.term_shares(
        rng.normal(size=(5, 2, d)),
        ch.sinusoidal_encoding(10, d),
        rng.normal(size=(d, d)),
        rng.normal(size=(d, d)),
    )
    assert sum(sizes.values()) == pytest.approx(1) and sum(
        variations.values()
    ) == pytest.approx(1)
    assert variations["content"] < 1e-12


# --- diffusion timesteps
# --------------------------------------------------------------------


@FAST
@given(
    t=st.lists(st.floats(0, 2000), min_size=1, max_size=8),
    d=st.integers(2, 32).map(lambda half: 2 * half),
    base=bases,
)
def test_timestep_embedding_is_permuted_pe_with_changed_base(t, d, base):
    te = ch.timestep_embedding(t, d, base)
    assert te.shape == (len(t), d)
    permuted = te[:, ch.concatenated_to_interleaved(d)]
    assert np.allclose(
        permuted, ch.sinusoidal_encoding_at(t, d, base ** (d / (d - 2))), atol=1e-8
    )


# --- bad input
# ------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [3, 0, -4, 2.0, True])
def test_bad_dimension(d):
    with pytest.raises(ValueError, match="d must be a positive even integer"):
        ch.sinusoidal_encoding(4, d)
    with pytest.raises(ValueError, match="d must be a positive even integer"):
        ch.sinusoidal_encoding_torch(4, d)
    with pytest.raises(ValueError, match="d must be a positive even integer"):
        ch.shift_matrix(1, d)


@pytest.mark.parametrize("base", [0.0, -10.0, float("nan"), float("inf")])
def test_bad_base(base):
    with pytest.raises(ValueError, match="base must be a finite positive number"):
        ch.sinusoidal_encoding(4, 8, base)
    with pytest.raises(ValueError, match="base must be a finite positive number"):
        ch.sinusoidal_encoding_torch(4, 8, base)
    with pytest.raises(ValueError, match="base must be a finite positive number"):
        ch.timestep_embedding([1.0], 8, base)


@pytest.mark.parametrize("T", [-1, 2.5, True, "10"])
def test_bad_length(T):
    with pytest.raises(
        ValueError, match="num_positions must be a non-negative integer"
    ):
        ch.sinusoidal_encoding(T, 8)
    with pytest.raises(
        ValueError, match="num_positions must be a non-negative integer"
    ):
        ch.sinusoidal_encoding_torch(T, 8)


def test_other_bad_inputs():
    with pytest.raises(ValueError, match="dtype must be a floating-point torch dtype"):
        ch.sinusoidal_encoding_torch(4, 8, dtype=torch.int64)
    with pytest.raises(ValueError, match="positions must be a 1-D sequence"):
        ch.sinusoidal_encoding_at(np.zeros((2, 2)), 8)
    with pytest.raises(ValueError, match="positions must be finite"):
        ch.sinusoidal_encoding_at([0.0, float("nan")], 8)
    for delta in (float("nan"), float("inf"), "3"):
        with pytest.raises(
            ValueError, match="offset delta must be a finite real number"
        ):
            ch.shift_matrix(delta, 8)
    for d in (2, 5):
        with pytest.raises(ValueError, match=r"d must be an even integer >= 4"):
            ch.timestep_embedding([1.0], d)
    with pytest.raises(ValueError, match="t must be a 1-D sequence of finite numbers"):
        ch.timestep_embedding([float("inf")], 8)
    with pytest.raises(ValueError, match="offsets must be finite"):
        ch.offset_similarity([float("nan")], 8)
    with pytest.raises(ValueError, match="need a square 2-D array"):
        ch.diagonal_spread(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="need P of shape"):
        ch.logit_terms_grid(
            np.zeros(3), np.zeros(4), np.zeros((5, 4)), np.eye(4), np.eye(4)
        )


# --- the interactive figure
# -----------------------------------------------------------------


def _apply(state: dict, step: dict) -> None:
    """Apply a plotly "update" slider step to a figure dict, as plotly.js would."""
    state["visible"] = list(step["args"][0]["visible"])
    for key, value in step["args"][1].items():
        s, j = map(
            int,
            re.fullmatch(
                r"sliders\[(\d)\]\.steps\[(\d+)\]\.args\[0\]\.visible", key
            ).groups(),
        )
        state["layout"]["sliders"][s]["steps"][j]["args"][0]["visible"] = list(value)


def test_interactive_figure_sliders_are_independent_and_small():
    bases, dims = (100.0, 1000.0, 10000.0, 100000.0), (16, 32, 64, 128)
    fig = ch.interactive_base_dimension_figure(bases, dims)
    assert len(fig.to_json()) < 300_000
    layout = fig.to_plotly_json()["layout"]
    state = {"layout": layout, "visible": [bool(t.visible) for t in fig.data]}
    combos = [(d, b) for d in dims for b in bases]

    def shown() -> tuple:
        on = [i for i, v in enumerate(state["visible"]) if v]
        assert len(on) == 1 and len(state["visible"]) == len(combos)
        return combos[on[0]]

    assert shown() == (64, 10000.0)
    for slider, index in [
        (0, 0),
        (1, 3),
        (0, 3),
        (1, 0),
        (0, 1),
        (1, 2),
        (1, 1),
        (0, 2),
    ]:
        _apply(state, layout["sliders"][slider]["steps"][index])
        d, b = shown()
        if slider == 0:
            assert b == bases[index]
        else:
            assert d == dims[index]
    assert shown() == (32, 10000.0)
    with pytest.raises(ValueError, match="must be a"):
        ch.interactive_base_dimension_figure(start=(500.0, 64))


# --- exercise check functions
# ---------------------------------------------------------------


def test_check_functions_reject_wrong_solutions():
    with pytest.raises(AssertionError, match="d = 8, delta = 3"):
        ch.check_shift_encoding(lambda pe, delta, base=10000.0: np.asarray(pe))
    with pytest.raises(AssertionError, match="T = 5, d = 4"):
        ch.check_offset_gram(lambda T, d, base=10000.0: np.eye(T))


# --- Defaults, hand-computed values and each term on its own
# ---------------------------------


def _reference_pe(positions, d, base=10000.0):
    """Vaswani's table written out with the base hard-coded by the caller (default
    10000)."""
    m = np.asarray(positions, dtype=np.float64)[:, None]
    i = np.arange(d // 2)[None, :]
    pe = np.empty((m.shape[0], d))
    pe[:, 0::2] = np.sin(m / base ** (2 * i / d))
    pe[:, 1::2] = np.cos(m / base ** (2 * i / d))
    return pe


def test_defaults_are_base_10000_and_float32():
    T, d = 30, 10
    expected = _reference_pe(np.arange(T), d)
    assert np.allclose(ch.sinusoidal_encoding(T, d), expected, atol=1e-12)
    assert np.allclose(
        ch.sinusoidal_encoding_at([2.5, -7.0], d), _reference_pe([2.5, -7.0], d)
    )
    pt = ch.sinusoidal_encoding_torch(T, d)
    assert pt.dtype == torch.float32
    # one rounding to float32 (2^-25 for values in [-1, 1]) on top of float64 rounding
    assert np.allclose(pt.double().numpy(), expected, atol=2.0**-25 + 1e-12, rtol=0)
    tutorial = ch.pe_pytorch_tutorial(T, d)
    assert tutorial.dtype == torch.float64
    assert np.allclose(tutorial.numpy(), expected, atol=1e-12)
    assert np.allclose(ch.wavelengths(4), [2 * np.pi, 2 * np.pi * 100.0])
    assert np.allclose(
        ch.offset_similarity([0.0, 3.0], d),
        [d / 2, np.cos(3.0 / 10000.0 ** (2 * np.arange(d // 2) / d)).sum()],
    )


def test_pe_paper_loops_hand_computed():
    table = ch.pe_paper_loops(3, 4)
    assert len(table) == 3 and all(len(row) == 4 for row in table)
    assert table[2] == pytest.approx(
        [np.sin(2.0), np.cos(2.0), np.sin(0.02), np.cos(0.02)]
    )
    with pytest.raises(ValueError, match="d_model must be a positive even integer"):
        ch.pe_paper_loops(3, 5)


def test_rotation_hand_computed():
    c, s = np.cos(0.3), np.sin(0.3)
    assert np.allclose(ch.rotation(0.3), [[c, -s], [s, c]])
    assert np.allclose(
        ch.rotation(np.pi / 2) @ [1.0, 0.0], [0.0, 1.0]
    )  # counter-clockwise
    with pytest.raises(ValueError, match="finite"):
        ch.rotation(np.nan)
    with pytest.raises(ValueError, match="one real angle"):
        ch.rotation(np.array([0.1, 0.2]))
    with pytest.raises(ValueError, match="one real angle"):
        ch.rotation(1j)


@pytest.mark.parametrize("delta", [1, 2.5, -4])
def test_shift_matrix_default_base_and_entries(delta):
    d = 6
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    M = ch.shift_matrix(delta, d)
    for i in range(d // 2):
        c, s = np.cos(delta * theta[i]), np.sin(delta * theta[i])
        assert np.allclose(M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2], [[c, s], [-s, c]])
    assert np.allclose(
        M @ _reference_pe([5.0], d)[0], _reference_pe([5.0 + delta], d)[0]
    )


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=even_d)
def test_offset_similarity_is_a_sum_of_cosines(seed, d):
    rng = np.random.default_rng(seed)
    base = float(rng.uniform(2, 1e5))
    delta = rng.uniform(-300, 300, size=(2, 3))
    theta = base ** (-np.arange(0, d, 2) / d)
    expected = np.cos(delta[..., None] * theta).sum(axis=-1)
    assert np.allclose(ch.offset_similarity(delta, d, base), expected)


def test_each_logit_term_on_its_own():
    rng = np.random.default_rng(7)
    d, d_k = 6, 4
    x_m, x_n, p_m, p_n = rng.normal(size=(4, d))
    W_q, W_k = rng.normal(size=(d_k, d)), rng.normal(size=(d_k, d))
    terms = ch.attention_logit_terms(x_m, x_n, p_m, p_n, W_q, W_k)
    assert terms["content"] == pytest.approx((W_q @ x_m) @ (W_k @ x_n))
    assert terms["content-position"] == pytest.approx((W_q @ x_m) @ (W_k @ p_n))
    assert terms["position-content"] == pytest.approx((W_q @ p_m) @ (W_k @ x_n))
    assert terms["position"] == pytest.approx((W_q @ p_m) @ (W_k @ p_n))


def test_logit_terms_grid_entries_against_the_formula():
    rng = np.random.default_rng(8)
    d, d_k, T = 4, 3, 5
    x_q, x_k = rng.normal(size=d), rng.normal(size=d)
    P = rng.normal(size=(T, d))
    W_q, W_k = rng.normal(size=(d_k, d)), rng.normal(size=(d_k, d))
    grid = ch.logit_terms_grid(x_q, x_k, P, W_q, W_k)
    loop = ch.logit_terms_loop(x_q, x_k, P, W_q, W_k)
    for m in range(T):
        for n in range(T):
            expected = {
                "content": (W_q @ x_q) @ (W_k @ x_k),
                "content-position": (W_q @ x_q) @ (W_k @ P[n]),
                "position-content": (W_q @ P[m]) @ (W_k @ x_k),
                "position": (W_q @ P[m]) @ (W_k @ P[n]),
            }
            for name, value in expected.items():
                assert grid[name][m, n] == pytest.approx(value)
                assert loop[name][m, n] == pytest.approx(value)


def test_diagonal_spread_hand_computed():
    A = np.array([[1.0, 2.0, 9.0], [4.0, 1.5, 2.0], [5.0, 4.25, 1.0]])
    # diagonals: main (1, 1.5, 1) -> 0.5; +1 (2, 2) -> 0; -1 (4, 4.25) -> 0.25; corners
    # 0
    assert ch.diagonal_spread(A) == pytest.approx(0.5)
    A[1, 1] = 1.0
    assert ch.diagonal_spread(A) == pytest.approx(0.25)
    assert ch.diagonal_spread(np.ones((1, 1))) == 0.0


def test_term_shares_against_a_reference():
    rng = np.random.default_rng(9)
    d, T = 4, 6
    tokens, P = rng.normal(size=(3, 2, d)), rng.normal(size=(T, d))
    W_q, W_k = rng.normal(size=(d, d)), rng.normal(size=(d, d))
    size, spread = dict.fromkeys(ch.TERM_NAMES, 0.0), dict.fromkeys(ch.TERM_NAMES, 0.0)
    for x_q, x_k in tokens:
        q_x, k_x, Q_p, K_p = W_q @ x_q, W_k @ x_k, P @ W_q.T, P @ W_k.T
        grids = {
            "content": np.full((T, T), q_x @ k_x),
            "content-position": np.tile(K_p @ q_x, (T, 1)),
            "position-content": np.tile((Q_p @ k_x)[:, None], (1, T)),
            "position": Q_p @ K_p.T,
        }
        for name, values in grids.items():
            size[name] += np.mean(np.abs(values))
            spread[name] += np.var(values)
    sizes, variations = ch.term_shares(tokens, P, W_q, W_k)
    for name in ch.TERM_NAMES:
        assert sizes[name] == pytest.approx(size[name] / sum(size.values()))
        assert variations[name] == pytest.approx(spread[name] / sum(spread.values()))


@pytest.mark.parametrize("d", [4, 8, 10])
def test_timestep_embedding_hand_formula_default_base(d):
    t = np.array([0.0, 1.0, 37.5, 999.0])
    half = d // 2
    omega = np.array([10000.0 ** (-j / (half - 1)) for j in range(half)])
    expected = np.hstack([np.sin(t[:, None] * omega), np.cos(t[:, None] * omega)])
    assert np.allclose(ch.timestep_embedding(t, d), expected)
    assert np.allclose(
        ch.timestep_embedding(list(t), d, 50.0)[:, half - 1], np.sin(t / 50.0)
    )  # the last frequency is exactly 1 / base


def test_concatenated_to_interleaved_hand_computed():
    assert ch.concatenated_to_interleaved(6).tolist() == [0, 3, 1, 4, 2, 5]
    assert ch.concatenated_to_interleaved(2).tolist() == [0, 1]


def test_timestep_embedding_accepts_d_4_and_rejects_bad_steps():
    assert ch.timestep_embedding([3.0], 4).shape == (1, 4)
    with pytest.raises(ValueError, match="t must be a 1-D sequence"):
        ch.timestep_embedding(np.ones((2, 2)), 8)
    with pytest.raises(ValueError, match="positions must be a 1-D sequence"):
        ch.sinusoidal_encoding_at(3.0, 8)


def test_check_encoding_basics_rejects_wrong_tables():
    good = _reference_pe(np.arange(5), 6)
    ch.check_encoding_basics(good)
    with pytest.raises(AssertionError, match="PE\\(0\\)"):
        ch.check_encoding_basics(good[:, ::-1])  # cos before sin
    with pytest.raises(AssertionError, match="length"):
        ch.check_encoding_basics(np.vstack([good[:1], 1.01 * good[1:]]))


def test_check_encoding_basics_tolerance_means_what_it_says():
    """Reported bug: atol=1e-12 with numpy's default rtol=1e-5 let norms off by 1e-6
    (relative) through. A table of d = 512 is accepted; one whose rows are longer by a
    factor 1 + 1e-9 (about 1.6e-8 in absolute terms) is not."""
    good = _reference_pe(np.arange(300), 512)
    ch.check_encoding_basics(good)
    for scale in (1 + 1e-6, 1 + 1e-9, 1 - 1e-9):
        with pytest.raises(AssertionError, match="length"):
            ch.check_encoding_basics(np.vstack([good[:1], scale * good[1:]]))


def test_tutorial_loop_rejects_bad_input():
    assert ch.sinusoidal_tutorial_loop(0, 8).shape == (0, 8)
    with pytest.raises(ValueError, match="non-negative integer"):
        ch.sinusoidal_tutorial_loop(-1, 8)
    with pytest.raises(ValueError, match="positive even integer"):
        ch.sinusoidal_tutorial_loop(4, 7)
    with pytest.raises(ValueError, match="base must be"):
        ch.sinusoidal_tutorial_loop(4, 8, 0.0)


# moved from Chapter 3 with the section "Three bugs that look like the formula"
def test_exponent_rules():
    d = 16
    T = 40
    tables = {
        r: ch.sinusoidal_from_exponents(T, ch.exponent_rule(r, d))
        for r in ("correct", "column index", "doubled index", "missing factor 2")
    }
    assert np.allclose(tables["correct"], ch.sinusoidal_encoding(T, d))
    assert np.allclose(tables["doubled index"], ch.sinusoidal_tutorial_loop(T, d))
    assert np.allclose(tables["missing factor 2"], ch.sinusoidal_encoding(T, d, 100.0))
    for r in ("column index", "doubled index"):
        assert ch.diagonal_spread(tables[r] @ tables[r].T) > 1.0
    with pytest.raises(ValueError, match="unknown rule"):
        ch.exponent_rule("typo", d)
    with pytest.raises(ValueError, match="even length"):
        ch.sinusoidal_from_exponents(4, np.zeros(3))
    with pytest.raises(ValueError, match="finite"):
        ch.sinusoidal_from_exponents(4, np.array([0.0, np.nan]))


# --- The moved 'three bugs' helpers: hand-computed rules, arbitrary exponents
# --------------


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    T=st.integers(1, 30),
    half=st.integers(1, 6),
    base=bases,
)
def test_sinusoidal_from_arbitrary_exponents(seed, T, half, base):
    e = np.random.default_rng(seed).uniform(0, 1.5, 2 * half)
    P = ch.sinusoidal_from_exponents(T, e, base)
    m = np.arange(T)
    for j in range(2 * half):
        wave = np.sin if j % 2 == 0 else np.cos
        assert np.allclose(P[:, j], wave(m * base ** (-e[j])))


def test_exponent_rules_hand_computed():
    assert ch.exponent_rule("correct", 4).tolist() == [0.0, 0.0, 0.5, 0.5]
    assert ch.exponent_rule("column index", 4).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert ch.exponent_rule("doubled index", 4).tolist() == [0.0, 0.5, 1.0, 1.5]
    assert ch.exponent_rule("missing factor 2", 4).tolist() == [0.0, 0.0, 0.25, 0.25]
    with pytest.raises(ValueError, match="positive even integer"):
        ch.exponent_rule("correct", 5)


@pytest.mark.parametrize("base", [10000.0, 30.0])
def test_tutorial_loop_reproduces_the_circulating_bug(base):
    T, d = 20, 6
    P = (
        ch.sinusoidal_tutorial_loop(T, d, base)
        if base != 10000.0
        else (ch.sinusoidal_tutorial_loop(T, d))
    )
    for pos in range(T):
        for i in range(
            0, d, 2
        ):  # the bug: exponent 2i/d with i the column, not the pair
            assert P[pos, i] == pytest.approx(np.sin(pos / base ** (2 * i / d)))
            assert P[pos, i + 1] == pytest.approx(
                np.cos(pos / base ** (2 * (i + 1) / d))
            )


@pytest.mark.parametrize("base", [0.0, -2.0, float("inf"), float("nan")])
def test_sinusoidal_from_exponents_rejects_bad_base(base):
    with pytest.raises(ValueError, match="base must be a finite positive number"):
        ch.sinusoidal_from_exponents(4, np.array([0.0, 0.5]), base)


def test_exponents_default_base_is_10000():
    T, d = 20, 8
    e = 2 * (np.arange(d) // 2) / d
    assert np.allclose(
        ch.sinusoidal_from_exponents(T, e), _reference_pe(np.arange(T), d)
    )


# ------------------------------------------------------ exercise checks


def shift(pe, delta, base=10000.0, direction=1.0, exponent=None):
    pe = np.asarray(pe, dtype=float)
    d = pe.shape[-1]
    if d % 2:
        raise ValueError(f"the last dimension must be even, got {d}")
    theta = base ** (-(np.arange(0, d, 2) / d if exponent is None else exponent(d)))
    c, s = np.cos(delta * theta), direction * np.sin(delta * theta)
    out = np.empty_like(pe)
    out[..., 0::2] = c * pe[..., 0::2] + s * pe[..., 1::2]
    out[..., 1::2] = c * pe[..., 1::2] - s * pe[..., 0::2]
    return out


def shift32(pe, delta, base=10000.0):
    """A correct answer computed in float32 with torch."""
    pe = torch.as_tensor(np.asarray(pe), dtype=torch.float32)
    d = pe.shape[-1]
    if d % 2:
        raise ValueError(f"the last dimension must be even, got {d}")
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    c, s = torch.cos(delta * theta), torch.sin(delta * theta)
    out = torch.empty_like(pe)
    out[..., 0::2] = c * pe[..., 0::2] + s * pe[..., 1::2]
    out[..., 1::2] = c * pe[..., 1::2] - s * pe[..., 0::2]
    return out


def test_ex_4_2(capsys) -> None:
    passes(ch.check_shift_encoding, shift, 11, capsys)
    passes(ch.check_shift_encoding, shift32, 11, capsys)
    check = ch.check_shift_encoding
    fails(
        check,
        lambda pe, delta, base=1e4: shift(pe, delta, base, -1.0),
        "wrong way",
        "d = 8, delta = 3",
        "first row",
    )
    fails(
        check,
        lambda pe, delta, base=1e4: shift(
            pe, delta, base, exponent=lambda d: np.arange(d // 2) / d
        ),
        "i/d instead of 2i/d",
    )
    fails(
        check,
        lambda pe, delta, base=1e4: shift(pe, delta),
        "base argument is ignored",
        "base = 100",
    )
    fails(
        check, lambda pe, delta, base=1e4: np.array(pe, dtype=float), "input comes back"
    )

    def in_place(pe, delta, base=1e4):
        pe[...] = shift(pe, delta, base)
        return pe

    fails(check, in_place, "modified in place")

    def no_validation(pe, delta, base=1e4):
        pe = np.asarray(pe, dtype=float)
        return pe if pe.shape[-1] % 2 else shift(pe, delta, base)

    fails(check, no_validation, "odd width 7", "got no error")


def gram(T, d, base=10000.0):
    theta = base ** (-np.arange(0, d, 2) / d)
    delta = np.arange(T)[:, None] - np.arange(T)[None, :]
    return np.cos(delta[..., None] * theta).sum(-1)


def test_ex_4_3(capsys) -> None:
    passes(ch.check_offset_gram, gram, 5, capsys)
    passes(
        ch.check_offset_gram,
        lambda T, d, base=1e4: torch.tensor(
            gram(T, d, base), dtype=torch.float64
        ).float(),  # a float32 answer
        5,
        capsys,
    )
    check = ch.check_offset_gram
    fails(
        check,
        lambda T, d, base=1e4: np.sin(
            (np.arange(T)[:, None] - np.arange(T))[..., None]
            * base ** (-np.arange(0, d, 2) / d)
        ).sum(-1),
        "sum of sines",
        "num_positions = 5, d = 4",
    )
    fails(check, lambda T, d, base=1e4: gram(T, d, base**0.5), "i/d instead of 2i/d")
    fails(check, lambda T, d, base=1e4: 2 * gram(T, d, base), "counted twice")
    fails(
        check,
        lambda T, d, base=1e4: np.cos(
            (np.arange(T)[:, None] - np.arange(T) + 1)[..., None]
            * base ** (-np.arange(0, d, 2) / d)
        ).sum(-1),
        "shifted by one",
    )
    fails(
        check,
        lambda T, d, base=1e4: gram(T, d, base) - np.eye(T) * d / 2,
        "diagonal is wrong",
    )
    fails(check, lambda T, d, base=1e4: np.eye(T), "none of the usual mistakes")
