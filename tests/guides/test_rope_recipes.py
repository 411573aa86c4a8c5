"""The recipes' functions against transformers and Chapter 6: the q/k row conversions
are Chapter 6's per-head permutation and give transformers' logits once rotated in the
other layout (grouped-query heads, biases, random shapes); verify_rope accepts
transformers' own RoPE and names a layout mistake; check_every_layer passes
transformers' models and catches a wrong table, received or applied;
strict_rope_config accepts what transformers accepts silently and stops the rest, every
time."""

from __future__ import annotations

import json
import logging
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import Gemma3TextConfig, Gemma3TextModel, LlamaConfig, LlamaModel
from transformers.models.glm.modeling_glm import apply_rotary_pos_emb as glm_apply
from transformers.models.llama import modeling_llama
from transformers.models.llama.modeling_llama import (
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)

from bookkit.testing import load_chapter

g = load_chapter("rope_recipes")
ch6 = load_chapter("06_rope_in_code")
ch12 = load_chapter("12_debugging_rope")  # the tracer and its bounds live there


@settings(max_examples=30, deadline=None)
@given(
    st.integers(1, 5),
    st.sampled_from([2, 4, 8, 16]),
    st.integers(1, 6),
    st.booleans(),
    st.integers(0, 1000),
)
def test_conversion_is_chapter_6s_permutation_per_head(
    n_heads, head_dim, cols, bias, seed
):
    shape = (n_heads * head_dim,) if bias else (n_heads * head_dim, cols)
    W = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
    perm = ch6.interleaved_to_halves_perm(head_dim)
    expected = W.reshape(n_heads, head_dim, *shape[1:])[:, perm].reshape(shape)
    assert torch.equal(g.qk_rows_to_halves(W, n_heads), expected)
    assert torch.equal(g.qk_rows_to_interleaved(expected, n_heads), W)


def logits(q_w, k_w, q_b, k_b, x, apply, n, n_kv, d, config):
    q = (x @ q_w.T + q_b).unflatten(-1, (n, d)).transpose(1, 2)
    k = (x @ k_w.T + k_b).unflatten(-1, (n_kv, d)).transpose(1, 2)
    cos, sin = LlamaRotaryEmbedding(config)(x, torch.arange(x.shape[1])[None])
    q, k = apply(q, k, cos, sin)
    return q @ k.repeat_interleave(n // n_kv, dim=1).transpose(-1, -2)


@pytest.mark.parametrize("n, n_kv, d", [(4, 2, 8), (6, 1, 16), (2, 2, 32)])
def test_converted_state_dict_gives_transformers_logits(n, n_kv, d):
    config = LlamaConfig(
        hidden_size=24,
        num_attention_heads=n,
        num_key_value_heads=n_kv,
        head_dim=d,
        num_hidden_layers=1,
        attention_bias=True,
    )
    torch.manual_seed(n + d)
    model = LlamaModel(config).double()
    with torch.no_grad():  # non-zero biases, so that they must be converted too
        for proj in ("q_proj", "k_proj"):
            getattr(model.layers[0].self_attn, proj).bias.normal_()
    state = model.state_dict()
    converted = g.convert_qk_layout(state, n, n_kv, to="interleaved")
    p = "layers.0.self_attn."
    x = torch.randn(
        1, 9, 24, generator=torch.Generator().manual_seed(0), dtype=torch.float64
    )
    names = [p + f"{a}_proj.{b}" for b in ("weight",) for a in ("q", "k")]
    names += [p + "q_proj.bias", p + "k_proj.bias"]
    reference = logits(
        *[state[k] for k in names], x, apply_rotary_pos_emb, n, n_kv, d, config
    )
    ported = logits(*[converted[k] for k in names], x, glm_apply, n, n_kv, d, config)
    assert (ported - reference).abs().max().item() < 1e-10
    untouched = [k for k in state if "q_proj" not in k and "k_proj" not in k]
    assert all(converted[k] is state[k] for k in untouched)


def test_conversion_rejects_bad_input():
    W = torch.zeros(24, 4)
    with pytest.raises(ValueError, match="num_key_value_heads"):
        g.qk_rows_to_halves(W, 5)
    with pytest.raises(ValueError, match="n_heads"):
        g.qk_rows_to_halves(W, 0)
    with pytest.raises(ValueError, match="to must be"):
        g.convert_qk_layout({}, 2, 2, to="neox")


def transformers_rope(config):
    def rope(x, position_ids):
        cos, sin = LlamaRotaryEmbedding(config)(x, position_ids)
        return apply_rotary_pos_emb(x, x, cos, sin)[0]

    return rope


@pytest.mark.parametrize("theta", [100.0, 10000.0, 1e6])
def test_verify_rope_accepts_transformers_and_names_the_layout(theta):
    config = LlamaConfig(
        hidden_size=64,
        num_attention_heads=2,
        head_dim=32,
        rope_parameters={"rope_type": "default", "rope_theta": theta},
    )
    check = g.verify_rope(transformers_rope(config), config)
    assert check.ok and check.largest_difference == 0.0

    def interleaved(x, position_ids):
        cos, sin = LlamaRotaryEmbedding(config)(x, position_ids)
        return glm_apply(x, x, cos, sin)[0]

    check = g.verify_rope(interleaved, config)
    assert not check.ok and check.diagnosis.startswith("interleaved")
    other = LlamaConfig(
        hidden_size=64,
        num_attention_heads=2,
        head_dim=32,
        rope_parameters={"rope_type": "default", "rope_theta": theta * 3},
    )
    check = g.verify_rope(transformers_rope(other), config)
    assert not check.ok and check.diagnosis.startswith("differs")


def test_expected_tables_match_llama_rotary_embedding():
    for params in (
        {"rope_type": "default", "rope_theta": 5e5},
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512},
    ):
        config = LlamaConfig(
            hidden_size=64,
            num_attention_heads=2,
            head_dim=32,
            max_position_embeddings=2048,
            rope_parameters=params,
        )
        positions = torch.arange(300)
        cos, sin = LlamaRotaryEmbedding(config)(torch.zeros(1), positions[None])
        ref_cos, ref_sin = g.expected_tables(config, positions, None)
        bound = ch12.table_bound(299.0, config.rope_parameters["rope_theta"]) * 1.2
        assert (cos[0].double() - ref_cos).abs().max() <= bound
        assert (sin[0].double() - ref_sin).abs().max() <= bound


def test_check_every_layer_on_llama_and_a_wrong_table():
    config = LlamaConfig(
        vocab_size=32,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=3,
        num_attention_heads=2,
        head_dim=16,
        rope_parameters={"rope_type": "linear", "factor": 2.0},
    )
    torch.manual_seed(0)
    model = LlamaModel(config).eval()
    tokens = torch.arange(1, 21)[None]
    rows = g.check_every_layer(model, tokens)
    assert [r["ok"] for r in rows] == [True, True, True]
    assert [r["layer type"] for r in rows] == ["all"] * 3

    def unscaled(module, args, kwargs):  # the scaling forgotten in layer 1
        cos, sin = LlamaRotaryEmbedding(
            LlamaConfig(hidden_size=32, num_attention_heads=2, head_dim=16)
        )(torch.zeros(1), torch.arange(20)[None])
        return args, dict(kwargs, position_embeddings=(cos, sin))

    handle = model.layers[1].self_attn.register_forward_pre_hook(
        unscaled, with_kwargs=True
    )
    try:
        rows = g.check_every_layer(model, tokens)
    finally:
        handle.remove()
    assert [r["ok"] for r in rows] == [True, False, True]
    # layer 1 receives the unscaled table and applies it: both columns show it
    assert rows[1]["received"] > rows[1]["table bound"]
    assert rows[1]["applied"] > rows[1]["rotation bound"]
    bounds = (ch12.table_bound(19.0, 10000.0), ch12.applied_bound(19.0, 10000.0))
    assert (rows[0]["table bound"], rows[0]["rotation bound"]) == bounds


def test_check_every_layer_sees_a_rotation_that_ignores_its_table(monkeypatch):
    """A port that turns the other way (sin negated) from the right table: the table
    received is fine, the rotation applied is not."""
    config = LlamaConfig(vocab_size=32, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=2, head_dim=16)
    torch.manual_seed(0)
    model = LlamaModel(config).eval()
    rotation = modeling_llama.apply_rotary_pos_emb

    def turns_back(q, k, cos, sin, unsqueeze_dim=1):
        return rotation(q, k, cos, -sin, unsqueeze_dim)

    monkeypatch.setattr(modeling_llama, "apply_rotary_pos_emb", turns_back)
    rows = g.check_every_layer(model, torch.arange(1, 21)[None])
    assert [r["ok"] for r in rows] == [False, False]
    assert all(r["received"] <= r["table bound"] for r in rows)
    assert all(r["applied"] > 0.5 for r in rows)


def test_check_every_layer_on_gemma3_layer_types():
    config = Gemma3TextConfig(
        vocab_size=32,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=3,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        sliding_window=4,
        layer_types=["full_attention", "sliding_attention", "full_attention"],
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
            "full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1e6},
        },
    )
    torch.manual_seed(1)
    rows = g.check_every_layer(
        Gemma3TextModel(config).eval(), torch.arange(1, 17)[None]
    )
    assert [r["layer type"] for r in rows] == config.layer_types
    assert all(r["ok"] for r in rows)


GOOD = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_attention_heads": 2,
    "head_dim": 32,
    "num_hidden_layers": 1,
    "max_position_embeddings": 4096,
    "rope_parameters": {
        "rope_type": "yarn",
        "rope_theta": 10000.0,
        "factor": 4.0,
        "original_max_position_embeddings": 1024,
    },
}


def test_strict_rope_config_accepts_and_round_trips(tmp_path):
    config = g.strict_rope_config(GOOD, save_to=str(tmp_path))
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["rope_parameters"]["factor"] == 4.0
    module = LlamaRotaryEmbedding(config)
    assert abs(module.attention_scaling - (0.1 * math.log(4) + 1)) < 1e-12


@pytest.mark.parametrize("repeat", [0, 1])  # transformers logs this once per process
@pytest.mark.parametrize(
    "rope, message",
    [
        (
            {
                "rope_type": "yarn",
                "rope_theta": 1e4,
                "factor": 3.0,
                "original_max_position_embeddings": 1024,
            },
            "differs",
        ),
        ({"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0}, "silently"),
        (
            {"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0, "facter": 2.0},
            "Unrecognized keys",
        ),
        ({"rope_type": "linear", "rope_theta": 1e4, "factor": 0.5}, "factor field"),
        (
            {
                "rope_type": "llama3",
                "rope_theta": 1e4,
                "factor": 8.0,
                "original_max_position_embeddings": 8192,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
            },
            "below",
        ),
        (
            {
                "rope_type": "llama3",
                "rope_theta": 1e4,
                "factor": 8.0,
                "original_max_position_embeddings": 1024,
            },
            "rejects",
        ),
    ],
)
def test_strict_rope_config_stops_every_time(rope, message, repeat):
    with pytest.raises(ValueError, match=message):
        g.strict_rope_config(dict(GOOD, rope_parameters=rope))


def test_strict_rope_config_needs_a_model_type():
    with pytest.raises(ValueError, match="model_type"):
        g.strict_rope_config({"hidden_size": 64})


def test_strict_rope_config_stops_whatever_the_verbosity():
    library = logging.getLogger("transformers")
    level = library.level
    library.setLevel(logging.ERROR)  # what TRANSFORMERS_VERBOSITY=error does
    try:
        rope = {"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0, "fatcor": 1}
        with pytest.raises(ValueError, match="Unrecognized keys"):
            g.strict_rope_config(dict(GOOD, rope_parameters=rope))
        assert library.level == logging.ERROR
    finally:
        library.setLevel(level)
