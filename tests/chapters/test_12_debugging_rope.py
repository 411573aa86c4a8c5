"""Chapter 12 (the debugging lab): the measuring functions against independent
references (transformers, closed forms, hand-computed cases), their input validation,
and the six station checks: an independent solution passes, and every typical mistake
a check claims to recognise is fed in and named in the message."""

from __future__ import annotations

import copy
import logging
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import Llama4TextConfig, Llama4TextModel, LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.cohere2 import modeling_cohere2
from transformers.models.deepseek_v3 import modeling_deepseek_v3
from transformers.models.gemma3 import modeling_gemma3
from transformers.models.llama import modeling_llama
from transformers.models.llama.modeling_llama import (
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)
from transformers.models.llama4 import modeling_llama4

from bookkit.testing import assert_holds_values, fails, load_chapter, passes

pytestmark = pytest.mark.unit
CH = load_chapter("12_debugging_rope")


def hf_rope(x: torch.Tensor, position_ids: torch.Tensor, base: float = 1e4):
    """transformers' split-halves RoPE of x (B, H, T, D)."""
    d = x.shape[-1]
    config = LlamaConfig(
        hidden_size=2 * d,
        num_attention_heads=2,
        head_dim=d,
        rope_parameters={"rope_type": "default", "rope_theta": base},
    )
    cos, sin = LlamaRotaryEmbedding(config)(x.float(), position_ids)
    return apply_rotary_pos_emb(x.float(), x.float(), cos, sin)[0]


U32 = 2.0**-24  # float32's unit roundoff, stated here


def float32_rope_bound(x: torch.Tensor, max_angle: float, base: float = 1e4):
    """How far a float32 RoPE of x (transformers') may be from an exact one, for every
    coordinate (split halves): tables within g = max_angle (ln b + 7)u + 4u (the angle's
    relative error from exponent, power within 2 ulp, reciprocal and product; cos and
    sin within 2 ulp), Chapter 11's lemma for the products and the sum, plus u for x
    itself rounded to float32 and for a float32 result: (2u(1+u)(1+g) + g + 2u) times
    |x_i| + |x_i+d/2|."""
    g = max_angle * (math.log(base) + 7) * U32 + 4 * U32
    a = x.double().abs()
    half = x.shape[-1] // 2
    pair = a[..., :half] + a[..., half:]
    return (2 * U32 * (1 + U32) * (1 + g) + g + 2 * U32) * torch.cat((pair, pair), -1)


def logit_bound(q, k, q_bound, k_bound):
    """|q.k - q'.k'| for |q - q'| <= q_bound and |k - k'| <= k_bound entrywise, summed
    over the last axis (the sum itself in float64: its rounding is negligible)."""
    qa, ka = q.double().abs(), k.double().abs()
    return qa @ k_bound.mT + q_bound @ ka.mT + q_bound @ k_bound.mT


def permutation(d: int) -> torch.Tensor:
    """Evens then odds, written out here (not the chapter's function)."""
    return torch.tensor([*range(0, d, 2), *range(1, d, 2)])


# ---------------------------------------------------------------- measuring functions


def test_interleaved_reference_hand_cases() -> None:
    m = 3.0
    x = torch.tensor([1.0, 0.0, 0.0, 1.0], dtype=torch.float64).reshape(1, 1, 1, 4)
    got = CH.rope_interleaved_reference(x, torch.tensor([[m]]), base=100.0)
    # pair 0 at angle m (theta_0 = 1): (1, 0) -> (cos m, sin m);
    # pair 1 at angle m / 10 (theta_1 = 100**(-1/2)): (0, 1) -> (-sin, cos)
    want = [math.cos(m), math.sin(m), -math.sin(m / 10), math.cos(m / 10)]
    assert torch.allclose(got.flatten(), torch.tensor(want, dtype=torch.float64))
    assert got.dtype == torch.float64


@settings(max_examples=15, deadline=None)
@given(
    batch=st.integers(1, 3),
    heads=st.integers(1, 3),
    length=st.integers(1, 6),
    half=st.integers(1, 8),
    seed=st.integers(0, 2**16),
)
def test_interleaved_reference_matches_transformers(batch, heads, length, half, seed):
    g = torch.Generator().manual_seed(seed)
    d = 2 * half
    x = torch.randn(batch, heads, length, d, generator=g)
    positions = torch.randint(0, 3000, (batch, length), generator=g)
    perm = permutation(d)
    ours = CH.rope_interleaved_reference(x, positions)[..., perm]
    assert ours.dtype == torch.float32
    # float64 rounded once to float32 (u) against transformers in float32
    for base in (1e4, 500.0):
        ours = CH.rope_interleaved_reference(x, positions, base)[..., perm]
        theirs = hf_rope(x[..., perm], positions, base)
        limit = float32_rope_bound(x[..., perm], 2999.0, base)
        assert bool(((ours.double() - theirs.double()).abs() <= limit).all())


def test_interleaved_reference_validates() -> None:
    with pytest.raises(ValueError, match="even"):
        CH.rope_interleaved_reference(torch.zeros(1, 1, 2, 3), torch.zeros(1, 2))


def test_offset_errors_hand_case() -> None:
    expected = torch.zeros(2, 3, 3)
    logits = expected.clone()
    logits[0, 1, 0] = 0.5  # m - n = 1
    logits[1, 2, 1] = -0.75  # m - n = 1, larger
    logits[0, 2, 0] = 2.0  # m - n = 2
    logits[1, 0, 2] = 9.0  # m - n = -2: not a causal pair, ignored
    logits[0, 1, 1] = 0.25  # m - n = 0
    assert CH.offset_errors(logits, expected).tolist() == [0.25, 0.75, 2.0]
    assert CH.offset_errors(logits[0], expected[0]).tolist() == [0.25, 0.5, 2.0]


def test_offset_errors_validates() -> None:
    with pytest.raises(TypeError, match="tensors"):
        CH.offset_errors([[0.0]], torch.zeros(1, 1))
    with pytest.raises(ValueError, match="one shape"):
        CH.offset_errors(torch.zeros(2, 2), torch.zeros(3, 3))
    with pytest.raises(ValueError, match="one shape"):
        CH.offset_errors(torch.zeros(3), torch.zeros(3))
    with pytest.raises(ValueError, match="last two axes"):
        CH.offset_errors(torch.zeros(2, 3), torch.zeros(2, 3))


def test_head_counts_validate() -> None:
    CH.check_head_counts(4, 2)
    CH.check_head_counts(3, 3)
    for n_heads, n_kv in ((0, 1), (4, 0), (True, 1), (4.0, 2), (4, 3)):
        with pytest.raises(ValueError, match="n_heads|n_kv_heads"):
            CH.check_head_counts(n_heads, n_kv)


def test_gqa_logits_against_an_explicit_loop() -> None:
    g = torch.Generator().manual_seed(5)
    T, d_model, head_dim = 5, 6, 4
    X = torch.randn(T, d_model, generator=g, dtype=torch.float64)
    W_q = torch.randn(4 * head_dim, d_model, generator=g, dtype=torch.float64)
    W_k = torch.randn(2 * head_dim, d_model, generator=g, dtype=torch.float64)

    def identity(x, position_ids):
        return x

    got = CH.gqa_logits(W_q, W_k, X, 4, 2, identity)
    assert got.shape == (4, T, T)
    for h in range(4):
        kv = h // 2  # heads 0, 1 read key head 0; heads 2, 3 read key head 1
        q = X @ W_q[h * head_dim : (h + 1) * head_dim].T
        k = X @ W_k[kv * head_dim : (kv + 1) * head_dim].T
        assert torch.allclose(got[h], q @ k.T)
    rotated = CH.gqa_logits(W_q, W_k, X, 4, 2, CH.apply_rope_halves)  # float64
    for h in range(4):
        kv = h // 2
        raw_q = (X @ W_q[h * head_dim : (h + 1) * head_dim].T)[None, None]
        raw_k = (X @ W_k[kv * head_dim : (kv + 1) * head_dim].T)[None, None]
        q = hf_rope(raw_q, torch.arange(T)[None])[0, 0].double()  # float32
        k = hf_rope(raw_k, torch.arange(T)[None])[0, 0].double()
        limit = logit_bound(
            q,
            k,
            float32_rope_bound(raw_q, T - 1)[0, 0],
            float32_rope_bound(raw_k, T - 1)[0, 0],
        )
        assert bool(((rotated[h] - q @ k.T).abs() <= limit).all())


def test_gqa_logits_validates() -> None:
    X = torch.zeros(3, 4)
    with pytest.raises(ValueError, match="W_q"):
        CH.gqa_logits(
            torch.zeros(6, 4), torch.zeros(4, 4), X, 4, 2, CH.apply_rope_halves
        )
    with pytest.raises(ValueError, match="W_k"):
        CH.gqa_logits(
            torch.zeros(8, 4), torch.zeros(8, 4), X, 4, 2, CH.apply_rope_halves
        )
    with pytest.raises(ValueError, match="n_kv_heads"):
        CH.gqa_logits(
            torch.zeros(8, 4), torch.zeros(4, 4), X, 4, 3, CH.apply_rope_halves
        )


def test_cos_error_by_position() -> None:
    model = CH.tiny_llama()
    rotary = model.model.rotary_emb
    errors = CH.cos_error_by_position(rotary, 8192)
    assert errors.shape == (8192,) and errors.dtype == torch.float64
    # 1e-3 from the bound: theta_0 = 1 exactly, and for i >= 1 the angle m theta_i <=
    # 8191 * 10000**(-1/8) = 2590 rad has relative error <= 6u (exponents 2i/16 exact,
    # power within 2 ulp, reciprocal, product): 2590 * 6u + 4u = 9.3e-4
    assert errors[0] == 0 and errors.max() < 1e-3 and errors[1000] > 0
    cast = copy.deepcopy(rotary).to(torch.bfloat16)
    cast_errors = CH.cos_error_by_position(cast, 8001)
    assert cast_errors.shape == (8001,) and cast_errors[8000] > 1.0
    assert cast_errors[1] < 0.01  # small at small positions
    assert CH.cos_error_by_position(rotary, 1).tolist() == [0.0]  # position 0 only
    # a different base in the config: the exact values follow it
    config = LlamaConfig(
        hidden_size=32,
        num_attention_heads=2,
        head_dim=16,
        rope_parameters={"rope_type": "default", "rope_theta": 500.0},
    )
    # the same bound with base 500: 3999 * 500**(-1/8) * 6u + 4u = 6.6e-4
    assert CH.cos_error_by_position(LlamaRotaryEmbedding(config), 4000).max() < 1e-3
    with pytest.raises(TypeError, match="rotary"):
        CH.cos_error_by_position(torch.nn.Linear(2, 2), 10)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="num_positions"):
            CH.cos_error_by_position(rotary, bad)


def test_mask_positions() -> None:
    mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1], [0, 1, 1, 1]])
    assert CH.mask_positions(mask).tolist() == [
        [0, 0, 0, 1],
        [0, 1, 2, 3],
        [0, 0, 1, 2],
    ]
    assert CH.mask_positions(mask.bool()).tolist()[0] == [0, 0, 0, 1]
    with pytest.raises(ValueError, match="batch, seq_len"):
        CH.mask_positions(torch.tensor([1, 1]))
    with pytest.raises(ValueError, match="only 0"):
        CH.mask_positions(torch.tensor([[0, 2]]))


def test_full_pass_last_logits_against_transformers() -> None:
    g = torch.Generator().manual_seed(9)
    q, k = torch.randn(2, 2, 3, 4, 8, generator=g)
    mask = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 1]])
    positions = torch.tensor([[0, 0, 1, 2], [0, 1, 2, 3]])
    q_rot, k_rot = hf_rope(q, positions), hf_rope(k, positions)
    want = torch.einsum("bhd,bhtd->bht", q_rot[:, :, -1], k_rot)
    got = CH.full_pass_last_logits(q, k, mask)  # float32 inputs, Chapter 6's angles
    assert got.shape == (2, 3, 4)
    # both sides round in float32: each rotation within the bound of the exact one,
    # the dot products of 8 terms within gamma_8 of their float32 sums
    q_b, k_b = 2 * float32_rope_bound(q, 3.0), 2 * float32_rope_bound(k, 3.0)
    limit = logit_bound(q_rot[:, :, -1:], k_rot, q_b[:, :, -1:], k_b)[:, :, 0]
    gamma8 = 8 * U32 / (1 - 8 * U32)
    limit = (
        limit
        + 2
        * gamma8
        * (q_rot[:, :, -1:].double().abs() @ k_rot.double().abs().mT)[:, :, 0]
    )
    assert bool(((got.double() - want.double()).abs() <= limit).all())
    other = CH.full_pass_last_logits(q, k, mask, base=100.0)
    assert not torch.allclose(other, got, atol=1e-3)
    with pytest.raises(ValueError, match="one shape"):
        CH.full_pass_last_logits(q, k[..., :2, :], mask)
    with pytest.raises(ValueError, match="attention_mask"):
        CH.full_pass_last_logits(q, k, mask[:, 1:])


LLAMA31 = {
    "rope_type": "llama3",
    "rope_theta": 500000.0,
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}


def test_read_with_transformers() -> None:
    params = copy.deepcopy(LLAMA31)
    reading = CH.read_with_transformers(params, 128, 131072)
    assert params == LLAMA31  # the caller's dict is not edited
    config = LlamaConfig(
        hidden_size=256,
        num_attention_heads=2,
        head_dim=128,
        max_position_embeddings=131072,
        rope_parameters=copy.deepcopy(LLAMA31),
    )
    inv_freq, factor = ROPE_INIT_FUNCTIONS["llama3"](config)
    assert torch.equal(reading["inv_freq"], inv_freq)
    assert reading["attention_factor"] == factor == 1.0
    assert reading["error"] is None and reading["logged"] == []
    yarn = CH.read_with_transformers(
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64},
        16,
        256,
    )
    assert yarn["attention_factor"] == pytest.approx(0.1 * math.log(4.0) + 1)
    default = CH.read_with_transformers(
        {"rope_type": "default", "rope_theta": 100.0}, 4, 64
    )
    assert torch.allclose(default["inv_freq"], torch.tensor([1.0, 0.1]))
    library = logging.getLogger("transformers")
    handlers, level = library.handlers[:], library.level
    half = CH.read_with_transformers({"rope_type": "linear", "factor": 0.5}, 8, 64)
    assert library.handlers == handlers and library.level == level
    assert "factor" in half["logged"][0] and half["error"] is None
    missing = {k: v for k, v in LLAMA31.items() if k != "low_freq_factor"}
    broken = CH.read_with_transformers(missing, 128, 131072)
    assert (
        broken["error"].startswith("KeyError") and "low_freq_factor" in broken["error"]
    )
    assert broken["inv_freq"] is None and broken["attention_factor"] is None
    with pytest.raises(TypeError, match="dict"):
        CH.read_with_transformers([("rope_type", "linear")], 8, 64)


def test_read_with_transformers_hears_a_library_silenced_before() -> None:
    """After transformers was silenced and has already dropped a warning (so that its
    module loggers cached 'disabled'), the reading still collects the message, and
    leaves the library as silent as it was."""
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        LlamaConfig(head_dim=8, rope_parameters={"rope_type": "linear", "factor": 0.5})
        half = CH.read_with_transformers({"rope_type": "linear", "factor": 0.5}, 8, 64)
        assert half["logged"] and "factor" in half["logged"][0]
        assert hf_logging.get_verbosity() == hf_logging.ERROR
    finally:
        hf_logging.set_verbosity(verbosity)


def closed_form_dynamic(d, base, factor, length, seq_len) -> torch.Tensor:
    """b' = b * s_eff**(d / (d - 2)), s_eff = s T / L0 - (s - 1) past L0, in float64."""
    s_eff = max(1.0, factor * seq_len / length - (factor - 1))
    new_base = base * s_eff ** (d / (d - 2))
    return new_base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)


@pytest.mark.parametrize("seq_len", [1, 64, 65, 100, 500])
def test_dynamic_inv_freq_closed_form(seq_len) -> None:
    got = CH.dynamic_inv_freq(16, 10000.0, 2.0, 64, seq_len)
    assert got.shape == (8,)
    # float32 against float64: relative error <= (ln b' + 6)u < 1.2e-6 for the bases
    # b' <= 3e5 here; rtol 1e-5 stays far below the effects tested (factors of 2)
    assert torch.allclose(
        got.double(), closed_form_dynamic(16, 1e4, 2.0, 64, seq_len), rtol=1e-5
    )
    other = CH.dynamic_inv_freq(32, 500.0, 4.0, 100, seq_len)
    assert torch.allclose(
        other.double(), closed_form_dynamic(32, 500.0, 4.0, 100, seq_len), rtol=1e-5
    )


def test_dynamic_inv_freq_validates() -> None:
    for bad in (0, -3, 2.0, True):
        with pytest.raises(ValueError, match="seq_len"):
            CH.dynamic_inv_freq(16, 1e4, 2.0, 64, bad)
    for bad in (0, 2, 7, 16.0, False):
        with pytest.raises(ValueError, match="head_dim"):
            CH.dynamic_inv_freq(bad, 1e4, 2.0, 64, 10)
    smallest = CH.dynamic_inv_freq(4, 1e4, 2.0, 64, 128)  # s_eff = 3, base 1e4 * 9
    assert torch.allclose(
        smallest.double(), torch.tensor([1.0, 90000.0**-0.5], dtype=torch.float64)
    )


def test_rope_with_inv_freq() -> None:
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 5, 8, generator=g, dtype=torch.float64)
    positions = torch.tensor([0, 3, 7, 100, 2000])
    inv_freq = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    got = CH.rope_with_inv_freq(x, positions, inv_freq)
    want = hf_rope(x[:, None].float(), positions[None].expand(2, 5))[:, 0]
    assert got.dtype == torch.float64
    limit = float32_rope_bound(x, 2000.0)  # transformers in float32, angles <= 2000
    assert bool(((got - want.double()).abs() <= limit).all())
    pair = CH.rope_with_inv_freq(
        torch.tensor([[0.0, 1.0]]), torch.tensor([2]), torch.tensor([0.5])
    )
    assert torch.allclose(
        pair, torch.tensor([[-math.sin(1.0), math.cos(1.0)]], dtype=torch.float64)
    )
    with pytest.raises(ValueError, match="inv_freq"):
        CH.rope_with_inv_freq(x, positions, inv_freq[:3])
    with pytest.raises(ValueError, match="positions"):
        CH.rope_with_inv_freq(x, positions[:4], inv_freq)


def test_tiny_llama_is_seeded_and_leaves_the_global_generator_alone() -> None:
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a, b, c = CH.tiny_llama(), CH.tiny_llama(), CH.tiny_llama(seed=1)
    assert torch.rand(1) == before
    wa, wb, wc = (m.model.layers[0].self_attn.q_proj.weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)
    config = a.config
    assert (
        config.head_dim,
        config.num_attention_heads,
        config.num_key_value_heads,
        config.max_position_embeddings,
    ) == (16, 4, 2, 8192)
    assert config.rope_parameters["rope_theta"] == 10000.0
    assert not a.training and wa.dtype == torch.float32
    assert (
        config.num_hidden_layers,
        config.hidden_size,
        config.vocab_size,
        config.intermediate_size,
    ) == (1, 64, 64, 128)


def test_rows_to_halves_hand_case() -> None:
    W = torch.arange(16.0)[:, None]
    assert CH.rows_to_halves(W, 2).flatten().tolist() == [
        0,
        2,
        4,
        6,
        1,
        3,
        5,
        7,
        8,
        10,
        12,
        14,
        9,
        11,
        13,
        15,
    ]
    assert CH.rows_to_halves(W, 1)[:4].flatten().tolist() == [0, 2, 4, 6]
    back = CH.rows_to_halves(W, 2, inverse=True)
    assert back.flatten().tolist()[:8] == [0, 4, 1, 5, 2, 6, 3, 7]
    assert torch.equal(CH.rows_to_halves(back, 2), W)


def test_near() -> None:
    a = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert CH.near(a, a.clone()) and CH.near(a, a.float())
    zero = torch.zeros(3, dtype=torch.float64)  # only the absolute tolerance counts
    assert CH.near(zero, zero + 5e-5) and not CH.near(zero, zero + 1e-3)
    assert CH.near(zero, zero + 1e-3, atol=1e-2)
    assert not CH.near(a, a[:1]) and not CH.near(a, [1.0, 2.0])


def rope_by_hand(x: torch.Tensor, position: float, base: float = 1e4) -> torch.Tensor:
    """Split-halves RoPE of one vector x (d,) in float64, plane by plane with math's
    cos and sin (written here, not the chapter's function)."""
    d = x.shape[0]
    out = torch.empty(d, dtype=torch.float64)
    for i in range(d // 2):
        angle = position * base ** (-2 * i / d)
        a, b = x[i].item(), x[i + d // 2].item()
        out[i] = a * math.cos(angle) - b * math.sin(angle)
        out[i + d // 2] = b * math.cos(angle) + a * math.sin(angle)
    return out


def test_logits_at_positions_against_transformers() -> None:
    g = torch.Generator().manual_seed(10)
    q, k = torch.randn(2, 2, 3, 5, 8, generator=g)
    positions = torch.tensor([[0, 0, 7, 3, 3], [4, 1, 0, 2, 9]])
    q_rot, k_rot = hf_rope(q, positions), hf_rope(k, positions)
    want = torch.einsum("bhd,bhtd->bht", q_rot[:, :, -1], k_rot)
    got = CH.logits_at_positions(q, k, positions)  # float32 on both sides
    assert got.shape == (2, 3, 5)
    # as for full_pass_last_logits above: each rotation within its bound of the exact
    # one (angles up to 9 rad), the dot products of 8 terms within gamma_8
    q_b, k_b = 2 * float32_rope_bound(q, 9.0), 2 * float32_rope_bound(k, 9.0)
    limit = logit_bound(q_rot[:, :, -1:], k_rot, q_b[:, :, -1:], k_b)[:, :, 0]
    gamma8 = 8 * U32 / (1 - 8 * U32)
    limit = (
        limit
        + 2
        * gamma8
        * (q_rot[:, :, -1:].double().abs() @ k_rot.double().abs().mT)[:, :, 0]
    )
    assert bool(((got.double() - want.double()).abs() <= limit).all())
    with pytest.raises(ValueError, match="one shape"):
        CH.logits_at_positions(q, k[..., :2, :], positions)
    with pytest.raises(ValueError, match="positions must have shape"):
        CH.logits_at_positions(q, k, positions[:, 1:])


def test_a_buggy_decoding_step_is_a_full_pass_at_other_ids() -> None:
    """Station 4's claim, against decoding steps written here with a cache: a query at
    p, keys rotated at n and then again at s, give the logits of ids n + s and p."""
    g = torch.Generator().manual_seed(12)
    q, k = torch.randn(2, 2, 2, 5, 6, generator=g, dtype=torch.float64)
    cached = [[0, 0, 0, 1], [0, 1, 2, 3]]
    for new, shift in (([4, 4], [0, 0]), ([0, 0], [0, 0]), ([2, 4], [2, 4])):
        for b in range(2):
            for h in range(2):
                keys = [
                    rope_by_hand(rope_by_hand(k[b, h, t], cached[b][t]), shift[b])
                    for t in range(4)
                ] + [rope_by_hand(k[b, h, 4], new[b])]
                by_step = torch.stack(keys) @ rope_by_hand(q[b, h, 4], new[b])
                ids = torch.tensor(
                    [[n + shift[r] for n in cached[r]] + [new[r]] for r in range(2)]
                )
                at_ids = CH.logits_at_positions(q, k, ids)[b, h]
                # float64 mathematics: rounding about 1e-15, effects of order 1
                assert torch.allclose(by_step, at_ids, atol=1e-12, rtol=0)


def test_decode_mistakes_are_what_each_mistake_gives() -> None:
    """The literals of Exercise 12.4's usual mistakes against decoding steps worked out
    here in float64 (rope_by_hand), and apart from each other and the right answer."""
    q_all, k_all = CH.exact_grid((2, 2, 2, 7, 8))
    mask = [[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]]
    for step in (5, 6):
        cached = [[max(sum(row[: t + 1]) - 1, 0) for t in range(step)] for row in mask]
        real = [sum(row) for row in mask]
        ways = {  # (query and new key position, shift of the cache, rotate the new key)
            "right": (real, [0, 0], True),
            CH.DECODE_PADDING: ([step, step], [0, 0], True),
            CH.DECODE_NO_OFFSET: ([0, 0], [0, 0], True),
            CH.DECODE_ROTATED_AGAIN: (real, real, True),
            CH.DECODE_UNROTATED: (real, [0, 0], False),
            CH.DECODE_OFF_BY_ONE: ([r - 1 for r in real], [0, 0], True),
        }
        found = {}
        for name, (new, shift, rotate) in ways.items():
            last_two = torch.empty(2, 2, 2, dtype=torch.float64)
            for b in range(2):
                for h in range(2):
                    last_cached = rope_by_hand(
                        rope_by_hand(k_all[b, h, step - 1], cached[b][-1]), shift[b]
                    )
                    own = (
                        rope_by_hand(k_all[b, h, step], new[b])
                        if rotate
                        else k_all[b, h, step]
                    )
                    query = rope_by_hand(q_all[b, h, step], new[b])
                    last_two[b, h] = torch.stack((query @ last_cached, query @ own))
            found[name] = last_two
            if name != "right":
                held = torch.tensor(CH.DECODE_MISTAKES[name][step], dtype=torch.float64)
                # 12 significant digits of values below 14: within 1e-10
                assert torch.allclose(held, last_two, atol=1e-9, rtol=0), name
        want = torch.tensor(CH.DECODE_EXPECTED[step]["logits"], dtype=torch.float64)[
            ..., -2:
        ]
        assert torch.allclose(found["right"], want, atol=1e-9, rtol=0)
        names = list(found)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                gap = (found[a] - found[b]).abs().max().item()
                same = {a, b} == {CH.DECODE_NO_OFFSET, CH.DECODE_ROTATED_AGAIN}
                assert gap < 1e-12 if same else gap > 0.05, (a, b, gap)
        mask = [row + [1] for row in mask]


# ------------------------------------------------------------------ station checks


def meta_layout_solution(x, position_ids, base=10000.0):
    """Interleaved RoPE through split halves, written with index tensors."""
    d = x.shape[-1]
    perm = permutation(d)
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(d)
    return CH.apply_rope_halves(x[..., perm], position_ids, base)[..., inverse]


def test_check_11_1(capsys) -> None:
    passes(CH.check_rope_for_meta_layout, meta_layout_solution, 3, capsys)
    perm = permutation(8)
    fails(
        CH.check_rope_for_meta_layout,
        CH.apply_rope_halves,
        "case positions 0..5",
        "the bug of this station",
        "position_ids",
    )
    fails(
        CH.check_rope_for_meta_layout,
        lambda x, p: CH.apply_rope_halves(x[..., perm], p),
        "case every token at position 0",
        "left in split-halves order",
    )
    fails(
        CH.check_rope_for_meta_layout,
        lambda x, p: CH.apply_rope_halves(x[..., torch.argsort(perm)], p)[..., perm],
        "perm and its inverse are swapped",
    )
    odd = torch.tensor([1, 3, 5, 7, 0, 2, 4, 6])
    fails(
        CH.check_rope_for_meta_layout,
        lambda x, p: CH.apply_rope_halves(x[..., odd], p)[..., torch.argsort(odd)],
        "odd coordinates first",
    )
    fails(
        CH.check_rope_for_meta_layout,
        lambda x, p: 2 * meta_layout_solution(x, p),
        "none of the usual mistakes",
    )


def halves_rows(W: torch.Tensor, heads: int) -> torch.Tensor:
    rows, d_in = W.shape
    return (
        W.reshape(heads, rows // heads // 2, 2, d_in)
        .transpose(1, 2)
        .reshape(rows, d_in)
    )


def interleaved_rows(W: torch.Tensor, heads: int) -> torch.Tensor:
    rows, d_in = W.shape
    return (
        W.reshape(heads, 2, rows // heads // 2, d_in)
        .transpose(1, 2)
        .reshape(rows, d_in)
    )


def convert_solution(weights, n_heads, n_kv_heads):
    if n_heads % n_kv_heads:
        raise ValueError("n_kv_heads must divide n_heads")
    out = {key: value.clone() for key, value in weights.items()}
    out["q_proj"] = halves_rows(weights["q_proj"], n_heads)
    out["k_proj"] = halves_rows(weights["k_proj"], n_kv_heads)
    return out


def test_check_11_2(capsys) -> None:
    check = CH.check_convert_meta_attention
    passes(check, convert_solution, 3 * 6 + 1, capsys)

    def with_change(key, change):
        def candidate(weights, n_heads, n_kv_heads):
            out = convert_solution(weights, n_heads, n_kv_heads)
            out[key] = change(weights, n_heads, n_kv_heads)
            return out

        return candidate

    fails(
        check,
        with_change("q_proj", lambda w, h, kv: w["q_proj"]),
        "q_proj copied unchanged",
        "n_kv_heads = 2",
    )
    fails(
        check,
        with_change("q_proj", lambda w, h, kv: interleaved_rows(w["q_proj"], h)),
        "q_proj converted the wrong way",
    )
    fails(
        check,
        with_change("k_proj", lambda w, h, kv: w["k_proj"]),
        "k_proj copied unchanged",
    )
    fails(
        check,
        with_change("k_proj", lambda w, h, kv: interleaved_rows(w["k_proj"], kv)),
        "k_proj converted the wrong way",
    )
    fails(
        check,
        with_change("k_proj", lambda w, h, kv: halves_rows(w["k_proj"], h)),
        "k_proj permuted as n_heads heads",
    )
    fails(
        check,
        with_change("v_proj", lambda w, h, kv: halves_rows(w["v_proj"], kv)),
        "v_proj permuted",
    )
    fails(
        check,
        with_change("o_proj", lambda w, h, kv: halves_rows(w["o_proj"].T, h).T),
        "o_proj's columns permuted",
    )
    fails(
        check,
        with_change("v_proj", lambda w, h, kv: w["v_proj"] + 1),
        "none of the usual mistakes",
    )

    def drops_o(weights, n_heads, n_kv_heads):
        out = convert_solution(weights, n_heads, n_kv_heads)
        del out["o_proj"]
        return out

    fails(check, drops_o, "the four matrices come back")

    def in_place(weights, n_heads, n_kv_heads):
        out = convert_solution(weights, n_heads, n_kv_heads)
        weights["q_proj"].copy_(out["q_proj"])
        return out

    fails(check, in_place, "left unchanged")

    def no_validation(weights, n_heads, n_kv_heads):
        out = {key: value.clone() for key, value in weights.items()}
        head_dim = weights["q_proj"].shape[0] // n_heads
        out["q_proj"] = halves_rows(weights["q_proj"], n_heads)
        kv = weights["k_proj"].shape[0] // head_dim
        out["k_proj"] = halves_rows(weights["k_proj"], kv)
        return out

    fails(check, no_validation, "3 query heads", "no error")


def keep_rope_solution(model):
    keep = {
        name: buf.detach().clone()
        for name, buf in model.named_buffers()
        if name.endswith("inv_freq")
    }
    model.to(dtype=torch.bfloat16)
    for name, buf in keep.items():
        module_name, attribute = name.rsplit(".", 1)
        model.get_submodule(module_name).register_buffer(
            attribute, buf, persistent=False
        )
    return model


def test_check_11_3(capsys) -> None:
    check = CH.check_to_bfloat16_keep_rope
    passes(check, keep_rope_solution, 1 + 2 * 2 + 1, capsys)
    fails(check, lambda model: model.to(torch.bfloat16), "the bug of this station")
    fails(check, lambda model: model, "weights were not cast")

    def cast_back(model):
        model = model.to(torch.bfloat16)
        rotary = model.model.rotary_emb
        rotary.inv_freq = rotary.inv_freq.float()
        rotary.original_inv_freq = rotary.original_inv_freq.float()
        return model

    fails(check, cast_back, "cast to bfloat16 and back")

    def original_forgotten(model):
        model = keep_rope_solution(model)
        model.model.rotary_emb.original_inv_freq = (
            model.model.rotary_emb.original_inv_freq.to(torch.bfloat16)
        )
        return model

    fails(check, original_forgotten, "original_inv_freq was cast")

    def scaled(model):
        model = keep_rope_solution(model)
        model.model.rotary_emb.attention_scaling = 0.5
        return model

    fails(check, scaled, "cos error at position 8000")


def decode_solution(q_new, k_new, cached_keys, attention_mask, base=10000.0):
    if attention_mask.shape != (cached_keys.shape[0], cached_keys.shape[2]):
        raise ValueError("attention_mask must match the cache")
    position = attention_mask.sum(dim=-1).long()[:, None]
    q = hf_rope(q_new, position, base).double()
    k = hf_rope(k_new, position, base).double()
    # transformers rotates in float32: redo in float64 for the 1e-9 tolerance
    q = CH.apply_rope_halves(q_new, position, base)
    k = CH.apply_rope_halves(k_new, position, base)
    keys = torch.cat([cached_keys, k], dim=-2)
    return torch.einsum("bhd,bhtd->bht", q[:, :, 0], keys), keys


def test_check_11_4(capsys) -> None:
    check = CH.check_decode_step
    passes(check, decode_solution, 2 * 2 + 1, capsys)

    def variant(position=lambda real, mask: real, rotate=True, rerotate=False):
        """A decoding step written here, with the new token at position(real, mask)."""

        def candidate(q_new, k_new, cache, mask, base=10000.0):
            at = position(mask.sum(1, keepdim=True).long(), mask)
            q = CH.apply_rope_halves(q_new, at, base)
            k = CH.apply_rope_halves(k_new, at, base) if rotate else k_new
            if rerotate:
                cache = CH.apply_rope_halves(cache, at.expand(-1, cache.shape[2]), base)
            keys = torch.cat((cache, k), dim=2)
            return torch.einsum("bhd,bhtd->bht", q[:, :, 0], keys), keys

        return candidate

    fails(
        check,
        variant(position=lambda r, m: torch.full_like(r, m.shape[1])),
        "counts the padding",
        "transformers PR #22382",
        "step 1",
        "the cache",
    )
    fails(
        check,
        variant(position=lambda r, m: torch.zeros_like(r)),
        "no offset",
        "the cache",
    )
    fails(check, variant(rerotate=True), "rotated again", "the cache")
    fails(check, variant(rotate=False), "appended unrotated", "the cache")
    fails(check, variant(position=lambda r, m: r - 1), "off by one")
    # the same mistakes in float32 are named too
    as32 = variant(position=lambda r, m: torch.zeros_like(r))
    fails(
        check, lambda q, k, c, m: as32(q.float(), k.float(), c.float(), m), "no offset"
    )

    # logits right at step 1, wrong at step 2 only: the mistake named at step 2
    def late(q_new, k_new, cache, mask, base=10000.0):
        if mask.shape[1] == 5:
            return variant()(q_new, k_new, cache, mask, base)
        return variant(position=lambda r, m: torch.full_like(r, m.shape[1]))(
            q_new, k_new, cache, mask, base
        )

    fails(check, late, "counts the padding", "step 2")
    fails(
        check,
        lambda *args: (decode_solution(*args)[0] * 2, decode_solution(*args)[1]),
        "none of the usual mistakes",
    )
    fails(check, variant(), "a mask shorter than the cache", "no error")


def parameters_solution(checkpoint, override=None):
    def renamed(rope):
        rope = {k: v for k, v in (rope or {}).items()}
        if "type" in rope:
            rope["rope_type"] = rope.pop("type")
        return rope

    source = checkpoint.get("rope_parameters") or checkpoint.get("rope_scaling")
    result = {
        "rope_type": "default",
        "rope_theta": checkpoint.get("rope_theta", 10000.0),
    }
    result.update(renamed(source))
    extra = renamed(override)
    if (
        extra.get("rope_type") not in (None, result["rope_type"])
        and result["rope_type"] != "default"
    ):
        raise ValueError(f"checkpoint uses {result['rope_type']}")
    result.update(extra)
    if result.get("factor", 1) < 1:
        raise ValueError("factor below 1")
    if result["rope_type"] in {"yarn", "llama3", "longrope"}:
        result.setdefault(
            "original_max_position_embeddings", checkpoint["max_position_embeddings"]
        )
    return result


def test_check_11_5(capsys) -> None:
    check = CH.check_rope_parameters_for
    passes(check, parameters_solution, 5 + 2, capsys)

    def edited(change):
        def candidate(checkpoint, override=None):
            return change(parameters_solution(checkpoint, override))

        return candidate

    fails(
        check,
        edited(lambda p: {k: v for k, v in p.items() if k != "rope_theta"}),
        "rope_theta was dropped",
        "case Llama 2",
    )
    fails(
        check,
        edited(lambda p: dict(p, rope_theta=10000.0)),
        "rope_theta was reset",
        "Llama 3.1's config.json",
    )
    fails(
        check,
        edited(
            lambda p: {("type" if k == "rope_type" else k): v for k, v in p.items()}
        ),
        "'type' was kept",
    )
    fails(
        check,
        edited(
            lambda p: {
                k: v for k, v in p.items() if k != "original_max_position_embeddings"
            }
        ),
        "original_max_position_embeddings is missing",
        "Llama 3.1",
    )
    fails(check, edited(lambda p: dict(p, extra=1)), "compare key by key")

    def accepts_any_override(checkpoint, override=None):
        if override and override.get("factor", 1) < 1:
            raise ValueError("factor below 1")
        if (
            override
            and override.get("type") == "dynamic"
            and "rope_scaling" in (checkpoint)
            and checkpoint["rope_scaling"]
        ):
            return {"rope_type": "dynamic"}
        return parameters_solution(checkpoint, override)

    fails(check, accepts_any_override, "vLLM #10537", "no error")

    def accepts_small_factor(checkpoint, override=None):
        if override and override.get("factor", 1) < 1:
            return dict(override, rope_theta=10000.0)
        return parameters_solution(checkpoint, override)

    fails(check, accepts_small_factor, "a factor below 1")


def dynamic_solution(q, raw_keys, base, factor, max_position_embeddings):
    if raw_keys.shape[-1] % 2:
        raise ValueError("head_dim must be even")
    T, d = raw_keys.shape
    inv_freq = CH.dynamic_inv_freq(d, base, factor, max_position_embeddings, T)
    angles = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq.double()
    cos = torch.cat((angles.cos(), angles.cos()), -1)
    sin = torch.cat((angles.sin(), angles.sin()), -1)

    def rotate_half(x):
        return torch.cat((-x[..., d // 2 :], x[..., : d // 2]), -1)

    keys = raw_keys * cos + rotate_half(raw_keys) * sin
    query = q * cos[-1] + rotate_half(q) * sin[-1]
    return keys @ query


def test_check_11_6(capsys) -> None:
    check = CH.check_dynamic_ntk_logits
    passes(check, dynamic_solution, 5 + 1, capsys)

    def with_freqs(choose):
        def candidate(q, raw_keys, base, factor, length):
            T, d = raw_keys.shape
            now = choose(d, base, factor, length, T)
            keys = CH.rope_with_inv_freq(raw_keys, torch.arange(T), now)
            return keys @ CH.rope_with_inv_freq(q[None], torch.tensor([T - 1]), now)[0]

        return candidate

    fails(
        check,
        with_freqs(
            lambda d, b, s, n, T: CH.dynamic_inv_freq(d, b, s, n, max(T - 1, 1))
        ),
        "frequencies of length T - 1",
        "case T = 100",
    )
    fails(
        check,
        with_freqs(lambda d, b, s, n, T: CH.dynamic_inv_freq(d, b, s, n, n)),
        "the plain RoPE frequencies",
    )
    fails(
        check,
        with_freqs(
            lambda d, b, s, n, T: (
                (b * s ** (d / (d - 2)))
                ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
            )
        ),
        "factor used as the NTK factor",
        "case T = 40",
    )

    def rotated_on_insertion(q, raw_keys, base, factor, length):
        T, d = raw_keys.shape
        now = CH.dynamic_inv_freq(d, base, factor, length, T)
        keys = torch.cat(
            [
                CH.rope_with_inv_freq(
                    raw_keys[n : n + 1],
                    torch.tensor([n]),
                    CH.dynamic_inv_freq(d, base, factor, length, n + 1),
                )
                for n in range(T)
            ]
        )
        return keys @ CH.rope_with_inv_freq(q[None], torch.tensor([T - 1]), now)[0]

    fails(check, rotated_on_insertion, "transformers #25104")
    fails(
        check, lambda *args: dynamic_solution(*args) + 1.0, "none of the usual mistakes"
    )

    def no_validation(q, raw_keys, base, factor, length):
        if raw_keys.shape[-1] % 2:
            return torch.zeros(raw_keys.shape[0], dtype=torch.float64)
        return dynamic_solution(q, raw_keys, base, factor, length)

    fails(check, no_validation, "odd head_dim 7", "no error")


# ------------------------------------------------------- Station 5: vLLM and YaRN


def test_vllm_dynamic_inv_freq_is_static_ntk() -> None:
    """The formula quoted in vllm-project/vllm #5093, written out here: the base is
    multiplied by (s * s - (s - 1))**(d / (d - 2)) whatever the length."""
    d, base, s = 8, 100.0, 3.0
    got = CH.vllm_dynamic_inv_freq(d, base, s)
    new_base = base * 7.0 ** (8 / 6)  # 3 * 3 - 2 = 7
    want = torch.tensor(
        [new_base ** (-i / 8) for i in (0, 2, 4, 6)], dtype=torch.float64
    )
    assert got.dtype == torch.float64 and torch.allclose(got, want, rtol=1e-12)
    assert torch.equal(
        CH.vllm_dynamic_inv_freq(d, base, 1.0),
        base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d),
    )
    for bad in (2, 7, 8.0, True):
        with pytest.raises(ValueError, match="head_dim"):
            CH.vllm_dynamic_inv_freq(bad, base, s)
    with pytest.raises(ValueError, match="factor"):
        CH.vllm_dynamic_inv_freq(d, base, 0.5)


# ------------------------------------------------------------- the tracing workflow


def exact_tables(positions, d: int, base: float, factor: float = 1.0):
    """cos and sin (T, d), split halves, in float64, written out here (not the
    chapter's reference_tables)."""
    inv_freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = positions.double()[:, None] / factor * inv_freq
    angles = torch.cat((angles, angles), -1)
    return angles.cos(), angles.sin()


def unhooked(model: torch.nn.Module) -> bool:
    return not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


def test_trace_positions_records_what_a_llama_layer_receives_and_applies() -> None:
    model = CH.tiny_llama()
    tokens = torch.tensor([[5, 6, 7, 8, 9]])
    originals = (
        modeling_llama.apply_rotary_pos_emb,
        modeling_llama.ALL_ATTENTION_FUNCTIONS,
    )
    trace = CH.trace_positions(model, input_ids=tokens)
    assert modeling_llama.apply_rotary_pos_emb is originals[0]
    assert modeling_llama.ALL_ATTENTION_FUNCTIONS is originals[1]
    (call,) = trace.rotary_calls
    assert call["module"] == "model.rotary_emb"
    assert call["position_ids"].tolist() == [[0, 1, 2, 3, 4]]
    assert list(trace.layers) == ["model.layers.0.self_attn"]
    record = trace.layers["model.layers.0.self_attn"]
    assert record.index == 0 and trace.stray == []
    cos, sin = record.table
    assert torch.equal(cos, call["output"][0]) and torch.equal(sin, call["output"][1])
    (q, q_rotated), (k, k_rotated) = record.rotated
    assert q.shape == (1, 4, 5, 16) and k.shape == (1, 2, 5, 16)
    # transformers' rotation of what was recorded: the same operations on the same
    # tensors, so bit for bit
    q_again, k_again = apply_rotary_pos_emb(q, k, cos, sin)
    assert torch.equal(q_again, q_rotated) and torch.equal(k_again, k_rotated)
    # the query projection, recomputed from the model's own modules
    layer = model.model.layers[0]
    with torch.no_grad():
        hidden = layer.input_layernorm(model.model.embed_tokens(tokens))
        q_proj = layer.self_attn.q_proj(hidden).view(1, 5, 4, 16).transpose(1, 2)
    assert torch.equal(record.q_proj, q_proj) and torch.equal(q, q_proj)
    assert torch.equal(record.query, q_rotated) and torch.equal(record.key, k_rotated)
    assert trace.output.logits.shape == (1, 5, 64)
    # the hooks are gone: a second forward records nothing new
    assert unhooked(model)
    with torch.no_grad():
        model(input_ids=tokens)
    assert len(trace.rotary_calls) == 1


def test_trace_positions_cleans_up_when_the_model_fails() -> None:
    model = CH.tiny_llama()
    original = modeling_llama.apply_rotary_pos_emb
    with pytest.raises(Exception):
        CH.trace_positions(model, input_ids=torch.tensor([[1000]]))  # not in vocabulary
    assert unhooked(model) and modeling_llama.apply_rotary_pos_emb is original


def test_recording_attention_records_and_passes_everything_through() -> None:
    class Registry(dict):  # what a modeling module's ALL_ATTENTION_FUNCTIONS offers
        def get_interface(self, name, default):
            return self.get(name, default)

        def valid_keys(self):
            return list(self)

    def eager(module, query, key, value, attention_mask, **kwargs):
        return query @ key.mT + attention_mask, None

    seen = []
    wrapped = CH._RecordingAttention(
        Registry(eager=eager), lambda *args: seen.append(args)
    )
    q, k, mask = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4), torch.zeros(3, 3)
    for attention in (
        wrapped["eager"],
        wrapped.get_interface("eager", None),
        wrapped.get_interface("other", eager),
    ):
        out, _ = attention("layer", q, k, None, mask)
        assert torch.equal(out, q @ k.mT)
    assert out is not None and len(seen) == 3
    assert all(
        a[0] == "layer" and a[1] is q and a[2] is k and a[3] is mask for a in seen
    )
    wrapped.get_interface("eager", None)("layer", q, k, None, attention_mask=mask)
    assert seen[-1][3] is mask  # the mask given by keyword
    assert wrapped.valid_keys() == ["eager"]  # everything else is the registry's


def test_only_a_linear_q_proj_is_recorded() -> None:
    """A port whose query projection is not one Linear (here wrapped in a Sequential)
    is traced all the same, without the query projection."""
    model = CH.tiny_llama()
    attention = model.model.layers[0].self_attn
    attention.q_proj = torch.nn.Sequential(attention.q_proj)
    trace = CH.trace_positions(model, input_ids=torch.tensor([[5, 6, 7]]))
    record = trace.layers["model.layers.0.self_attn"]
    assert record.q_proj is None and len(record.rotated) == 2
    assert CH.query_scale(record) is None and unhooked(model)


def tiny_llama4() -> torch.nn.Module:
    """A four-layer Llama 4 text model built here: layers 0-2 rotate (complex table,
    chunks of 8), layer 3 has no position code and scales its queries (floor_scale 4,
    attn_scale 0.1)."""
    config = Llama4TextConfig(
        vocab_size=64,
        hidden_size=64,
        intermediate_size=64,
        intermediate_size_mlp=64,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        num_local_experts=2,
        attention_chunk_size=8,
        no_rope_layers=[1, 1, 1, 0],
        floor_scale=4,
        attn_scale=0.1,
    )
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return Llama4TextModel(config).eval()


def test_trace_positions_on_llama4s_complex_table_and_nope_layer() -> None:
    model = tiny_llama4()
    original = modeling_llama4.apply_rotary_emb
    trace = CH.trace_positions(model, input_ids=torch.arange(3, 23)[None])
    assert modeling_llama4.apply_rotary_emb is original and unhooked(model)
    assert list(trace.layers) == [f"layers.{i}.self_attn" for i in range(4)]
    rotary, nope = (
        trace.layers["layers.0.self_attn"],
        trace.layers["layers.3.self_attn"],
    )
    assert rotary.table.is_complex() and len(rotary.rotated) == 2
    assert nope.table is not None and not nope.rotated  # receives a table, applies none
    # interleaved pairs at m * inv_freq (transformers' own float32 inv_freq): float32
    # product, cos and sin, the rotation and the fit within (4 |angle| + 32) u
    angles = torch.arange(20.0, dtype=torch.float64)[:, None] * (
        model.rotary_emb.inv_freq.double()
    )
    for before, after in rotary.rotated:
        fit = CH.applied_rotation(before, after, layout="interleaved")
        gap = torch.remainder(fit.angles - angles + math.pi, 2 * math.pi) - math.pi
        assert gap.abs().max() <= (4 * 19 + 32) * U32
        assert (fit.amplitude - 1).abs().max() <= 32 * U32
    assert CH.applied_rotation(*rotary.rotated[0]).layout == "interleaved"
    # the NoPE layer's queries: transformers' temperature, written out here
    scale, misfit = CH.query_scale(nope)
    ref = torch.tensor(
        [1 + 0.1 * math.log(math.floor((m + 1) / 4) + 1) for m in range(20)],
        dtype=torch.float64,
    )
    assert misfit < 1e-10 and (scale - ref).abs().max() < 64 * U32
    # a rotating layer's query is not a scaled projection
    assert CH.query_scale(rotary)[1] > 1e-3
    assert CH.query_scale(CH.LayerRecord(index=0)) is None
    with pytest.raises(ValueError, match=r"not a \(cos, sin\) pair"):
        CH.table_errors(
            trace,
            {name: exact_tables(torch.arange(20), 16, 5e5) for name in trace.layers},
        )
    # with a batch of two, the complex table has length 2: still no (cos, sin) pair
    pair = CH.trace_positions(
        model,
        input_ids=torch.arange(3, 23).repeat(2, 1),
        position_ids=torch.arange(20).repeat(2, 1),
    )
    assert len(pair.layers["layers.0.self_attn"].table) == 2
    with pytest.raises(ValueError, match=r"not a \(cos, sin\) pair"):
        CH.table_errors(
            pair,
            {name: exact_tables(torch.arange(20), 16, 5e5) for name in pair.layers},
        )


def rotate(kind: str, x: torch.Tensor, angles: torch.Tensor, a: float = 1.0):
    """x (B, H, T, d) rotated by transformers' own function of one model type."""
    half = torch.cat((angles, angles), -1)[None]
    if kind == "llama4":
        freqs = (a * torch.polar(torch.ones_like(angles), angles))[None]
        out, _ = modeling_llama4.apply_rotary_emb(
            x.transpose(1, 2), x.transpose(1, 2), freqs.to(torch.complex64)
        )
        return out.transpose(1, 2)
    if kind == "cohere2":
        pair = angles.repeat_interleave(2, -1)[None]
        return modeling_cohere2.apply_rotary_pos_emb(
            x, x, a * pair.cos(), a * pair.sin()
        )[0]
    if kind == "deepseek":
        return modeling_deepseek_v3.apply_rotary_pos_emb_interleave(
            x, x, a * half.cos(), a * half.sin()
        )[0]
    return modeling_llama.apply_rotary_pos_emb(x, x, a * half.cos(), a * half.sin())[0]


@settings(max_examples=25, deadline=None)
@given(
    kind=st.sampled_from(["llama", "cohere2", "deepseek", "llama4"]),
    half=st.integers(2, 16),
    base=st.floats(100.0, 1e6),
    a=st.sampled_from([1.0, 1.2]),
    seed=st.integers(0, 1000),
)
def test_applied_rotation_recovers_transformers_rotations(
    kind, half, base, a, seed
) -> None:
    d = 2 * half
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, 9, d, generator=g)
    positions = torch.tensor([0, 1, 2, 5, 9, 17, 40, 100, 333], dtype=torch.float64)
    inv_freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = positions[:, None] * inv_freq
    fit = CH.applied_rotation(x, rotate(kind, x, angles.float(), a))
    layout = {
        "llama": "halves",
        "cohere2": "interleaved",
        "deepseek": "interleaved to halves",
        "llama4": "interleaved",
    }[kind]
    assert fit.layout == layout and fit.misfit < 1e-10
    # angles rounded to float32 here (u |angle|), then cos and sin, the rotation and
    # the fit: (4 |angle| + 32) u, as Chapter 13's angle_tolerance
    bound = (5 * 333 + 32) * U32
    gap = torch.remainder(fit.angles - angles + math.pi, 2 * math.pi) - math.pi
    assert (gap.abs() <= bound).all()
    assert ((fit.amplitude - a).abs() <= 32 * U32 * a).all()


def test_applied_rotation_of_a_partial_width_and_the_layouts_by_hand() -> None:
    x = torch.randn(1, 2, 5, 8, generator=torch.Generator().manual_seed(1))
    angles = torch.arange(5.0)[:, None] * torch.tensor([1.0, 0.1])
    after = x.clone()
    after[..., :4] = rotate("llama", x[..., :4], angles)
    fit = CH.applied_rotation(x, after, width=4)
    assert fit.layout == "halves"
    assert (
        torch.remainder(fit.angles - angles.double() + math.pi, 2 * math.pi) - math.pi
    ).abs().max() < 1e-5
    # pair j of width 6: input and output coordinates, written out
    assert [t.tolist() for t in CH.pair_indices("halves", 6)] == [
        [0, 1, 2],
        [3, 4, 5],
    ] * 2
    assert [t.tolist() for t in CH.pair_indices("interleaved", 6)] == [
        [0, 2, 4],
        [1, 3, 5],
    ] * 2
    assert [t.tolist() for t in CH.pair_indices("interleaved to halves", 6)] == [
        [0, 2, 4],
        [1, 3, 5],
        [0, 1, 2],
        [3, 4, 5],
    ]
    assert CH.PAIRINGS == ("halves", "interleaved", "interleaved to halves")


def test_applied_rotation_misfit_by_hand() -> None:
    """z = (1, i) over two sequences, z' = (2, 0): w = (1 * 2 + (-i) * 0) / 2 = 1, the
    residuals 1 and -i, so the misfit is (1 + 1) / (4 + 0) = 1/2."""
    before = torch.tensor([[1.0, 0.0], [0.0, 1.0]]).reshape(2, 1, 1, 2)
    after = torch.tensor([[2.0, 0.0], [0.0, 0.0]]).reshape(2, 1, 1, 2)
    fit = CH.applied_rotation(before, after, layout="halves")
    assert fit.misfit == pytest.approx(0.5, abs=1e-15)
    assert fit.amplitude.tolist() == [[1.0]] and fit.angles.tolist() == [[0.0]]


def test_tracer_rejects_bad_input() -> None:
    x = torch.randn(1, 1, 4, 8)
    with pytest.raises(ValueError, match="one shape"):
        CH.applied_rotation(x, x[..., :6])
    with pytest.raises(ValueError, match="width"):
        CH.applied_rotation(x, x, width=3)
    with pytest.raises(ValueError, match="pass layout"):
        CH.applied_rotation(x, x)
    with pytest.raises(ValueError, match="layout must be"):
        CH.pair_indices("diagonal", 8)
    with pytest.raises(ValueError, match="torch.nn.Module"):
        CH.trace_positions("model")
    with pytest.raises(ValueError, match="no attention layer"):
        CH.trace_positions(torch.nn.Linear(2, 2), input=torch.ones(2))


def test_reference_tables_and_bounds_by_hand() -> None:
    cos, sin = CH.reference_tables(torch.tensor([0, 2]), 4, 100.0, factor=2.0)
    # positions 0 and 1 after scaling; theta = (1, 0.1), split halves repeat them
    assert torch.allclose(
        cos[1], torch.tensor([math.cos(1), math.cos(0.1)] * 2, dtype=torch.float64)
    )
    assert torch.allclose(
        sin[1], torch.tensor([math.sin(1), math.sin(0.1)] * 2, dtype=torch.float64)
    )
    assert torch.equal(cos[0], torch.ones(4, dtype=torch.float64))
    u = 2.0**-24
    table = (10 * (math.log(100) + 7) + 4) * u
    assert CH.table_bound(10.0, 100.0) == pytest.approx(table)
    assert CH.applied_bound(10.0, 100.0) == pytest.approx(
        math.pi / 2 * (math.sqrt(2) * table + 5 * u)
    )


def gemma_references(positions):
    return {
        "layers.0.self_attn": exact_tables(positions, 16, 10_000.0),
        "layers.1.self_attn": exact_tables(positions, 16, 1_000_000.0, 8.0),
    }


def test_tiny_gemma3_has_one_table_per_layer_type() -> None:
    model = CH.tiny_gemma3()
    assert model.config.layer_types == ["sliding_attention", "full_attention"]
    trace = CH.trace_positions(model, input_ids=torch.arange(1, 13)[None])
    right = gemma_references(torch.arange(12))
    bounds = (CH.table_bound(11.0, 1e6), CH.applied_bound(11.0, 1e6))
    for errors, bound in zip(
        (CH.table_errors(trace, right), CH.applied_errors(trace, right)), bounds
    ):
        assert max(errors.values()) <= bound
    swapped = dict(zip(right, reversed(right.values())))
    for errors in (CH.table_errors(trace, swapped), CH.applied_errors(trace, swapped)):
        assert min(errors.values()) > 0.5  # the two tables really differ
    # what each layer's kernel was told to see: a window of 8 keys in the local layer,
    # every earlier key in the global one
    m, n = torch.arange(12)[:, None], torch.arange(12)[None, :]
    for name, window in (("layers.0.self_attn", 8), ("layers.1.self_attn", 12)):
        mask = trace.layers[name].mask
        seen = (
            torch.ones(12, 12, dtype=torch.bool).tril()
            if mask is None
            else mask[0, 0]
            if mask.dtype == torch.bool
            else mask[0, 0] == 0
        )
        assert torch.equal(seen, (n <= m) & (m - n < window)), name
    with pytest.raises(ValueError, match="no reference table"):
        CH.table_errors(trace, {"layers.0.self_attn": right["layers.0.self_attn"]})
    with pytest.raises(ValueError, match="no reference table"):
        CH.applied_errors(trace, {})


def test_planted_bugs_are_caught_by_what_layers_receive_and_apply(monkeypatch) -> None:
    model = CH.tiny_gemma3()
    tokens = torch.arange(1, 13)[None]
    references = gemma_references(torch.arange(12))
    bounds = (CH.table_bound(11.0, 1e6), CH.applied_bound(11.0, 1e6))
    right = CH.trace_positions(model, input_ids=tokens)

    def global_table(module, args, kwargs):  # the station's bug
        return args, dict(
            kwargs, position_embeddings=right.layers["layers.1.self_attn"].table
        )

    handle = model.layers[0].self_attn.register_forward_pre_hook(
        global_table, with_kwargs=True
    )
    try:
        port = CH.trace_positions(model, input_ids=tokens)
    finally:
        handle.remove()
    for errors, bound in zip(
        (CH.table_errors(port, references), CH.applied_errors(port, references)), bounds
    ):
        assert errors["layers.0.self_attn"] > 0.5
        assert errors["layers.1.self_attn"] <= bound
    # a port that rotates the other way (sin negated) from the right table: only what
    # the layers apply shows it
    rotation = modeling_gemma3.apply_rotary_pos_emb

    def turns_back(q, k, cos, sin, unsqueeze_dim=1):
        return rotation(q, k, cos, -sin, unsqueeze_dim)

    monkeypatch.setattr(modeling_gemma3, "apply_rotary_pos_emb", turns_back)
    backwards = CH.trace_positions(model, input_ids=tokens)
    assert modeling_gemma3.apply_rotary_pos_emb is turns_back
    assert max(CH.table_errors(backwards, references).values()) <= bounds[0]
    assert min(CH.applied_errors(backwards, references).values()) > 0.5

    # a port that scales its rotated queries by 1 + 0.01 t (token t): the angles are
    # right, the largest relative amplitude error is 0.11, at the last token
    def grows(q, k, cos, sin, unsqueeze_dim=1):
        q, k = rotation(q, k, cos, sin, unsqueeze_dim)
        return q * (1 + 0.01 * torch.arange(q.shape[2]))[:, None], k

    monkeypatch.setattr(modeling_gemma3, "apply_rotary_pos_emb", grows)
    scaled = CH.applied_errors(CH.trace_positions(model, input_ids=tokens), references)
    for error in scaled.values():  # float32 product: within the rotation bound
        assert abs(error - 0.11) <= 0.11 * U32 + bounds[1]
    # a layer that applied nothing
    silent = CH.PositionTrace(layers={"layers.0.self_attn": CH.LayerRecord(index=0)})
    assert CH.applied_errors(silent, references) == {"layers.0.self_attn": math.inf}


# ------------------------------------------------------------ Station 7: M-RoPE ids


def test_layout_inputs_match_the_grids() -> None:
    inputs = CH.layout_inputs(
        [("text", 2), ("video", (4, 2, 2)), ("text", 1), ("image", (1, 4, 6))]
    )
    assert inputs["input_ids"].tolist() == [[3, 3, 91, 91, 91, 91, 3] + [90] * 6]
    assert inputs["mm_token_type_ids"].tolist() == [[0, 0, 2, 2, 2, 2, 0] + [1] * 6]
    assert inputs["video_grid_thw"].tolist() == [[4, 2, 2]]
    assert inputs["image_grid_thw"].tolist() == [[1, 4, 6]]
    assert "image_grid_thw" not in CH.layout_inputs([("text", 3)])
    with pytest.raises(ValueError, match="segment kind"):
        CH.layout_inputs([("audio", 3)])


@pytest.fixture(scope="module")
def qwen():
    return CH.two_layer_qwen2vl()


def test_transformers_resumes_text_after_a_video_at_m_plus_max_hw(qwen) -> None:
    """The station's premise, in the installed transformers: the prompt's text after a
    4x2x2 video resumes at 2 + max(1, 1) = 3, rope_deltas at the largest id + 1."""
    ids, deltas = qwen.get_rope_index(
        **CH.layout_inputs([("text", 2), ("video", (4, 2, 2)), ("text", 2)])
    )
    assert ids[:, 0].tolist() == [
        [0, 1, 2, 3, 4, 5, 3, 4],
        [0, 1, 2, 2, 2, 2, 3, 4],
        [0, 1, 2, 2, 2, 2, 3, 4],
    ]
    assert deltas.tolist() == [[-2]]


def vision_spans(segments):
    """(start index, segment) of every vision segment, in token order."""
    spans, index = [], 0
    for kind, size in segments:
        if kind != "text":
            spans.append((index, size))
            index += size[0] * (size[1] // 2) * (size[2] // 2)
        else:
            index += size
    return spans


@pytest.mark.parametrize("name", list(CH.MROPE_CASES))
def test_the_expected_ids_of_exercise_12_7_agree_with_transformers(qwen, name) -> None:
    """Every vision segment of the literals has transformers' ids for its start
    (get_vision_position_ids), and the text after the first vision segment has the ids
    transformers' own generation (cache position + rope_deltas) gives text that
    follows a prompt ending with that segment. (Later text cannot be checked that way:
    transformers' prompt ids already differ before it.)"""
    segments, ids, delta = CH.MROPE_CASES[name]
    ids = torch.tensor(ids)
    assert delta == int(ids.max()) + 1 - ids.shape[1]
    for start, size in vision_spans(segments):
        m = int(ids[1, start])  # the row id of the first token is the start id m
        count = size[0] * (size[1] // 2) * (size[2] // 2)
        theirs = qwen.get_vision_position_ids(m, torch.tensor(size), 1, 2)
        assert torch.equal(ids[:, start : start + count], theirs)
    index = 0
    for k, (kind, size) in enumerate(segments):
        count = size if kind == "text" else size[0] * (size[1] // 2) * (size[2] // 2)
        vision_before = sum(kind != "text" for kind, _ in segments[:k])
        if kind == "text" and vision_before == 1 and segments[k - 1][0] != "text":
            _, steps, _ = CH.prefill_then_decode(qwen, segments[:k], size)
            generated = torch.cat(steps, dim=1)  # (3, size): the ids transformers uses
            assert torch.equal(ids[:, index : index + count], generated), (name, k)
        index += count


def mrope_by_rule(segments, merge=2, resume="max + 1"):
    """Written here, a loop over tokens: text after vision resumes at the largest id + 1
    (the fix), at the largest id (off by one), at m + max(h', w') (transformers 5) or at
    m + the number of vision tokens (counted like text)."""
    rows, start = [], 0
    for kind, size in segments:
        if kind == "text":
            rows += [(start + j,) * 3 for j in range(size)]
            start += size
            continue
        t, h, w = size
        if h % merge or w % merge:
            raise ValueError(f"grid {size}: h and w must be multiples of merge {merge}")
        span = [
            (start + a, start + b, start + c)
            for a in range(t)
            for b in range(h // merge)
            for c in range(w // merge)
        ]
        rows += span
        largest = max(max(r) for r in span)
        start = {
            "max + 1": largest + 1,
            "max": largest,
            "spatial": start + max(h // merge, w // merge),
            "counted": start + len(span),
        }[resume]
    ids = torch.tensor(rows, dtype=torch.long).T
    return ids, int(ids.max()) + 1 - ids.shape[1]


def mrope_solution(segments, merge=2):
    return mrope_by_rule(segments, merge)


def test_check_12_7(capsys) -> None:
    check = CH.check_mrope_ids
    passes(check, mrope_solution, 4 * 3 + 1, capsys)

    def spatial(segments, merge=2):  # transformers 5's rule
        return mrope_by_rule(segments, merge, "spatial")

    fails(check, spatial, "transformers 5's rule", "text 2, video 4x2x2")
    fails(
        check,
        lambda s, merge=2: (
            mrope_solution(s, merge)[0].tolist(),
            mrope_solution(s, merge)[1],
        ),
        "a torch.long tensor",
    )
    fails(
        check,
        lambda s, merge=2: (mrope_solution(s, merge)[0], -mrope_solution(s, merge)[1]),
        "sign flipped",
        "text 3, image",
    )
    fails(
        check,
        lambda s, merge=2: (
            mrope_solution(s, merge)[0],
            mrope_solution(s, merge)[1] - 1,
        ),
        "from the largest id",
    )

    def off_by_one(segments, merge=2):
        return mrope_by_rule(segments, merge, "max")

    fails(check, off_by_one, "off by one")
    fails(
        check,
        lambda s, merge=2: mrope_by_rule(s, merge, "counted"),
        "counted like text",
        "text 3, image",
    )

    def no_validation(segments, merge=2):
        if any(k != "text" and (s[1] % merge or s[2] % merge) for k, s in segments):
            return torch.zeros(3, 1, dtype=torch.long), 0
        return mrope_solution(segments, merge)

    fails(check, no_validation, "merge size does not divide", "no error")


def test_meta_layout_expected_values_are_interleaved_rope() -> None:
    """The literals of Exercise 12.1's check against the chapter's independent
    reference (a complex product in float64) and against a loop written here."""
    for positions, points, values in CH.META_LAYOUT_CASES.values():
        position_ids = torch.tensor(positions)
        x = CH.exact_grid((position_ids.shape[0], 3, position_ids.shape[1], 8))
        reference = CH.rope_interleaved_reference(x, position_ids)
        for (b, h, t, j), value in zip(points, values):
            assert abs(reference[b, h, t, j].item() - value) <= 1e-9
            i, m = j // 2, position_ids[b, t].item()
            angle = m * 10000.0 ** (-2 * i / 8)
            a, c = x[b, h, t, 2 * i].item(), x[b, h, t, 2 * i + 1].item()
            by_hand = (
                a * math.cos(angle) - c * math.sin(angle)
                if j % 2 == 0
                else c * math.cos(angle) + a * math.sin(angle)
            )
            assert abs(by_hand - value) <= 1e-9


def test_convert_cases_row_orders_are_the_per_head_permutation() -> None:
    for _, n_heads, n_kv, head_dim, _, q_rows, k_rows in CH.CONVERT_CASES:
        for heads, rows in ((n_heads, q_rows), (n_kv, k_rows)):
            index = torch.arange(heads * head_dim)
            perm = permutation(head_dim)
            assert rows == [
                h * head_dim + p for h in range(heads) for p in perm.tolist()
            ]
            moved = CH.rows_to_halves(index[:, None].double(), heads)[:, 0]
            assert moved.long().tolist() == rows


def test_decode_expected_values_are_the_full_pass() -> None:
    """The literals of Exercise 12.4's check against one full pass (the chapter's
    full_pass_last_logits) and transformers' rotation of the new key."""
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    q_all, k_all = CH.exact_grid((2, 2, 2, 7, 8))
    for step in (5, 6):
        mask = torch.cat((mask, torch.ones(2, 1, dtype=mask.dtype)), dim=1)
        full = CH.full_pass_last_logits(
            q_all[:, :, : step + 1], k_all[:, :, : step + 1], mask
        )
        want = torch.tensor(CH.DECODE_EXPECTED[step]["logits"], dtype=torch.float64)
        assert torch.allclose(full, want, atol=1e-9, rtol=0)
        position = CH.mask_positions(mask)[:, -1:]
        new_key = hf_rope(k_all[:, :, step : step + 1], position).double()[:, :, 0]
        held = torch.tensor(CH.DECODE_EXPECTED[step]["new_keys"], dtype=torch.float64)
        # transformers in float32: tables within g of the exact ones (angles up to 6
        # rad, relative error (ln b + 7)u, cos within 2 ulp), the lemma of Chapter 11
        # for the rounding, |x_i| + |x_i+d/2| <= 4 for these inputs
        u = 2.0**-24
        g = (6 * (math.log(10000.0) + 7) + 4) * u
        assert torch.allclose(
            new_key, held, atol=(2 * u * (1 + u) * (1 + g) + g) * 4, rtol=0
        )


# --- Station 5: YaRN's factor in the tables or in the softmax scale -----------------


@pytest.mark.parametrize(
    ("factor", "mscale", "expected"),
    [
        (40.0, 1.0, 0.1 * math.log(40.0) + 1.0),
        (4.0, 0.707, 0.0707 * math.log(4.0) + 1.0),
        (1.0, 1.0, 1.0),
        (0.5, 1.0, 1.0),
    ],
)
def test_yarn_mscale_by_hand(factor, mscale, expected) -> None:
    assert math.isclose(CH.yarn_mscale(factor, mscale), expected, rel_tol=1e-15)


def test_yarn_mscale_rejects_a_non_positive_factor() -> None:
    with pytest.raises(ValueError, match="factor"):
        CH.yarn_mscale(0.0)


@pytest.mark.parametrize(
    ("mscale", "mscale_all_dim"), [(1.0, 1.0), (0.707, 0.707), (1.0, 0.707)]
)
def test_tiny_deepseek_v3_puts_the_factor_where_transformers_says(
    mscale, mscale_all_dim
) -> None:
    """Tables scaled by g(s, mu) / g(s, mu_all), softmax scale by g(s, mu_all)**2: both
    computed here from the formula, and the tables' factor from transformers' YaRN
    rule."""
    rope = {
        "rope_type": "yarn",
        "rope_theta": 10000.0,
        "factor": 40.0,
        "original_max_position_embeddings": 4096,
        "mscale": mscale,
        "mscale_all_dim": mscale_all_dim,
    }
    model = CH.tiny_deepseek_v3(rope)
    g = lambda mu: 0.1 * mu * math.log(40.0) + 1.0  # noqa: E731
    assert model.config.max_position_embeddings == 40 * 4096
    assert math.isclose(
        model.rotary_emb.attention_scaling, g(mscale) / g(mscale_all_dim), rel_tol=1e-12
    )
    _, factor = ROPE_INIT_FUNCTIONS["yarn"](model.config)
    assert math.isclose(factor, model.rotary_emb.attention_scaling, rel_tol=1e-15)
    scaling = model.layers[1].self_attn.scaling
    assert math.isclose(scaling, 48**-0.5 * g(mscale_all_dim) ** 2, rel_tol=1e-12)
    # the same seed gives the same weights: the helper is deterministic
    again = CH.tiny_deepseek_v3(rope)
    assert torch.equal(model.embed_tokens.weight, again.embed_tokens.weight)


def test_tiny_deepseek_v3_rejects_rope_parameters_without_a_factor() -> None:
    with pytest.raises(ValueError, match="factor"):
        CH.tiny_deepseek_v3({"rope_type": "default", "rope_theta": 10000.0})


# ------------------------------------------------------ exercise checks


def parameters(checkpoint, override=None):
    """Exercise 12.5 written independently: one pass over both spellings."""

    def modern(rope):
        return {("rope_type" if k == "type" else k): v for k, v in (rope or {}).items()}

    own = modern(checkpoint.get("rope_parameters") or checkpoint.get("rope_scaling"))
    new = modern(override)
    if own.get("rope_type", "default") not in (
        "default",
        new.get("rope_type", own.get("rope_type")),
    ):
        raise ValueError(
            f"the override's {new.get('rope_type')} would replace the "
            f"checkpoint's {own['rope_type']}"
        )
    result = (
        {
            "rope_type": "default",
            "rope_theta": checkpoint.get("rope_theta", own.get("rope_theta", 10000.0)),
        }
        | own
        | new
    )
    if result.get("factor", 1.0) < 1:
        raise ValueError("factor must be at least 1")
    if result["rope_type"] in ("yarn", "llama3", "longrope"):
        result.setdefault(
            "original_max_position_embeddings", checkpoint["max_position_embeddings"]
        )
    return result


def test_ex_12_5_shows_one_key_not_the_answer(capsys) -> None:
    passes(CH.check_rope_parameters_for, parameters, 7, capsys)

    def without_original(checkpoint, override=None):
        result = parameters(checkpoint, override)
        result.pop("original_max_position_embeddings", None)
        return result

    message = fails(
        CH.check_rope_parameters_for,
        without_original,
        "Exercise 12.5",
        "original_max_position_embeddings is missing",
        "expected: 'original_max_position_embeddings': 8192",
        "got: no key 'original_max_position_embeddings'",
    )
    assert "low_freq_factor': 1.0" not in message.split("input:")[0]
    message = fails(
        CH.check_rope_parameters_for,
        lambda c, o=None: dict(parameters(c, o), rope_theta=1.0),
        "expected 'rope_theta': 10000.0, got 'rope_theta': 1.0",
        "compare key by key",
    )
    assert "'factor': 4.0" not in message.split("input:")[0]


def dynamic_float64(q, raw_keys, base, factor, length):
    """Exercise 12.6 in float64 from the formula, without the chapter's helpers."""
    if raw_keys.shape[-1] % 2:
        raise ValueError("head_dim must be even")
    T, d = raw_keys.shape
    scaled = base * max(1.0, factor * T / length - (factor - 1)) ** (d / (d - 2))
    theta = scaled ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)

    def turn(x, m):
        c, s = torch.cos(m[:, None] * theta), torch.sin(m[:, None] * theta)
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), -1)

    keys = turn(raw_keys, torch.arange(T, dtype=torch.float64))
    return keys @ turn(q[None], torch.tensor([T - 1.0]))[0]


def test_ex_12_6_literals_match_an_independent_computation() -> None:
    for T, (points, expected, _) in CH.DYNAMIC_CASES.items():
        rows = CH.exact_grid((T + 1, 16))
        got = dynamic_float64(rows[-1], rows[:-1], 10000.0, 2.0, 64)[points]
        assert torch.allclose(
            got, torch.tensor(expected, dtype=torch.float64), rtol=1e-10, atol=1e-10
        )


def test_ex_12_6_float64_and_transformers_float32_frequencies_pass(capsys) -> None:
    passes(CH.check_dynamic_ntk_logits, dynamic_float64, 6, capsys)

    def transformers_frequencies(q, raw_keys, base, factor, length):
        if raw_keys.shape[-1] % 2:
            raise ValueError("head_dim must be even")
        T, d = raw_keys.shape
        config = LlamaConfig(
            head_dim=d,
            max_position_embeddings=length,
            rope_parameters={
                "rope_type": "dynamic",
                "rope_theta": base,
                "factor": factor,
            },
        )
        inv_freq = ROPE_INIT_FUNCTIONS["dynamic"](config, seq_len=T)[0]
        assert inv_freq.dtype == torch.float32
        angles = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq.double()
        cos, sin = angles.cos().repeat(1, 2), angles.sin().repeat(1, 2)
        half = lambda x: torch.cat((-x[..., d // 2 :], x[..., : d // 2]), -1)  # noqa: E731
        keys = raw_keys * cos + half(raw_keys) * sin
        return keys @ (q * cos[-1] + half(q) * sin[-1])

    passes(CH.check_dynamic_ntk_logits, transformers_frequencies, 6, capsys)
    message = fails(
        CH.check_dynamic_ntk_logits,
        lambda *a: dynamic_float64(*a) + (torch.arange(a[1].shape[0]) == 1),
        "Exercise 12.6, case T = 40",
        "at logit 1",
        "none of the usual",
    )
    assert "-9.3975" not in message  # logit 0 is right: only the first wrong one shows
    fails(
        CH.check_dynamic_ntk_logits,
        lambda *a: dynamic_float64(*a)[:-1],
        "a tensor of shape (40,)",
    )


def test_keys_as_query_heads_is_the_station_mistake() -> None:
    """The literal rows of the mistake 12.2's check names: k_proj permuted as if it
    had n_heads heads, by reshape (halves_rows above), not by the chapter's code."""
    for name, n_heads, n_kv, head_dim, _, _, _ in CH.CONVERT_CASES:
        if name not in CH.KEYS_AS_QUERY_HEADS:
            continue
        index = torch.arange(n_kv * head_dim, dtype=torch.float64)[:, None]
        rows = halves_rows(index, n_heads)[:, 0].long().tolist()
        assert CH.KEYS_AS_QUERY_HEADS[name] == rows


def test_station_2_does_not_show_the_answer_of_12_2() -> None:
    """Station 2 reproduces the two broken ports; the right one (q_proj per query
    head, k_proj per key/value head) is Exercise 12.2's answer, shown only in its
    solution."""
    from pathlib import Path

    from bookkit.notebook import is_solution, read

    for cell in read(Path(CH.__file__)).cells:
        if cell.cell_type == "code" and not is_solution(cell):
            assert "rows_to_halves(W_k, 2)" not in cell.source
            assert "permuted per head" not in cell.source


@pytest.mark.parametrize(
    "name, forbidden",
    [
        ("check_rope_for_meta_layout", ("apply_rope_halves(", "argsort(")),
        # 12.2: row orders held as literals, no permutation of its own
        (
            "check_convert_meta_attention",
            (
                "rows_to_halves(",
                "interleaved_to_halves_perm(",
                "transpose(",
                "reshape(",
            ),
        ),
        ("check_rope_parameters_for", ("modern_rope_keys", 'rope_scaling"]')),
        ("check_dynamic_ntk_logits", ("dynamic_inv_freq(", "rope_with_inv_freq(")),
        # 12.4: no decoding step of its own (the old decode_variant), and no count of
        # the real tokens (the new token's position)
        (
            "check_decode_step",
            ("decode_variant", ".sum(", "cumsum", "logits_at_positions("),
        ),
    ],
)
def test_checks_hold_expected_values(name, forbidden) -> None:
    """The student edition shows each check's source: it must not compute the
    answer."""
    assert_holds_values("12_debugging_rope", name, forbidden)
