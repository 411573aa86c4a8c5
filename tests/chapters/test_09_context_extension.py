"""Chapter 9's functions, taken from the notebook: every RoPE scaling rule against
transformers' own init functions and rotary embedding on random valid configurations,
the NTK-aware base against its closed form, the rejection of invalid configurations,
the tiny-model helpers and the exercise checks."""

from __future__ import annotations

import io
import math
from contextlib import redirect_stdout

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

from bookkit.testing import load_chapter

ch = load_chapter("09_context_extension")

HEAD_DIMS = st.sampled_from([8, 16, 32, 48, 64, 80, 96, 128, 256])
BASES = st.sampled_from([100.0, 10000.0, 500000.0, 1000000.0]) | st.floats(50.0, 2e6)
FACTORS = st.sampled_from([1.0, 2.0, 4.0, 8.0, 16.0]) | st.floats(1.0, 64.0)
LENGTHS = st.sampled_from([64, 512, 2048, 4096, 8192, 32768]) | st.integers(16, 100_000)


def llama_config(params: dict, head_dim: int, max_pos: int = 4096) -> LlamaConfig:
    """A LlamaConfig with these rope_parameters (a copy: transformers edits the
    dict)."""
    return LlamaConfig(
        hidden_size=4 * head_dim,
        num_attention_heads=4,
        head_dim=head_dim,
        max_position_embeddings=max_pos,
        rope_parameters=dict(params),
    )


def transformers_init(params: dict, head_dim: int, max_pos: int, seq_len=None):
    """Independent reference: transformers' own init function for these parameters."""
    config = llama_config(params, head_dim, max_pos)
    return ROPE_INIT_FUNCTIONS[params["rope_type"]](config, seq_len=seq_len)


def assert_close(ours: torch.Tensor, theirs: torch.Tensor, rtol: float = 1e-6) -> None:
    assert ours.shape == theirs.shape
    gap = ((ours.double() - theirs.double()).abs() / theirs.double().abs()).max().item()
    assert gap <= rtol, gap


@settings(max_examples=40, deadline=None)
@given(d=HEAD_DIMS, base=BASES, factor=FACTORS)
def test_linear_matches_transformers(d, base, factor) -> None:
    params = {"rope_type": "linear", "rope_theta": base, "factor": factor}
    ours, a = ch.scaled_inv_freq(params, d)
    theirs, a_ref = transformers_init(params, d, 4096)
    assert_close(ours, theirs)
    assert a == a_ref == 1.0


@settings(max_examples=40, deadline=None)
@given(
    d=HEAD_DIMS, base=BASES, factor=FACTORS, length=LENGTHS, ratio=st.floats(0.1, 10.0)
)
def test_dynamic_matches_transformers(d, base, factor, length, ratio) -> None:
    seq_len = max(1, int(ratio * length))
    params = {"rope_type": "dynamic", "rope_theta": base, "factor": factor}
    ours, a = ch.scaled_inv_freq(params, d, length, seq_len)
    theirs, a_ref = transformers_init(params, d, length, seq_len)
    assert_close(ours, theirs)
    assert a == a_ref
    # the default current length is the original one: no scaling at all
    plain, _ = ch.scaled_inv_freq(params, d, length)
    assert_close(plain, 1.0 / base ** (torch.arange(0, d, 2).double() / d))


@settings(max_examples=60, deadline=None)
@given(
    d=HEAD_DIMS,
    base=BASES,
    factor=FACTORS,
    length=LENGTHS,
    betas=st.sampled_from([None, (32.0, 1.0), (16.0, 2.0), (64.0, 0.5)]),
    truncate=st.sampled_from([None, True, False]),
    attention=st.sampled_from([None, 0.7, 1.3]),
)
def test_yarn_matches_transformers(
    d, base, factor, length, betas, truncate, attention
) -> None:
    params = {
        "rope_type": "yarn",
        "rope_theta": base,
        "factor": factor,
        "original_max_position_embeddings": length,
    }
    if betas:
        params.update(beta_fast=betas[0], beta_slow=betas[1])
    if truncate is not None:
        params["truncate"] = truncate
    if attention is not None:
        params["attention_factor"] = attention
    ours, a = ch.scaled_inv_freq(params, d)
    theirs, a_ref = transformers_init(params, d, int(factor * length))
    assert_close(ours, theirs)
    assert a == pytest.approx(a_ref, rel=1e-12)
    if attention is None:  # the paper's temperature, written out independently
        assert a == pytest.approx(0.1 * math.log(factor) + 1 if factor > 1 else 1.0)


@settings(max_examples=20, deadline=None)
@given(
    factor=st.floats(1.5, 40.0),
    mscale=st.floats(0.5, 2.0),
    mscale_all=st.floats(0.5, 2.0),
)
def test_yarn_mscale_variant_matches_transformers(factor, mscale, mscale_all) -> None:
    params = {
        "rope_type": "yarn",
        "rope_theta": 10000.0,
        "factor": factor,
        "original_max_position_embeddings": 4096,
        "mscale": mscale,
        "mscale_all_dim": mscale_all,
    }
    _, a = ch.scaled_inv_freq(params, 64)
    _, a_ref = transformers_init(params, 64, int(factor * 4096))
    assert a == pytest.approx(a_ref, rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    d=HEAD_DIMS,
    base=BASES,
    factor=FACTORS,
    length=LENGTHS,
    bands=st.sampled_from([(1.0, 4.0), (0.5, 2.0), (2.0, 32.0)])
    | st.tuples(st.floats(0.1, 4.0), st.floats(4.5, 40.0)),
)
def test_llama3_matches_transformers(d, base, factor, length, bands) -> None:
    params = {
        "rope_type": "llama3",
        "rope_theta": base,
        "factor": factor,
        "original_max_position_embeddings": length,
        "low_freq_factor": bands[0],
        "high_freq_factor": bands[1],
    }
    ours, a = ch.scaled_inv_freq(params, d)
    theirs, a_ref = transformers_init(params, d, int(factor * length) + 1)
    assert_close(ours, theirs)
    assert a == a_ref == 1.0


@settings(max_examples=40, deadline=None)
@given(
    d=HEAD_DIMS,
    base=BASES,
    factor=FACTORS,
    length=LENGTHS,
    seed=st.integers(0, 2**31 - 1),
    ratio=st.sampled_from([None, 0.5, 1.0, 1.01, 3.0]),
    attention=st.sampled_from([None, 1.2]),
)
def test_longrope_matches_transformers(
    d, base, factor, length, seed, ratio, attention
) -> None:
    g = torch.Generator().manual_seed(seed)
    short = (1 + torch.rand(d // 2, generator=g, dtype=torch.float64)).tolist()
    long = (1 + factor * torch.rand(d // 2, generator=g, dtype=torch.float64)).tolist()
    params = {
        "rope_type": "longrope",
        "rope_theta": base,
        "factor": factor,
        "original_max_position_embeddings": length,
        "short_factor": short,
        "long_factor": long,
    }
    if attention is not None:
        params["attention_factor"] = attention
    seq_len = None if ratio is None else max(1, int(ratio * length))
    ours, a = ch.scaled_inv_freq(params, d, seq_len=seq_len)
    theirs, a_ref = transformers_init(params, d, int(factor * length), seq_len)
    assert_close(ours, theirs)
    assert a == pytest.approx(a_ref, rel=1e-12)
    if attention is None and factor > 1:
        assert a == pytest.approx(math.sqrt(1 + math.log(factor) / math.log(length)))


@settings(max_examples=20, deadline=None)
@given(
    rope_type=st.sampled_from(["linear", "dynamic", "yarn", "llama3", "longrope"]),
    d=st.sampled_from([16, 64, 128]),
    factor=st.sampled_from([2.0, 4.0, 8.0]),
    length=st.sampled_from([256, 2048]),
    stride=st.integers(1, 40),
)
def test_end_to_end_through_llama_rotary_embedding(
    rope_type, d, factor, length, stride
) -> None:
    params = ch.example_parameters(rope_type, d, 10000.0, factor, length)
    max_pos = length if rope_type == "dynamic" else int(factor * length)
    positions = torch.arange(0, 3 * length, stride)[None]
    rotary = LlamaRotaryEmbedding(llama_config(params, d, max_pos))
    cos_ref, sin_ref = rotary(torch.zeros(1), positions)
    inv_freq, a = ch.scaled_inv_freq(params, d, max_pos, int(positions.max()) + 1)
    assert_close(inv_freq, rotary.inv_freq)
    assert a == pytest.approx(rotary.attention_scaling)
    cos, sin = ch.rope_cos_sin(inv_freq, a, positions)
    # float32 angles up to 3 * length radians: one rounding of the frequency moves them
    # by at most positions * |delta theta|, plus a rounding of the angle itself
    slack = (
        a
        * (
            positions.max().item() * (inv_freq - rotary.inv_freq).abs().max().item()
            + 4 * 2**-24 * positions.max().item()
        )
        + 1e-6
    )
    assert (cos - cos_ref).abs().max().item() <= slack
    assert (sin - sin_ref).abs().max().item() <= slack


@settings(max_examples=40, deadline=None)
@given(d=st.integers(2, 128).map(lambda h: 2 * h), base=BASES, factor=FACTORS)
def test_ntk_base_keeps_fastest_pair_and_interpolates_slowest(d, base, factor) -> None:
    theta = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    new = ch.ntk_inv_freq(d, base, factor).double()
    assert new[0].item() == 1.0
    assert new[-1].item() == pytest.approx(theta[-1].item() / factor, rel=2e-6)
    kappa = theta / new
    expected = factor ** (2 * torch.arange(d // 2, dtype=torch.float64) / (d - 2))
    assert torch.allclose(kappa, expected, rtol=5e-6)
    # static NTK is transformers' default rope with the new base
    config = llama_config(
        {"rope_type": "default", "rope_theta": ch.ntk_base(base, factor, d)}, d
    )
    assert_close(new.float(), LlamaRotaryEmbedding(config).inv_freq)


def test_dynamic_factor_hand_computed() -> None:
    assert ch.dynamic_ntk_factor(2.0, 100, 4096) == 1.0
    assert ch.dynamic_ntk_factor(2.0, 8192, 4096) == 3.0
    assert ch.dynamic_ntk_factor(8.0, 8 * 4096, 4096) == 57.0
    assert ch.dynamic_ntk_factor(1.0, 12288, 4096) == 3.0


def test_yarn_and_llama3_keep_fast_pairs_and_interpolate_slow_ones() -> None:
    d, base, length, s = 128, 10000.0, 4096, 8.0
    theta = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    turns = length * theta / (2 * math.pi)
    for inv_freq in (
        ch.yarn_inv_freq(d, base, s, length)[0],
        ch.llama3_inv_freq(d, base, s, length, 1.0, 4.0),
    ):
        kappa = theta / inv_freq.double()
        assert torch.allclose(
            kappa[turns >= 32], torch.ones(1, dtype=torch.float64), rtol=1e-6
        )
        assert torch.allclose(
            kappa[turns <= 1], torch.full((1,), s, dtype=torch.float64), rtol=1e-6
        )
        assert torch.all(kappa >= 1 - 1e-6) and torch.all(kappa <= s * (1 + 1e-6))


def test_legacy_conversion() -> None:
    assert ch.rope_parameters_from_legacy(
        {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048}, 5e5
    ) == {
        "rope_type": "yarn",
        "factor": 4.0,
        "original_max_position_embeddings": 2048,
        "rope_theta": 5e5,
    }
    assert ch.rope_parameters_from_legacy({"type": "linear", "factor": 2.0}) == {
        "rope_type": "linear",
        "factor": 2.0,
        "rope_theta": 10000.0,
    }
    with pytest.raises(TypeError):
        ch.rope_parameters_from_legacy([("type", "linear")])


BAD = [
    ({"rope_type": "yarn", "factor": 4.0}, "original_max_position_embeddings"),
    (
        {
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
        },
        "original_max_position_embeddings",
    ),
    (
        {
            "rope_type": "longrope",
            "factor": 4.0,
            "short_factor": [1.0] * 8,
            "long_factor": [2.0] * 8,
        },
        "original_max_position_embeddings",
    ),
    ({"rope_type": "linear", "factor": 0.5}, "factor must be >= 1"),
    ({"rope_type": "dynamic", "factor": -2.0}, "factor must be >= 1"),
    (
        {"rope_type": "yarn", "factor": 0.9, "original_max_position_embeddings": 4096},
        "factor must be >= 1",
    ),
    ({"rope_type": "linear", "factor": float("nan")}, "factor must be >= 1"),
    ({"rope_type": "linear", "factor": True}, "real number"),
    ({"type": "linear", "factor": 4.0}, "rope_type"),
    ({"rope_type": "ntk", "factor": 4.0}, "rope_type must be one of"),
    ({"factor": 4.0}, "rope_type must be one of"),
    ({"rope_type": "linear"}, "'factor'"),
    (
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embedding": 4096},
        "did you mean 'original_max_position_embeddings'",
    ),
    (
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 0},
        "positive integer",
    ),
    (
        {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 4096.0,
        },
        "positive integer",
    ),
    (
        {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 4096,
            "beta_fast": 1.0,
            "beta_slow": 32.0,
        },
        "beta_slow < beta_fast",
    ),
    (
        {
            "rope_type": "llama3",
            "factor": 8.0,
            "original_max_position_embeddings": 8192,
            "low_freq_factor": 4.0,
            "high_freq_factor": 1.0,
        },
        "low_freq_factor < high_freq_factor",
    ),
    (
        {
            "rope_type": "longrope",
            "factor": 4.0,
            "original_max_position_embeddings": 64,
            "short_factor": [1.0] * 7,
            "long_factor": [2.0] * 8,
        },
        "short_factor must be a list",
    ),
    (
        {
            "rope_type": "longrope",
            "factor": 4.0,
            "original_max_position_embeddings": 64,
            "short_factor": [1.0] * 8,
            "long_factor": [2.0] * 7 + [0.0],
        },
        "long_factor must be",
    ),
    ({"rope_type": "default", "rope_theta": 0.5}, "rope_theta"),
    ({"rope_type": "linear", "factor": 2.0, "rope_theta": float("inf")}, "rope_theta"),
]


@pytest.mark.parametrize(("params", "message"), BAD)
def test_invalid_configurations_raise_clear_errors(params, message) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("'", "'")):
        ch.scaled_inv_freq(params, 16, 4096)


def test_other_bad_inputs() -> None:
    with pytest.raises(TypeError, match="must be a dict"):
        ch.scaled_inv_freq([("rope_type", "linear")], 16)
    with pytest.raises(ValueError, match="head_dim"):
        ch.scaled_inv_freq({"rope_type": "linear", "factor": 2.0}, 15)
    with pytest.raises(ValueError, match="head_dim"):
        ch.rope_inv_freq(2)
    with pytest.raises(ValueError, match="max_position_embeddings"):
        ch.scaled_inv_freq({"rope_type": "dynamic", "factor": 2.0}, 16)
    with pytest.raises(ValueError, match="length"):
        ch.turns_in_context(16, 10000.0, 0)


def test_turns_in_context_hand_computed() -> None:
    """r_i = L theta_i / (2 pi): d = 4, b = 100 gives theta = (1, 0.1)."""
    turns = ch.turns_in_context(4, 100.0, 20 * math.pi)
    assert turns.tolist() == pytest.approx([10.0, 1.0], rel=1e-12)
    # Llama 2's head (d 128, b 1e4, L 4096): pairs with at least one full turn
    want = sum(4096 * 10000.0 ** (-2 * i / 128) >= 2 * math.pi for i in range(64))
    assert int((ch.turns_in_context(128, 10000.0, 4096) >= 1).sum()) == want == 46


# ---- the tiny-model helpers ----


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    length=st.integers(8, 64),
    min_period=st.integers(1, 4),
)
def test_repeat_batch_targets_repeat_the_period(seed, length, min_period) -> None:
    tokens, targets = ch.repeat_batch(
        torch.Generator().manual_seed(seed), 4, length, min_period=min_period
    )
    assert tokens.shape == targets.shape == (4, length)
    assert (tokens[:, 0] == 16).all() and (tokens[:, 1:] < 16).all()
    for row in range(4):
        known = (targets[row] != ch.IGNORE).nonzero().flatten()
        assert torch.equal(targets[row, known], tokens[row, known + 1])
        # each target repeats an earlier token at the sequence's period
        period = int(known.min()) if known.numel() else None
        if period is not None:
            assert torch.equal(tokens[row, known + 1], tokens[row, known + 1 - period])


def test_repeat_batch_rejects_bad_periods() -> None:
    with pytest.raises(ValueError, match="period"):
        ch.repeat_batch(
            torch.Generator().manual_seed(0), 2, 10, min_period=6, max_period=4
        )
    with pytest.raises(ValueError, match="period"):
        ch.repeat_batch(torch.Generator().manual_seed(0), 2, 10, max_period=10)


def test_apply_scaling_sets_frequencies_and_temperature() -> None:
    torch.manual_seed(0)
    model = ch.TinyTransformer(ch.ModelConfig(vocab_size=17, d_model=32, n_heads=2))
    inv_freq, a = ch.yarn_inv_freq(16, 10000.0, 4.0, 16)
    ch.apply_scaling(model, inv_freq, a)
    assert torch.equal(model.position.inv_freq, inv_freq)
    assert model.position.logit_scale == pytest.approx(a * a)
    with pytest.raises(ValueError, match="RoPE"):
        ch.apply_scaling(
            ch.TinyTransformer(ch.ModelConfig(vocab_size=17, scheme="alibi")),
            inv_freq,
            a,
        )


def test_train_fine_tune_in_seconds_beats_chance() -> None:
    torch.set_num_threads(1)
    model = ch.train_model(
        ch.ModelConfig(vocab_size=17, d_model=32, n_heads=2, n_layers=2),
        ch.repeat_batch,
        ch.TrainConfig(steps=60, length=16, batch_size=32),
        seed=0,
    )
    tokens, targets = ch.repeat_batch(torch.Generator().manual_seed(1), 128, 16)
    accuracy = ch.evaluate_by_position(model, tokens, targets)["accuracy"]
    assert float(torch.tensor(accuracy).nanmean()) > 2 / 16  # chance is 1/16


# ---- the exercise checks: the solution passes, each wrong answer is named ----


def solution_pi_cos_sin(position_ids, head_dim, base, factor):
    factor = ch.check_factor(factor)
    angles = (position_ids.float() / factor)[..., None] * ch.rope_inv_freq(
        head_dim, base
    )
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos(), emb.sin()


def pi_variant(angle_fn, validate=True):
    def candidate(position_ids, head_dim, base, factor):
        if validate:
            ch.check_factor(factor)
        angles = angle_fn(position_ids, head_dim, base, factor)
        emb = torch.cat((angles, angles), dim=-1)
        return emb.cos(), emb.sin()

    return candidate


def run_check(check, candidate) -> str:
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        check(candidate)
    return buffer.getvalue()


def test_check_pi_cos_sin_accepts_the_solution() -> None:
    assert (
        run_check(ch.check_pi_cos_sin, solution_pi_cos_sin) == "All 16 checks passed.\n"
    )


@pytest.mark.parametrize(
    ("candidate", "message"),
    [
        (
            pi_variant(
                lambda p, d, b, s: p.float()[..., None] * s * ch.rope_inv_freq(d, b)
            ),
            "multiplied by the factor",
        ),
        (
            pi_variant(
                lambda p, d, b, s: p.float()[..., None] * ch.rope_inv_freq(d, b)
            ),
            "not scaled at all",
        ),
        (
            pi_variant(
                lambda p, d, b, s: (
                    torch.div(p, s, rounding_mode="floor")[..., None].float()
                    * ch.rope_inv_freq(d, b)
                )
            ),
            "rounded down",
        ),
        (
            pi_variant(
                lambda p, d, b, s: (
                    p.float()[..., None] / s / b ** (torch.arange(d // 2).float() / d)
                )
            ),
            "i/d",
        ),
        (
            pi_variant(
                lambda p, d, b, s: p.float()[..., None] / s * ch.rope_inv_freq(d, b),
                validate=False,
            ),
            "Exercise 9.2, case factor 0.5: expected a ValueError",
        ),
        (lambda p, d, b, s: solution_pi_cos_sin(p, d, b, s)[0], "a tuple"),
        (
            lambda p, d, b, s: tuple(
                x[..., : d // 2] for x in solution_pi_cos_sin(p, d, b, s)
            ),
            "shape",
        ),
    ],
)
def test_check_pi_cos_sin_names_mistakes(candidate, message) -> None:
    with pytest.raises(AssertionError, match=message) as info:
        run_check(ch.check_pi_cos_sin, candidate)
    assert str(info.value).startswith("Exercise 9.2, case ")


def test_check_pi_cos_sin_names_the_interleaved_layout() -> None:
    def interleaved(p, d, b, s):
        ch.check_factor(s)
        angles = (p.float()[..., None] / s * ch.rope_inv_freq(d, b)).repeat_interleave(
            2, -1
        )
        return angles.cos(), angles.sin()

    with pytest.raises(AssertionError, match="interleaved"):
        run_check(ch.check_pi_cos_sin, interleaved)


def good_plan(original, target, base):
    factor = 2.0 ** math.ceil(math.log2(target / original))
    return {
        "rope_type": "yarn",
        "rope_theta": base,
        "factor": factor,
        "original_max_position_embeddings": original,
    }


def test_check_choose_rope_parameters_accepts_the_solution() -> None:
    out = run_check(ch.check_choose_rope_parameters, good_plan)
    assert out == "All 24 checks passed.\n"
    extra = {**good_plan(8192, 100_000, 500000.0), "beta_fast": 32.0, "beta_slow": 1.0}
    assert (
        run_check(
            ch.check_choose_rope_parameters,
            lambda o, t, b: {
                **good_plan(o, t, b),
                **extra,
                "factor": good_plan(o, t, b)["factor"],
                "rope_theta": b,
                "original_max_position_embeddings": o,
            },
        )
        == out
    )


@pytest.mark.parametrize(
    ("candidate", "message"),
    [
        (
            lambda o, t, b: {
                **good_plan(o, t, b),
                "original_max_position_embeddings": t,
            },
            "the new length",
        ),
        (lambda o, t, b: {**good_plan(o, t, b), "factor": t / o}, "exact ratio"),
        (
            lambda o, t, b: {
                **good_plan(o, t, b),
                "factor": good_plan(o, t, b)["factor"] / 1.5,
            },
            "too small",
        ),
        (
            lambda o, t, b: {
                k: v for k, v in good_plan(o, t, b).items() if k != "rope_theta"
            },
            "default base",
        ),
        (lambda o, t, b: {**good_plan(o, t, b), "factor": o / t}, "below 1"),
        (
            lambda o, t, b: {**good_plan(o, t, b), "beta_fast": "32"},
            "accepted by transformers' rules: expected a valid",
        ),
        (
            lambda o, t, b: {**good_plan(o, t, b), "rope_type": "linear"},
            "looks like position interpolation",
        ),
        (
            lambda o, t, b: {**good_plan(o, t, b), "rope_type": "dynamic"},
            "looks like dynamic NTK",
        ),
        (
            lambda o, t, b: {
                **good_plan(o, t, b),
                "factor": 2 * good_plan(o, t, b)["factor"],
            },
            "not the smallest",
        ),
        (lambda o, t, b: [("rope_type", "yarn")], "expected a dict"),
    ],
)
def test_check_choose_rope_parameters_names_mistakes(candidate, message) -> None:
    with pytest.raises(AssertionError, match=message) as info:
        run_check(ch.check_choose_rope_parameters, candidate)
    assert str(info.value).startswith("Exercise 9.3, case ")


# ---- the helpers behind the chapter's comparison table and figures ----

TYPES = ["linear", "dynamic", "yarn", "llama3", "longrope"]


def test_example_parameters_by_hand() -> None:
    base = {"rope_theta": 500.0, "factor": 4.0}
    assert ch.example_parameters("linear", 8, 500.0, 4.0, 64) == {
        "rope_type": "linear",
        **base,
    }
    assert ch.example_parameters("dynamic", 8, 500.0, 4.0, 64) == {
        "rope_type": "dynamic",
        **base,
    }
    assert ch.example_parameters("yarn", 8, 500.0, 4.0, 64) == {
        "rope_type": "yarn",
        **base,
        "original_max_position_embeddings": 64,
    }
    assert ch.example_parameters("llama3", 8, 500.0, 4.0, 64) == {
        "rope_type": "llama3",
        **base,
        "original_max_position_embeddings": 64,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
    }
    longrope = ch.example_parameters("longrope", 8, 500.0, 4.0, 64)
    assert longrope["original_max_position_embeddings"] == 64
    assert longrope["short_factor"] == pytest.approx([1.0, 1.01, 1.02, 1.03], rel=1e-15)
    assert longrope["long_factor"] == pytest.approx([1.0, 2.0, 3.0, 4.0], rel=1e-15)
    for rope_type in TYPES:  # transformers accepts every one of them
        transformers_init(
            ch.example_parameters(rope_type, 8, 500.0, 4.0, 64), 8, 256, 65
        )


def test_comparison_lengths_by_hand() -> None:
    assert ch.comparison_lengths("dynamic", 4.0, 2048) == (2048, 6144)
    assert ch.comparison_lengths("longrope", 4.0, 2048) == (8192, 2049)
    for rope_type in ("linear", "yarn", "llama3"):
        assert ch.comparison_lengths(rope_type, 8.0, 1000) == (8000, None)


def test_compare_with_transformers_on_the_chapters_configurations() -> None:
    for d, base, factor, length in ch.CONFIGS:
        for rope_type in TYPES:
            gap, a_gap = ch.compare_with_transformers(
                rope_type, d, base, factor, length
            )
            assert 0.0 <= gap <= 1e-6 and 0.0 <= a_gap <= 1e-12, (rope_type, d)
    ours = torch.tensor([1.0, 2.0, 4.0])
    assert ch.relative_gap(ours, torch.tensor([1.0, 2.5, 5.0])) == pytest.approx(0.2)


def test_method_scale_factors_closed_forms_and_transformers() -> None:
    d, base, s, length = 64, 10000.0, 4.0, 2048
    kappa = ch.method_scale_factors(d, base, s, length)
    assert list(kappa) == [
        "PI (linear)",
        "NTK-aware",
        "dynamic NTK at T = s L0",
        "YaRN",
        "Llama 3",
        "LongRoPE (made-up factors)",
    ]
    i = torch.arange(d // 2, dtype=torch.float64)
    theta = 1.0 / base ** (2 * i / d)
    rtol = 2e-6  # float32 frequencies
    torch.testing.assert_close(
        torch.from_numpy(kappa["PI (linear)"]),
        torch.full((d // 2,), s, dtype=torch.float64),
        rtol=rtol,
        atol=0,
    )
    torch.testing.assert_close(
        torch.from_numpy(kappa["NTK-aware"]), s ** (2 * i / (d - 2)), rtol=rtol, atol=0
    )
    s_eff = s * s - (s - 1)  # at T = s L0
    torch.testing.assert_close(
        torch.from_numpy(kappa["dynamic NTK at T = s L0"]),
        s_eff ** (2 * i / (d - 2)),
        rtol=rtol,
        atol=0,
    )
    for name, params in [
        (
            "YaRN",
            {
                "rope_type": "yarn",
                "factor": s,
                "original_max_position_embeddings": length,
            },
        ),
        (
            "Llama 3",
            {
                "rope_type": "llama3",
                "factor": s,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": length,
            },
        ),
    ]:
        theirs, _ = transformers_init(
            {**params, "rope_theta": base}, d, int(s * length)
        )
        torch.testing.assert_close(
            torch.from_numpy(kappa[name]), theta / theirs.double(), rtol=rtol, atol=0
        )
    # the made-up LongRoPE factors, used because the figure runs past L0
    t = i / (d // 2 - 1)
    wiggle = 1 + 0.15 * torch.sin(7 * t)
    expected = 1 + (s - 1) * t**1.5 * wiggle / wiggle[-1]
    torch.testing.assert_close(
        torch.from_numpy(kappa["LongRoPE (made-up factors)"]),
        expected,
        rtol=rtol,
        atol=0,
    )
    assert ch.illustrative_longrope_factors(d, s) == pytest.approx(expected.tolist())


@pytest.mark.parametrize(
    "d, base, length", [(16, 10000.0, 6), (64, 10000.0, 6), (8, 100.0, 6)]
)
def test_yarn_when_the_ramp_collapses_matches_transformers(d, base, length) -> None:
    """An original context shorter than one turn of the fastest pair puts both ends of
    the ramp at index 0: transformers then widens it by +0.001 (pair 0 kept, every
    other pair interpolated)."""
    params = {
        "rope_type": "yarn",
        "rope_theta": base,
        "factor": 4.0,
        "original_max_position_embeddings": length,
    }
    ours, a = ch.scaled_inv_freq(params, d)
    theirs, a_ref = transformers_init(params, d, 4 * length)
    assert_close(ours, theirs)
    assert a == pytest.approx(a_ref, rel=1e-12)
    ramp = ch.yarn_ramp(d, base, length)
    assert ramp[0].item() == 0.0 and torch.all(ramp[1:] == 1.0)


def test_scale_factors_default_base_and_bad_numbers() -> None:
    kappa = ch.scale_factors(ch.pi_inv_freq(16, 10000.0, 4.0), 16)  # default base 1e4
    torch.testing.assert_close(
        kappa, torch.full((8,), 4.0, dtype=torch.float64), rtol=1e-6, atol=0
    )
    assert not torch.allclose(
        ch.scale_factors(ch.pi_inv_freq(16, 500.0, 4.0), 16),
        torch.full((8,), 4.0, dtype=torch.float64),
    )
    for bad in ("10000", True, None):
        with pytest.raises(ValueError, match="base must be a real number"):
            ch.rope_inv_freq(16, bad)


RULES = {  # every scaling rule as a function of (d, base, factor, L0)
    "pi": lambda d, b, s, L: ch.pi_inv_freq(d, b, s),
    "ntk": lambda d, b, s, L: ch.ntk_inv_freq(d, b, s),
    "yarn": lambda d, b, s, L: ch.yarn_inv_freq(d, b, s, L),
    "llama3": lambda d, b, s, L: ch.llama3_inv_freq(d, b, s, L),
    "longrope": lambda d, b, s, L: ch.longrope_inv_freq(
        d, b, [1.0] * int(d // 2), [2.0] * int(d // 2), L, s
    ),
}


@pytest.mark.parametrize("rule", list(RULES))
@pytest.mark.parametrize(
    "args, message",
    [
        ((6.0, 1e4, 2.0, 64), "head_dim must be an even integer >= 4"),
        ((2, 1e4, 2.0, 64), "head_dim must be an even integer >= 4"),
        ((16, 0.5, 2.0, 64), "base must be finite and > 1"),
        ((16, float("nan"), 2.0, 64), "base must be finite"),
        ((16, 1e4, 0.5, 64), "factor must be >= 1"),
        ((16, 1e4, "2", 64), "factor must be a real number"),
    ],
)
def test_every_rule_validates_its_inputs_the_same_way(rule, args, message) -> None:
    with pytest.raises(ValueError, match=message):
        RULES[rule](*args)


@pytest.mark.parametrize("rule", ["yarn", "llama3", "longrope"])
def test_rules_with_an_original_length_reject_a_bad_one(rule) -> None:
    for bad in (0, -5, 64.0, True):
        with pytest.raises(
            ValueError, match="original_max_position_embeddings must be"
        ):
            RULES[rule](16, 1e4, 2.0, bad)


def test_default_rope_type_is_plain_rope_with_attention_factor_one() -> None:
    params = {"rope_type": "default", "rope_theta": 500.0}
    rotary = LlamaRotaryEmbedding(llama_config(params, 16))
    inv_freq, a = ch.scaled_inv_freq(params, 16)
    assert (
        torch.equal(inv_freq, rotary.inv_freq) and a == 1.0 == rotary.attention_scaling
    )
    inv_freq, a = ch.scaled_inv_freq({"rope_type": "default"}, 16)  # rope_theta 1e4
    assert torch.equal(
        inv_freq,
        LlamaRotaryEmbedding(
            llama_config({"rope_type": "default", "rope_theta": 10000.0}, 16)
        ).inv_freq,
    )


def test_repeat_batch_periods_are_uniform_on_the_default_range() -> None:
    """Defaults: 16 symbols, periods uniform in [4, length // 2]. The period of a
    sequence is the first position with a target (token P + 1 repeats token 1)."""
    tokens, targets = ch.repeat_batch(torch.Generator().manual_seed(0), 700, 20)
    assert int(tokens[:, 0].unique()) == 16 and int(tokens[:, 1:].max()) == 15
    periods = (targets != ch.IGNORE).int().argmax(dim=1)
    counts = torch.bincount(periods, minlength=12)
    assert counts[:4].sum() == 0 and counts[11:].sum() == 0  # exactly 4..10 occur
    # 7 values, 100 expected each: a binomial count lies within 100 +- 40 (4 sigma)
    assert torch.all((counts[4:11] > 60) & (counts[4:11] < 140)), counts.tolist()


def test_rope_theta_just_above_one_is_accepted() -> None:
    assert (
        ch.check_rope_parameters({"rope_type": "default", "rope_theta": 1.5})
        == "default"
    )
    transformers_init({"rope_type": "linear", "rope_theta": 1.5, "factor": 2.0}, 8, 64)
    for bad in (1.0, 0.5):
        with pytest.raises(ValueError, match="rope_theta must be finite and > 1"):
            ch.check_rope_parameters({"rope_type": "default", "rope_theta": bad})


def test_configs_are_the_four_the_prose_describes() -> None:
    """'four configurations, from a small head to Llama 3.1's': Llama 3.1's published
    rope constants are head_dim 128, base 500 000, factor 8, L0 = 8192."""
    assert len(ch.CONFIGS) == 4 and (128, 500000.0, 8.0, 8192) in ch.CONFIGS
    assert min(d for d, *_ in ch.CONFIGS) == 64


def test_turns_in_context_accepts_any_positive_length() -> None:
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    for length in (0.5, 1.0, 4096):
        expected = (length * theta / (2 * math.pi)).tolist()
        assert ch.turns_in_context(8, 10000.0, length).tolist() == pytest.approx(
            expected
        )
    for bad in (0.0, -3.0, float("inf")):
        with pytest.raises(ValueError, match="length must be a positive number"):
            ch.turns_in_context(8, 10000.0, bad)


# ---- real configurations: Phi-3's longrope, partial rotary, three input bugs ----
# Expected values come from transformers' own config classes and init functions.

PHI3_SHORT = [1.0 + 0.02 * i for i in range(48)]
PHI3_LONG = [1.0 + 0.6 * i for i in range(48)]


def phi3_config_json(**extra) -> dict:
    """A Phi-3-128k-shaped config.json: legacy rope_scaling of type longrope with no
    factor, original_max_position_embeddings at the top level (made-up factor lists)."""
    return {
        "hidden_size": 3072,
        "num_attention_heads": 32,
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_theta": 10000.0,
        "rope_scaling": {
            "type": "longrope",
            "short_factor": PHI3_SHORT,
            "long_factor": PHI3_LONG,
        },
        **extra,
    }


@pytest.mark.parametrize("seq_len", [None, 4096, 4097, 131072])
def test_phi3_longrope_without_factor_matches_transformers(seq_len) -> None:
    from transformers import Phi3Config
    from transformers.utils import logging as hf_logging

    config_json = phi3_config_json()
    params, head_dim, max_pos = ch.rope_parameters_from_config(config_json)
    assert head_dim == 96 and max_pos == 131072 and "factor" not in params
    assert params["original_max_position_embeddings"] == 4096
    ours, a = ch.scaled_inv_freq(params, head_dim, max_pos, seq_len)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # transformers warns that factor is missing
    try:
        config = Phi3Config(**{k: v for k, v in config_json.items()})
    finally:
        hf_logging.set_verbosity(verbosity)
    theirs, a_ref = ROPE_INIT_FUNCTIONS["longrope"](config, seq_len=seq_len)
    assert_close(ours, theirs)
    assert a == pytest.approx(a_ref, rel=1e-12)
    # by hand: factor 131072 / 4096 = 32, a = sqrt(1 + ln 32 / ln 4096) = sqrt(1 + 5/12)
    assert a == pytest.approx(math.sqrt(17 / 12), rel=1e-12)


def test_top_level_original_length_takes_precedence_like_transformers() -> None:
    config_json = phi3_config_json()
    config_json["rope_scaling"] = {
        **config_json["rope_scaling"],
        "original_max_position_embeddings": 2048,
    }
    params, _, _ = ch.rope_parameters_from_config(config_json)
    from transformers import Phi3Config

    config = Phi3Config(**config_json)
    assert (
        params["original_max_position_embeddings"]
        == config.rope_parameters["original_max_position_embeddings"]
        == 4096
    )


def test_longrope_without_factor_needs_max_positions() -> None:
    params, head_dim, _ = ch.rope_parameters_from_config(phi3_config_json())
    with pytest.raises(ValueError, match="max_position_embeddings /"):
        ch.scaled_inv_freq(params, head_dim)


PARTIAL = [
    {"rope_type": "default"},
    {"rope_type": "linear", "factor": 4.0},
    {"rope_type": "dynamic", "factor": 2.0},
    {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
    {
        "rope_type": "llama3",
        "factor": 8.0,
        "original_max_position_embeddings": 1024,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
    },
    {
        "rope_type": "longrope",
        "factor": 4.0,
        "original_max_position_embeddings": 1024,
        "short_factor": [1.0] * 24,
        "long_factor": [1.0 + 0.1 * i for i in range(24)],
    },
]


@pytest.mark.parametrize("params", PARTIAL, ids=lambda p: p["rope_type"])
@pytest.mark.parametrize("fraction", [0.25, 0.375, 0.5, 0.75, 1.0])
def test_partial_rotary_factor_inside_rope_parameters(params, fraction) -> None:
    """transformers 5 reads partial_rotary_factor from rope_parameters: only
    int(head_dim * fraction) dimensions rotate, and every rule uses that dimension."""
    head_dim = 128
    rotary = int(head_dim * fraction)
    p = {**params, "rope_theta": 10000.0, "partial_rotary_factor": fraction}
    if p["rope_type"] == "longrope":
        p["short_factor"] = p["short_factor"][:1] * (rotary // 2)
        p["long_factor"] = [1.0 + 0.1 * i for i in range(rotary // 2)]
    if p["rope_type"] == "default":  # not in ROPE_INIT_FUNCTIONS: linear with s = 1
        theirs, a_ref = transformers_init(
            {**p, "rope_type": "linear", "factor": 1.0}, head_dim, 4096
        )
    else:
        theirs, a_ref = transformers_init(p, head_dim, 4096, 3000)
    ours, a = ch.scaled_inv_freq(p, head_dim, 4096, 3000)
    assert ours.shape == theirs.shape == (rotary // 2,)
    assert_close(ours, theirs)
    assert a == pytest.approx(a_ref, rel=1e-12)


def test_partial_rotary_factor_at_the_top_level_moves_inside() -> None:
    params, head_dim, _ = ch.rope_parameters_from_config(
        {
            "head_dim": 64,
            "rope_theta": 5e5,
            "partial_rotary_factor": 0.5,
            "rope_parameters": {"rope_type": "linear", "factor": 2.0},
        }
    )
    assert params == {
        "rope_type": "linear",
        "factor": 2.0,
        "rope_theta": 5e5,
        "partial_rotary_factor": 0.5,
    }
    assert ch.scaled_inv_freq(params, head_dim)[0].shape == (16,)


@pytest.mark.parametrize(
    ("fraction", "message"),
    [
        (0.0, "partial_rotary_factor must be"),
        (1.5, r"\(0, 1\]"),
        (0.03, "even and >= 4"),
        ("0.5", "real number"),
    ],
)
def test_bad_partial_rotary_factor(fraction, message) -> None:
    with pytest.raises(ValueError, match=message):
        ch.scaled_inv_freq(
            {"rope_type": "default", "partial_rotary_factor": fraction}, 128
        )


def test_longrope_attention_factor_null_falls_back_to_the_formula() -> None:
    p = {
        "rope_type": "longrope",
        "rope_theta": 10000.0,
        "factor": 8.0,
        "original_max_position_embeddings": 4096,
        "attention_factor": None,
        "short_factor": [1.0] * 8,
        "long_factor": [2.0] * 8,
    }
    _, a = ch.scaled_inv_freq(p, 16, 32768)
    _, a_ref = transformers_init(p, 16, 32768)
    assert a is not None and a == pytest.approx(a_ref, rel=1e-12)
    assert a == pytest.approx(math.sqrt(1 + 3 / 12), rel=1e-12)  # ln 8 / ln 4096 = 1/4


@pytest.mark.parametrize("rope_type", ["yarn", "llama3", "longrope"])
def test_original_length_one_is_rejected(rope_type) -> None:
    p = ch.example_parameters(rope_type, 16, 10000.0, 4.0, 1)
    with pytest.raises(ValueError, match="integer >= 2"):
        ch.scaled_inv_freq(p, 16, 4096)
    with pytest.raises(ValueError, match="integer >= 2"):
        ch.longrope_inv_freq(16, 10000.0, [1.0] * 8, [2.0] * 8, 1, 4.0)


@pytest.mark.parametrize("rope_type", ["yarn", "longrope"])
@pytest.mark.parametrize("value", ["1.2", [1.2], -1.0, float("nan"), True])
def test_bad_attention_factor_is_rejected(rope_type, value) -> None:
    p = {
        **ch.example_parameters(rope_type, 16, 10000.0, 4.0, 64),
        "attention_factor": value,
    }
    with pytest.raises(ValueError, match="attention_factor must be"):
        ch.scaled_inv_freq(p, 16, 256)


def test_check_pi_cos_sin_accepts_a_float64_answer() -> None:
    def float64_answer(position_ids, head_dim, base, factor):
        ch.check_factor(factor)
        i = torch.arange(head_dim // 2, dtype=torch.float64)
        angles = (position_ids.double() / factor)[..., None] * base ** (
            -2 * i / head_dim
        )
        emb = torch.cat((angles, angles), dim=-1)
        return emb.cos(), emb.sin()

    assert run_check(ch.check_pi_cos_sin, float64_answer) == "All 16 checks passed.\n"


def test_check_pi_cos_sin_rejects_a_value_error_only_for_one_half() -> None:
    def only_half(position_ids, head_dim, base, factor):
        if factor == 0.5:
            raise ValueError("factor must be >= 1")
        return solution_pi_cos_sin(position_ids, head_dim, base, max(factor, 1.0))

    with pytest.raises(AssertionError, match=r"Exercise 9.2, case factor 0.99: "):
        run_check(ch.check_pi_cos_sin, only_half)


def test_check_pi_cos_sin_reports_the_first_differing_index() -> None:
    def sign_flipped_sin(position_ids, head_dim, base, factor):
        cos, sin = solution_pi_cos_sin(position_ids, head_dim, base, factor)
        return cos, -sin

    with pytest.raises(AssertionError) as info:
        run_check(ch.check_pi_cos_sin, sign_flipped_sin)
    message = str(info.value)
    assert message.startswith("Exercise 9.2")
    # position 0 is the identity (sin 0 = 0 either way): the first sample that differs
    # is m = 1, pair 0, whose sine is sin(1/2) = 0.479425539, shown to 4 digits (all
    # it takes to see the difference), not as float32 noise
    assert message.startswith("Exercise 9.2, case positions 0..9, d = 8, s = 2: sin:")
    assert "expected 0.4794 at [0, 1, 0] (m = 1, column 0), got -0.4794" in message
    assert "0.47942554" not in message


def test_check_pi_cos_sin_holds_no_reference_code() -> None:
    def names(code) -> set[str]:  # every global/attribute name, nested functions too
        found = set(code.co_names)
        for const in code.co_consts:
            if hasattr(const, "co_names"):
                found |= names(const)
        return found

    used = names(ch.check_pi_cos_sin.__code__)
    for forbidden in (
        "hf_cos_sin",
        "rope_inv_freq",
        "LlamaRotaryEmbedding",
        "pi_inv_freq",
        "pi_cos_sin",
        "rope_cos_sin",
        "scaled_inv_freq",
    ):
        assert forbidden not in used


def test_deepseek_v3_yarn_block_matches_transformers() -> None:
    """DeepSeek-V3's config.json rope fields: yarn, factor 40, mscale = mscale_all_dim,
    only qk_rope_head_dim = 64 dimensions rotate; transformers' rotary a is then 1."""
    from transformers import DeepseekV3Config

    fields = {
        "num_hidden_layers": 1,
        "qk_rope_head_dim": 64,
        "max_position_embeddings": 163840,
        "rope_theta": 10000,
        "rope_scaling": {
            "beta_fast": 32,
            "beta_slow": 1,
            "factor": 40,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
            "original_max_position_embeddings": 4096,
            "type": "yarn",
        },
    }
    params, head_dim, max_pos = ch.rope_parameters_from_config(fields)
    assert head_dim == 64 and params["rope_type"] == "yarn" and "type" not in params
    ours, a = ch.scaled_inv_freq(params, head_dim, max_pos)
    theirs, a_ref = ROPE_INIT_FUNCTIONS["yarn"](DeepseekV3Config(**fields))
    assert_close(ours, theirs)
    assert a == a_ref == 1.0


def test_rope_parameters_from_config_rejects_bad_input() -> None:
    with pytest.raises(TypeError, match="parsed config.json"):
        ch.rope_parameters_from_config("config.json")
    with pytest.raises(ValueError, match="head_dim"):
        ch.rope_parameters_from_config({"rope_theta": 1e4})
    params, head_dim, max_pos = ch.rope_parameters_from_config(
        {"hidden_size": 64, "num_attention_heads": 4}
    )
    assert params == {"rope_type": "default", "rope_theta": 10000.0}
    assert head_dim == 16 and max_pos is None


# ---- several seeds trained as one batched model ----


def test_train_stacked_matches_separate_train_model_runs() -> None:
    """Two seeds side by side give each model what Chapter 8's train_model gives it
    alone (same initialisation, data, AdamW and schedule), up to float32 rounding of
    the batched kernels."""
    torch.set_num_threads(1)
    config = ch.ModelConfig(vocab_size=17, d_model=16, n_heads=2, n_layers=1)
    train = ch.TrainConfig(steps=6, length=12, batch_size=8, lr=3e-3, warmup=3)
    seeds = [3, 11]
    fresh = []
    for seed in seeds:
        torch.manual_seed(seed)
        fresh.append(ch.TinyTransformer(config))
    stacked, history = ch.train_stacked(
        fresh,
        ch.repeat_batch,
        seeds,
        steps=6,
        length=12,
        batch_size=8,
        lr=3e-3,
        warmup=3,
    )
    assert history == [] and all(not m.training for m in stacked)
    for seed, model in zip(seeds, stacked):
        alone = ch.train_model(
            config, ch.repeat_batch, train, seed=seed, progress=False
        )
        for (name, p), q in zip(alone.named_parameters(), model.parameters()):
            # six AdamW steps move each weight by at most ~6 lr = 0.018; a rounding
            # difference of the batched kernels changes it by ~1e-6
            torch.testing.assert_close(q, p, atol=1e-4, rtol=0, msg=name)
    # the two seeds really differ (a planted bug sharing one model would not)
    assert not torch.equal(stacked[0].embed.weight, stacked[1].embed.weight)


def test_train_stacked_evaluates_and_validates() -> None:
    config = ch.ModelConfig(vocab_size=17, d_model=16, n_heads=2, n_layers=1)
    models = [ch.TinyTransformer(config) for _ in range(2)]
    inv_freq, a = ch.yarn_inv_freq(8, 10000.0, 4.0, 16)
    for model in models:  # a scaling method survives batched training
        ch.apply_scaling(model, inv_freq, a)
    calls = []
    _, history = ch.train_stacked(
        models,
        ch.repeat_batch,
        [0, 1],
        steps=5,
        length=12,
        batch_size=4,
        lr=1e-3,
        every=2,
        evaluate=lambda ms: calls.append(len(ms)) or len(calls),
    )
    assert history == [1, 2, 3, 4] and calls == [2, 2, 2, 2]  # start, 2, 4, the end
    tuned, _ = ch.train_stacked(
        models, ch.repeat_batch, [0, 1], steps=1, length=12, batch_size=4, lr=1e-3
    )
    for model in tuned:
        assert torch.equal(model.position.inv_freq, inv_freq)
        assert model.position.logit_scale == pytest.approx(a * a)
    with pytest.raises(ValueError, match="one seed per model"):
        ch.train_stacked(
            models, ch.repeat_batch, [0], steps=1, length=12, batch_size=4, lr=1e-3
        )


def test_yarn_ramp_in_turns_by_hand_and_llama3_equivalence() -> None:
    """The paper's ramp: chi_i = clamp((beta_fast - r_i) / (beta_fast - beta_slow)).
    With beta_fast = high_freq_factor it is Llama 3's band."""
    d, base, factor, length = 16, 10000.0, 4.0, 32
    i = torch.arange(d // 2, dtype=torch.float64)
    theta = base ** (-2 * i / d)
    turns = length * theta / (2 * math.pi)
    chi = ((32 - turns) / 31).clamp(0, 1)
    expected = theta * (1 - chi) + theta / factor * chi
    assert_close(ch.yarn_turns_inv_freq(d, base, factor, length), expected, rtol=2e-6)
    params = {
        "rope_type": "llama3",
        "rope_theta": base,
        "factor": factor,
        "original_max_position_embeddings": length,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
    }
    theirs, _ = transformers_init(params, d, 128)
    assert_close(
        ch.yarn_turns_inv_freq(d, base, factor, length, beta_fast=4.0),
        theirs,
        rtol=1e-6,
    )


def test_the_rules_cover_every_key_of_the_registry() -> None:
    """Chapter 9's rules and checks know every rope_type transformers registers."""
    assert set(ch.ROPE_KEYS) - {"default"} == set(ROPE_INIT_FUNCTIONS)


@settings(max_examples=25, deadline=None)
@given(
    half=st.integers(2, 48),
    fraction=st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]),
    factor=st.sampled_from([1.0, 2.0, 8.0]),
    base=st.sampled_from([10000.0, 1e6]),
)
def test_proportional_equals_transformers(half, fraction, factor, base) -> None:
    """Gemma 4's proportional RoPE: bit for bit the registry's, zeros included (the
    same float32 operations on the same values), through scaled_inv_freq."""
    d = 2 * half
    params = {
        "rope_type": "proportional",
        "rope_theta": base,
        "factor": factor,
        "partial_rotary_factor": fraction,
    }
    theirs, a_theirs = transformers_init(params, d, 4096)
    ours, a_ours = ch.scaled_inv_freq(params, d)
    assert ours.shape == theirs.shape == (half,)
    assert torch.equal(ours, theirs) and a_ours == a_theirs == 1.0
    rotated = int(fraction * d // 2)
    assert bool((ours[rotated:] == 0).all()) and bool((ours[:rotated] > 0).all())
    with pytest.raises(ValueError, match="unknown key"):
        ch.scaled_inv_freq({**params, "beta_fast": 4.0}, d)


@pytest.mark.parametrize(
    "name, forbidden",
    [
        # 9.2: cos and sin at sample points as literals, no angle of its own
        (
            "check_pi_cos_sin",
            ("base **", "** (-2", "rope_inv_freq", "/ factor", ".cos()"),
        ),
        # 9.3: the factors as literals, no power of two of its own
        ("check_choose_rope_parameters", ("log2", "ceil(", "2.0 **", "2 **")),
    ],
)
def test_checks_hold_expected_values(name, forbidden) -> None:
    """The student edition shows each check's source: it must not compute the
    answer."""
    from bookkit.testing import assert_holds_values

    assert_holds_values("09_context_extension", name, forbidden)


# --- the rules that decide what the chapter may claim (issue 32, item 17)
# ---------------


def test_supported_by_hand() -> None:
    """Every seed must have the sign of the mean, and |mean| >= 3 standard deviations
    (ddof = 1) of the per-seed differences."""
    import numpy as np

    assert ch.supported([0.1] * 5)  # no spread: any common non-zero difference
    assert ch.support_ratio([0.1] * 5) == math.inf
    assert not ch.supported([0.0] * 5)  # a tie on every seed is no effect
    assert ch.support_ratio([0.0] * 5) == 0.0
    assert ch.supported([-0.2, -0.3, -0.25])  # a negative effect is an effect
    # one seed against the rest: four seeds gain 0.2, one loses 0.01 -> not supported
    assert not ch.supported([0.2, 0.2, 0.2, 0.2, -0.01])
    # one seed with no difference at all agrees with no sign
    assert not ch.supported([0.2, 0.2, 0.2, 0.2, 0.0])
    # at the threshold: diffs a - h, a, a + h have mean a and sd h; ratio a / h
    for ratio, expected in ((3.0 * 1.01, True), (3.0 * 0.99, False)):
        diff = [ratio - 1.0, ratio, ratio + 1.0]
        assert ch.support_ratio(diff) == pytest.approx(ratio)
        assert ch.supported(diff) is expected
    # by hand: mean 0.3, sd of (0.1, 0.3, 0.5) = 0.2 -> ratio 1.5 < 3
    assert ch.support_ratio([0.1, 0.3, 0.5]) == pytest.approx(1.5)
    assert not ch.supported([0.1, 0.3, 0.5])
    assert ch.support_ratio(np.array([0.21, 0.19, 0.2])) == pytest.approx(20.0)


@pytest.mark.parametrize("diff", [[0.3], [], [[0.1, 0.2]], [0.1, float("nan")]])
def test_supported_needs_one_finite_difference_per_seed_and_two_seeds(diff) -> None:
    with pytest.raises(ValueError, match="at least two seeds"):
        ch.supported(diff)
    with pytest.raises(ValueError, match="at least two seeds"):
        ch.support_ratio(diff)


def test_ranges_disjoint_by_hand() -> None:
    """The robust rule: the lowest seed of one side above the highest of the other."""
    assert ch.ranges_disjoint([0.96, 0.97, 0.98], [0.78, 0.84])
    assert not ch.ranges_disjoint([0.84, 0.97], [0.78, 0.84])  # touching ranges: a tie
    assert not ch.ranges_disjoint([0.5, 1.0, 1.0], [0.0, 0.6])  # one seed overlaps
    assert not ch.ranges_disjoint([0.1, 0.2], [0.5, 0.6])  # the order matters
    with pytest.raises(ValueError, match="one number per seed"):
        ch.ranges_disjoint([], [0.5])


def test_paired_and_bands_by_hand() -> None:
    """Band means per seed, then better - worse seed by seed, on hand-made accuracy
    curves of TEST_LENGTH positions (NaN where a position has no target)."""
    import numpy as np

    assert (ch.L0_TRAIN, ch.TEST_LENGTH) == (32, 128)
    better = np.zeros((2, 128))
    better[0, :32], better[0, 32:64], better[0, 64:] = 1.0, 0.5, 0.25
    better[1, :32], better[1, 32:64], better[1, 64:] = 0.75, 0.5, 0.5
    better[:, :4] = np.nan  # no target yet: ignored by the band mean
    worse = np.full((2, 128), 0.25)
    results = {"A": better, "B": worse}
    np.testing.assert_array_equal(
        ch.bands(better), [[1.0, 0.5, 0.25], [0.75, 0.5, 0.5]]
    )
    np.testing.assert_array_equal(ch.paired(results, "A", "B", 0), [0.75, 0.5])
    np.testing.assert_array_equal(ch.paired(results, "A", "B", 2), [0.0, 0.25])
    np.testing.assert_array_equal(ch.paired(results, "B", "A", 1), [-0.25, -0.25])
    assert not ch.supported(ch.paired(results, "A", "B", 2))  # a tie on seed 0
    with pytest.raises(ValueError, match="same seeds"):
        ch.paired({"A": better, "B": worse[:1]}, "A", "B", 0)


def test_train_stacked_stops_when_told_and_returns_that_state() -> None:
    """stop(history) is asked after each evaluation: stopping after the second one (step
    4 of 9) returns the models of step 4, equal to a run of 4 steps."""
    torch.set_num_threads(1)
    config = ch.ModelConfig(vocab_size=17, d_model=16, n_heads=2, n_layers=1)
    torch.manual_seed(3)
    models = [ch.TinyTransformer(config) for _ in range(2)]
    kwargs = dict(length=12, batch_size=4, lr=1e-3)
    stopped, history = ch.train_stacked(
        models,
        ch.repeat_batch,
        [0, 1],
        steps=9,
        every=2,
        evaluate=lambda ms: len(ms),
        stop=lambda h: len(h) == 3,
        **kwargs,
    )
    assert history == [2, 2, 2]  # start, step 2, step 4
    four, _ = ch.train_stacked(models, ch.repeat_batch, [0, 1], steps=4, **kwargs)
    for a, b in zip(stopped, four, strict=True):
        for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
            assert torch.equal(x, y)


def test_reached_plateau_by_hand() -> None:
    """Every seed's latest accuracy >= level, and the mean over the seeds up by less
    than `gain` over the last `window` evaluations."""
    assert not ch.reached_plateau([[0.99, 0.99]])  # too short to see a gain
    assert not ch.reached_plateau([[0.90, 0.90], [0.96, 0.96]])  # window 2 needs 3
    flat = [[0.955, 0.965], [0.96, 0.96], [0.96, 0.97]]
    assert ch.reached_plateau(flat)  # mean 0.96 -> 0.965: up 0.005
    rising = [[0.90, 0.92], [0.94, 0.95], [0.96, 0.97]]
    assert not ch.reached_plateau(rising)  # up 0.055 over 20 steps
    one_low = [[0.99, 0.93], [0.99, 0.94], [0.99, 0.94]]
    assert not ch.reached_plateau(one_low)  # one seed below 0.95
    assert ch.reached_plateau(one_low, level=0.9)
    assert ch.reached_plateau(rising, gain=0.1) and ch.reached_plateau(
        rising, window=1, gain=0.03
    )
    # the gain is strict: a rise of exactly `gain` still counts as rising (binary-exact)
    assert not ch.reached_plateau(
        [[0.5, 0.5], [0.5, 0.5], [0.5, 0.53125]], level=0.5, gain=0.015625
    )
    with pytest.raises(ValueError, match="window"):
        ch.reached_plateau(flat, window=0)
