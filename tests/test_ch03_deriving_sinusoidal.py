"""Tests for Chapter 3, Deriving the sinusoidal encoding (functions loaded from the notebook)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nbload import chapter  # noqa: E402

ch = chapter("03_deriving_sinusoidal")

even_d = st.integers(min_value=1, max_value=64).map(lambda k: 2 * k)
bases = st.floats(min_value=2.0, max_value=1e6, allow_nan=False, allow_infinity=False)
seeds = st.integers(min_value=0, max_value=2**32 - 1)


# --- frequencies -------------------------------------------------------------------------

@settings(max_examples=50, deadline=None)
@given(d=even_d, base=bases)
def test_frequencies_geometric_progression(d, base):
    theta = ch.frequencies(d, base)
    assert theta.shape == (d // 2,)
    assert theta[0] == 1.0
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


# --- the complex code and the relative property --------------------------------------------

@settings(max_examples=60, deadline=None)
@given(m=st.integers(0, 5000), n=st.integers(0, 5000), shift=st.integers(-200, 200), d=even_d, base=bases)
def test_complex_code_is_relative(m, n, shift, d, base):
    shift = max(shift, -min(m, n))  # keep positions non-negative
    zm, zn = ch.complex_position_code(m, d, base), ch.complex_position_code(n, d, base)
    zm2, zn2 = ch.complex_position_code(m + shift, d, base), ch.complex_position_code(n + shift, d, base)
    # p_m p_n^* = q_{m-n} coordinatewise, and the real inner product is the sum of cosines
    assert np.allclose(zm * zn.conj(), zm2 * zn2.conj(), atol=1e-8)
    real_ip = ch.complex_to_real(zm) @ ch.complex_to_real(zn)
    assert np.isclose(real_ip, np.cos((m - n) * ch.frequencies(d, base)).sum(), atol=1e-8)
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
    assert ch.hermitian_inner(z, w) == 1j          # linear in the first argument
    assert ch.hermitian_inner(w, z) == -1j


def test_diagonal_spread():
    toeplitz = np.array([[1.0, 2.0, 3.0], [4.0, 1.0, 2.0], [5.0, 4.0, 1.0]])
    assert ch.diagonal_spread(toeplitz) == 0.0
    broken = toeplitz.copy()
    broken[2, 2] = 1.5
    assert np.isclose(ch.diagonal_spread(broken), 0.5)
    assert ch.diagonal_spread(np.zeros((0, 0))) == 0.0
    with pytest.raises(ValueError, match="square"):
        ch.diagonal_spread(np.zeros((2, 3)))


# --- Vaswani's formula, layouts and bugs ---------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(T=st.integers(1, 80), d=even_d, base=bases)
def test_layouts_differ_by_a_fixed_permutation(T, d, base):
    P_int = ch.sinusoidal_interleaved(T, d, base)
    P_cat = ch.sinusoidal_concatenated(T, d, base)
    perm = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])
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
    assert np.allclose(ch.complex_to_real(1j * C.conj()), P)   # pairs are i e^{-i m theta}
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


# --- general H -----------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(seed=seeds, d=st.integers(1, 16).map(lambda k: 2 * k), T=st.integers(1, 40), base=bases)
def test_diagonal_h_identity(seed, d, T, base):
    h = np.random.default_rng(seed).normal(size=d)
    P = ch.sinusoidal_interleaved(T, d, base)
    theta = ch.frequencies(d, base)
    m, n = np.arange(T)[:, None, None], np.arange(T)[None, :, None]
    formula = (0.5 * (h[0::2] + h[1::2]) * np.cos((m - n) * theta)
               + 0.5 * (h[1::2] - h[0::2]) * np.cos((m + n) * theta)).sum(-1)
    assert np.allclose(ch.hessian_cross_term(P, np.diag(h)), formula, atol=1e-9)


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
        a, b = rng.normal(size=2)
        H_rot[2 * i:2 * i + 2, 2 * i:2 * i + 2] = a * np.eye(2) + b * J
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


# --- the operator route --------------------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(seed=seeds, k=st.integers(1, 6))
def test_unitary_powers_give_relative_inner_products(seed, k):
    rng = np.random.default_rng(seed)
    Theta = ch.random_unitary(k, rng)
    assert np.allclose(Theta.conj().T @ Theta, np.eye(k))
    U = ch.unitary_powers(Theta, 10)
    z = rng.normal(size=k) + 1j * rng.normal(size=k)
    w = rng.normal(size=k) + 1j * rng.normal(size=k)
    G = ch.hermitian_inner((U @ z)[:, None, :], (U @ w)[None, :, :])
    assert ch.diagonal_spread(G) < 1e-10
    assert np.allclose(U[0], np.eye(k)) and np.allclose(U[1], Theta)


def test_unitary_powers_rejects_bad_input():
    with pytest.raises(ValueError, match="unitary"):
        ch.unitary_powers(2 * np.eye(3), 4)
    with pytest.raises(ValueError, match="square"):
        ch.unitary_powers(np.ones((2, 3)), 4)
    with pytest.raises(ValueError, match="non-negative integer"):
        ch.unitary_powers(np.eye(2), -1)
    with pytest.raises(ValueError, match="positive integer"):
        ch.random_unitary(0, np.random.default_rng(0))


# --- the Taylor-expansion lemma --------------------------------------------------------------

def test_mixed_difference_matches_cross_hessian():
    gen = torch.Generator().manual_seed(1)
    d, T = 6, 5
    W = [torch.randn(d, d, generator=gen, dtype=torch.float64) / d**0.5 for _ in range(3)]
    w = torch.randn(d, generator=gen, dtype=torch.float64)
    X = torch.randn(T, d, generator=gen, dtype=torch.float64)

    def f(Y):
        return ch.attention_readout(Y, *W, w)

    assert torch.allclose(f(X.flip(0)), f(X))  # symmetric in the tokens
    p_m, p_n = torch.randn(d, generator=gen, dtype=torch.float64), torch.randn(d, generator=gen, dtype=torch.float64)
    cross = (p_m @ ch.cross_hessian(f, X, 0, 3) @ p_n).item()
    eps = 1e-3
    D = ch.mixed_difference(f, X, 0, 3, eps * p_m, eps * p_n)
    assert abs(D / eps**2 - cross) < 0.05 * abs(cross) + 1e-6
    with pytest.raises(ValueError, match="two different positions"):
        ch.mixed_difference(f, X, 2, 2, p_m, p_n)
    with pytest.raises(ValueError, match=r"\(T, d\)"):
        ch.attention_readout(X[0], *W, w)


# --- exercise check functions ----------------------------------------------------------------

def _good_perm(d):
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])


def _good_shift(k, d, base=10000.0):
    angles = k * ch.frequencies(d, base)
    M = np.zeros((d, d))
    i = np.arange(0, d, 2)
    M[i, i], M[i, i + 1] = np.cos(angles), np.sin(angles)
    M[i + 1, i], M[i + 1, i + 1] = -np.sin(angles), np.cos(angles)
    return M


def test_checks_accept_correct_solutions(capsys):
    ch.check_layout_permutation(_good_perm)
    ch.check_shift_matrix(_good_shift)
    assert capsys.readouterr().out.count("All 4 checks passed.") == 2


def test_checks_reject_wrong_solutions():
    with pytest.raises(AssertionError, match="d = 4"):
        ch.check_layout_permutation(lambda d: np.arange(d))
    with pytest.raises(AssertionError, match="permutation"):
        ch.check_layout_permutation(lambda d: np.zeros(d, dtype=int))
    with pytest.raises(AssertionError, match="k = 1"):
        ch.check_shift_matrix(lambda k, d, base=10000.0: _good_shift(k, d, base).T if k else np.eye(d))


# --- every relative code is an orbit ---------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(seed=seeds)
def test_shift_isometry_recovers_an_orthogonal_shift(seed):
    rng = np.random.default_rng(seed)
    d, T = 6, 16
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    P = ch.sinusoidal_interleaved(T, d, base=7.0) @ Q.T  # relative code in a random basis
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
