"""The configuration-keys reference's functions against transformers: describe_rope
equals the inv_freq buffers and attention factors of the rotary modules that
transformers builds, for every rule, partial rotary, M-RoPE and per-layer-type
configurations; transformers_warnings collects what transformers logs and restores its
handlers."""

from __future__ import annotations

import logging
import math
import types

import pytest
import torch
from transformers import (
    Gemma3TextConfig,
    GPTNeoXConfig,
    LlamaConfig,
    Phi3Config,
    Qwen2VLTextConfig,
)
from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding
from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXRotaryEmbedding
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
from transformers.models.phi3.modeling_phi3 import Phi3RotaryEmbedding
from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding

from bookkit.testing import load_chapter

g = load_chapter("rope_config_keys")

LISTS = {
    "short_factor": [1.0 + i / 50 for i in range(32)],
    "long_factor": [2.0 + i / 10 for i in range(32)],
}
RULES = [
    ({"rope_type": "default", "rope_theta": 777.0}, 4096),
    ({"rope_type": "linear", "factor": 3.0}, 4096),
    ({"rope_type": "dynamic", "factor": 2.0}, 4096),
    (
        {
            "rope_type": "yarn",
            "factor": 4.0,
            "original_max_position_embeddings": 1024,
            "beta_fast": 16.0,
        },
        4096,
    ),
    (
        {
            "rope_type": "llama3",
            "factor": 8.0,
            "original_max_position_embeddings": 512,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
        },
        8192,
    ),
    (
        {
            "rope_type": "longrope",
            "factor": 4.0,
            "original_max_position_embeddings": 1024,
            **LISTS,
        },
        4096,
    ),
]


@pytest.mark.parametrize("params, max_pos", RULES, ids=lambda p: str(p)[:30])
def test_describe_rope_equals_llama_rotary_embedding(params, max_pos):
    with g.transformers_warnings():
        config = LlamaConfig(
            hidden_size=128,
            num_attention_heads=2,
            head_dim=64,
            max_position_embeddings=max_pos,
            rope_parameters=dict(params),
        )
    (row,) = g.describe_rope(config)
    module = LlamaRotaryEmbedding(config)
    assert row["layer_type"] is None and row["rope_type"] == params["rope_type"]
    assert torch.equal(row["inv_freq"], module.inv_freq)
    assert row["attention_factor"] == module.attention_scaling
    assert row["rotated dims"] == 64


def test_describe_rope_partial_rotary_and_phi3():
    neox = GPTNeoXConfig(hidden_size=192, num_attention_heads=2, rotary_pct=0.5)
    (row,) = g.describe_rope(neox)
    assert row["rotated dims"] == 48
    assert torch.equal(row["inv_freq"], GPTNeoXRotaryEmbedding(neox).inv_freq)
    with g.transformers_warnings():
        phi3 = Phi3Config(
            hidden_size=128,
            num_attention_heads=2,
            max_position_embeddings=8192,
            original_max_position_embeddings=2048,
            rope_scaling={"type": "longrope", **LISTS},
        )
    (row,) = g.describe_rope(phi3)
    module = Phi3RotaryEmbedding(phi3)
    assert torch.equal(row["inv_freq"], module.inv_freq)
    assert (
        abs(row["attention_factor"] - math.sqrt(1 + math.log(4) / math.log(2048)))
        < 1e-12
    )


def test_describe_rope_nested_and_mrope():
    config = Gemma3TextConfig(
        hidden_size=64,
        num_attention_heads=4,
        head_dim=32,
        num_hidden_layers=3,
        layer_types=["sliding_attention", "sliding_attention", "full_attention"],
        rope_parameters={
            "sliding_attention": {"rope_type": "default", "rope_theta": 5000.0},
            "full_attention": {
                "rope_type": "yarn",
                "factor": 2.0,
                "rope_theta": 1e6,
                "original_max_position_embeddings": 1024,
            },
        },
        max_position_embeddings=2048,
    )
    rows = g.describe_rope(config)
    assert [r["layer_type"] for r in rows] == ["sliding_attention", "full_attention"]
    module = Gemma3RotaryEmbedding(config)
    for row in rows:
        layer = row["layer_type"]
        assert torch.equal(row["inv_freq"], getattr(module, f"{layer}_inv_freq"))
        assert row["attention_factor"] == getattr(module, f"{layer}_attention_scaling")
    qwen = Qwen2VLTextConfig(
        hidden_size=64,
        num_attention_heads=4,
        rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3]},
    )
    (row,) = g.describe_rope(qwen)
    assert torch.equal(row["inv_freq"], Qwen2VLRotaryEmbedding(qwen).inv_freq)


def test_transformers_warnings_collects_and_restores():
    library = logging.getLogger("transformers")
    before = list(library.handlers)
    with g.transformers_warnings() as logged:
        LlamaConfig(
            hidden_size=128,
            num_attention_heads=2,
            rope_parameters={"rope_type": "linear", "factor": 2.0, "fctor": 1},
        )
    assert logged == [
        "Unrecognized keys in `rope_parameters` for 'rope_type'='linear': {'fctor'}"
    ]
    assert library.handlers == before
    with pytest.raises(KeyError):
        with g.transformers_warnings():
            LlamaConfig(
                hidden_size=128,
                num_attention_heads=2,
                rope_parameters={"rope_type": "linear"},
            )
    assert library.handlers == before


def test_describe_rope_rejects_a_config_without_rope():
    with pytest.raises(ValueError, match="no rope_parameters"):
        g.describe_rope(types.SimpleNamespace(rope_parameters=None))


def test_small_llama_shape():
    config = g.small_llama(rope_parameters={"rope_type": "linear", "factor": 2.0})
    assert config.head_dim == 64
    assert LlamaRotaryEmbedding(config).inv_freq.shape == (32,)


def test_transformers_warnings_whatever_the_verbosity():
    library = logging.getLogger("transformers")
    level = library.level
    library.setLevel(logging.ERROR)  # what TRANSFORMERS_VERBOSITY=error does
    try:
        with g.transformers_warnings() as logged:
            LlamaConfig(
                hidden_size=128,
                num_attention_heads=2,
                rope_parameters={"rope_type": "linear", "factor": 0.25},
            )
        assert library.level == logging.ERROR
    finally:
        library.setLevel(level)
    assert logged == [
        "`rope_parameters`'s factor field must be a float or int >= 1, got 0.25"
    ]
