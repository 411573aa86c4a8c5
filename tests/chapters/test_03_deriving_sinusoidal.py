"""Tests for Chapter 3, Deriving the sinusoidal encoding (functions loaded from the
notebook)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bookkit.testing import fails, load_chapter, passes

ch = load_chapter("03_deriving_sinusoidal")
# Timing limits would make these tests fail on a busy machine, not on a bug.

even_d = st.integers(min_value=1, max_value=64).map(lambda k: 2 * k)
bases = st.floats(min_value=2.0, max_value=1e6, allow_nan=False, allow_infinity=False)
seeds = st.integers(min_value=0, max_value=2**32 - 1)


# --- frequencies
# -------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(d=even_d, base=bases)
def test_frequencies_geometric_progression(d, base):
    theta = ch.frequencies(d, base)
    assert theta.shape == (d // 2,)
    assert np.isclose(theta[0], 1.0)  # base ** -0.0: no exactness claimed for pow
    assert np.allclose(theta, base ** (-2.0 * np.arange(d // 2) / d))
    if d > 2:
        assert np.allclose(theta[1:] / theta[:-1], base ** (-2.0 / d))
        assert np.all(np.diff(theta) < 0)


def test_frequencies_known_values():
    assert np.allclose(ch.frequencies(4, 100.0), [1.0, 0.1])
    assert np.isclose(ch.frequencies(512)[-1], 10000.0 ** (-510 / 512))


@pytest.mark.parametrize("d", [0, -2, 3, 7, 2.0, True, "8", None])
def test_frequencies_rejects_bad_d(d):
    with pytest.raises(ValueError, match="positive even integer"):
        ch.frequencies(d)


@pytest.mark.parametrize("base", [0.0, -10.0, float("nan"), float("inf")])
def test_frequencies_rejects_bad_base(base):
    with pytest.raises(ValueError, match="base must be a finite positive number"):
        ch.frequencies(8, base)


def test_frequencies_accepts_numpy_integer():
    assert np.allclose(ch.frequencies(np.int64(8)), ch.frequencies(8))


# --- the complex code and the relative property
# --------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    m=st.integers(0, 5000),
    n=st.integers(0, 5000),
    shift=st.integers(-200, 200),
    d=even_d,
    base=bases,
)
def test_complex_code_is_relative(m, n, shift, d, base):
    shift = max(shift, -min(m, n))  # keep positions non-negative
    zm, zn = ch.complex_position_code(m, d, base), ch.complex_position_code(n, d, base)
    zm2, zn2 = (
        ch.complex_position_code(m + shift, d, base),
        ch.complex_position_code(n + shift, d, base),
    )
    # p_m p_n^* = q_{m-n} coordinatewise, and the real inner product is the sum of
    # cosines
    assert np.allclose(zm * zn.conj(), zm2 * zn2.conj(), atol=1e-8)
    real_ip = ch.complex_to_real(zm) @ ch.complex_to_real(zn)
    assert np.isclose(
        real_ip, np.cos((m - n) * ch.frequencies(d, base)).sum(), atol=1e-8
    )
    assert np.isclose(real_ip, ch.hermitian_inner(zm, zn).real, atol=1e-8)
    assert np.allclose(np.abs(zm), 1.0)


def test_complex_code_shapes_and_errors():
    assert ch.complex_position_code(3, 8).shape == (4,)
    assert ch.complex_position_code(np.arange(5), 8).shape == (5, 4)
    assert np.allclose(ch.complex_position_code(0, 6), 1.0)
    with pytest.raises(ValueError, match="finite"):
        ch.complex_position_code(np.nan, 8)
    with pytest.raises(ValueError, match="positive even integer"):
        ch.complex_position_code(1, 5)
    with pytest.raises(ValueError, match="at least one axis"):
        ch.complex_to_real(1 + 2j)
    with pytest.raises(ValueError, match="same last dimension"):
        ch.hermitian_inner(np.ones(3), np.ones(4))


def test_hermitian_inner_convention():
    z, w = np.array([1j, 0]), np.array([1, 0])
    # exact: products and sums of 0, 1 and i are exact in floating point
    assert ch.hermitian_inner(z, w) == 1j  # linear in the first argument
    assert ch.hermitian_inner(w, z) == -1j


def test_diagonal_spread():
    toeplitz = np.array([[1.0, 2.0, 3.0], [4.0, 1.0, 2.0], [5.0, 4.0, 1.0]])
    assert ch.diagonal_spread(toeplitz) == 0.0  # exact: differences of equal numbers
    broken = toeplitz.copy()
    broken[2, 2] = 1.5
    assert np.isclose(ch.diagonal_spread(broken), 0.5)
    assert ch.diagonal_spread(np.zeros((0, 0))) == 0.0
    with pytest.raises(ValueError, match="square"):
        ch.diagonal_spread(np.zeros((2, 3)))


# --- Vaswani's formula, layouts and bugs
# ---------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(T=st.integers(1, 80), d=even_d, base=bases)
def test_layouts_differ_by_a_fixed_permutation(T, d, base):
    P_int = ch.sinusoidal_interleaved(T, d, base)
    P_cat = ch.sinusoidal_concatenated(T, d, base)
    perm = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])
    # exact: both functions apply np.sin and np.cos to the same (T, d/2) angle array
    assert np.array_equal(P_int[:, perm], P_cat)
    assert np.allclose(P_int @ P_int.T, P_cat @ P_cat.T)
    assert ch.diagonal_spread(P_int @ P_int.T) < 1e-8


@settings(max_examples=30, deadline=None)
@given(T=st.integers(1, 60), d=even_d, base=bases)
def test_interleaved_matches_definition_and_complex_form(T, d, base):
    P = ch.sinusoidal_interleaved(T, d, base)
    theta = base ** (-np.arange(0, d, 2) / d)
    m = np.arange(T)[:, None]
    assert np.allclose(P[:, 0::2], np.sin(m * theta))
    assert np.allclose(P[:, 1::2], np.cos(m * theta))
    C = ch.complex_position_code(np.arange(T), d, base)
    assert np.allclose(
        ch.complex_to_real(1j * C.conj()), P
    )  # pairs are i e^{-i m theta}
    assert np.allclose((P**2).sum(axis=1), d / 2)


@pytest.mark.parametrize("fn", ["sinusoidal_interleaved", "sinusoidal_concatenated"])
def test_encodings_reject_bad_input(fn):
    f = getattr(ch, fn)
    assert f(0, 8).shape == (0, 8)
    with pytest.raises(ValueError, match="non-negative integer"):
        f(-1, 8)
    with pytest.raises(ValueError, match="non-negative integer"):
        f(3.5, 8)
    with pytest.raises(ValueError, match="positive even integer"):
        f(4, 7)
    with pytest.raises(ValueError, match="positive even integer"):
        f(4, 0)
    with pytest.raises(ValueError, match="base must be"):
        f(4, 8, 0.0)
    with pytest.raises(ValueError, match="base must be"):
        f(4, 8, float("inf"))


# --- general H
# -----------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    seed=seeds,
    d=st.integers(1, 16).map(lambda k: 2 * k),
    T=st.integers(1, 40),
    base=bases,
)
def test_diagonal_h_identity(seed, d, T, base):
    diag = np.random.default_rng(seed).normal(size=d)
    P = ch.sinusoidal_interleaved(T, d, base)
    theta = ch.frequencies(d, base)
    m, n = np.arange(T)[:, None, None], np.arange(T)[None, :, None]
    formula = (
        0.5 * (diag[0::2] + diag[1::2]) * np.cos((m - n) * theta)
        + 0.5 * (diag[1::2] - diag[0::2]) * np.cos((m + n) * theta)
    ).sum(-1)
    assert np.allclose(ch.hessian_cross_term(P, np.diag(diag)), formula, atol=1e-9)


@settings(max_examples=25, deadline=None)
@given(seed=seeds)
def test_equal_pairs_and_rotation_blocks_stay_relative(seed):
    rng = np.random.default_rng(seed)
    d, T = 8, 30
    P = ch.sinusoidal_interleaved(T, d)
    J = np.array([[0.0, -1.0], [1.0, 0.0]])
    H_eq = np.diag(np.repeat(rng.normal(size=d // 2), 2))
    H_rot = np.zeros((d, d))
    for i in range(d // 2):
        x, y = rng.normal(size=2)  # multiplication by x + iy
        H_rot[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = x * np.eye(2) + y * J
    assert ch.diagonal_spread(ch.hessian_cross_term(P, H_eq)) < 1e-9
    assert ch.diagonal_spread(ch.hessian_cross_term(P, H_rot)) < 1e-9
    assert ch.diagonal_spread(ch.hessian_cross_term(P, rng.normal(size=(d, d)))) > 1e-3


def test_hessian_cross_term_rejects_bad_shapes():
    P = np.ones((3, 4))
    with pytest.raises(ValueError, match="d x d"):
        ch.hessian_cross_term(P, np.eye(3))
    with pytest.raises(ValueError, match=r"\(num_positions, d\)"):
        ch.hessian_cross_term(np.ones(4), np.eye(4))
    with pytest.raises(ValueError, match="finite"):
        ch.hessian_cross_term(P, np.full((4, 4), np.nan))


# --- the Taylor-expansion lemma
# --------------------------------------------------------------


def test_mixed_difference_matches_cross_hessian():
    gen = torch.Generator().manual_seed(1)
    d, T = 6, 5
    W = [
        torch.randn(d, d, generator=gen, dtype=torch.float64) / d**0.5 for _ in range(3)
    ]
    w = torch.randn(d, generator=gen, dtype=torch.float64)
    X = torch.randn(T, d, generator=gen, dtype=torch.float64)

    def f(Y):
        return ch.attention_readout(Y, *W, w)

    assert torch.allclose(f(X.flip(0)), f(X))  # symmetric in the tokens
    p_m, p_n = (
        torch.randn(d, generator=gen, dtype=torch.float64),
        torch.randn(d, generator=gen, dtype=torch.float64),
    )
    cross = (p_m @ ch.cross_hessian(f, X, 0, 3) @ p_n).item()
    eps = 1e-3
    D = ch.mixed_difference(f, X, 0, 3, eps * p_m, eps * p_n)
    assert abs(D / eps**2 - cross) < 0.05 * abs(cross) + 1e-6
    with pytest.raises(ValueError, match="two different positions"):
        ch.mixed_difference(f, X, 2, 2, p_m, p_n)
    with pytest.raises(ValueError, match=r"\(T, d\)"):
        ch.attention_readout(X[0], *W, w)


# --- exercise check functions
# ----------------------------------------------------------------


# --- every relative code is an orbit
# ---------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(seed=seeds)
def test_shift_isometry_recovers_an_orthogonal_shift(seed):
    rng = np.random.default_rng(seed)
    d, T = 6, 16
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    P = (
        ch.sinusoidal_interleaved(T, d, base=7.0) @ Q.T
    )  # relative code in a random basis
    U = ch.shift_isometry(P)
    assert np.allclose(U.T @ U, np.eye(d), atol=1e-8)
    for m in range(T):
        assert np.allclose(np.linalg.matrix_power(U, m) @ P[0], P[m], atol=1e-8)


def test_shift_isometry_alternating_code_and_errors():
    alt = np.stack([np.ones(6), (-1.0) ** np.arange(6)], axis=1)
    assert np.allclose(ch.shift_isometry(alt), np.diag([1.0, -1.0]))
    with pytest.raises(ValueError, match="span"):
        ch.shift_isometry(np.ones((5, 2)))
    with pytest.raises(ValueError, match="span"):
        ch.shift_isometry(np.eye(3)[:1])
    with pytest.raises(ValueError, match=r"\(num_positions, d\)"):
        ch.shift_isometry(np.ones(4))


# --- Asymmetric inputs, both complex parts, defaults, distributions
# ---------------------------


def test_complex_to_real_and_hermitian_inner_hand_computed():
    # exact: complex_to_real copies the parts
    assert ch.complex_to_real(np.array([1 + 2j, 3 - 4j])).tolist() == [
        1.0,
        2.0,
        3.0,
        -4.0,
    ]
    assert ch.complex_to_real(np.array([[5j], [-1 + 0j]])).tolist() == [[0, 5], [-1, 0]]
    z, w = np.array([1 + 2j, 3 - 1j]), np.array([2 - 1j, 1j])
    # (1+2i)(2+i) + (3-i)(-i) = (5i) + (-1-3i) = -1 + 2i
    assert ch.hermitian_inner(z, w) == pytest.approx(-1 + 2j)


@settings(max_examples=30, deadline=None)
@given(seed=seeds, k=st.integers(1, 6))
def test_hermitian_inner_matches_vdot(seed, k):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(3, k)) + 1j * rng.normal(size=(3, k))
    w = rng.normal(size=(3, k)) + 1j * rng.normal(size=(3, k))
    got = ch.hermitian_inner(z, w)
    expected = np.array(
        [np.vdot(w[j], z[j]) for j in range(3)]
    )  # vdot conjugates its first
    assert np.allclose(got.real, expected.real) and np.allclose(got.imag, expected.imag)


@pytest.mark.parametrize("m", [0.0, 1.0, 7.5, 123.0])
def test_complex_position_code_default_base(m):
    d = 8
    theta = 10000.0 ** (-np.array([0.0, 2.0, 4.0, 6.0]) / d)
    z = ch.complex_position_code(m, d)
    assert np.allclose(z.real, np.cos(m * theta)) and np.allclose(
        z.imag, np.sin(m * theta)
    )


def test_encodings_default_base_is_10000():
    T, d = 50, 12
    m, j = np.arange(T)[:, None], np.arange(d // 2)[None, :]
    angles = m / 10000.0 ** (2 * j / d)
    interleaved = np.empty((T, d))
    interleaved[:, 0::2], interleaved[:, 1::2] = np.sin(angles), np.cos(angles)
    assert np.allclose(ch.sinusoidal_interleaved(T, d), interleaved)
    assert np.allclose(
        ch.sinusoidal_concatenated(T, d), np.hstack([np.sin(angles), np.cos(angles)])
    )
    assert np.allclose(ch.frequencies(d), 10000.0 ** (-2 * np.arange(d // 2) / d))


@settings(max_examples=25, deadline=None)
@given(seed=seeds, T=st.integers(1, 8), d=st.integers(1, 5))
def test_hessian_cross_term_with_a_non_symmetric_h(seed, T, d):
    rng = np.random.default_rng(seed)
    P, H = rng.normal(size=(T, d)), rng.normal(size=(d, d))
    G = ch.hessian_cross_term(P, H)
    for m in range(T):
        for n in range(T):
            assert G[m, n] == pytest.approx(P[m] @ H @ P[n])


def test_diagonal_spread_below_and_above_the_diagonal():
    G = np.array([[1.0, 2.0, 3.0], [4.0, 1.0, 2.0], [5.0, 4.0, 1.0]])
    below = G.copy()
    below[2, 1] = 4.7  # offset -1 diagonal: 4, 4.7
    assert ch.diagonal_spread(below) == pytest.approx(0.7)
    above = G.copy()
    above[0, 1] = 1.7  # offset +1 diagonal: 1.7, 2 (measured from its first entry)
    assert ch.diagonal_spread(above) == pytest.approx(0.3)
    corner = G.copy()
    corner[2, 0], corner[0, 2] = -50.0, 99.0  # one-entry diagonals never spread
    assert ch.diagonal_spread(corner) == 0.0  # exact: x - x is 0
    rng = np.random.default_rng(5)
    R = rng.normal(size=(5, 5))
    expected = max(
        np.abs(np.diagonal(R, k) - np.diagonal(R, k)[0]).max() for k in range(-4, 5)
    )
    assert ch.diagonal_spread(R) == pytest.approx(expected)


def test_attention_readout_against_a_hand_written_head():
    gen = torch.Generator().manual_seed(4)
    T, d, d_k, d_v = 4, 5, 3, 2
    X = torch.randn(T, d, generator=gen, dtype=torch.float64)
    W_q, W_k = (
        torch.randn(d_k, d, generator=gen, dtype=torch.float64) for _ in range(2)
    )
    W_v = torch.randn(d_v, d, generator=gen, dtype=torch.float64)
    w = torch.randn(d_v, generator=gen, dtype=torch.float64)
    scores = (X @ W_q.T) @ (X @ W_k.T).T / np.sqrt(d_k)
    A = torch.exp(scores) / torch.exp(scores).sum(dim=1, keepdim=True)  # rows sum to 1
    expected = sum(float(A[m] @ (X @ W_v.T) @ w) for m in range(T))
    assert ch.attention_readout(X, W_q, W_k, W_v, w).item() == pytest.approx(expected)


def test_cross_hessian_and_mixed_difference_of_a_bilinear_function():
    """f = x_0^T B x_2 + (terms without a 0-2 cross): the cross block is B exactly, and
    the mixed difference is p_0^T B p_2 at any step size (no Taylor remainder)."""
    gen = torch.Generator().manual_seed(8)
    d = 3
    B = torch.randn(d, d, generator=gen, dtype=torch.float64)
    X = torch.randn(4, d, generator=gen, dtype=torch.float64)

    def f(Y):
        return Y[0] @ B @ Y[2] + (Y[1] ** 2).sum() + Y[0].sum() ** 2 + (Y[2] ** 3).sum()

    assert torch.allclose(ch.cross_hessian(f, X, 0, 2), B)
    assert torch.allclose(ch.cross_hessian(f, X, 2, 0), B.T)
    p_0, p_2 = (
        torch.randn(d, generator=gen, dtype=torch.float64),
        torch.randn(d, generator=gen, dtype=torch.float64),
    )
    D = ch.mixed_difference(f, X, 0, 2, p_0, p_2)
    assert D == pytest.approx((p_0 @ B @ p_2).item(), abs=1e-9)
    assert torch.equal(X, X.clone())  # inputs untouched: run it twice, same answer
    assert ch.mixed_difference(f, X, 0, 2, p_0, p_2) == pytest.approx(D, abs=1e-9)
    with pytest.raises(ValueError, match="two different positions"):
        ch.cross_hessian(f, X, 1, 1)


def test_shift_isometry_recovers_a_known_non_symmetric_rotation():
    c, s = np.cos(0.4), np.sin(0.4)
    shift = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    Q, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(3, 3)))
    shift = Q @ shift @ Q.T
    P = np.array(
        [
            np.linalg.matrix_power(shift, m) @ np.array([1.0, 0.5, -2.0])
            for m in range(9)
        ]
    )
    assert np.allclose(ch.shift_isometry(P), shift, atol=1e-9)
    assert np.allclose(
        ch.shift_isometry(P[:4]), shift, atol=1e-9
    )  # 3 pairs, rank 3: enough
    with pytest.raises(ValueError, match="span"):
        ch.shift_isometry(P[:3])


# --- reading real pairs as complex numbers (reused by Chapter 5)
# ----------------------------


@settings(max_examples=40, deadline=None)
@given(half=st.integers(1, 32), seed=seeds)
def test_real_to_complex_round_trip(half, seed):
    x = np.random.default_rng(seed).normal(size=(3, 2 * half))
    # exact: real_to_complex and complex_to_real copy the coordinates into and out of
    # the real and imaginary parts (1j * y has imaginary part 1 * y = y and real part 0)
    assert np.array_equal(ch.complex_to_real(ch.real_to_complex(x)), x)


def test_real_to_complex_hand_computed_and_errors():
    z = ch.real_to_complex(np.array([1.0, 2.0, -3.0, 0.5]))
    assert z.real.tolist() == [1.0, -3.0] and z.imag.tolist() == [2.0, 0.5]  # copies
    assert ch.complex_to_real(np.array([[1 - 2j, 4j]])).tolist() == [
        [1.0, -2.0, 0.0, 4.0]
    ]
    with pytest.raises(ValueError, match="positive even length"):
        ch.real_to_complex(np.ones(3))
    with pytest.raises(ValueError, match="positive even length"):
        ch.real_to_complex(np.zeros((2, 0)))
    with pytest.raises(ValueError, match="real"):
        ch.real_to_complex(np.ones(4, dtype=complex))
    empty_batch = ch.real_to_complex(np.zeros((0, 4)))  # no rows, but pairs: fine
    assert empty_batch.shape == (0, 2) and np.iscomplexobj(empty_batch)


# ------------------------------------------------------ exercise checks


def relative_part(H):
    H = np.asarray(H, dtype=float)
    if H.shape[0] % 2:
        raise ValueError("d must be even")
    out = np.zeros_like(H)
    for i in range(0, H.shape[0], 2):
        a, b = (H[i, i] + H[i + 1, i + 1]) / 2, (H[i + 1, i] - H[i, i + 1]) / 2
        out[i : i + 2, i : i + 2] = [[a, -b], [b, a]]
    return out


def relative_part_loops(H):
    H = np.asarray(H, dtype=np.float32)  # a float32 answer, written with loops
    if len(H) % 2:
        raise ValueError("H must have an even size")
    out = np.zeros_like(H)
    for i in range(0, len(H), 2):
        z = complex((H[i, i] + H[i + 1, i + 1]) / 2, (H[i + 1, i] - H[i, i + 1]) / 2)
        out[i : i + 2, i : i + 2] = [[z.real, -z.imag], [z.imag, z.real]]
    return out


def test_ex_3_2(capsys) -> None:
    passes(ch.check_relative_part, relative_part, 4, capsys)
    passes(ch.check_relative_part, relative_part_loops, 4, capsys)
    passes(
        ch.check_relative_part,
        lambda H: torch.as_tensor(relative_part(H), dtype=torch.float32),
        4,
        capsys,
    )
    check = ch.check_relative_part
    fails(check, lambda H: relative_part(np.asarray(H).T), "wrong sign", "H =")
    fails(check, lambda H: 2 * relative_part(H), "factor 1/2")
    blocks = lambda H: np.asarray(H) * np.kron(np.eye(len(H) // 2), np.ones((2, 2)))  # noqa: E731
    fails(check, blocks, "kept whole")
    fails(check, lambda H: np.diag(np.diag(H)), "only the diagonal")
    fails(check, lambda H: blocks(H) - relative_part(H), "not* relative")

    def no_validation(H):
        return np.zeros((len(H), len(H)))

    with pytest.raises(AssertionError, match="d = 2"):
        check(no_validation)


def layout(d):
    if d <= 0 or d % 2:
        raise ValueError(f"d must be a positive even number, got {d}")
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])


def test_ex_3_3(capsys) -> None:
    passes(ch.check_layout_permutation, layout, 9, capsys)
    passes(ch.check_layout_permutation, lambda d: list(layout(d)), 9, capsys)
    check = ch.check_layout_permutation
    inverse = lambda d: np.argsort(layout(d))  # noqa: E731
    message = fails(check, inverse, "inverse permutation", "d = 10")
    # the expected permutation itself is never shown, only its first differing entry
    assert "2, 4, 6, 8, 1" not in message and "at position 1" in message
    reversed_message = fails(check, lambda d: layout(d)[::-1], "position 0", "d = 2")
    assert "[0, 1]" not in reversed_message
    wrong_large = lambda d: layout(d) if d < 100 else np.roll(layout(d), 1)  # noqa: E731
    fails(check, wrong_large, "d = 128", "column 0 differs")
    fails(
        check,
        lambda d: np.concatenate([np.arange(1, d, 2), np.arange(0, d, 2)]),
        "cosine columns come first",
    )
    fails(check, lambda d: np.arange(d), "the identity", "d = 4")
    fails(check, lambda d: np.zeros(d, dtype=int), "a permutation of 0..1")
    fails(
        check,
        lambda d: layout(d + d % 2)[:d] if d % 2 == 0 else np.arange(d),
        "odd d",
        "got no error",
    )
