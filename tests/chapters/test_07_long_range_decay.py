"""Tests for Chapter 7: the decay integral, its closed form, the finite sum and the
tail."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.special import sici

from bookkit.testing import assert_holds_values, fails, load_chapter, passes

ch = load_chapter("07_long_range_decay")
# Timing limits would make these tests fail on a busy machine, not on a bug.

bases = st.one_of(st.floats(1.5, 1e6), st.floats(0.01, 0.7))
offsets = st.floats(-2000, 2000, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(delta=offsets, base=bases)
def test_closed_form_matches_quadrature(delta: float, base: float) -> None:
    assert ch.decay_integral_closed_form(delta, base) == pytest.approx(
        ch.decay_integral_quad(delta, base), abs=1e-9
    )


@settings(max_examples=60, deadline=None)
@given(delta=st.floats(0.01, 1e6), base=st.floats(1.5, 1e6))
def test_complex_integral_real_part_and_bound(delta: float, base: float) -> None:
    z = ch.decay_integral_complex(delta, base)
    assert z.real == pytest.approx(
        ch.decay_integral_closed_form(delta, base), abs=1e-12
    )
    assert ch.decay_integral_complex(-delta, base) == pytest.approx(np.conj(z))
    assert abs(z) <= (base + 1) / (delta * math.log(base)) * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(
    delta=st.floats(-5000, 5000),
    d=st.sampled_from([2, 8, 64, 128, 512]),
    base=st.floats(2.0, 1e6),
)
def test_riemann_sum_error_bound(delta: float, d: int, base: float) -> None:
    gap = abs(
        ch.decay_finite_sum(delta, d, base) - ch.decay_integral_closed_form(delta, base)
    )
    assert gap <= 2 * abs(delta) * (1 - 1 / base) / d + 1e-12


@settings(max_examples=40, deadline=None)
@given(
    delta=st.floats(-300, 300),
    d=st.sampled_from([2, 16, 128]),
    base=st.floats(2.0, 1e5),
)
def test_finite_sum_is_sinusoidal_inner_product(
    delta: float, d: int, base: float
) -> None:
    theta = ch.frequencies(d, base)
    m, n = delta + 17.0, 17.0
    pe_m = np.stack([np.sin(m * theta), np.cos(m * theta)], axis=1).ravel()
    pe_n = np.stack([np.sin(n * theta), np.cos(n * theta)], axis=1).ravel()
    assert pe_m @ pe_n == pytest.approx(
        d / 2 * ch.decay_finite_sum(delta, d, base), abs=1e-9
    )


def test_finite_sum_shapes_and_peak() -> None:
    grid = np.arange(-5, 6).reshape(11, 1)
    assert ch.decay_finite_sum(grid, 64).shape == (11, 1)
    assert ch.decay_finite_sum(0, 64) == 1.0
    assert isinstance(ch.decay_integral_closed_form(3.0), float)
    assert ch.decay_integral_closed_form(0.0) == 1.0


def test_abel_identity_and_bound() -> None:
    rng = np.random.default_rng(0)
    d, base = 64, 10000.0
    theta = ch.frequencies(d, base)
    for delta in (0.0, 7.0, 300.0):
        S = ch.abel_partial_sums(delta, d, base)
        assert S.shape == (d // 2,)
        h = rng.standard_normal(d // 2) + 1j * rng.standard_normal(d // 2)
        direct = np.sum(h * np.exp(1j * delta * theta))
        h_ext = np.append(h, 0.0)
        assert direct == pytest.approx(-np.sum(S * np.diff(h_ext)))
        assert abs(direct) <= np.abs(np.diff(h_ext)).max() * np.abs(S).sum() + 1e-9
    assert ch.abel_partial_sums(np.zeros(3), d, base).shape == (3, d // 2)


def test_rope_logit_matches_rotations() -> None:
    rng = np.random.default_rng(1)
    d, base, m, n = 16, 100.0, 9.0, 4.0
    q, k = rng.standard_normal(d), rng.standard_normal(d)

    def rotate(x: np.ndarray, position: float) -> np.ndarray:
        out = np.empty_like(x)
        for i, angle in enumerate(position * ch.frequencies(d, base)):
            c, s = math.cos(angle), math.sin(angle)
            out[2 * i], out[2 * i + 1] = (
                c * x[2 * i] - s * x[2 * i + 1],
                s * x[2 * i] + c * x[2 * i + 1],
            )
        return out

    assert ch.rope_logit(q, k, m - n, base) == pytest.approx(
        rotate(q, m) @ rotate(k, n)
    )


def test_asymptotic_slope_is_minus_one() -> None:
    base = 10000.0
    grid = np.logspace(6, 8, 400)
    modulus = np.abs(ch.decay_integral_complex(grid, base))
    slope = np.polyfit(np.log(grid), np.log(modulus), 1)[0]
    assert slope == pytest.approx(-1, abs=0.01)


@pytest.mark.parametrize("x", [3, 8, 15])
def test_asymptotic_series_remainder_and_optimal_truncation(x: int) -> None:
    reference = -ch.oscillatory_tail(float(x))  # the seed's Ei(ix)
    errors = [abs(ch.asymptotic_ei(1j * x, K) - reference) for K in range(1, 3 * x + 1)]
    for K, error in enumerate(errors, start=1):
        assert error <= math.factorial(K) / float(x) ** (K + 1) * (1 + 1e-9)
    assert int(np.argmin(errors)) + 1 == x
    assert errors[-1] > errors[x - 1]


def test_seed_ei_convention() -> None:
    x = np.array([0.5, 2.0, 30.0])
    si, ci = ch.sici(x)
    assert np.allclose(
        ch.asymptotic_ei(1j * 200.0, 10), -ch.oscillatory_tail(200.0), atol=1e-12
    )
    assert np.allclose(-ch.oscillatory_tail(x), ci + 1j * (si - np.pi / 2))
    assert np.allclose(ch.oscillatory_tail(x), ch.exp1(-1j * x))


@pytest.mark.parametrize("base", [3.0, 50.0, 1e4, 5e5, 1e7])
def test_first_zero_near_x0_b(base: float) -> None:
    zero = ch.first_zero_integral(base)
    assert abs(zero - 0.6165054856207162 * base) < 3.8  # x0 = first zero of Ci
    assert abs(ch.decay_integral_closed_form(zero, base)) < 1e-9


def test_first_negative_offset_known_values() -> None:
    assert ch.first_negative_offset(16) == 91
    assert ch.first_negative_offset(128) == 1707
    assert ch.first_negative_offset(128, 10000.0, max_delta=1000) is None


@pytest.mark.parametrize("kind", ["geometric", "linear", "harmonic"])
def test_schedules_limit_of_finite_sums(kind: str) -> None:
    grid = np.linspace(-40, 40, 81)
    riemann = ch._cosine_average(grid, ch.schedule_frequencies(8192, 1000.0, kind))
    integral = ch.decay_integral_schedule(grid, 1000.0, kind)
    assert np.abs(riemann - integral).max() < 2 * 40 / 8192
    assert ch.decay_integral_schedule(0.0, 1000.0, kind) == 1.0


@pytest.mark.parametrize("alpha", [0.5, 1, 2])
def test_power_schedules_against_quad(alpha: float) -> None:
    for delta in (0.7, 12.0, 90.0):
        numeric = ch.quad(lambda t: math.cos(delta * t**alpha), 0, 1, limit=400)[0]
        assert ch.decay_integral_power(delta, alpha) == pytest.approx(numeric, abs=1e-9)


@pytest.mark.parametrize(
    "base", [0.0, -3.0, float("inf"), float("nan"), 1.0, 1, True, "10000"]
)
def test_integrals_reject_bad_base(base) -> None:
    with pytest.raises(ValueError, match="base"):
        ch.decay_integral_closed_form(5.0, base)
    with pytest.raises(ValueError, match="base"):
        ch.decay_integral_quad(5.0, base)
    with pytest.raises(ValueError, match="base"):
        ch.decay_integral_complex(5.0, base)


@pytest.mark.parametrize("d", [7, 0, -4, 2.0, True])
def test_finite_sums_reject_bad_d(d) -> None:
    with pytest.raises(ValueError, match="d must be a positive even integer"):
        ch.decay_finite_sum(3.0, d)
    with pytest.raises(ValueError, match="d must be a positive even integer"):
        ch.abel_partial_sums(3.0, d)


@pytest.mark.parametrize("base", [0.0, -1.0, float("inf")])
def test_finite_sum_rejects_bad_base(base: float) -> None:
    with pytest.raises(ValueError, match="base"):
        ch.decay_finite_sum(3.0, 8, base)


def test_bad_offsets_and_arguments() -> None:
    with pytest.raises(ValueError, match="finite"):
        ch.decay_integral_closed_form(np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match="real"):
        ch.decay_finite_sum(1j, 8)
    with pytest.raises(ValueError, match="one offset"):
        ch.decay_integral_quad(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="terms"):
        ch.asymptotic_ei(3j, 0)
    with pytest.raises(ValueError, match="nonzero"):
        ch.asymptotic_ei(0.0, 3)
    with pytest.raises(ValueError, match="x > 0"):
        ch.oscillatory_tail(0.0)
    with pytest.raises(ValueError, match="base >= 3"):
        ch.first_zero_integral(2.0)
    with pytest.raises(ValueError, match="kind"):
        ch.decay_integral_schedule(1.0, 100.0, "cubic")
    with pytest.raises(ValueError, match="exponents 0.5, 1 and 2"):
        ch.decay_integral_power(1.0, 3)
    with pytest.raises(ValueError, match="same shape"):
        ch.rope_logit(np.ones(4), np.ones(6), 1.0)
    with pytest.raises(ValueError, match="max_delta"):
        ch.first_negative_offset(8, 100.0, max_delta=0)


@pytest.mark.parametrize("base", [1.5, 10000.0, 0.05])
def test_tiny_offsets_are_continuous(base: float) -> None:
    tiny = np.array([0.0, 5e-324, 1e-200, 1e-8, 0.99e-4, 1.01e-4, 1e-3]) * min(
        1.0, base
    )
    values = ch.decay_integral_closed_form(tiny, base)
    assert np.all(np.isfinite(values)) and values[0] == 1.0
    expected = [ch.decay_integral_quad(float(x), base) for x in tiny]
    assert values == pytest.approx(expected, abs=1e-12)
    z = ch.decay_integral_complex(tiny, base)
    assert np.all(np.isfinite(z)) and z.real == pytest.approx(values, abs=1e-14)
    for alpha in (0.5, 1, 2):
        assert np.all(np.abs(ch.decay_integral_power(tiny, alpha) - 1) < 1e-6)


# --- Independent references: scipy.special and scipy.integrate, written in the test
# -----------

from scipy import integrate, special  # noqa: E402

CI_ZERO = 0.6165054856207162  # first zero of Ci (Abramowitz & Stegun 5.2; brentq below)


def _quad_cos_sin(delta: float, base: float) -> complex:
    """int_0^1 exp(i delta base**-t) dt by plain adaptive quadrature (moderate
    delta)."""
    re = integrate.quad(
        lambda t: math.cos(delta * base**-t), 0, 1, limit=500, epsabs=1e-12
    )[0]
    im = integrate.quad(
        lambda t: math.sin(delta * base**-t), 0, 1, limit=500, epsabs=1e-12
    )[0]
    return complex(re, im)


@pytest.mark.parametrize("delta", [0.01, 0.05, 0.5, 3.0, 40.0, 250.0])
def test_closed_form_defaults_against_sici_and_quad(delta: float) -> None:
    b = 10000.0
    ci = special.sici(delta)[1] - special.sici(delta / b)[1]
    assert ch.decay_integral_closed_form(delta) == pytest.approx(
        ci / math.log(b), abs=1e-12
    )
    assert ch.decay_integral_closed_form(-delta) == pytest.approx(
        ci / math.log(b), abs=1e-12
    )
    z = _quad_cos_sin(delta, b)
    assert ch.decay_integral_closed_form(delta) == pytest.approx(z.real, abs=1e-9)
    assert ch.decay_integral_quad(delta) == pytest.approx(z.real, abs=1e-9)
    got = ch.decay_integral_complex(delta)
    assert got.real == pytest.approx(z.real, abs=1e-9)
    assert got.imag == pytest.approx(z.imag, abs=1e-9)
    below = ch.decay_integral_complex(-delta)  # negative offsets: the conjugate
    assert below.real == pytest.approx(z.real, abs=1e-9)
    assert below.imag == pytest.approx(-z.imag, abs=1e-9)


@pytest.mark.parametrize("base", [7.0, 300.0])
def test_complex_integral_both_parts_other_bases(base: float) -> None:
    for delta in (0.3, 11.0, -17.5):
        z = _quad_cos_sin(delta, base)
        got = ch.decay_integral_complex(delta, base)
        assert got.real == pytest.approx(z.real, abs=1e-9)
        assert got.imag == pytest.approx(z.imag, abs=1e-9)
    tiny = ch.decay_integral_complex(np.array([5e-5, -5e-5]), base)  # the series branch
    assert tiny.imag[0] == pytest.approx(
        5e-5 * (1 - 1 / base) / math.log(base), rel=1e-6
    )
    assert tiny.imag[1] == pytest.approx(-tiny.imag[0])


def test_tiny_offsets_series_against_the_taylor_expansion() -> None:
    for base in (2.0, 10000.0):
        for delta in (5e-5, 9e-5):
            expected = 1 - delta**2 * (1 - base**-2) / (4 * math.log(base))
            assert ch.decay_integral_closed_form(delta, base) == pytest.approx(
                expected, abs=1e-15
            )


def test_finite_sum_defaults_and_hand_values() -> None:
    theta = 10000.0 ** (-np.arange(0, 8, 2) / 8)
    for delta in (0.0, 1.0, -7.5, 300.0):
        assert ch.decay_finite_sum(delta, 8) == pytest.approx(
            np.cos(delta * theta).mean()
        )
    assert ch.decay_finite_sum(2.0, 2) == pytest.approx(math.cos(2.0))
    assert ch.decay_finite_sum(3.0, 4, 100.0) == pytest.approx(
        (math.cos(3.0) + math.cos(0.3)) / 2
    )


def test_cosine_average_in_small_chunks() -> None:
    theta = np.array([1.0, 0.3, 0.01, 2.0])
    grid = np.linspace(-50, 50, 103).reshape(1, 103)
    expected = np.cos(grid[..., None] * theta).mean(-1)
    assert np.allclose(ch._cosine_average(grid, theta, chunk=8), expected)
    assert np.allclose(ch._cosine_average(grid, theta, chunk=3), expected)
    assert np.allclose(ch._cosine_average(grid, theta), expected)


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1), half=st.integers(1, 6), delta=st.floats(-500, 500)
)
def test_rope_logit_default_base_batched(seed: int, half: int, delta: float) -> None:
    rng = np.random.default_rng(seed)
    d = 2 * half
    q, k = rng.standard_normal((3, d)), rng.standard_normal((3, d))
    R = np.zeros(
        (d, d)
    )  # R_delta, interleaved, base 10000: (R_m q).(R_n k) = q.R_{n-m}k
    for i in range(half):
        a = -delta * 10000.0 ** (-2 * i / d)
        R[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [
            [math.cos(a), -math.sin(a)],
            [math.sin(a), math.cos(a)],
        ]
    expected = np.einsum("bi,ij,bj->b", q, R, k)
    assert np.allclose(ch.rope_logit(q, k, delta), expected, atol=1e-9)


def test_first_negative_offset_boundaries() -> None:
    assert ch.first_negative_offset(16, max_delta=91) == 91
    assert ch.first_negative_offset(16, max_delta=90) is None
    assert ch.first_negative_offset(2) == 2  # cos(delta) < 0 first at delta = 2
    grid = np.arange(1, 200)
    values = np.cos(np.multiply.outer(grid, 100.0 ** (-np.arange(0, 8, 2) / 8))).mean(
        -1
    )
    assert ch.first_negative_offset(8, 100.0) == int(grid[np.argmax(values < 0)])


def test_asymptotic_series_hand_computed_and_against_scipy() -> None:
    z = 2.0 + 3.0j
    assert ch.asymptotic_ei(z, 1) == pytest.approx(np.exp(z) / z)
    assert ch.asymptotic_ei(z, 3) == pytest.approx(
        np.exp(z) / z * (1 + 1 / z + 2 / z**2)
    )
    for x in (20.0, 60.0):
        ei = -special.exp1(-1j * x)  # Ei(ix) = -E1(-ix)
        got = ch.asymptotic_ei(1j * x, 6)
        assert got.real == pytest.approx(ei.real, abs=1e-6)
        assert got.imag == pytest.approx(ei.imag, abs=1e-6)
    si, ci = special.sici(5.0)
    tail = ch.oscillatory_tail(5.0)
    assert tail.real == pytest.approx(-ci) and tail.imag == pytest.approx(
        np.pi / 2 - si
    )


def test_abel_partial_sums_hand_computed() -> None:
    theta = 10000.0 ** (-np.arange(0, 6, 2) / 6)
    S = ch.abel_partial_sums(2.0, 6)
    expected = np.cumsum(np.exp(2j * theta))
    assert np.allclose(S.real, expected.real) and np.allclose(S.imag, expected.imag)
    S2 = ch.abel_partial_sums(np.array([1.0, -1.0]), 4, 100.0)
    assert S2[0, 1] == pytest.approx(np.exp(1j) + np.exp(0.1j))
    assert S2[1, 0] == pytest.approx(np.exp(-1j))


def test_first_zero_of_ci_constant() -> None:
    from scipy.optimize import brentq

    assert brentq(lambda x: special.sici(x)[1], 0.3, 1.0, xtol=1e-15) == pytest.approx(
        CI_ZERO, abs=1e-12
    )


@pytest.mark.parametrize("base", [3.0, 200.0, 10000.0])
def test_first_zero_against_an_independent_root(base: float) -> None:
    zero = ch.first_zero_integral(base)

    def f(x):
        return special.sici(x)[1] - special.sici(x / base)[1]

    assert abs(f(zero)) < 1e-8
    grid = np.arange(0.05, zero - 1e-6, 0.01)
    assert np.all(f(grid) > 0)  # the first zero, not a later one
    assert abs(zero - CI_ZERO * base) < 3.8


def test_schedule_frequencies_hand_computed() -> None:
    assert ch.schedule_frequencies(4, 10.0, "linear").tolist() == pytest.approx(
        [1.0, 0.55]
    )
    assert ch.schedule_frequencies(4, 10.0, "harmonic").tolist() == pytest.approx(
        [1.0, 1 / 5.5]
    )
    assert ch.schedule_frequencies(4, 100.0, "geometric").tolist() == pytest.approx(
        [1.0, 0.1]
    )


@pytest.mark.parametrize(
    "kind, theta",
    [
        ("linear", lambda t, b: 1 - (1 - 1 / b) * t),
        ("harmonic", lambda t, b: 1 / (1 + (b - 1) * t)),
        ("geometric", lambda t, b: b ** (-t)),
    ],
)
def test_schedule_integrals_against_quad(kind, theta) -> None:
    for base in (5.0, 1000.0):
        for delta in (0.7, -9.0, 60.0):
            expected = integrate.quad(
                lambda t: math.cos(delta * theta(t, base)),
                0,
                1,
                limit=400,
                epsabs=1e-12,
            )[0]
            got = ch.decay_integral_schedule(delta, base, kind)
            assert got == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("alpha", [0.5, 1, 2])
def test_power_schedules_near_zero_and_moderate_offsets(alpha) -> None:
    for delta in (
        9e-5,
        -5e-5,
    ):  # Taylor branch: 1 - delta^2 / (2 (2 alpha + 1)) + O(delta^4)
        expected = 1 - delta**2 / (2 * (2 * alpha + 1))
        assert ch.decay_integral_power(delta, alpha) == pytest.approx(
            expected, abs=1e-15
        )
    for delta in (0.01, 0.05, 2.0, -30.0):
        expected = integrate.quad(
            lambda t: math.cos(delta * t**alpha), 0, 1, limit=400, epsabs=1e-13
        )[0]
        assert ch.decay_integral_power(delta, alpha) == pytest.approx(
            expected, abs=1e-9
        )


@pytest.mark.parametrize("kind", ["linear", "harmonic"])
def test_schedules_at_zero_offset_are_one_without_a_floating_point_warning(kind):
    with np.errstate(all="raise"):  # a 0/0 or log(0) inside would raise here
        values = ch.decay_integral_schedule(np.array([0.0, 0.0, 3.0]), 100.0, kind)
        assert ch.decay_integral_schedule(0.0, 100.0, kind) == 1.0
    assert values[0] == values[1] == 1.0 and abs(values[2]) < 1.0


# ------------------------------------------------------ exercise checks


def finite_sum(delta, d, base=10000.0):
    theta = base ** (-np.arange(0, d, 2) / d)
    return np.cos(np.multiply.outer(np.asarray(delta, dtype=float), theta)).mean(-1)


def first_zero(d, base=10000.0):
    grid = np.arange(0.0, 5000.0, 0.05)
    j = int(np.argmax(finite_sum(grid, d, base) <= 0))
    return brentq(lambda x: finite_sum(x, d, base), grid[j - 1], grid[j], xtol=1e-12)


def test_ex_7_2(capsys) -> None:
    passes(ch.check_first_zero_finite_sum, first_zero, 4, capsys)
    # a correct answer in float32 passes too, and one computed with a coarser bracket
    passes(
        ch.check_first_zero_finite_sum,
        lambda d, base=1e4: np.float32(first_zero(d, base)),
        4,
        capsys,
    )
    passes(
        ch.check_first_zero_finite_sum,
        lambda d, base=1e4: torch.tensor(first_zero(d, base), dtype=torch.float64),
        4,
        capsys,
    )
    check = ch.check_first_zero_finite_sum
    fails(
        check,
        lambda d, base=1e4: float(np.ceil(first_zero(d, base))),
        "*integer* offset",
        "d = 2, base = 10000",
    )
    x0 = brentq(lambda x: sici(x)[1], 0.3, 1.0)
    fails(
        check, lambda d, base=1e4: ch.first_zero_integral(base), "zero of the integral"
    )
    fails(
        check,
        lambda d, base=1e4: 3 * np.pi / 2 if d == 2 else first_zero(d, base),
        "not the first",
    )
    fails(
        check,
        lambda d, base=1e4: first_zero(d, base) + 1e-3,
        "|difference| 1.00e-03",
        "d = 2, base = 10000",
    )
    assert x0 > 0.6


def base_for_context(L):
    if L < 10:
        raise ValueError(f"the context length L must be at least 10, got {L}")
    x0 = brentq(lambda x: sici(x)[1], 0.3, 1.0)
    return brentq(
        lambda b: ch.first_zero_integral(b) - L,
        (L - 3.8) / x0,
        (L + 3.8) / x0,
        xtol=1e-9,
        rtol=1e-12,
    )


def test_ex_7_3(capsys) -> None:
    passes(ch.check_base_for_context, base_for_context, 4, capsys)
    passes(
        ch.check_base_for_context, lambda L: np.float32(base_for_context(L)), 4, capsys
    )
    check = ch.check_base_for_context
    x0 = brentq(lambda x: sici(x)[1], 0.3, 1.0)
    fails(check, lambda L: L / x0, "approximation L / x0", "L = 100")
    fails(check, lambda L: (L + 3.8) / x0, "sufficient bound")
    fails(check, lambda L: float(L), "base equals L")
    fails(check, lambda L: L * x0, "times x0")
    fails(check, lambda L: base_for_context(max(L, 10)), "L = 0", "got no error")


@pytest.mark.parametrize(
    "name, forbidden",
    [
        ("check_first_zero_finite_sum", ("brentq(",)),
        ("check_base_for_context", ("brentq(", "first_zero_integral(b) -")),
    ],
)
def test_checks_hold_expected_values(name, forbidden) -> None:
    """The student edition shows each check's source: it must not compute the
    answer."""
    assert_holds_values("07_long_range_decay", name, forbidden)
