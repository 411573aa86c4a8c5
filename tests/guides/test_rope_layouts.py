"""The layouts page's functions against transformers and independent references: the
pairs of layout_pairs are the coordinates transformers' Llama (split halves) and GLM and
Cohere (interleaved) functions mix, computed here from their rotation matrices;
layout_pattern draws ggml.h's examples; infer_rope_pairs finds the pairs of
transformers' functions and of permuted implementations; interleaved_by_matrix equals
transformers' GLM rotation."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers.models.cohere import modeling_cohere
from transformers.models.glm import modeling_glm
from transformers.models.llama import modeling_llama

from bookkit.testing import load_chapter

g = load_chapter("rope_layouts")


def cos_sin(positions: torch.Tensor, rotary_dim: int, base: float = 10000.0):
    """cat(angles, angles) cos and sin in float64, written here independently."""
    i = torch.arange(0, rotary_dim, 2, dtype=torch.float64)
    angles = positions[..., None].double() * base ** (-i / rotary_dim)
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos(), emb.sin()


def mixed_pairs(apply, head_dim: int, rotary_dim: int) -> list[tuple[int, int]]:
    """Pairs of coordinates a transformers apply_rotary_pos_emb mixes at position 1."""
    basis = torch.eye(head_dim, dtype=torch.float64)[None, None]
    cos, sin = cos_sin(torch.ones(1, head_dim), rotary_dim)
    out = apply(basis, basis, cos, sin)[0][0, 0].T  # column j: image of e_j
    off = out - torch.diag(torch.diag(out))
    return [(j, k) for j, k in (off.abs() > 1e-9).nonzero().tolist() if j < k]


@pytest.mark.parametrize("head_dim", [4, 8, 16, 64])
def test_layout_pairs_are_what_transformers_mixes(head_dim):
    assert mixed_pairs(modeling_llama.apply_rotary_pos_emb, head_dim, head_dim) == (
        g.layout_pairs(head_dim, "halves")
    )
    assert mixed_pairs(modeling_glm.apply_rotary_pos_emb, head_dim, head_dim) == (
        g.layout_pairs(head_dim, "interleaved")
    )
    half = head_dim // 2 if head_dim % 4 == 0 else head_dim
    assert mixed_pairs(modeling_glm.apply_rotary_pos_emb, head_dim, half) == (
        g.layout_pairs(head_dim, "interleaved", half)
    )


def test_layout_pattern_draws_ggml_examples():
    # include/ggml.h, next to ggml_rope_ext (ggml-org/ggml)
    assert g.layout_pattern(8, 4, "interleaved") == "[cscs0000]"
    assert g.layout_pattern(8, 8, "interleaved") == "[cscscscs]"
    assert g.layout_pattern(8, 4, "halves") == "[ccss0000]"
    assert g.layout_pattern(8, 8, "halves") == "[ccccssss]"


@pytest.mark.parametrize(
    "args",
    [(8, "neox"), (7, "halves"), (8, "halves", 10), (True, "halves"), (8, "halves", 3)],
)
def test_layout_pairs_rejects_bad_input(args):
    with pytest.raises(ValueError):
        g.layout_pairs(*args)


def transformers_rope(apply, rotary_dim=None):
    def rope(x, position_ids):
        cos, sin = cos_sin(position_ids, rotary_dim or x.shape[-1])
        return apply(x, x, cos, sin)[0]

    return rope


def test_infer_rope_pairs_on_transformers_functions():
    pairs, unrotated = g.infer_rope_pairs(
        transformers_rope(modeling_llama.apply_rotary_pos_emb), 12
    )
    assert pairs == [(i, i + 6) for i in range(6)] and unrotated == []
    pairs, unrotated = g.infer_rope_pairs(
        transformers_rope(modeling_glm.apply_rotary_pos_emb, 8), 12
    )
    assert pairs == [(0, 1), (2, 3), (4, 5), (6, 7)] and unrotated == [8, 9, 10, 11]

    def cohere(x, position_ids):  # float32 inside: the relative tolerance matters
        i = torch.arange(0, x.shape[-1], 2, dtype=torch.float64)
        angles = position_ids[..., None].double() * 10000.0 ** (-i / x.shape[-1])
        emb = angles.repeat_interleave(2, dim=-1)
        return modeling_cohere.apply_rotary_pos_emb(x, x, emb.cos(), emb.sin())[0]

    assert g.layout_of(cohere, 16) == "interleaved (16 of 16 rotate)"


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([4, 6, 8, 10, 16]), st.integers(0, 10_000))
def test_infer_rope_pairs_sees_through_an_output_permutation(head_dim, seed):
    out_perm = torch.randperm(head_dim, generator=torch.Generator().manual_seed(seed))
    llama = transformers_rope(modeling_llama.apply_rotary_pos_emb)
    pairs, _ = g.infer_rope_pairs(lambda x, p: llama(x, p)[..., out_perm], head_dim)
    assert pairs == g.layout_pairs(head_dim, "halves")


def test_infer_rope_pairs_rejects_bad_input():
    with pytest.raises(ValueError, match="head_dim"):
        g.infer_rope_pairs(lambda x, p: x, 1)
    with pytest.raises(ValueError, match="shape"):
        g.infer_rope_pairs(lambda x, p: x[..., :2], 4)
    assert g.layout_of(lambda x, p: x, 4) == "other"  # nothing rotates


def test_interleaved_by_matrix_equals_transformers_glm():
    x = torch.randn(
        2, 3, 5, 8, generator=torch.Generator().manual_seed(1), dtype=torch.float64
    )
    positions = torch.tensor([[0, 3, 17, 400, 9000]])
    cos, sin = cos_sin(positions, 8, 500.0)
    expected = modeling_glm.apply_rotary_pos_emb(x, x, cos, sin)[0]
    got = g.interleaved_by_matrix(x, positions, 500.0)
    assert (got - expected).abs().max().item() < 1e-12


def test_split_halves_cos_sin_matches_llama_rotary_embedding():
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=64, num_attention_heads=2, head_dim=32)
    positions = torch.arange(50)[None]
    cos, sin = LlamaRotaryEmbedding(config)(torch.zeros(1), positions)
    ours_cos, ours_sin = g.split_halves_cos_sin(positions, 32, 10000.0)
    # float32 angles below 50 rad: within (ln b + 7) u * 50 + 4u < 1e-4
    assert (cos.double() - ours_cos).abs().max() < 1e-4
    assert (sin.double() - ours_sin).abs().max() < 1e-4
