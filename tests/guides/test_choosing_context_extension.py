"""The decision guide's functions against transformers: every configuration that
extension_rope_parameters writes, fed to transformers, gives the rule's closed form
(computed here from transformers' own unscaled frequencies), builds without a logged
warning, and changes with the sequence length exactly when transformers' rotary
embedding does."""

from __future__ import annotations

import logging
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

from bookkit.testing import load_chapter

g = load_chapter("choosing_context_extension")

HEAD_DIMS = st.sampled_from([16, 32, 64, 128])
THETAS = st.sampled_from([10000.0, 500000.0]) | st.floats(100.0, 2e6)
ORIGINALS = st.sampled_from([256, 1024, 2048])
RATIOS = st.sampled_from([2, 4, 8])


class Logged(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def config_for(params: dict, max_pos: int, head_dim: int) -> tuple[LlamaConfig, list]:
    """A LlamaConfig built by transformers from params, and what it logged."""
    handler = Logged()
    library = logging.getLogger("transformers")
    saved, library.handlers = library.handlers, [handler]
    try:
        config = LlamaConfig(
            hidden_size=2 * head_dim,
            num_attention_heads=2,
            head_dim=head_dim,
            max_position_embeddings=max_pos,
            rope_parameters=dict(params),
        )
    finally:
        library.handlers = saved
    return config, handler.messages


def unscaled(theta: float, head_dim: int) -> torch.Tensor:
    """transformers' own frequencies of the unscaled model, in float64."""
    config, _ = config_for(
        {"rope_type": "default", "rope_theta": theta}, 4096, head_dim
    )
    return LlamaRotaryEmbedding(config).inv_freq.double()


@settings(max_examples=20, deadline=None)
@given(HEAD_DIMS, THETAS, ORIGINALS, RATIOS)
def test_every_recipe_gives_its_rule_in_transformers(head_dim, theta, original, ratio):
    target = ratio * original
    base = unscaled(theta, head_dim)
    s = float(ratio)
    for method in ("PI", "NTK-aware", "YaRN", "Llama 3"):
        params, max_pos = g.extension_rope_parameters(
            method, theta, head_dim, original, target
        )
        assert max_pos == target
        config, logged = config_for(params, max_pos, head_dim)
        assert logged == [], (method, logged)
        rotary = LlamaRotaryEmbedding(config)
        kappa = base / rotary.inv_freq.double()
        slowest_turns = original * base[-1].item() / (2 * math.pi)
        if method in ("PI", "NTK-aware") or slowest_turns < 1:
            assert abs(kappa[-1].item() - s) < 2e-5 * s, method  # slowest: like PI
        else:  # YaRN and Llama 3 keep a pair that turned at least once
            assert kappa[-1].item() <= s * (1 + 1e-6), method
        if method == "PI":
            assert torch.allclose(kappa, torch.full_like(kappa, s), rtol=2e-6)
        else:
            assert abs(kappa[0].item() - 1) < 1e-6, method  # fastest pair kept
        expected_a = 0.1 * math.log(s) + 1 if method == "YaRN" else 1.0
        assert abs(rotary.attention_scaling - expected_a) < 1e-12


@settings(max_examples=10, deadline=None)
@given(HEAD_DIMS, THETAS, ORIGINALS, RATIOS)
def test_dynamic_recipe_equals_ntk_at_the_target_and_nothing_below(
    head_dim, theta, original, ratio
):
    target = ratio * original
    dynamic, max_pos = g.extension_rope_parameters(
        "dynamic NTK", theta, head_dim, original, target
    )
    assert max_pos == original  # dynamic NTK reads max_position_embeddings as L0
    ntk, _ = g.extension_rope_parameters("NTK-aware", theta, head_dim, original, target)
    dyn_config, logged = config_for(dynamic, max_pos, head_dim)
    assert logged == []
    ntk_config, _ = config_for(ntk, target, head_dim)
    at_target, _ = ROPE_INIT_FUNCTIONS["dynamic"](dyn_config, seq_len=target)
    static = LlamaRotaryEmbedding(ntk_config).inv_freq
    assert torch.allclose(at_target.double(), static.double(), rtol=2e-6)
    below, _ = ROPE_INIT_FUNCTIONS["dynamic"](dyn_config, seq_len=original)
    assert torch.allclose(below.double(), unscaled(theta, head_dim), rtol=1e-7)


def test_longrope_recipe_uses_its_lists():
    short = [1.0] * 32
    long = [1.0 + i / 10 for i in range(32)]
    params, max_pos = g.extension_rope_parameters(
        "LongRoPE", 10000.0, 64, 1024, 4096, short, long
    )
    config, logged = config_for(params, max_pos, 64)
    assert logged == []
    inv_freq, a = ROPE_INIT_FUNCTIONS["longrope"](config, seq_len=4096)
    expected = unscaled(10000.0, 64) / torch.tensor(long, dtype=torch.float64)
    assert torch.allclose(inv_freq.double(), expected, rtol=1e-6)
    assert abs(a - math.sqrt(1 + math.log(4) / math.log(1024))) < 1e-12


def test_rotary_in_use_is_what_the_forward_pass_uses():
    for method in ("dynamic NTK", "YaRN"):
        config = g.llama_style_config(*g.RECIPES_8K_TO_32K[method])
        inv_freq, a = g.rotary_in_use(config, 16384)
        rotary = LlamaRotaryEmbedding(config)
        cos, _ = rotary(torch.zeros(1), torch.arange(16384)[None])
        # position 1: cos(theta_i) * a, float32 cos within 2 ulp
        expected = torch.cos(inv_freq.double()) * a
        assert torch.allclose(cos[0, 1, :64].double(), expected, atol=4e-7)


def test_rotation_depends_on_length_matches_transformers_tables():
    recipes = dict(g.RECIPES_8K_TO_32K)
    recipes["LongRoPE"] = g.extension_rope_parameters(
        "LongRoPE", 500000.0, 128, 8192, 32768, [1.0] * 64, [2.0] * 64
    )
    for method, recipe in recipes.items():
        config = g.llama_style_config(*recipe)
        tables = []
        for length in (4096, 32768):
            rotary = LlamaRotaryEmbedding(config)
            cos, _ = rotary(torch.zeros(1), torch.arange(length)[None])
            tables.append(cos[0, 5] / cos[0, 0, 0])  # position 5, attention factor out
        changes = not torch.equal(tables[0], tables[1])
        assert g.rotation_depends_on_length(config, [4096, 32768]) == changes, method
        assert changes == (method in ("dynamic NTK", "LongRoPE")), method


def test_short_input_change_counts_against_transformers():
    original = g.llama_style_config(g.LLAMA3_8B_SHAPE["rope_parameters"], 8192)
    base = LlamaRotaryEmbedding(original).inv_freq
    config = g.llama_style_config(*g.RECIPES_8K_TO_32K["Llama 3"])
    scaled = LlamaRotaryEmbedding(config).inv_freq
    change = g.short_input_change(config, original, 8192)
    assert change["pairs changed"] == int((scaled != base).sum())
    turning = 8192 * base.double() / (2 * math.pi) >= 1
    assert change["turning pairs changed"] == int(((scaled != base) & turning).sum())
    assert change["logit factor a^2"] == 1.0


@pytest.mark.parametrize(
    "args, message",
    [
        (("ALiBi", 1e4, 64, 1024, 4096), "method"),
        (("PI", 1e4, 63, 1024, 4096), "even"),
        (("PI", 1e4, 64, 4096, 1024), "exceed"),
        (("PI", 0.5, 64, 1024, 4096), "rope_theta"),
        (("YaRN", 1e4, 64, 1024.0, 4096), "positive number of tokens"),
        (("LongRoPE", 1e4, 64, 1024, 4096), "short_factor"),
    ],
)
def test_extension_rope_parameters_rejects_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        g.extension_rope_parameters(*args)
