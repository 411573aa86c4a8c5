"""Chapter 15's codes, taken from the notebook and checked against independent
references: T5's buckets and bias against transformers' T5Attention; KERPLE, FIRE, xPos,
HoPE and FoPE against their formulas written here in float64; CoPE and PaTH against
plain loops; the two new tasks against loops; the batched trainer against separate runs;
every ValueError."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import T5Config
from transformers.models.t5.modeling_t5 import T5Attention

from bookkit.testing import fails, load_chapter, passes

ch = load_chapter("15_beyond_fixed_rotations")
SEEDS = st.integers(0, 2**31 - 1)


def bucket_settings():
    """(bidirectional, num_buckets, max_distance) that transformers accepts."""
    return st.booleans().flatmap(
        lambda bidirectional: st.integers(4 if bidirectional else 2, 80).flatmap(
            lambda n: st.tuples(
                st.just(bidirectional),
                st.just(n),
                st.integers((n // 2 if bidirectional else n) // 2 + 1, 400),
            )
        )
    )


# --- T5 ------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(setting=bucket_settings())
def test_t5_bucket_equals_transformers(setting) -> None:
    bidirectional, num_buckets, max_distance = setting
    offsets = torch.arange(-3 * max_distance - 5, 3 * max_distance + 6)
    ours = ch.t5_bucket(offsets, bidirectional, num_buckets, max_distance)
    theirs = T5Attention._relative_position_bucket(
        offsets, bidirectional, num_buckets, max_distance
    )
    assert torch.equal(ours, theirs)
    # a 2-D grid of offsets, as the attention layer passes it
    grid = torch.arange(7)[None, :] - torch.arange(9)[:, None]
    assert torch.equal(
        ch.t5_bucket(grid, bidirectional, num_buckets, max_distance),
        T5Attention._relative_position_bucket(
            grid, bidirectional, num_buckets, max_distance
        ),
    )


@pytest.mark.parametrize("setting", [(32, 128), (16, 16), (8, 20), (64, 256)])
def test_t5_bucket_default_sweeps(setting) -> None:
    offsets = torch.arange(-1000, 1001)
    for bidirectional in (True, False):
        assert torch.equal(
            ch.t5_bucket(offsets, bidirectional, *setting),
            T5Attention._relative_position_bucket(offsets, bidirectional, *setting),
        )


@pytest.mark.parametrize("length", [5, 16, 40])
def test_t5_bias_equals_transformers_compute_bias(length) -> None:
    torch.manual_seed(1)
    ours = ch.T5Bias(n_heads=4, num_buckets=16, max_distance=16)
    config = T5Config(
        d_model=8,
        d_kv=2,
        num_heads=4,
        relative_attention_num_buckets=16,
        relative_attention_max_distance=16,
        is_decoder=True,
    )
    theirs = T5Attention(config, has_relative_attention_bias=True, layer_idx=0)
    with torch.no_grad():
        theirs.relative_attention_bias.weight.copy_(ours.table.weight)
        expected = theirs.compute_bias(length, length)[0]  # (H, T, T)
        got = ours.bias(torch.arange(length))
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    # bit for bit: the same table rows, gathered by the same integer buckets
    assert torch.equal(got[:, causal], expected[:, causal])
    batched = ours.bias(torch.arange(length).expand(3, length))
    assert batched.shape == (3, 4, length, length)
    assert torch.equal(batched[1], got)


def test_t5_bucket_defaults_are_t5s() -> None:
    offsets = torch.arange(-400, 401)
    assert torch.equal(
        ch.t5_bucket(offsets),
        T5Attention._relative_position_bucket(offsets, True, 32, 128),
    )


def test_t5_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="integer tensor"):
        ch.t5_bucket(torch.zeros(3), False, 16, 16)
    with pytest.raises(ValueError, match="integer tensor"):
        ch.t5_bucket([1, 2], False, 16, 16)
    with pytest.raises(ValueError, match="num_buckets"):
        ch.t5_bucket(torch.zeros(3, dtype=torch.long), True, 2, 16)
    with pytest.raises(ValueError, match="num_buckets"):
        ch.t5_bucket(torch.zeros(3, dtype=torch.long), False, 8.0, 16)
    with pytest.raises(ValueError, match="max_distance"):
        ch.t5_bucket(torch.zeros(3, dtype=torch.long), False, 16, 8)
    with pytest.raises(ValueError, match="max_distance"):
        ch.T5Bias(4, 16, 4)


# --- KERPLE
# ----------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(r1=st.floats(0.01, 5), r2=st.floats(0.01, 2.0), seed=SEEDS)
def test_kerple_matches_the_formulas(r1, r2, seed) -> None:
    generator = np.random.default_rng(seed)
    offsets = generator.integers(-200, 200, size=(5, 7))
    log = ch.kerple_bias(torch.tensor(offsets, dtype=torch.float64), r1, r2)
    power = ch.kerple_bias(torch.tensor(offsets, dtype=torch.float64), r1, r2, "power")
    np.testing.assert_allclose(
        log.numpy(), -r1 * np.log(1 + r2 * np.abs(offsets)), rtol=1e-12, atol=1e-12
    )
    np.testing.assert_allclose(
        power.numpy(), -r1 * np.abs(offsets) ** r2, rtol=1e-12, atol=1e-12
    )


def test_kerple_is_conditionally_positive_definite() -> None:
    offsets = (torch.arange(30)[:, None] - torch.arange(30)[None, :]).double()
    c = torch.randn(
        200, 30, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )
    c = c - c.mean(dim=1, keepdim=True)  # sum-zero vectors
    for variant, r1, r2 in [("logarithmic", 0.7, 3.0), ("power", 1.3, 1.5)]:
        kernel = ch.kerple_bias(offsets, r1, r2, variant)
        quadratic = torch.einsum("bi,ij,bj->b", c, kernel, c)
        assert quadratic.min() > 0
    beyond = -(offsets.abs() ** 3.0)  # outside the paper's range: some vector fails
    assert torch.einsum("bi,ij,bj->b", c, beyond, c).min() < 0


def test_kerple_rejects_bad_input() -> None:
    offsets = torch.arange(4)
    with pytest.raises(ValueError, match="variant"):
        ch.kerple_bias(offsets, 1.0, 1.0, "linear")
    with pytest.raises(ValueError, match="r1"):
        ch.kerple_bias(offsets, 0.0, 1.0)
    with pytest.raises(ValueError, match="r2"):
        ch.kerple_bias(offsets, 1.0, float("nan"))
    with pytest.raises(ValueError, match="r2 <= 2"):
        ch.kerple_bias(offsets, 1.0, 2.5, "power")
    with pytest.raises(ValueError, match="tensor"):
        ch.kerple_bias([1, 2], 1.0, 1.0)


# --- FIRE
# ------------------------------------------------------------------------------


def reference_fire_distance(
    positions: np.ndarray, c: float, threshold: float, eps: float
) -> np.ndarray:
    m = positions.astype(np.float64)
    relative = m[:, None] - m[None, :]
    normaliser = np.maximum(m, abs(threshold))[:, None]
    return np.log(np.abs(c * relative) + 1) / (np.log(np.abs(c * normaliser) + 1) + eps)


@settings(max_examples=40, deadline=None)
@given(
    c=st.floats(0.01, 2.0),
    threshold=st.floats(1.0, 60.0),
    start=st.integers(0, 50),
    length=st.integers(1, 30),
)
def test_fire_distance_matches_the_formula(c, threshold, start, length) -> None:
    positions = np.arange(start, start + length)
    got = ch.fire_distance(torch.tensor(positions, dtype=torch.float64), c, threshold)
    np.testing.assert_allclose(
        got.numpy(),
        reference_fire_distance(positions, c, threshold, 1e-6),
        rtol=1e-12,
        atol=1e-15,
    )


def test_fire_bias_is_its_mlp_of_the_distance() -> None:
    torch.manual_seed(3)
    fire = ch.FIREBias(n_heads=3, threshold=6.0, c=0.2, width=5).double()
    positions = np.arange(10)
    c = fire.c.item()  # 0.2 as the float32 parameter stored it
    u = reference_fire_distance(positions, c, 6.0, 1e-6)
    w1 = fire.mlp[0].weight.detach().numpy()[:, 0]
    b1 = fire.mlp[0].bias.detach().numpy()
    w2 = fire.mlp[2].weight.detach().numpy()
    b2 = fire.mlp[2].bias.detach().numpy()
    hidden = np.maximum(u[..., None] * w1 + b1, 0)  # (T, T, width)
    expected = np.einsum("ijk,hk->hij", hidden, w2) + b2[:, None, None]
    got = fire.bias(torch.arange(10)).detach().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_fire_reduces_to_alibi_with_a_large_threshold() -> None:
    c, tau, slope = 0.3, 40.0, 0.125
    positions = torch.arange(40)
    u = ch.fire_distance(positions.double(), c, tau, eps=0.0)
    offsets = torch.expm1(u * math.log1p(c * tau)) / c
    delta = (positions[:, None] - positions[None, :]).double()
    causal = delta >= 0
    assert (-slope * offsets - (-slope * delta))[causal].abs().max() < 1e-10


def test_fire_learns_its_threshold_and_c() -> None:
    fire = ch.FIREBias(n_heads=2, threshold=4.0)
    fire.bias(torch.arange(8)).sum().backward()
    assert fire.c.grad is not None and fire.threshold_scale.grad is not None
    assert fire.threshold_scale.grad != 0  # queries 0..3 divide by psi(threshold)


def test_fire_accepts_any_positive_threshold() -> None:
    fire = ch.FIREBias(2, threshold=0.5, c=0.05)
    assert fire.bias(torch.arange(4)).shape == (2, 4, 4)


def test_fire_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="positions"):
        ch.fire_distance(torch.zeros(2, 2, 2), 0.1, 4.0)
    with pytest.raises(ValueError, match="positions"):
        ch.fire_distance([0, 1], 0.1, 4.0)
    with pytest.raises(ValueError, match="threshold"):
        ch.FIREBias(2, threshold=0.0)
    with pytest.raises(ValueError, match="c must"):
        ch.FIREBias(2, c=-1.0)


# --- xPos
# ------------------------------------------------------------------------------


def test_xpos_zeta_is_the_reference_codes() -> None:
    for d in (8, 16, 64, 128):
        torchscale = (torch.arange(0, d, 2) + 0.4 * d) / (
            1.4 * d
        )  # microsoft/torchscale
        torch.testing.assert_close(
            ch.xpos_zeta(d), torchscale.float(), rtol=1e-6, atol=0
        )


@settings(max_examples=30, deadline=None)
@given(seed=SEEDS, start=st.integers(0, 300), scale_base=st.floats(16.0, 1024.0))
def test_xpos_rotate_matches_explicit_pairs(seed, start, scale_base) -> None:
    generator = torch.Generator().manual_seed(seed)
    d, T = 8, 5
    q = torch.randn(1, 2, T, d, generator=generator, dtype=torch.float64)
    k = torch.randn(1, 2, T, d, generator=generator, dtype=torch.float64)
    positions = torch.arange(start, start + T)
    qx, kx = ch.XPos(d, scale_base=scale_base).double().rotate(q, k, positions)
    # inverse frequencies rounded to float32, as transformers (and Chapter 6) make them
    theta = (
        1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    ).double()
    theta = theta.numpy()
    # zeta as a float32 buffer, the module's default dtype, then widened
    zeta = (
        ((torch.arange(0, d, 2, dtype=torch.float32) / d + 0.4) / 1.4).double().numpy()
    )
    for name, x, got, sign in (("q", q, qx, 1), ("k", k, kx, -1)):
        x = x.numpy()
        expected = np.empty_like(x)
        for t, m in enumerate(positions.tolist()):
            for j in range(d // 2):
                c, s = math.cos(m * theta[j]), math.sin(m * theta[j])
                a, b = x[..., t, j], x[..., t, j + d // 2]
                amplitude = zeta[j] ** (sign * m / scale_base)
                expected[..., t, j] = amplitude * (a * c - b * s)
                expected[..., t, j + d // 2] = amplitude * (b * c + a * s)
        np.testing.assert_allclose(
            got.numpy(), expected, rtol=1e-9, atol=1e-9, err_msg=name
        )


def test_xpos_curve_without_damping_is_chapter_7s_sum() -> None:
    offsets = np.array([0, 1, 7, 100, 3000])
    theta = 10000.0 ** (-np.arange(0, 64, 2) / 64)
    expected = np.cos(offsets[:, None] * theta).mean(axis=1)
    np.testing.assert_allclose(
        ch.xpos_curve(offsets, 64, scale_base=math.inf), expected, rtol=0, atol=1e-14
    )
    zeta = (np.arange(0, 64, 2) / 64 + 0.4) / 1.4
    damped = (zeta ** (offsets[:, None] / 512) * np.cos(offsets[:, None] * theta)).mean(
        1
    )
    np.testing.assert_allclose(ch.xpos_curve(offsets, 64), damped, rtol=0, atol=1e-14)


def test_position_buffers_are_not_saved() -> None:
    """Like Chapter 8's RoPE: fixed tables are rebuilt, not stored in a state_dict."""
    assert "zeta" not in ch.XPos(8).state_dict()
    fope = ch.FoPE(16, 2, 16).state_dict()
    assert not {"inv_freq", "cos_coef", "sin_coef"} & set(fope)
    assert "initial_threshold" not in ch.FIREBias(2).state_dict()


def test_xpos_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="head_dim"):
        ch.xpos_zeta(7)
    with pytest.raises(ValueError, match="gamma"):
        ch.xpos_zeta(8, gamma=0.0)
    with pytest.raises(ValueError, match="scale_base"):
        ch.XPos(8, scale_base=0)
    with pytest.raises(ValueError, match="finite"):
        ch.xpos_curve([1.0, np.inf], 8)


# --- HoPE and FoPE
# ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("d", "length", "base"),
    [(16, 16, 1e4), (16, 20, 1e4), (128, 4096, 1e4), (128, 8192, 5e5), (64, 3, 1e4)],
)
def test_hope_keeps_the_pairs_that_turn_once(d, length, base) -> None:
    theta = base ** (-np.arange(0, d, 2) / d)  # float64 reference
    kept = theta * length >= 2 * np.pi
    got = ch.hope_inv_freq(d, length, base)
    assert ((got > 0).numpy() == kept).all()
    np.testing.assert_allclose(got.numpy()[kept], theta[kept], rtol=1e-6)


def reference_fope_cos_sin(fope, positions: np.ndarray):
    """c[h, t, j] and s[h, t, j] by explicit sums over the kept frequencies."""
    omega = fope.inv_freq.double().numpy()
    cos_coef = fope.cos_coef.double().numpy()
    sin_coef = fope.sin_coef.double().numpy()
    heads, kept, _ = cos_coef.shape
    half = fope.head_dim // 2
    c = np.ones((heads, len(positions), half))
    s = np.zeros((heads, len(positions), half))
    for h in range(heads):
        for t, n in enumerate(positions):
            for j in range(kept):
                c[h, t, j] = sum(
                    cos_coef[h, w, j] * math.cos(omega[w] * n) for w in range(kept)
                )
                s[h, t, j] = sum(
                    sin_coef[h, w, j] * math.sin(omega[w] * n) for w in range(kept)
                )
    return c, s


def test_fope_cos_sin_are_fourier_series() -> None:
    fope = ch.FoPE(16, n_heads=2, train_length=64, gain=0.3, seed=4).double()
    positions = np.arange(0, 30, 3)
    c, s = fope.cos_sin(torch.tensor(positions))
    ref_c, ref_s = reference_fope_cos_sin(fope, positions)
    np.testing.assert_allclose(c.numpy(), ref_c, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(s.numpy(), ref_s, rtol=1e-6, atol=1e-6)
    assert fope.kept == int(
        (10000.0 ** (-np.arange(0, 16, 2) / 16) * 64 >= 2 * np.pi).sum()
    )


def test_fope_without_noise_is_rope_on_the_kept_pairs() -> None:
    generator = torch.Generator().manual_seed(5)
    q = torch.randn(1, 2, 6, 16, generator=generator, dtype=torch.float64)
    k = torch.randn(1, 2, 6, 16, generator=generator, dtype=torch.float64)
    positions = torch.arange(3, 9)
    fope = ch.FoPE(16, n_heads=2, train_length=16, gain=0.0).double()
    got, _ = fope.rotate(q, k, positions)
    expected = q.clone()  # pair 0 turns with theta_0 = 1; the others stay
    angle = positions.double()
    expected[..., 0] = q[..., 0] * angle.cos() - q[..., 8] * angle.sin()
    expected[..., 8] = q[..., 8] * angle.cos() + q[..., 0] * angle.sin()
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)


def test_hope_and_fope_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="train_length"):
        ch.hope_inv_freq(16, 0)
    with pytest.raises(ValueError, match="head_dim"):
        ch.hope_inv_freq(15, 16)
    with pytest.raises(ValueError, match="gain"):
        ch.FoPE(16, 2, 16, gain=-0.1)
    with pytest.raises(ValueError, match="n_heads"):
        ch.FoPE(16, 0, 16)
    with pytest.raises(ValueError, match="rotate nothing"):
        ch.FoPE(16, 2, 3)


# --- CoPE
# ------------------------------------------------------------------------------


def reference_cope_logits(
    q: np.ndarray,
    k: np.ndarray,
    embeddings: np.ndarray,
    gates: np.ndarray | None = None,
) -> np.ndarray:
    """Plain loops over (m, n) in float64, from the paper's definitions."""
    T, d = q.shape
    largest = embeddings.shape[1] - 1
    logits = np.full((T, T), np.nan)
    for m in range(T):
        for n in range(m + 1):
            g = [
                gates[m, t]
                if gates is not None
                else 1 / (1 + math.exp(-(q[m] @ k[t]) / math.sqrt(d)))
                for t in range(n, m + 1)
            ]
            p = min(sum(g), largest)
            low, high = math.floor(p), math.ceil(p)
            e = (p - low) * embeddings[:, high] + (1 - (p - low)) * embeddings[:, low]
            logits[m, n] = (q[m] @ k[n] + q[m] @ e) / math.sqrt(d)
    return logits


@settings(max_examples=25, deadline=None)
@given(seed=SEEDS, T=st.integers(1, 9), largest=st.integers(1, 12))
def test_cope_logits_match_the_loops(seed, T, largest) -> None:
    generator = np.random.default_rng(seed)
    q, k = generator.normal(size=(2, T, 4))
    embeddings = generator.normal(size=(4, largest + 1))
    got = ch.cope_logits(torch.tensor(q), torch.tensor(k), torch.tensor(embeddings))
    expected = reference_cope_logits(q, k, embeddings)
    lower = np.tril(np.ones((T, T), dtype=bool))
    np.testing.assert_allclose(
        got.numpy()[lower], expected[lower], rtol=1e-10, atol=1e-10
    )


def test_cope_with_every_gate_one_is_relative() -> None:
    generator = np.random.default_rng(1)
    q, k = generator.normal(size=(2, 7, 4))
    embeddings = generator.normal(size=(4, 20))
    got = ch.cope_logits(
        torch.tensor(q),
        torch.tensor(k),
        torch.tensor(embeddings),
        gates=torch.ones(7, 7, dtype=torch.float64),
    ).numpy()
    for m in range(7):
        for n in range(m + 1):
            expected = (q[m] @ k[n] + q[m] @ embeddings[:, m - n + 1]) / 2.0
            assert abs(got[m, n] - expected) < 1e-12


def test_cope_positions_count_the_gated_tokens() -> None:
    gates = torch.tensor(
        [[0.5, 0.9, 0.1], [0.2, 0.3, 0.4], [1.0, 0.0, 0.25]], dtype=torch.float64
    )
    expected = torch.tensor(
        [[0.5, 0.0, 0.0], [0.5, 0.3, 0.0], [1.25, 0.25, 0.25]], dtype=torch.float64
    )
    torch.testing.assert_close(ch.cope_positions(gates), expected, rtol=0, atol=1e-15)


def test_cope_gradients_reach_the_gates() -> None:
    q = torch.randn(
        5, 4, generator=torch.Generator().manual_seed(0), requires_grad=True
    )
    k = torch.randn(5, 4, generator=torch.Generator().manual_seed(1))
    embeddings = torch.randn(4, 6, generator=torch.Generator().manual_seed(2))
    ch.cope_logits(q, k, embeddings).tril().sum().backward()
    assert q.grad is not None and q.grad.abs().sum() > 0


def test_cope_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match=r"\(\.\.\., T, T\)"):
        ch.cope_positions(torch.ones(3, 4))
    with pytest.raises(ValueError, match="same leading"):
        ch.interpolate_position_logits(torch.ones(3, 5), torch.ones(2, 2))
    with pytest.raises(ValueError, match="embeddings"):
        ch.cope_logits(torch.ones(3, 4), torch.ones(3, 4), torch.ones(5, 6))
    with pytest.raises(ValueError, match="one shape"):
        ch.cope_logits(torch.ones(3, 4), torch.ones(2, 4), torch.ones(4, 6))
    with pytest.raises(ValueError, match="floating"):
        ch.cope_logits(
            torch.ones(3, 4, dtype=torch.long), torch.ones(3, 4), torch.ones(4, 6)
        )
    with pytest.raises(ValueError, match="max_position"):
        ch.CoPE(4, 0)


# --- PaTH
# ------------------------------------------------------------------------------


def reference_path_logits(q, k, w, beta) -> np.ndarray:
    """q_m^T H_m ... H_{n+1} k_n with explicit matrices, float64."""
    T, d = q.shape
    logits = np.full((T, T), np.nan)
    for m in range(T):
        for n in range(m + 1):
            product = np.eye(d)
            for t in range(n + 1, m + 1):
                product = (np.eye(d) - beta[t] * np.outer(w[t], w[t])) @ product
            logits[m, n] = q[m] @ product @ k[n]
    return logits


@settings(max_examples=25, deadline=None)
@given(seed=SEEDS, T=st.integers(1, 8), d=st.integers(1, 6))
def test_path_scores_match_explicit_products(seed, T, d) -> None:
    generator = np.random.default_rng(seed)
    q, k, w = generator.normal(size=(3, T, d))
    w /= np.linalg.norm(w, axis=-1, keepdims=True)
    beta = generator.uniform(0, 2, size=T)
    got = ch.path_scores(*(torch.tensor(x) for x in (q, k, w, beta))).numpy()
    lower = np.tril(np.ones((T, T), dtype=bool))
    np.testing.assert_allclose(
        got[lower], reference_path_logits(q, k, w, beta)[lower], rtol=1e-10, atol=1e-10
    )


def test_path_reductions() -> None:
    generator = np.random.default_rng(2)
    q, k, w = (torch.tensor(x) for x in generator.normal(size=(3, 2, 6, 5)))
    w = w / w.norm(dim=-1, keepdim=True)
    lower = torch.ones(6, 6, dtype=torch.bool).tril()
    nope = ch.path_scores(q, k, w, torch.zeros(2, 6, dtype=torch.float64))
    assert (nope - q @ k.transpose(-2, -1))[:, lower].abs().max() < 1e-12
    # one fixed w and beta: the logit depends on m - n only
    fixed = ch.path_scores(
        q[:1].expand(2, -1, -1),
        k[:1].expand(2, -1, -1),
        w[:1, :1].expand(2, 6, -1),
        torch.full((2, 6), 1.5, dtype=torch.float64),
    )
    reflect = torch.eye(5, dtype=torch.float64) - 1.5 * torch.outer(w[0, 0], w[0, 0])
    for m in range(6):
        for n in range(m + 1):
            expected = q[0, m] @ torch.linalg.matrix_power(reflect, m - n) @ k[0, n]
            assert abs(fixed[0, m, n] - expected) < 1e-12
    householder = ch.householder_like(w[0, 0], 2.0)
    torch.testing.assert_close(
        householder @ householder.T,
        torch.eye(5, dtype=torch.float64),
        rtol=0,
        atol=1e-14,
    )


def test_path_directions_are_causal_unit_and_in_range() -> None:
    torch.manual_seed(0)
    path = ch.PaTH(d_model=16, n_heads=2)
    h = torch.randn(3, 9, 16, generator=torch.Generator().manual_seed(1))
    w, beta = path.directions(h)
    assert w.shape == (3, 2, 9, 8) and beta.shape == (3, 2, 9)
    torch.testing.assert_close(w.norm(dim=-1), torch.ones(3, 2, 9))
    assert ((beta > 0) & (beta < 2)).all()
    later = h.clone()
    later[:, 5:] += 1.0  # change tokens 5.. : directions of tokens 0..4 must not move
    w2, beta2 = path.directions(later)
    assert torch.equal(w2[:, :, :5], w[:, :, :5]) and torch.equal(
        beta2[:, :, :5], beta[:, :, :5]
    )
    assert not torch.equal(w2[:, :, 5], w[:, :, 5])


def test_path_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="norm 1"):
        ch.householder_like(torch.ones(3), 1.0)
    with pytest.raises(ValueError, match="vector"):
        ch.householder_like(torch.ones(2, 2), 1.0)
    with pytest.raises(ValueError, match="shape of q"):
        ch.path_scores(
            torch.ones(4, 3), torch.ones(4, 3), torch.ones(4, 2), torch.ones(4)
        )
    with pytest.raises(ValueError, match="shape of q"):
        ch.path_scores(
            torch.ones(4, 3), torch.ones(4, 3), torch.ones(4, 3), torch.ones(3)
        )
    with pytest.raises(ValueError, match="multiple of n_heads"):
        ch.PaTH(10, 4)
    with pytest.raises(ValueError, match="^q must"):  # the message names the bad one
        ch.path_scores(
            torch.ones(4, 3, dtype=torch.long),
            torch.ones(4, 3),
            torch.ones(4, 3),
            torch.ones(4),
        )
    with pytest.raises(ValueError, match="^k must"):
        ch.path_scores(
            torch.ones(4, 3),
            torch.ones(4, 3, dtype=torch.long),
            torch.ones(4, 3),
            torch.ones(4),
        )


# --- tasks
# -----------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(seed=SEEDS, length=st.integers(2, 40))
def test_count_batch_follows_the_rules(seed, length) -> None:
    tokens, targets = ch.count_batch(torch.Generator().manual_seed(seed), 6, length)
    assert (tokens[:, 0] == ch.BOS).all() and (targets[:, 0] == ch.IGNORE).all()
    for row, answers in zip(tokens.tolist(), targets.tolist(), strict=True):
        value = 0
        for token, answer in zip(row[1:], answers[1:], strict=True):
            assert token in (14, 15) or 8 <= token <= 13
            if token == 15:
                value = 0
            elif token == 14:
                value = min(value + 1, 7)
            assert answer == value


@settings(max_examples=30, deadline=None)
@given(seed=SEEDS, length=st.integers(3, 41))
def test_flip_flop_batch_follows_the_rules(seed, length) -> None:
    tokens, targets = ch.flip_flop_batch(torch.Generator().manual_seed(seed), 6, length)
    for row, answers in zip(tokens.tolist(), targets.tolist(), strict=True):
        assert row[0] == ch.BOS and row[1] == 10
        memory = None
        for m in range(1, length):
            if m % 2:
                assert row[m] in (10, 11, 12)
                assert answers[m] == (memory if row[m] == 11 else ch.IGNORE)
            else:
                assert row[m] in (0, 1) and answers[m] == ch.IGNORE
                if row[m - 1] == 11:
                    assert row[m] == memory
                if row[m - 1] == 10:
                    memory = row[m]


def test_task_tokens_have_the_stated_frequencies() -> None:
    tokens, _ = ch.count_batch(torch.Generator().manual_seed(0), 2000, 33)
    body = tokens[:, 1:].flatten()
    n = body.numel()  # 64 000 tokens: a frequency's standard error is below 0.002
    assert abs((body == 15).float().mean() - 0.15) < 0.01
    assert abs((body == 14).float().mean() - 0.30) < 0.01
    for filler in range(8, 14):
        assert abs((body == filler).float().mean() - 0.55 / 6) < 0.01
    assert n == 64_000
    tokens, _ = ch.flip_flop_batch(torch.Generator().manual_seed(0), 2000, 33)
    later = tokens[:, 3::2].flatten()  # instructions after the first
    for instruction, p in ((10, 0.15), (11, 0.35), (12, 0.5)):
        assert abs((later == instruction).float().mean() - p) < 0.01
    bits = tokens[:, 2::2].flatten()  # every value token, read or not
    assert abs(bits.float().mean() - 0.5) < 0.01


def test_tasks_are_seeded_and_reject_bad_input() -> None:
    for task in ch.LAB_TASKS.values():
        a = task(torch.Generator().manual_seed(3), 4, 12)
        b = task(torch.Generator().manual_seed(3), 4, 12)
        assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    with pytest.raises(ValueError, match="generator"):
        ch.count_batch(3, 4, 12)
    with pytest.raises(ValueError, match="batch_size"):
        ch.flip_flop_batch(torch.Generator(), 0, 12)
    with pytest.raises(ValueError, match="length"):
        ch.flip_flop_batch(torch.Generator(), 2, 2)
    with pytest.raises(ValueError, match="length"):
        ch.copy_batch(torch.Generator(), 2, 4)
    with pytest.raises(ValueError, match="sum below 1"):
        ch.count_batch(torch.Generator(), 2, 8, p_reset=0.6, p_plus=0.5)
    with pytest.raises(ValueError, match="positive"):
        ch.flip_flop_batch(torch.Generator(), 2, 8, p_write=0.0)


# --- the model and the trainer
# ---------------------------------------------------------


@pytest.mark.parametrize(
    "scheme", ["rope", "nope", "alibi", "t5", "fire", "cope", "path"]
)
def test_lab_transformer_is_causal(scheme) -> None:
    torch.manual_seed(0)
    model = ch.LabTransformer(ch.LabConfig(scheme=scheme)).eval()
    tokens = torch.randint(0, 17, (2, 12), generator=torch.Generator().manual_seed(1))
    changed = tokens.clone()
    changed[:, 8:] = (changed[:, 8:] + 1) % 17
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    torch.testing.assert_close(a[:, :8], b[:, :8], rtol=0, atol=1e-5)
    assert (a[:, 8:] - b[:, 8:]).abs().max() > 1e-4


@pytest.mark.parametrize("scheme", ["rope", "nope", "alibi"])
def test_lab_transformer_is_chapter_8s_model(scheme) -> None:
    """Same parameter shapes as Chapter 8's TinyTransformer, and with the same weights
    the same logits (RoPE, NoPE, ALiBi)."""
    ch8 = load_chapter("08_does_position_matter")
    theirs = ch8.TinyTransformer(ch8.ModelConfig(vocab_size=17, scheme=scheme)).eval()
    ours = ch.LabTransformer(ch.LabConfig(scheme=scheme)).eval()
    assert len(ours.blocks) == 2
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: v.shape for k, v in theirs.state_dict().items()
    }
    ours.load_state_dict(theirs.state_dict())
    tokens = torch.randint(0, 17, (3, 11), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.testing.assert_close(ours(tokens), theirs(tokens), rtol=0, atol=1e-6)


def test_lab_per_layer_modules() -> None:
    for scheme in ("cope", "path"):
        model = ch.LabTransformer(ch.LabConfig(scheme=scheme))
        assert len(model.layer_positions) == 2
        assert model.layer_positions[0] is not model.layer_positions[1]
    t5 = ch.LabTransformer(ch.LabConfig(scheme="t5")).position
    assert isinstance(t5, ch.T5Bias) and (t5.num_buckets, t5.max_distance) == (16, 16)
    assert t5.table.weight.shape == (16, 4)


def test_lab_rejects_bad_configurations() -> None:
    with pytest.raises(ValueError, match="unknown scheme"):
        ch.lab_position(ch.LabConfig(scheme="xpos"))
    with pytest.raises(ValueError, match="multiple of n_heads"):
        ch.lab_position(ch.LabConfig(d_model=30))
    with pytest.raises(ValueError, match="train_length"):
        ch.lab_position(ch.LabConfig(train_length=1))
    model = ch.LabTransformer(ch.LabConfig(scheme="cope"))
    with pytest.raises(ValueError, match="integer tensor"):
        model(torch.zeros(2, 5))
    with pytest.raises(ValueError, match="positions"):
        model(torch.zeros(2, 5, dtype=torch.long), positions=torch.arange(4))


def test_side_by_side_equals_separate_runs() -> None:
    train = ch.TrainConfig(steps=4, batch_size=4, length=10, lr=3e-3, warmup=2)
    config = ch.LabConfig(scheme="cope", train_length=10)
    runs = [(ch.count_batch, 0), (ch.flip_flop_batch, 1)]
    together = ch.train_side_by_side(config, runs, train, progress=False)
    for run, model in zip(runs, together, strict=True):
        alone = ch.train_side_by_side(config, [run], train, progress=False)[0]
        for (name, a), (_, b) in zip(
            model.named_parameters(), alone.named_parameters(), strict=True
        ):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-5, msg=name)
    # run i starts from torch.manual_seed(seed)'s weights
    torch.manual_seed(1)
    fresh = ch.LabTransformer(config)
    untrained = ch.train_side_by_side(
        config, [(ch.count_batch, 1)], ch.TrainConfig(steps=0), progress=False
    )[0]
    for a, b in zip(fresh.parameters(), untrained.parameters(), strict=True):
        assert torch.equal(a, b)


def test_side_by_side_learns_copy() -> None:
    train = ch.TrainConfig(steps=120, batch_size=16, length=16, lr=3e-3)
    model = ch.train_side_by_side(
        ch.LabConfig(scheme="rope"), [(ch.copy_batch, 0)], train, progress=False
    )[0]
    accuracy = ch.accuracy_by_position(model, ch.copy_batch, 16, n_sequences=128)
    assert np.nanmean(accuracy) > 0.5  # chance is 1/16


def test_side_by_side_rejects_bad_runs() -> None:
    with pytest.raises(ValueError, match="runs"):
        ch.train_side_by_side(ch.LabConfig(), [])
    with pytest.raises(ValueError, match="runs"):
        ch.train_side_by_side(ch.LabConfig(), [(ch.count_batch, 0.5)])
    with pytest.raises(ValueError, match="unknown scheme"):
        ch.train_side_by_side(ch.LabConfig(scheme="bad"), [(ch.count_batch, 0)])


# --- the exercise checks
# ---------------------------------------------------------------


def good_count_positions(gates):
    if gates.ndim < 2 or gates.shape[-1] != gates.shape[-2]:
        raise ValueError("gates must have shape (..., T, T)")
    T = gates.shape[-1]
    out = torch.zeros_like(gates)
    for m in range(T):
        for n in range(m + 1):
            out[..., m, n] = gates[..., m, n : m + 1].sum(-1)
    return out


def test_count_positions_check(capsys) -> None:
    passes(ch.check_count_positions, good_count_positions, 5, capsys)

    def forward_sum(gates):
        good_count_positions(gates)
        lower = torch.ones(gates.shape[-2:]).tril()
        return (gates * lower).cumsum(-1) * lower

    fails(ch.check_count_positions, forward_sum, "a forward sum")

    def without_key(gates):
        return good_count_positions(gates) - torch.tril(gates)  # sum over n + 1 .. m

    fails(ch.check_count_positions, without_key, "the key itself left out")

    def unmasked(gates):
        good_count_positions(gates)
        return gates.flip(-1).cumsum(-1).flip(-1)

    fails(ch.check_count_positions, unmasked, "no causal mask")

    def no_error(gates):
        if gates.shape[-1] != gates.shape[-2]:
            return gates
        return good_count_positions(gates)

    fails(ch.check_count_positions, no_error, "ValueError")


def good_path_transform(ws, betas):
    if betas.shape != ws.shape[:1]:
        raise ValueError("betas must hold one number per row of ws")
    product = np.eye(ws.shape[1])
    for w, beta in zip(ws.numpy(), betas.numpy(), strict=True):
        product = (np.eye(len(w)) - beta * np.outer(w, w)) @ product
    return torch.tensor(product)


def test_path_transform_check(capsys) -> None:
    passes(ch.check_path_transform, good_path_transform, 5, capsys)

    def reversed_order(ws, betas):
        good_path_transform(ws, betas)
        return good_path_transform(ws.flip(0), betas.flip(0))

    fails(ch.check_path_transform, reversed_order, "wrong order")

    def beta_ignored(ws, betas):
        return good_path_transform(ws, torch.ones_like(betas))

    fails(ch.check_path_transform, beta_ignored, "beta ignored")

    def no_error(ws, betas):
        return (
            good_path_transform(ws, betas[: len(ws)])
            if len(betas) == len(ws)
            else (torch.eye(ws.shape[1]))
        )

    fails(ch.check_path_transform, no_error, "ValueError")
