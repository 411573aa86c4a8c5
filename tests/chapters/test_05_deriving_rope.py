"""Tests for Chapter 5, "From adding to rotating: deriving RoPE"
(notebooks/05_deriving_rope.ipynb).

Only the notebook's ``export`` cells are executed (bookkit.testing.load_chapter), so
these are the functions the reader sees.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bookkit.testing import assert_holds_values, fails, load_chapter, passes

ch = load_chapter("05_deriving_rope")
# Timing limits would make these tests fail on a busy machine, not on a bug.

SETTINGS = settings(max_examples=60, deadline=None)
dims = st.integers(min_value=1, max_value=64).map(lambda h: 2 * h)
positions = st.floats(min_value=-5000, max_value=5000, allow_nan=False)
int_positions = st.integers(min_value=-5000, max_value=5000)
bases = st.floats(min_value=2.0, max_value=1e6, allow_nan=False)
seeds = st.integers(min_value=0, max_value=2**32 - 1)


# --- the relative property and orthogonality
# ------------------------------------------------


@SETTINGS
@given(m=positions, n=positions, d=dims, base=bases)
def test_relative_property(m, n, d, base):
    R_m, R_n = ch.rope_matrix(m, d, base), ch.rope_matrix(n, d, base)
    assert np.allclose(R_m.T @ R_n, ch.rope_matrix(n - m, d, base), atol=1e-8)


@SETTINGS
@given(m=positions, n=positions, d=dims, base=bases)
def test_composition(m, n, d, base):
    assert np.allclose(
        ch.rope_matrix(m, d, base) @ ch.rope_matrix(n, d, base),
        ch.rope_matrix(m + n, d, base),
        atol=1e-8,
    )


@SETTINGS
@given(m=positions, d=dims, base=bases, seed=seeds)
def test_orthogonal_and_norm_preserving(m, d, base, seed):
    R = ch.rope_matrix(m, d, base)
    assert np.allclose(R.T @ R, np.eye(d), atol=1e-12)
    assert np.allclose(R.T, ch.rope_matrix(-m, d, base))
    v = np.random.default_rng(seed).normal(size=d)
    assert np.isclose(np.linalg.norm(R @ v), np.linalg.norm(v))


@pytest.mark.parametrize("d", [2, 8, 64])
def test_position_zero_is_identity_and_structure(d):
    # exact: cos(0) = 1 and sin(0) = 0 are special values IEEE 754 prescribes
    assert np.array_equal(ch.rope_matrix(0, d), np.eye(d))
    R = ch.rope_matrix(3.0, d)
    assert np.count_nonzero(R) == 2 * d  # only the 2 x 2 diagonal blocks
    assert np.allclose(R[:2, :2], ch.rotation(3.0))  # theta_0 = 1


@SETTINGS
@given(m=int_positions, n=int_positions, d=dims, base=bases, seed=seeds)
def test_score_depends_on_offset_only(m, n, d, base, seed):
    rng = np.random.default_rng(seed)
    W_q, W_k = rng.normal(size=(2, d, d))
    x_m, x_n = rng.normal(size=(2, d))
    shift = int(rng.integers(-1000, 1000))

    def score(a, b):
        return (ch.rope_matrix(a, d, base) @ W_q @ x_m) @ (
            ch.rope_matrix(b, d, base) @ W_k @ x_n
        )

    expected = x_m @ W_q.T @ ch.rope_matrix(n - m, d, base) @ W_k @ x_n
    scale = np.linalg.norm(W_q @ x_m) * np.linalg.norm(W_k @ x_n)
    assert abs(score(m, n) - expected) <= 1e-9 * scale
    assert abs(score(m + shift, n + shift) - score(m, n)) <= 1e-9 * scale


# --- complex form
# ---------------------------------------------------------------------------


@SETTINGS
@given(m=positions, d=dims, base=bases, seed=seeds)
def test_complex_form_equals_dense(m, d, base, seed):
    x = np.random.default_rng(seed).normal(size=d)
    assert np.allclose(
        ch.rope_complex(x, m, base), ch.rope_matrix(m, d, base) @ x, atol=1e-10
    )


def test_complex_form_batches_over_leading_axes():
    X = np.random.default_rng(0).normal(size=(2, 3, 8))
    assert np.allclose(ch.rope_complex(X, 5.0), X @ ch.rope_matrix(5.0, 8).T)


@SETTINGS
@given(m=positions, d=dims, base=bases)
def test_rope_matrix_is_chapter_4s_shift_back(m, d, base):
    # R_m = M_(-m): the step of the proof of thm-05-rope-properties
    assert np.allclose(
        ch.rope_matrix(m, d, base), ch.shift_matrix(-m, d, base), atol=1e-9
    )


@SETTINGS
@given(m=int_positions.filter(lambda m: abs(m) <= 300), d=dims, base=bases, seed=seeds)
def test_theta_operator_is_complex_form_of_rope(m, d, base, seed):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=d // 2) + 1j * rng.normal(size=d // 2)
    Theta_m = np.linalg.matrix_power(ch.theta_operator(d, base), abs(m))
    if m < 0:
        Theta_m = Theta_m.conj()
    assert np.allclose(
        ch.complex_to_real(Theta_m @ z),
        ch.rope_matrix(m, d, base) @ ch.complex_to_real(z),
        atol=1e-8,
    )


@SETTINGS
@given(m=st.integers(min_value=0, max_value=2000), d=dims, base=bases)
def test_sinusoidal_code_is_an_orbit(m, d, base):
    pe, pe_0 = ch.sinusoidal_encoding_at([m, 0], d, base)
    assert np.allclose(pe, ch.rope_matrix(-m, d, base) @ pe_0, atol=1e-9)


# --- modulation identity
# ----------------------------------------------------------------------


@SETTINGS
@given(phi=st.floats(-100, 100), seed=seeds)
def test_rotation_is_cos_plus_sin_J(phi, seed):
    q, k = np.random.default_rng(seed).normal(size=(2, 2))
    assert np.allclose(ch.rotation(phi), np.cos(phi) * np.eye(2) + np.sin(phi) * ch.J)
    assert np.isclose(
        q @ ch.rotation(phi) @ k, np.cos(phi) * (q @ k) + np.sin(phi) * (q @ ch.J @ k)
    )


@SETTINGS
@given(m=int_positions, n=int_positions, theta=st.floats(0, 3), seed=seeds)
def test_modulation_terms_sum_to_rope_score(m, n, theta, seed):
    q, k = np.random.default_rng(seed).normal(size=(2, 2))
    score = (ch.rotation(m * theta) @ q) @ (ch.rotation(n * theta) @ k)
    terms = ch.modulation_terms(q, k, theta, m - n)
    assert np.isclose(terms["cos"] + terms["sin"], score, atol=1e-9)
    assert np.isclose(terms["cos"], np.cos(theta * (m - n)) * (q @ k))
    assert np.isclose(terms["sin"], -np.sin(theta * (m - n)) * (q @ ch.J @ k))


@SETTINGS
@given(m=int_positions, n=int_positions, d=dims, seed=seeds)
def test_rope_logit_terms_match_dense_and_vanish_without_content(m, n, d, seed):
    rng = np.random.default_rng(seed)
    W_q, W_k = rng.normal(size=(2, d, d))
    x_m, x_n = rng.normal(size=(2, d))
    full = (ch.rope_matrix(m, d) @ W_q @ x_m) @ (ch.rope_matrix(n, d) @ W_k @ x_n)
    terms = ch.rope_logit_terms(x_m, x_n, W_q, W_k, m - n)
    assert np.isclose(terms["cos"] + terms["sin"], full, atol=1e-8 * (1 + abs(full)))
    empty = ch.rope_logit_terms(np.zeros(d), x_n, W_q, W_k, m - n)
    # exact: a zero query makes every product an exact zero
    assert empty["cos"] + empty["sin"] == 0.0  # no position-only term


def test_modulation_terms_accept_arrays_of_offsets():
    q, k = np.array([1.0, 2.0]), np.array([-0.5, 0.3])
    deltas = np.arange(-5, 6)
    terms = ch.modulation_terms(q, k, 0.7, deltas)
    assert terms["cos"].shape == terms["sin"].shape == deltas.shape


# --- bad input
# --------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [3, 7, 0, -2])
def test_rope_rejects_bad_dimension(d):
    with pytest.raises(ValueError, match="positive even integer"):
        ch.rope_matrix(1.0, d)
    with pytest.raises(ValueError, match="even"):
        ch.rope_complex(np.ones(max(d, 0)), 1.0)


@pytest.mark.parametrize("m", [np.nan, np.inf, -np.inf])
def test_rope_rejects_non_finite_position(m):
    with pytest.raises(ValueError, match="finite"):
        ch.rope_matrix(m, 8)
    with pytest.raises(ValueError, match="finite"):
        ch.rope_complex(np.ones(8), m)
    with pytest.raises(ValueError, match="finite"):
        ch.sinusoidal_encoding_at([m], 8)


@pytest.mark.parametrize("base", [0.0, -10.0, np.inf, np.nan])
def test_rope_rejects_bad_base(base):
    with pytest.raises(ValueError, match="base"):
        ch.rope_matrix(1.0, 8, base)
    with pytest.raises(ValueError, match="base"):
        ch.rope_complex(np.ones(8), 1.0, base)


def test_other_bad_inputs():
    with pytest.raises(ValueError, match="2-vectors"):
        ch.modulation_terms(np.ones(4), np.ones(4), 0.5, 1)
    with pytest.raises(ValueError, match="theta"):
        ch.modulation_terms(np.ones(2), np.ones(2), np.inf, 1)
    with pytest.raises(ValueError, match="delta"):
        ch.modulation_terms(np.ones(2), np.ones(2), 0.5, [1.0, np.nan])
    with pytest.raises(ValueError, match="position m"):
        ch.rope_complex(np.ones(4), np.array([1.0, 2.0]))


# --- exercise checks accept the solutions and reject wrong answers
# ------------------------------

# --- Hand-computed values, defaults hard-coded to 10000, both complex parts
# -------------------


def _reference_rope(m, d, base=10000.0):
    """R_m written out entry by entry (interleaved pairs, counter-clockwise)."""
    R = np.zeros((d, d))
    for i in range(d // 2):
        angle = m * base ** (-2 * i / d)
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = np.cos(angle), -np.sin(angle)
        R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = np.sin(angle), np.cos(angle)
    return R


@pytest.mark.parametrize("m", [1.0, -3.5, 250.0])
def test_rope_matrix_and_complex_form_use_base_10000_by_default(m):
    d = 8
    assert np.allclose(ch.rope_matrix(m, d), _reference_rope(m, d))
    x = np.random.default_rng(3).normal(size=(2, d))
    assert np.allclose(ch.rope_complex(x, m), x @ _reference_rope(m, d).T)
    assert np.allclose(ch.rope_matrix(m, d, 50.0), _reference_rope(m, d, 50.0))


def test_rotation_and_rope_turn_counter_clockwise():
    assert np.allclose(ch.rotation(np.pi / 2) @ [1.0, 0.0], [0.0, 1.0])
    assert np.allclose(
        ch.rotation(0.25), [[np.cos(0.25), -np.sin(0.25)], [np.sin(0.25), np.cos(0.25)]]
    )
    assert np.allclose(ch.rope_matrix(np.pi / 2, 2) @ [1.0, 0.0], [0.0, 1.0])
    assert np.allclose(ch.rope_complex(np.array([1.0, 0.0]), np.pi / 2), [0.0, 1.0])
    assert np.array_equal(ch.J, [[0.0, -1.0], [1.0, 0.0]])  # exact: literal entries


def test_theta_operator_both_parts_and_default_base():
    d = 6
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    Theta = ch.theta_operator(d)
    assert np.allclose(np.diag(Theta).real, np.cos(theta))
    assert np.allclose(np.diag(Theta).imag, np.sin(theta))
    assert np.count_nonzero(Theta - np.diag(np.diag(Theta))) == 0  # exact: np.diag
    assert np.allclose(
        np.diag(ch.theta_operator(4, 100.0)), np.exp(1j * np.array([1.0, 0.1]))
    )


def test_modulation_terms_hand_computed():
    q, k = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    # q.k = 1, q.Jk = q . (1, 3) = 7
    terms = ch.modulation_terms(q, k, 0.5, 2.0)
    assert terms["cos"] == pytest.approx(np.cos(1.0) * 1.0)
    assert terms["sin"] == pytest.approx(-np.sin(1.0) * 7.0)
    score = (ch.rotation(3 * 0.5) @ q) @ (ch.rotation(1 * 0.5) @ k)  # m = 3, n = 1
    assert terms["cos"] + terms["sin"] == pytest.approx(score)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, half=st.integers(1, 6), delta=st.integers(-500, 500))
def test_rope_logit_terms_default_base_with_rectangular_weights(seed, half, delta):
    rng = np.random.default_rng(seed)
    d_model, d = 5, 2 * half
    W_q, W_k = rng.normal(size=(d, d_model)), rng.normal(size=(d, d_model))
    x_m, x_n = rng.normal(size=(2, d_model))
    q, k = W_q @ x_m, W_k @ x_n
    terms = ch.rope_logit_terms(x_m, x_n, W_q, W_k, delta)
    expected = q @ _reference_rope(delta, d).T @ k  # (R_m q).(R_n k) = q^T R_{n-m} k
    assert terms["cos"] + terms["sin"] == pytest.approx(
        expected, abs=1e-9 * (1 + abs(expected))
    )
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    cos_part = sum(
        np.cos(delta * theta[i]) * (q[2 * i : 2 * i + 2] @ k[2 * i : 2 * i + 2])
        for i in range(half)
    )
    assert terms["cos"] == pytest.approx(cos_part, abs=1e-9 * (1 + abs(cos_part)))
    with pytest.raises(ValueError, match="one length"):
        ch.rope_logit_terms(x_m, x_n, W_q, W_k[:-1], delta)


# --- the operator route (moved here from Chapter 3)
# ------------------------------------------


@settings(max_examples=20, deadline=None)
@given(seed=seeds, size=st.integers(1, 6), det=st.sampled_from([1, -1]))
def test_orthogonal_powers_give_relative_inner_products(seed, size, det):
    rng = np.random.default_rng(seed)
    step = ch.random_orthogonal(size, rng, det=det)
    assert np.allclose(step.T @ step, np.eye(size))
    assert np.isclose(np.linalg.det(step), det)
    powers = ch.isometry_powers(step, 10)
    y, y2 = rng.normal(size=(2, size))
    G = (powers @ y) @ (powers @ y2).T  # <O^t y, O^s y'>
    assert ch.diagonal_spread(G) < 1e-9  # float64: rounding near 1e-14
    assert np.allclose(powers[0], np.eye(size)) and np.allclose(
        powers[3], step @ step @ step
    )


@settings(max_examples=20, deadline=None)
@given(seed=seeds, size=st.integers(1, 6))
def test_unitary_powers_give_relative_hermitian_products(seed, size):
    rng = np.random.default_rng(seed)
    U_1 = ch.random_unitary(size, rng)
    assert np.allclose(U_1.conj().T @ U_1, np.eye(size))
    U = ch.isometry_powers(U_1, 10)
    z = rng.normal(size=size) + 1j * rng.normal(size=size)
    w = rng.normal(size=size) + 1j * rng.normal(size=size)
    G = np.sum((U @ z)[:, None, :] * np.conj(U @ w)[None, :, :], axis=-1)
    assert ch.diagonal_spread(G) < 1e-9  # float64: rounding near 1e-14
    assert np.allclose(U[0], np.eye(size)) and np.allclose(U[1], U_1)


def test_a_reflection_family_is_relative_but_not_a_rotation():
    """det O = -1: the real dot products are relative, the Hermitian products are
    not."""
    reflection = np.diag([1.0, -1.0])  # complex conjugation of one pair
    powers = ch.isometry_powers(reflection, 6)
    q, k = np.array([0.3, 0.8]), np.array([-0.5, 0.2])
    real = (powers @ q) @ (powers @ k).T
    assert ch.diagonal_spread(real) == 0.0  # exact: products and sums of +-0.3 etc.
    zq, zk = ch.real_to_complex(powers @ q)[:, 0], ch.real_to_complex(powers @ k)[:, 0]
    assert ch.diagonal_spread(zq[:, None] * np.conj(zk)[None, :]) > 0.1


def test_isometry_powers_and_random_matrices_reject_bad_input():
    with pytest.raises(ValueError, match="orthogonal or unitary"):
        ch.isometry_powers(2 * np.eye(3), 4)
    with pytest.raises(ValueError, match="orthogonal or unitary"):
        ch.isometry_powers((1 + 1e-8) * np.eye(3), 4)  # off by far more than rounding
    assert ch.isometry_powers(np.diag([1.0, -1.0]) * (1 + 1e-13), 2).shape == (2, 2, 2)
    default = ch.random_orthogonal(3, np.random.default_rng(1))  # det = 1 by default
    assert np.isclose(np.linalg.det(default), 1.0)
    with pytest.raises(ValueError, match="square"):
        ch.isometry_powers(np.ones((2, 3)), 4)
    with pytest.raises(ValueError, match="non-negative integer"):
        ch.isometry_powers(np.eye(2), -1)
    with pytest.raises(ValueError, match="positive integer"):
        ch.random_unitary(0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="positive integer"):
        ch.random_orthogonal(0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="det must be 1 or -1"):
        ch.random_orthogonal(3, np.random.default_rng(0), det=2)


def test_isometry_powers_are_matrix_powers():
    rng = np.random.default_rng(2)
    Theta = ch.random_unitary(3, rng)
    U = ch.isometry_powers(Theta, 6)
    assert U.shape == (6, 3, 3)
    for t in range(6):
        assert np.allclose(U[t], np.linalg.matrix_power(Theta, t))
    assert ch.isometry_powers(Theta, 0).shape == (0, 3, 3)
    with pytest.raises(ValueError, match="non-negative integer"):
        ch.isometry_powers(Theta, 2.0)


def test_random_unitary_is_haar_distributed():
    """Statistics with a known law under the Haar measure on U(k), from a seeded sample.

    For Haar U in U(k): every entry has mean 0 and E[U_ij^2] = 0 (uniform phase);
    |U_11|^2 ~ Beta(1, k - 1); E|tr U|^2 = 1 with Var |tr U|^2 = 1 (k >= 2). With N
    samples a mean's standard error is at most sqrt(1/N); the bounds below are about 5
    standard errors, and the Kolmogorov-Smirnov p-value threshold is 1e-4.
    """
    from scipy import stats

    k, N = 3, 3000
    rng = np.random.default_rng(20261123)
    samples = np.array([ch.random_unitary(k, rng) for _ in range(N)])
    assert np.allclose(samples[0].conj().T @ samples[0], np.eye(k))
    se = np.sqrt(1 / N)
    assert np.abs(samples.mean(axis=0)).max() < 5 * se
    assert np.abs((samples**2).mean(axis=0)).max() < 5 * se
    trace = np.trace(samples, axis1=1, axis2=2)
    assert abs(np.mean(np.abs(trace) ** 2) - 1) < 5 * se
    p = stats.kstest(np.abs(samples[:, 0, 0]) ** 2, stats.beta(1, k - 1).cdf).pvalue
    assert p > 1e-4
    phases = np.angle(
        np.linalg.eigvals(samples).ravel()
    )  # eigenphases: uniform marginal
    assert stats.kstest(phases, stats.uniform(-np.pi, 2 * np.pi).cdf).pvalue > 1e-4


def test_random_orthogonal_is_haar_distributed_on_its_coset():
    """Under the Haar measure on O(k), and on each coset det = +-1: every entry has mean
    0 and E[O_ij^2] = 1/k. N samples give standard errors below sqrt(1/N); the bounds
    are about 5 of them."""
    k, N = 4, 3000
    rng = np.random.default_rng(20261128)
    for det in (1, -1):
        samples = np.array([ch.random_orthogonal(k, rng, det=det) for _ in range(N)])
        assert np.allclose(np.linalg.det(samples), det)
        se = np.sqrt(1 / N)
        assert np.abs(samples.mean(axis=0)).max() < 5 * se
        assert np.abs((samples**2).mean(axis=0) - 1 / k).max() < 5 * se


# ------------------------------------------------------ exercise checks


def rope_dense(m, d, base=10000.0):
    out = np.zeros((d, d))
    for i in range(d // 2):
        phi = m * base ** (-2 * i / d)
        out[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [
            [np.cos(phi), -np.sin(phi)],
            [np.sin(phi), np.cos(phi)],
        ]
    return out


def scores(Q, K, base=10000.0):
    Q, K = np.asarray(Q, dtype=float), np.asarray(K, dtype=float)
    if Q.shape[1] % 2:
        raise ValueError("d must be even")
    d = Q.shape[1]
    q = np.stack([rope_dense(m, d, base) @ x for m, x in enumerate(Q)])
    k = np.stack([rope_dense(n, d, base) @ x for n, x in enumerate(K)])
    return q @ k.T


def scores32(Q, K, base=10000.0):
    """A correct answer from the offsets alone, in float32 with torch."""
    Q = torch.as_tensor(Q, dtype=torch.float32)
    K = torch.as_tensor(K, dtype=torch.float32)
    if Q.shape[1] % 2:
        raise ValueError("d must be even")
    T, d = Q.shape
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    delta = (torch.arange(T)[:, None] - torch.arange(T)[None, :]).float()
    q0, q1, k0, k1 = Q[:, 0::2], Q[:, 1::2], K[:, 0::2], K[:, 1::2]
    dot = q0[:, None] * k0[None] + q1[:, None] * k1[None]
    cross = q1[:, None] * k0[None] - q0[:, None] * k1[None]
    angle = delta[..., None] * theta
    return (torch.cos(angle) * dot - torch.sin(angle) * cross).sum(-1)


def test_ex_5_3(capsys) -> None:
    passes(ch.check_rope_scores, scores, 4, capsys)
    passes(ch.check_rope_scores, scores32, 4, capsys)
    check = ch.check_rope_scores

    def reversed_offsets(Q, K, base=1e4):
        d = Q.shape[1]
        q = np.stack([rope_dense(-m, d, base) @ x for m, x in enumerate(Q)])
        k = np.stack([rope_dense(-n, d, base) @ x for n, x in enumerate(K)])
        return q @ k.T

    fails(
        check,
        reversed_offsets,
        "wrong sign",
        "first wrong entry S[0, 1]",
        "Delta = m - n = -1",
        "q_m =",
    )

    def cos_only(Q, K, base=1e4):
        T, d = Q.shape
        theta = base ** (-np.arange(0, d, 2) / d)
        delta = np.arange(T)[:, None] - np.arange(T)
        dot = Q[:, None, 0::2] * K[None, :, 0::2] + Q[:, None, 1::2] * K[None, :, 1::2]
        return (np.cos(delta[..., None] * theta) * dot).sum(-1)

    fails(check, cos_only, "sin term is missing")
    fails(check, lambda Q, K, base=1e4: scores(Q, K, base).T, "rows and columns")
    fails(check, lambda Q, K, base=1e4: scores(Q, K, base**0.5), "i/d instead of 2i/d")

    def halves(Q, K, base=1e4):
        d = Q.shape[1]
        order = np.stack([np.arange(d // 2), np.arange(d // 2) + d // 2]).T.ravel()
        return scores(Q[:, order], K[:, order], base)

    fails(check, halves, "split halves")

    def no_validation(Q, K, base=1e4):
        return np.zeros((len(Q), len(K))) if Q.shape[1] % 2 else scores(Q, K, base)

    fails(check, no_validation, "odd d", "got no error")


@pytest.mark.parametrize(
    "name, forbidden",
    [
        ("check_rope_scores", ("rope_matrix(", "_scores_by_matrices")),
    ],
)
def test_checks_hold_expected_values(name, forbidden) -> None:
    """The student edition shows each check's source: it must not compute the
    answer."""
    assert_holds_values("05_deriving_rope", name, forbidden)
