"""Chapter 14 (RoPE meets the KV cache): MLA against transformers' DeepseekV3Attention
and its rotary embedding, the decoupled rotation against transformers' RoPE functions,
the cache arithmetic against DeepSeek-V2's Table 1 formulas, the rolling cache and the
streaming decoder against references written here in float64, the sink attention
against transformers' GptOss eager attention, the padding helpers against generate(),
every ValueError, and the three exercise checks (an independent solution passes, each
named mistake is recognised)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers.models.deepseek_v3.modeling_deepseek_v3 import (
    apply_rotary_pos_emb_interleave,
)
from transformers.models.gpt_oss.modeling_gpt_oss import (
    eager_attention_forward as gpt_oss_eager,
)
from transformers.models.llama.modeling_llama import (
    LlamaConfig,
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)

from bookkit.testing import fails, load_chapter, passes

pytestmark = pytest.mark.unit
CH = load_chapter("14_rope_meets_the_kv_cache")
U32 = 2.0**-24  # float32's unit roundoff

YARN = {
    "rope_type": "yarn",
    "rope_theta": 10000.0,
    "factor": 4.0,
    "mscale": 1.0,
    "mscale_all_dim": 0.8,
    "original_max_position_embeddings": 128,
}
PLAIN = {"rope_type": "default", "rope_theta": 10000.0}


# --- YaRN scales against transformers ------------------------------------------------


@pytest.mark.parametrize(
    "rope",
    [
        PLAIN,
        YARN,
        dict(YARN, mscale=0.707, mscale_all_dim=0.707),
        dict(YARN, factor=40.0, mscale=1.0, mscale_all_dim=1.0),
        {k: v for k, v in YARN.items() if k not in ("mscale", "mscale_all_dim")},
        dict(YARN, attention_factor=1.3),
    ],
)
def test_mla_scales_match_transformers(rope) -> None:
    attention, rotary = CH.tiny_deepseek_attention(rope, interleave=True)
    table, scale = CH.mla_scales(rope, 48)
    assert abs(table - rotary.attention_scaling) < 1e-12
    assert abs(scale - attention.scaling) < 1e-12


def test_yarn_mscale_closed_form() -> None:
    assert CH.yarn_mscale(1.0) == 1.0 and CH.yarn_mscale(0.5, 3.0) == 1.0
    assert abs(CH.yarn_mscale(40.0) - (0.1 * math.log(40) + 1)) < 1e-15
    assert abs(CH.yarn_mscale(4.0, 0.8) - (0.08 * math.log(4) + 1)) < 1e-15
    with pytest.raises(ValueError, match="factor"):
        CH.yarn_mscale(0.0)
    with pytest.raises(ValueError, match="rope_type"):
        CH.mla_scales({"factor": 2.0}, 48)
    with pytest.raises(ValueError, match="qk_head_dim"):
        CH.mla_scales(PLAIN, 0)


# --- MLA against DeepseekV3Attention --------------------------------------------------


def module_output(attention, hidden, cos, sin):
    """transformers' DeepseekV3Attention in float64 with our tables (full width)."""
    T = hidden.shape[1]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)[None, None]
    tables = (torch.cat((cos, cos), -1)[None], torch.cat((sin, sin), -1)[None])
    with torch.no_grad():
        return attention.double()(hidden, tables, mask)[0]


@pytest.mark.parametrize("rope", [PLAIN, YARN])
@pytest.mark.parametrize("interleave", [False, True])
@pytest.mark.parametrize("seed", [3, 11])
def test_mla_equals_deepseek_attention(rope, interleave, seed) -> None:
    attention, rotary = CH.tiny_deepseek_attention(rope, interleave, seed)
    shape = CH.MLA_TEST_SHAPE
    weights = CH.mla_weights(attention, shape)
    table, scale = CH.mla_scales(rope, shape.qk_head_dim)
    T = 9
    positions = torch.tensor([0, 1, 2, 3, 5, 8, 13, 21, 34])  # any increasing ids
    cos, sin = CH.decoupled_tables(positions, rotary.inv_freq, table)
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(2, T, 32, generator=g, dtype=torch.float64)
    parts = CH.mla_parts(hidden, weights, shape, cos, sin, interleave)
    reference = module_output(attention, hidden, cos, sin)
    size = reference.abs().max()
    # the module's RMSNorms compute in float32 whatever the input dtype: ~u relative
    assert (
        CH.mla_expanded(parts, weights, scale) - reference
    ).abs().max() < 1e-5 * size
    assert (
        CH.mla_absorbed(parts, weights, scale) - reference
    ).abs().max() < 1e-5 * size
    assert (
        CH.mla_absorbed(parts, weights, scale) - CH.mla_expanded(parts, weights, scale)
    ).abs().max() < 1e-12 * size


def test_mla_without_query_latent() -> None:
    """q_lora_rank None: queries straight from q_proj."""
    from transformers import DeepseekV3Config
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import (
        DeepseekV3Attention,
        DeepseekV3RotaryEmbedding,
    )

    config = DeepseekV3Config(
        vocab_size=99,
        hidden_size=24,
        num_attention_heads=3,
        num_key_value_heads=3,
        kv_lora_rank=8,
        q_lora_rank=None,
        qk_rope_head_dim=6,
        v_head_dim=10,
        qk_nope_head_dim=12,
        num_hidden_layers=1,
        n_routed_experts=4,
        n_group=1,
        topk_group=1,
        num_experts_per_tok=2,
        rope_parameters=dict(PLAIN),
        rope_interleave=False,
    )
    config._attn_implementation = "sdpa"
    attention = DeepseekV3Attention(config, 0).eval()
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for p in attention.parameters():
            p.copy_(0.4 * torch.randn(p.shape, generator=g))
    shape = CH.MLAShape(24, 3, 8, 12, 6, 10, None)
    weights = CH.mla_weights(attention, shape)
    assert "W_Q" in weights and "W_DQ" not in weights
    rotary = DeepseekV3RotaryEmbedding(config)
    cos, sin = CH.decoupled_tables(torch.arange(5), rotary.inv_freq)
    hidden = torch.randn(1, 5, 24, generator=g, dtype=torch.float64)
    parts = CH.mla_parts(hidden, weights, shape, cos, sin, False)
    ours = CH.mla_expanded(parts, weights, 18**-0.5)
    reference = module_output(attention, hidden, cos, sin)
    assert (ours - reference).abs().max() < 1e-5 * reference.abs().max()


def test_decoupled_tables_match_transformers_rotary() -> None:
    """Our float64 tables against DeepseekV3RotaryEmbedding's float32 ones: the angle
    m * inv_freq rounds once (|angle| u), cos and sin within 2 ulp (4u), the product
    by the table factor and the float32 result once more each."""
    _, rotary = CH.tiny_deepseek_attention(YARN, interleave=True)
    positions = torch.tensor([[0, 1, 7, 100, 511]])
    cos32, sin32 = rotary(torch.zeros(1, 1, 16), positions)
    table, _ = CH.mla_scales(YARN, 48)
    cos, sin = CH.decoupled_tables(positions[0], rotary.inv_freq, table)
    angles = positions[0].double()[:, None] * rotary.inv_freq.double()
    bound = table * (angles.abs() + 8) * U32
    assert ((cos32[0, :, :8].double() - cos).abs() <= bound).all()
    assert ((sin32[0, :, :8].double() - sin).abs() <= bound).all()
    assert torch.equal(cos[0], torch.full((8,), table, dtype=torch.float64))


def test_rotate_rope_part_matches_transformers() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 5, 8, generator=g, dtype=torch.float64)
    angles = torch.tensor([0.0, 1.0, 2.5, 7.0, 40.0], dtype=torch.float64)[:, None] * (
        10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    )
    cos, sin = angles.cos(), angles.sin()
    full_cos, full_sin = (
        torch.cat((cos, cos), -1)[None],
        torch.cat((sin, sin), -1)[None],
    )
    halves = apply_rotary_pos_emb(x, x, full_cos, full_sin)[0]
    assert (CH.rotate_rope_part(x, cos, sin, False) - halves).abs().max() < 1e-12
    inter = apply_rotary_pos_emb_interleave(x, x, full_cos, full_sin)[0]
    perm = torch.cat((torch.arange(0, 8, 2), torch.arange(1, 8, 2)))
    ours = CH.rotate_rope_part(x, cos, sin, True)
    assert (ours[..., perm] - inter).abs().max() < 1e-12
    # and it is a rotation of the interleaved pairs: the complex product
    z = torch.view_as_complex(x.reshape(2, 3, 5, 4, 2).contiguous())
    turned = torch.view_as_real(z * torch.polar(torch.ones_like(angles), angles))
    assert (ours - turned.flatten(-2)).abs().max() < 1e-12
    with pytest.raises(ValueError, match="d_R / 2"):
        CH.rotate_rope_part(x, cos[:, :3], sin[:, :3], True)


def test_split_rope_and_shape_errors() -> None:
    x = torch.arange(12.0).reshape(2, 6)
    nope, rope = CH.split_rope(x, 4)
    assert torch.equal(nope, x[:, :2]) and torch.equal(rope, x[:, 2:])
    for bad in (3, 0, True, 8):
        with pytest.raises(ValueError, match="qk_rope_head_dim"):
            CH.split_rope(x, bad)
    with pytest.raises(ValueError, match="last axis"):
        CH.split_rope([1.0, 2.0], 2)
    with pytest.raises(ValueError, match="even"):
        CH.MLAShape(32, 4, 16, 32, 15, 32)
    with pytest.raises(ValueError, match="kv_lora_rank"):
        CH.MLAShape(32, 4, 0, 32, 16, 32)
    with pytest.raises(ValueError, match="q_lora_rank"):
        CH.MLAShape(32, 4, 16, 32, 16, 32, q_lora_rank=0)
    assert CH.MLAShape(32, 4, 16, 32, 16, 32).qk_head_dim == 48


def test_mla_weights_and_parts_reject_what_does_not_fit() -> None:
    attention, rotary = CH.tiny_deepseek_attention(PLAIN, interleave=False)
    shape = CH.MLA_TEST_SHAPE
    for wrong in ({"kv_lora_rank": 8}, {"v_head_dim": 16}, {"num_heads": 2}):
        with pytest.raises(ValueError, match="kv_b_proj"):
            CH.mla_weights(attention, dataclasses.replace(shape, **wrong))
    with pytest.raises(ValueError, match="kv_a_proj_with_mqa"):
        CH.mla_weights(attention, dataclasses.replace(shape, hidden_size=16))
    weights = CH.mla_weights(attention, shape)
    cos, sin = CH.decoupled_tables(torch.arange(3), rotary.inv_freq)
    with pytest.raises(ValueError, match="hidden_size=32"):
        CH.mla_parts(torch.zeros(1, 3, 16), weights, shape, cos, sin)
    with pytest.raises(ValueError, match="integer"):
        CH.decoupled_tables(torch.arange(3.0), rotary.inv_freq)


# --- cache arithmetic -----------------------------------------------------------------


@given(
    h=st.integers(1, 256),
    d=st.integers(1, 256),
    v=st.integers(1, 256),
    g=st.integers(1, 16),
    c=st.integers(1, 1024),
    r=st.integers(1, 64),
)
@settings(max_examples=60, deadline=None)
def test_kv_cache_elements_table_one(h, d, v, g, c, r) -> None:
    """DeepSeek-V2's Table 1: MHA 2 n_h d_h, GQA 2 n_g d_h, MLA d_c + d_R."""
    assert CH.kv_cache_elements("mha", h, d) == 2 * h * d
    assert CH.kv_cache_elements("mha", h, d, v_head_dim=v) == h * (d + v)
    assert CH.kv_cache_elements("gqa", g * h, d, num_kv_heads=g) == 2 * g * d
    rope = 2 * r
    if rope < d:
        assert (
            CH.kv_cache_elements("mla", h, d, kv_lora_rank=c, qk_rope_head_dim=rope)
            == c + rope
        )


def test_kv_cache_errors_and_traffic() -> None:
    assert CH.decode_traffic_bytes(576, 61, 32768, 2) == 576 * 61 * 32768 * 2
    assert CH.decode_traffic_bytes(576, 61, 1) == 70272
    cases = [
        (lambda: CH.kv_cache_elements("gqa", 128, 128, num_kv_heads=3), "divisor"),
        (lambda: CH.kv_cache_elements("gqa", 128, 128), "num_kv_heads"),
        (
            lambda: CH.kv_cache_elements("mla", 128, 192, qk_rope_head_dim=64),
            "kv_lora_rank",
        ),
        (
            lambda: CH.kv_cache_elements(
                "mla", 128, 192, kv_lora_rank=512, qk_rope_head_dim=63
            ),
            "even",
        ),
        (
            lambda: CH.kv_cache_elements(
                "mla", 128, 192, kv_lora_rank=512, qk_rope_head_dim=192
            ),
            "fit",
        ),
        (lambda: CH.kv_cache_elements("mqa", 128, 192), "'mha', 'gqa' or 'mla'"),
        (lambda: CH.kv_cache_elements("mha", 0, 192), "num_heads"),
        (lambda: CH.decode_traffic_bytes(576, 61, 0), "context"),
        (lambda: CH.decode_traffic_bytes(576, 61, 10, itemsize=True), "itemsize"),
    ]
    for call, word in cases:
        with pytest.raises(ValueError, match=word):
            call()


# --- the rolling cache
# -----------------------------------------------------------------


def reference_keep(length: int, size: int, n_sink: int) -> list[int]:
    """StreamingLLM's cache, simulated token by token with a plain list."""
    kept: list[int] = []
    for t in range(length):
        kept.append(t)
        if len(kept) > size:
            del kept[n_sink]
    return kept


@given(length=st.integers(0, 40), size=st.integers(1, 12), n_sink=st.integers(0, 11))
@settings(max_examples=80, deadline=None)
def test_rolling_cache_keeps_sinks_and_window(length, size, n_sink) -> None:
    if n_sink >= size:
        with pytest.raises(ValueError, match="n_sink"):
            CH.RollingKVCache(size, n_sink)
        return
    cache = CH.RollingKVCache(size, n_sink)
    for t in range(length):
        value = torch.full((1, 1, 1, 2), float(t))
        cache.append(value, -value, t)
    expected = reference_keep(length, size, n_sink)
    assert cache.positions == expected
    assert CH.streaming_keep(length, size, n_sink) == expected
    assert cache.cache_positions() == list(range(len(expected)))
    if length:
        assert cache.keys[0, 0, :, 0].tolist() == [float(t) for t in expected]
        assert cache.values[0, 0, :, 0].tolist() == [-float(t) for t in expected]


def test_rolling_cache_errors() -> None:
    cache = CH.RollingKVCache(4, 1)
    cache.append(torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2), 3)
    for position in (3, 2):
        with pytest.raises(ValueError, match="increase"):
            cache.append(torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2), position)
    with pytest.raises(ValueError, match="no room"):
        CH.RollingKVCache(3, 3)
    with pytest.raises(ValueError, match="size"):
        CH.RollingKVCache(-1, 0)
    with pytest.raises(ValueError, match="n_sink"):
        CH.RollingKVCache(4, True)
    with pytest.raises(ValueError, match="length"):
        CH.streaming_keep(-1, 4, 1)


# --- the streaming decoder against a reference written here --------------------------


def reference_stream(model, tokens, size, n_sink, reindex):
    """One-layer decoding written out plainly in float64: for each step, the kept
    tokens, their raw q/k/v from the layer's weights, rotation at cache or original
    positions with float64 angles, softmax, MLP, read-out."""
    block = model.blocks[0]
    inv_freq = 10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)
    B, T = tokens.shape
    out = []
    for t in range(T):
        kept = reference_keep(t + 1, size, n_sink)
        x = model.embed(tokens[:, kept])
        qkv = block.attn.qkv(block.ln_attn(x)).view(B, len(kept), 3, 4, 16)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        pos = torch.arange(len(kept)) if reindex else torch.tensor(kept)
        angles = pos.double()[:, None] * inv_freq  # head_dim 16: 8 pairs

        def rot(y):
            y1, y2 = y.chunk(2, -1)
            c, s = angles.cos(), angles.sin()
            return torch.cat((y1 * c - y2 * s, y2 * c + y1 * s), -1)

        qr, kr = rot(q)[:, :, -1:], rot(k)
        w = (qr @ kr.mT / 4.0).softmax(-1)
        h = x[:, -1:] + block.attn.out((w @ v).transpose(1, 2).reshape(B, 1, 64))
        h = h + block.mlp(block.ln_mlp(h))
        out.append(model.unembed(model.ln_out(h)))
    return torch.cat(out, 1)


@pytest.mark.parametrize(
    "size,n_sink,reindex",
    [(20, 0, True), (6, 2, True), (6, 2, False), (5, 0, False), (7, 1, True)],
)
def test_decode_matches_reference(size, n_sink, reindex) -> None:
    """RoPE.cos_sin computes angles in float32 (Chapter 8), the reference in float64:
    the tables differ by |angle| u + 4u at most (angle < 20 rad), which moves logits
    of size ~5 by far less than 1e-4."""
    model = CH.random_cached_model(1, seed=4)
    tokens = torch.randint(0, 17, (2, 14), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ours = model.decode(tokens, size, n_sink, reindex)
        expected = reference_stream(model, tokens, size, n_sink, reindex)
    assert (ours - expected).abs().max() < 1e-4


def test_decode_two_layers_without_eviction_is_the_forward_pass() -> None:
    model = CH.random_cached_model(2, seed=1)
    tokens = torch.randint(0, 17, (2, 12), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert (model.decode(tokens, 12, 0, False) - model(tokens)).abs().max() < 1e-10
        assert (model.decode(tokens, 12, 3, True) - model(tokens)).abs().max() < 1e-10


def test_decode_rejects_models_without_rope() -> None:
    model = CH.CachedTinyTransformer(CH.ModelConfig(vocab_size=17, scheme="alibi"))
    with pytest.raises(ValueError, match="RoPE"):
        model.decode(torch.zeros(1, 3, dtype=torch.long), 4, 1, True)
    rope = CH.random_cached_model(1)
    with pytest.raises(ValueError, match="tokens"):
        rope.decode(torch.zeros(3, dtype=torch.long), 4, 1, True)


def test_mass_on_first_of_a_uniform_head() -> None:
    """Zero query/key weights: every head is uniform over the keys it sees, so the
    weight on position 0 at query m is 1/(m+1)."""
    torch.manual_seed(0)
    model = CH.TinyTransformer(CH.ModelConfig(vocab_size=17, scheme="nope")).double()
    with torch.no_grad():
        for block in model.blocks:
            block.attn.qkv.weight[:128] = 0
            block.attn.qkv.bias[:128] = 0
    tokens = torch.randint(0, 17, (3, 10), generator=torch.Generator().manual_seed(0))
    mass = CH.mass_on_first(model, tokens, first=2)
    expected = (1 / torch.arange(3, 11, dtype=torch.float64)).mean()
    assert mass.shape == (2, 4) and (mass - expected).abs().max() < 1e-12
    with pytest.raises(ValueError, match="first"):
        CH.mass_on_first(model, tokens, first=10)


# --- learned sinks against transformers' GptOss eager attention -----------------------


def test_attention_with_sinks_matches_gpt_oss_eager() -> None:
    g = torch.Generator().manual_seed(9)
    q = torch.randn(2, 6, 5, 4, generator=g, dtype=torch.float64)
    k = torch.randn(2, 3, 5, 4, generator=g, dtype=torch.float64)
    v = torch.randn(2, 3, 5, 4, generator=g, dtype=torch.float64)
    sinks = torch.tensor([0.3, -1.0, 2.0, 0.0, 1.5, -0.2], dtype=torch.float64)

    class Holder(torch.nn.Module):
        num_key_value_groups = 2
        training = False

    holder = Holder()
    holder.sinks = sinks
    mask = torch.full((5, 5), float("-inf"), dtype=torch.float64).triu(1)[None, None]
    expected = gpt_oss_eager(holder, q, k, v, mask, scaling=0.5)[0].transpose(1, 2)
    ours = CH.attention_with_sinks(q, k, v, sinks, 0.5)
    assert (ours - expected).abs().max() < 1e-12
    with pytest.raises(ValueError, match="sink"):
        CH.attention_with_sinks(q, k, v, sinks[:4], 0.5)
    with pytest.raises(ValueError, match="dividing"):
        four = torch.zeros(2, 4, 5, 4, dtype=torch.float64)
        CH.attention_with_sinks(q, four, four, sinks, 0.5)


def test_gpt_oss_layer_matches_module() -> None:
    oss = CH.tiny_gpt_oss_attention(seed=5)
    g = torch.Generator().manual_seed(6)
    hidden = torch.randn(1, 7, 32, generator=g, dtype=torch.float64)
    positions = torch.tensor([[0, 2, 3, 9, 10, 11, 40]])
    inv = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    angles = positions.double()[..., None] * inv
    mask = torch.full((7, 7), float("-inf"), dtype=torch.float64).triu(1)[None, None]
    with torch.no_grad():
        expected = oss(hidden, (angles.cos(), angles.sin()), mask)[0]
        ours = CH.gpt_oss_layer(oss, hidden, positions)
    assert (ours - expected).abs().max() < 1e-12


# --- padding
# ------------------------------------------------------------------------------


def test_mask_position_ids() -> None:
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 1, 1, 1, 1]])
    assert CH.mask_position_ids(mask).tolist() == [
        [0, 0, 0, 1, 2],
        [0, 1, 2, 3, 4],
        [0, 0, 1, 2, 3],
    ]
    for bad in (torch.tensor([1, 1]), torch.tensor([[0, 2]]), [[1, 1]]):
        with pytest.raises(ValueError, match="attention_mask"):
            CH.mask_position_ids(bad)


def test_decode_mixed_against_generate() -> None:
    """The full row has one convention (no padding): it matches generate(); the padded
    row does not. transformers' float32 tables bound the agreement (see the chapter)."""
    llama = CH.tiny_llama_f64(seed=2)
    prompts = torch.tensor([[0, 0, 4, 5, 6], [7, 3, 9, 8, 2]])
    mask = (prompts != 0).long()
    with torch.no_grad():
        generated = llama.generate(
            input_ids=prompts,
            attention_mask=mask,
            max_new_tokens=4,
            do_sample=False,
            output_logits=True,
            return_dict_in_generate=True,
        )
        mixed = CH.decode_mixed(llama, prompts, mask, 4)
    reference = torch.stack(generated.logits, 1)
    gaps = (mixed - reference).abs().amax(dim=(1, 2))
    assert gaps[1] < 1e-5 and gaps[0] > 1e-2
    assert (mixed[:, 0] - reference[:, 0]).abs().max() < 1e-5  # the prefill agrees


def test_llama_rotary_tables_are_float32_in_a_float64_model() -> None:
    """The reason the chapter's bounds are float32-sized: transformers' Llama rotary
    embedding computes its angles in float32 even for float64 inputs."""
    config = LlamaConfig(hidden_size=32, num_attention_heads=4, head_dim=8)
    rotary = LlamaRotaryEmbedding(config)
    cos, _ = rotary(torch.zeros(1, 1, 8, dtype=torch.float64), torch.tensor([[1000]]))
    exact = torch.cos(
        1000 * 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    )
    assert (cos[0, 0, :4] - exact).abs().max() > 1e-9  # float32 angle rounding


# --- exercise checks
# ------------------------------------------------------------------------


def decoupled_solution(q_nope, q_rope, latents, k_rope_cache, W_UK, m):
    """Written out with explicit loops and complex numbers (split halves)."""
    if q_rope.shape[-1] != k_rope_cache.shape[-1]:
        raise ValueError("q_rope and the cached k_rope keys must have one width")
    H, d_r = q_rope.shape
    half = d_r // 2
    theta = 10000.0 ** (-torch.arange(half, dtype=torch.float64) * 2 / d_r)
    out = torch.zeros(H, latents.shape[0], dtype=torch.float64)
    for h in range(H):
        z = torch.complex(q_rope[h, :half], q_rope[h, half:]) * torch.exp(
            1j * m * theta
        )
        q_rot = torch.cat((z.real, z.imag))
        for j in range(latents.shape[0]):
            out[h, j] = ((W_UK[h] @ latents[j]) @ q_nope[h]).double() + q_rot.to(
                k_rope_cache.dtype
            ) @ k_rope_cache[j]
    return out


def test_check_14_2(capsys) -> None:
    check = CH.check_decoupled_logits
    passes(check, decoupled_solution, 3, capsys)
    passes(
        check,
        lambda *a: decoupled_solution(
            *[x.float() if isinstance(x, torch.Tensor) else x for x in a]
        ).float(),
        3,
        capsys,
    )
    fails(
        check,
        lambda qn, qr, c, k, W, m: decoupled_solution(qn, qr, c, k, W, 0),
        "not rotated",
    )
    fails(
        check,
        lambda qn, qr, c, k, W, m: decoupled_solution(
            qn,
            qr,
            c,
            CH.apply_rope_halves(k[None, None], torch.arange(5)[None])[0, 0],
            W,
            m,
        ),
        "rotated again",
    )
    fails(check, lambda *a: decoupled_solution(*a) / math.sqrt(8), "unscaled")

    def again(qn, qr, c, k, W, m):
        k2 = CH.apply_rope_halves(k[None, None], torch.arange(5)[None])[0, 0]
        return decoupled_solution(qn, qr, c, k2, W, m)

    def nope_rotated(qn, qr, c, k, W, m):
        qn2 = CH.apply_rope_halves(qn[None, :, None], torch.full((1, 1), m))[0, :, 0]
        return decoupled_solution(qn2, qr, c, k, W, m)

    def only_at_9(wrong):  # right for the first case, wrong for the second
        return lambda qn, qr, c, k, W, m: (
            decoupled_solution(qn, qr, c, k, W, m)
            if m == 5
            else wrong(qn, qr, c, k, W, m)
        )

    for wrong, word in (
        (again, "rotated again"),
        (nope_rotated, "unrotated part"),
        (
            lambda qn, qr, c, k, W, m: decoupled_solution(qn, qr, c, k, W, 0),
            "not rotated",
        ),
    ):
        fails(check, wrong, word)
        message = fails(check, only_at_9(wrong), word)
        assert "position 9" in message
    fails(check, lambda *a: decoupled_solution(*a) + 1, "none of the usual")


def rerotate_solution(keys, old, new):
    if bool((old[1:] <= old[:-1]).any()) or bool((new[1:] <= new[:-1]).any()):
        raise ValueError("positions must increase")
    d = keys.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angle = (new - old).double()[:, None] * theta
    x1, x2 = keys.double().chunk(2, -1)
    return torch.cat(
        (x1 * angle.cos() - x2 * angle.sin(), x2 * angle.cos() + x1 * angle.sin()), -1
    )


def test_check_14_3(capsys) -> None:
    check = CH.check_rerotate_cache
    passes(check, rerotate_solution, 3, capsys)
    fails(check, lambda k, o, n: rerotate_solution(k, n, o), "sign")
    fails(
        check,
        lambda k, o, n: CH.apply_rope_halves(k, n[None].expand(k.shape[0], -1)),
        "new positions on top",
    )
    fails(check, lambda k, o, n: rerotate_solution(k, o, o), "unchanged")
    mistakes = {
        "sign": lambda k, o, n: rerotate_solution(k, n, o),
        "new positions on top": lambda k, o, n: CH.apply_rope_halves(
            k, n[None].expand(k.shape[0], -1)
        ),
        "unchanged": lambda k, o, n: k.clone(),
    }
    for word, wrong in mistakes.items():  # right on the first case, wrong on the second
        message = fails(
            check,
            lambda k, o, n, wrong=wrong: (
                rerotate_solution(k, o, n) if k.shape[1] == 2 else wrong(k, o, n)
            ),
            word,
        )
        assert "two evicted after one sink" in message
    with pytest.raises(AssertionError, match="ValueError"):
        check(
            lambda k, o, n: CH.apply_rope_halves(
                k, (n - o)[None].expand(k.shape[0], -1)
            )
        )
