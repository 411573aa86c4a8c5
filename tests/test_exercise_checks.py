"""The exercise checks of Chapters 1-7 give feedback that says how to fix.

For every check: an independent correct answer passes and the success line counts the
checks that ran; each typical mistake the check claims to recognise is fed in and the
message must show the failing case's input and name that mistake; every other branch
(shape, in-place edits, a missing or borrowed ValueError, forbidden helpers) is hit
by one wrong answer.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from scipy.optimize import brentq
from scipy.special import sici
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

from helpers import fails, passes
from nbload import chapter
from nbtools import NOTEBOOKS, read

CH1 = chapter("01_attention_cant_see_order")
CH2 = chapter("02_first_attempts")
CH3 = chapter("03_deriving_sinusoidal")
CH4 = chapter("04_sinusoidal_in_code")
CH5 = chapter("05_deriving_rope")
CH6 = chapter("06_rope_in_code")
CH7 = chapter("07_long_range_decay")


# --------------------------------------------------------------------------- the helper


def test_feedback_helper_shows_and_recognises() -> None:
    assert CH1.shown(np.array([1.0, 2.0])) == "[1., 2.]"
    assert "(20 values, shape (20,))" in CH1.shown(np.arange(20.0))
    assert CH1.shown(torch.tensor([0.5])) == "[0.5]"
    mistakes = {"a": [1.0, 2.0], "b": [3.0, 4.0]}
    assert CH1.recognise([3.0, 4.0], mistakes, 0.0) == "b"
    assert CH1.recognise([3.0, 5.0], mistakes, 0.0) == ""
    assert CH1.recognise([3.0], mistakes, 0.0) == ""
    # a mistake recognised from the answer's structure is a bool
    structural = {"not this one": False, "this one": np.bool_(True), "b": [3.0, 4.0]}
    assert CH1.recognise([3.0, 4.0], structural, 0.0) == "this one"
    assert CH1.recognise([9.0], {"no": False}, 0.0) == ""


def test_close_shows_enough_digits_to_tell_expected_from_got() -> None:
    assert CH1.shown_apart(0.5, 0.25) == ("0.5", "0.25")
    assert CH1.shown_apart(1.0, 1.0 + 1e-7) == ("1.0", "1.0000001")
    assert CH1.shown_apart(0.5403023058681398, 0.5403023) == ("0.54030231", "0.5403023")
    assert CH1.shown_apart(1e-20, 1.00001e-20) == ("1.0e-20", "1.00001e-20")
    assert CH1.shown_apart("a", "b") == ("a", "b")
    check = CH1.ExerciseCheck("Exercise 0.0")
    with pytest.raises(AssertionError) as info:
        check.close("c", "x", np.float32([0.0, 1.0 + 2**-18]), [0.0, 1.0])  # 64 u off
    assert "expected 1.0 at [1], got 1.000004" in str(info.value)


def test_close_names_the_entry_with_where() -> None:
    check = CH1.ExerciseCheck("Exercise 0.0")
    rows, columns = [0, 7], [3, 5]
    with pytest.raises(AssertionError) as info:
        check.close("c", "x", [[0.0, 0.0], [0.0, 0.5]], np.zeros((2, 2)),
                    where=lambda i: f"PE({rows[i[0]]})[{columns[i[1]]}]")
    assert "expected 0.0 at PE(7)[5], got 0.5" in str(info.value)


def test_borrowed_value_error_is_refused() -> None:
    check = CH1.ExerciseCheck("Exercise 0.0")

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
    check = CH1.ExerciseCheck("Exercise 0.0")
    exact = np.linspace(-1.0, 1.0, 7) * 300.0 + 1 / 3  # not representable
    answer32 = torch.tensor(exact, dtype=torch.float32)  # float32 rounding, |e| <= u
    check.close("float32 answer", "x", answer32, exact)  # 16 u S with S = 300 allows it
    with pytest.raises(AssertionError, match=r"precision mismatch"):
        # a float64 answer that went through float32 somewhere: not float64-accurate
        check.close("float64 answer", "x", answer32.double(), exact)
    assert check.passed == 1


def test_close_reports_the_first_entry_outside_and_the_tolerance() -> None:
    check = CH1.ExerciseCheck("Exercise 0.0")
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
    check = CH1.ExerciseCheck("Exercise 0.0")
    with pytest.raises(AssertionError, match="looks like a sign error"):
        check.close("c", "x", [1.0, -2.0], [1.0, 2.0], {"a sign error": [1.0, -2.0]})


def test_same_shows_only_the_first_difference() -> None:
    check = CH1.ExerciseCheck("Exercise 0.0")
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
        CH1.ExerciseCheck("the softmax one")


def test_rounding_helpers() -> None:
    assert CH1.unit_roundoff(torch.float32) == 2.0**-24
    assert CH1.unit_roundoff(torch.float64) == 2.0**-53
    assert CH1.unit_roundoff(torch.bfloat16) == 2.0**-8
    u = 2.0**-24
    assert CH1.gamma(3, torch.float32) == pytest.approx(3 * u / (1 - 3 * u))
    for bad in (0, -1, 2.0, True, 2**25):
        with pytest.raises(ValueError, match="positive integer"):
            CH1.gamma(bad, torch.float32)
    with pytest.raises(ValueError, match="floating dtype"):
        CH1.unit_roundoff(torch.int64)
    CH1.assert_within([1.0, 2.0], [1.0, 2.5], [0.0, 0.5], "ok")
    with pytest.raises(AssertionError, match=r"at index \(1,\) \(1 of 2 entries"):
        CH1.assert_within([1.0, 2.0], [1.0, 2.5], 0.4, "gap")
    with pytest.raises(AssertionError, match="gap"):
        CH1.assert_within([float("nan")], [1.0], 1.0, "gap")
    with pytest.raises(ValueError, match="shapes differ"):
        CH1.assert_within([1.0], [1.0, 2.0], 1.0, "gap")


# --------------------------------------------------------------------------- Chapter 1


def causal(T, m1, m2):
    low, high = sorted((m1, m2))
    return [True] * T if m1 == m2 else [m < low or m > high for m in range(T)]


def causal_loop(T, m1, m2):  # written differently: a loop and numpy booleans
    out = np.ones(T, dtype=bool)
    for m in range(min(m1, m2), max(m1, m2) + 1):
        out[m] = m1 == m2
    return out


def test_ex_1_3(capsys) -> None:
    passes(CH1.check_unchanged_causal_outputs, causal, 5, capsys)
    passes(CH1.check_unchanged_causal_outputs, causal_loop, 5, capsys)
    check = CH1.check_unchanged_causal_outputs
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
    passes(CH1.check_masked_mean_pool, pool, 4, capsys)
    passes(CH1.check_masked_mean_pool, pool_loop, 4, capsys)
    check = CH1.check_masked_mean_pool
    fails(check, lambda h, m: h.mean(dim=1), "plain mean", "mask row [1, 1, 0, 0, 0]")
    fails(
        check,
        lambda h, m: (h * m[..., None]).sum(1) / h.shape[1],
        "divided by the padded",
    )
    fails(check, lambda h, m: pool(h, m)[:2], "shape")
    message = fails(check, lambda h, m: pool(h, m) + 0.5,
                    "expected 3.0 at [0], got 3.5", "none of the usual mistakes")
    assert "[3.0, 4.0]" not in message  # only the first differing entry is shown


# --------------------------------------------------------------------------- Chapter 2


def bits(n, b):
    return ((np.arange(n)[:, None] >> np.arange(b)) & 1).astype(float)


def square(n, b, shift=0.5, sign=-1.0, period=1.0):
    m = np.arange(n, dtype=float)[:, None]
    return 0.5 * (
        1 + sign * np.sign(np.sin(np.pi * (m + shift) / (2.0 ** np.arange(b) * period)))
    )


def test_ex_2_2(capsys) -> None:
    passes(CH2.check_square_wave_bits, square, 4, capsys)
    float32_bits = lambda n, b: torch.tensor(square(n, b)).float()  # noqa: E731
    passes(CH2.check_square_wave_bits, float32_bits, 4, capsys)
    check = CH2.check_square_wave_bits
    fails(
        check,
        lambda n, b: square(n, b, shift=0.0),
        "+ 1/2 is missing",
        "num_positions = 8, bits = 3",
    )
    fails(check, lambda n, b: square(n, b, sign=1.0), "inverted")
    fails(check, lambda n, b: square(n, b)[:, ::-1], "most significant bit first")
    fails(check, lambda n, b: square(n, b, period=0.5), "period is 2^i")
    fails(check, lambda n, b: square(n, b)[:, :-1], "shape")
    message = fails(check, lambda n, b: 1 - square(n, b),
                    "expected: 0.0 at position 0 ([0, 0])")
    assert "[0.0, 1.0" not in message and "[[" not in message  # not the whole answer


def gray(n, b):
    if n > 2**b:
        raise ValueError(f"{b} bits code only {2**b} positions; use more bits")
    m = np.arange(n)
    return bits(n, b) * 0 + (((m ^ (m >> 1))[:, None] >> np.arange(b)) & 1)


def gray_loop(n, b):  # written differently: integers, a loop, no xor formula
    if n > 2**b:
        raise ValueError(f"{n} positions need more than {b} bits")
    out, code = np.zeros((n, b), dtype=int), [0] * b
    for m in range(1, n):  # flip the bit a binary counter would carry into
        code[(m & -m).bit_length() - 1] ^= 1
        out[m] = code
    return out


def test_ex_2_3(capsys) -> None:
    passes(CH2.check_gray_code, gray, 5, capsys)
    passes(CH2.check_gray_code, gray_loop, 5, capsys)
    passes(CH2.check_gray_code, lambda n, b: gray(n, b).astype(np.float32), 5, capsys)
    check = CH2.check_gray_code
    message = fails(check, lambda n, b: bits(n, b), "plain binary",
                    "expected: 1 at position 6 ([2, 0])\n  got: 0.0")
    assert "m ^ (m >> 1)" not in message
    fails(check, lambda n, b: gray(n, b)[:, ::-1], "most significant bit first")
    fails(
        check,
        lambda n, b: (
            ((np.arange(n) ^ (np.arange(n) << 1))[:, None] >> np.arange(b)) & 1
        ),
        "m << 1",
    )
    fails(
        check, lambda n, b: gray(min(n, 2**b), b), "9 positions, 3 bits", "got no error"
    )
    fails(
        check,
        lambda n, b: gray(8, 3) if n == 8 else np.zeros((n, b)),
        "all codes distinct",
    )

    def bad_neighbours(n, b):
        if n == 8:
            return gray(8, 3)
        codes = bits(n, b)
        return codes

    fails(check, bad_neighbours, "neighbours differ in one bit")

    def borrowed(n, b):
        if n > 2**b:
            raise ValueError("oops")
        return gray(n, b)

    fails(check, borrowed, "does not come from a check of yours")


def codes(T, d, base=10000.0, first=np.sin, second=np.cos, exponent=None, start=0):
    if d % 2:
        raise ValueError(f"d must be even, got {d}")
    exponent = np.arange(0, d, 2) / d if exponent is None else exponent(d)
    angles = np.arange(start, start + T)[:, None] * base ** (-exponent)
    out = np.empty((T, d))
    out[:, 0::2], out[:, 1::2] = first(angles), second(angles)
    return out


def codes32(T, d, base=10000.0):  # float32 throughout, in torch: a correct answer
    if d % 2:
        raise ValueError(f"d must be even, got {d}")
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    angles = torch.arange(T, dtype=torch.float32)[:, None] * theta
    return torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(T, d)


def codes_numpy32(T, d, base=10000.0):  # float32 in numpy, the exp-log form
    if d % 2:
        raise ValueError(f"d must be even, got {d}")
    exponent = np.arange(0, d, 2, dtype=np.float32) * np.float32(-np.log(base) / d)
    angles = np.arange(T, dtype=np.float32)[:, None] * np.exp(exponent)
    out = np.empty((T, d), dtype=np.float32)
    out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
    return out


def test_ex_2_4(capsys) -> None:
    passes(CH2.check_sinusoidal_codes, codes, 15, capsys)
    passes(CH2.check_sinusoidal_codes, codes32, 15, capsys)
    passes(CH2.check_sinusoidal_codes, codes_numpy32, 15, capsys)
    passes(CH2.check_sinusoidal_codes, lambda T, d, base=1e4: torch.from_numpy(
        codes(T, d, base)), 15, capsys)  # float64 tensors
    check = CH2.check_sinusoidal_codes
    fails(
        check,
        lambda T, d, base=1e4: codes(T, d, base, np.cos, np.sin),
        "swapped",
        "T = 512, d = 64",
    )
    fails(
        check,
        lambda T, d, base=1e4: codes(
            T, d, base, exponent=lambda d: np.arange(d // 2) / d
        ),
        "i/d instead of 2i/d",
    )
    fails(
        check,
        lambda T, d, base=1e4: np.concatenate(
            [
                np.sin(np.arange(T)[:, None] * base ** (-np.arange(0, d, 2) / d)),
                np.cos(np.arange(T)[:, None] * base ** (-np.arange(0, d, 2) / d)),
            ],
            1,
        ),
        "concatenated layout",
    )
    fails(
        check,
        lambda T, d, base=1e4: codes(T, d),
        "base argument is ignored",
        "base = 100",
    )
    fails(check, lambda T, d, base=1e4: codes(T, d, base, start=1), "start at 1")

    def column_index(T, d, base=1e4):
        angles = np.arange(T)[:, None] * base ** (-np.arange(d) / d)
        out = np.cos(angles)
        out[:, 0::2] = np.sin(angles[:, 0::2])
        return out

    fails(check, column_index, "column index j")

    def doubled_index(T, d, base=1e4):  # frequencies indexed by column: b^(-2j/d)
        angles = np.arange(T)[:, None] * base ** (-2 * np.arange(d) / d)
        out = np.cos(angles)
        out[:, 0::2] = np.sin(angles[:, 0::2])
        return out

    message = fails(check, doubled_index, "indexed by column", "T = 512, d = 64",
                    "expected: 0.5403 at PE(1)[1]\n  got: 0.7318")
    assert message.count("0.") < 12  # one entry, not the table

    def through_float32(T, d, base=1e4):  # float64 values that went through float32
        return codes32(T, d, base).double()

    fails(check, through_float32, "precision mismatch", "T = 512, d = 64")

    def no_validation(T, d, base=1e4):
        theta = base ** (-np.arange(0, d, 2) / d)
        angles = np.arange(T)[:, None] * theta
        out = np.empty((T, d))
        out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
        return out

    fails(
        check,
        no_validation,
        "odd d",
        "could not broadcast",
        "does not come from a check of yours",
    )

    def length_dependent(T, d, base=1e4):
        return codes(T, d, base) if T != 10 else codes(T, d, base) + 1e-3

    fails(check, length_dependent, "D1")

    def no_shift_map(T, d, base=1e4):
        table = codes(T, d, base)
        if T == 300:
            table[150:] = table[150:][:, ::-1]
        return table

    fails(check, no_shift_map, "D2")


HEADLINE = codes(512, 64)


@pytest.mark.parametrize("name", ["table", "d=64", "base=10000", "T<=512", "d>=8"])
def test_ex_2_4_refuses_hard_coded_answers(name) -> None:
    """Answers that are right only for the sizes a learner tried first do not pass."""
    def answer(T, d, base=1e4):
        if d % 2:
            raise ValueError(f"d must be even, got {d}")
        if name == "table":  # the headline table, memorised
            return HEADLINE if (T, d) == (512, 64) else np.zeros((T, d))
        if name == "d=64":  # the width hard-coded in the exponent
            angles = np.arange(T)[:, None] * base ** (-np.arange(0, d, 2) / 64)
        elif name == "base=10000":  # a literal base
            return codes(T, d)
        elif name == "T<=512":  # a fixed table, cut to length
            return codes(512, d, base)[:T]
        else:  # a special case for tiny widths that is wrong
            return codes(T, d, base) if d >= 8 else np.tile([0.0, 1.0], (T, d // 2))
        out = np.empty((T, d))
        out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
        return out

    with pytest.raises(AssertionError, match="Exercise 2.4"):
        CH2.check_sinusoidal_codes(answer)


def test_ex_2_4_mistakes_are_named_from_the_structure_alone() -> None:
    """The diagnosis reads layout and frequencies off the answer: no reference table."""
    d, base = 10, 37.5
    right = codes(9, d, base)
    assert not any(CH2._sinusoidal_mistakes(right, d, base).values())
    assert not any(CH2._sinusoidal_mistakes(codes32(9, d, base), d, base).values())
    named = CH2._sinusoidal_mistakes(codes(9, d, base, np.cos, np.sin), d, base)
    assert [k for k, v in named.items() if v] == [
        "sin and cos are swapped (cos belongs in the odd columns)"]
    assert CH2._sinusoidal_mistakes(right[:1], d, base) == {}  # one row: no frequencies


# --------------------------------------------------------------------------- Chapter 3


def relative_part(H):
    H = np.asarray(H, dtype=float)
    if H.shape[0] % 2:
        raise ValueError("d must be even")
    out = np.zeros_like(H)
    for i in range(0, H.shape[0], 2):
        a, b = (H[i, i] + H[i + 1, i + 1]) / 2, (H[i + 1, i] - H[i, i + 1]) / 2
        out[i : i + 2, i : i + 2] = [[a, -b], [b, a]]
    return out


def relative_part_loops(H):
    H = np.asarray(H, dtype=np.float32)  # a float32 answer, written with loops
    if len(H) % 2:
        raise ValueError("H must have an even size")
    out = np.zeros_like(H)
    for i in range(0, len(H), 2):
        z = complex((H[i, i] + H[i + 1, i + 1]) / 2, (H[i + 1, i] - H[i, i + 1]) / 2)
        out[i : i + 2, i : i + 2] = [[z.real, -z.imag], [z.imag, z.real]]
    return out


def test_ex_3_2(capsys) -> None:
    passes(CH3.check_relative_part, relative_part, 4, capsys)
    passes(CH3.check_relative_part, relative_part_loops, 4, capsys)
    passes(
        CH3.check_relative_part,
        lambda H: torch.as_tensor(relative_part(H), dtype=torch.float32),
        4,
        capsys,
    )
    check = CH3.check_relative_part
    fails(check, lambda H: relative_part(np.asarray(H).T), "wrong sign", "H =")
    fails(check, lambda H: 2 * relative_part(H), "factor 1/2")
    blocks = lambda H: np.asarray(H) * np.kron(np.eye(len(H) // 2), np.ones((2, 2)))  # noqa: E731
    fails(check, blocks, "kept whole")
    fails(check, lambda H: np.diag(np.diag(H)), "only the diagonal")
    fails(check, lambda H: blocks(H) - relative_part(H), "not* relative")

    def no_validation(H):
        return np.zeros((len(H), len(H)))

    with pytest.raises(AssertionError, match="d = 2"):
        check(no_validation)


def layout(d):
    if d <= 0 or d % 2:
        raise ValueError(f"d must be a positive even number, got {d}")
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])


def test_ex_3_3(capsys) -> None:
    passes(CH3.check_layout_permutation, layout, 9, capsys)
    passes(CH3.check_layout_permutation, lambda d: list(layout(d)), 9, capsys)
    check = CH3.check_layout_permutation
    inverse = lambda d: np.argsort(layout(d))  # noqa: E731
    message = fails(check, inverse, "inverse permutation", "d = 10")
    # the expected permutation itself is never shown, only its first differing entry
    assert "2, 4, 6, 8, 1" not in message and "at position 1" in message
    reversed_message = fails(check, lambda d: layout(d)[::-1], "position 0", "d = 2")
    assert "[0, 1]" not in reversed_message
    wrong_large = lambda d: layout(d) if d < 100 else np.roll(layout(d), 1)  # noqa: E731
    fails(check, wrong_large, "d = 128", "column 0 differs")
    fails(
        check,
        lambda d: np.concatenate([np.arange(1, d, 2), np.arange(0, d, 2)]),
        "cosine columns come first",
    )
    fails(check, lambda d: np.arange(d), "the identity", "d = 4")
    fails(check, lambda d: np.zeros(d, dtype=int), "a permutation of 0..1")
    fails(
        check,
        lambda d: layout(d + d % 2)[:d] if d % 2 == 0 else np.arange(d),
        "odd d",
        "got no error",
    )


# --------------------------------------------------------------------------- Chapter 4


def shift(pe, delta, base=10000.0, direction=1.0, exponent=None):
    pe = np.asarray(pe, dtype=float)
    d = pe.shape[-1]
    if d % 2:
        raise ValueError(f"the last dimension must be even, got {d}")
    theta = base ** (-(np.arange(0, d, 2) / d if exponent is None else exponent(d)))
    c, s = np.cos(delta * theta), direction * np.sin(delta * theta)
    out = np.empty_like(pe)
    out[..., 0::2] = c * pe[..., 0::2] + s * pe[..., 1::2]
    out[..., 1::2] = c * pe[..., 1::2] - s * pe[..., 0::2]
    return out


def shift32(pe, delta, base=10000.0):
    """A correct answer computed in float32 with torch."""
    pe = torch.as_tensor(np.asarray(pe), dtype=torch.float32)
    d = pe.shape[-1]
    if d % 2:
        raise ValueError(f"the last dimension must be even, got {d}")
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    c, s = torch.cos(delta * theta), torch.sin(delta * theta)
    out = torch.empty_like(pe)
    out[..., 0::2] = c * pe[..., 0::2] + s * pe[..., 1::2]
    out[..., 1::2] = c * pe[..., 1::2] - s * pe[..., 0::2]
    return out


def test_ex_4_2(capsys) -> None:
    passes(CH4.check_shift_encoding, shift, 11, capsys)
    passes(CH4.check_shift_encoding, shift32, 11, capsys)
    check = CH4.check_shift_encoding
    fails(
        check,
        lambda pe, delta, base=1e4: shift(pe, delta, base, -1.0),
        "wrong way",
        "d = 8, delta = 3",
        "first row",
    )
    fails(
        check,
        lambda pe, delta, base=1e4: shift(
            pe, delta, base, exponent=lambda d: np.arange(d // 2) / d
        ),
        "i/d instead of 2i/d",
    )
    fails(
        check,
        lambda pe, delta, base=1e4: shift(pe, delta),
        "base argument is ignored",
        "base = 100",
    )
    fails(
        check, lambda pe, delta, base=1e4: np.array(pe, dtype=float), "input comes back"
    )

    def in_place(pe, delta, base=1e4):
        pe[...] = shift(pe, delta, base)
        return pe

    fails(check, in_place, "modified in place")

    def no_validation(pe, delta, base=1e4):
        pe = np.asarray(pe, dtype=float)
        return pe if pe.shape[-1] % 2 else shift(pe, delta, base)

    fails(check, no_validation, "odd width 7", "got no error")


def gram(T, d, base=10000.0):
    theta = base ** (-np.arange(0, d, 2) / d)
    delta = np.arange(T)[:, None] - np.arange(T)[None, :]
    return np.cos(delta[..., None] * theta).sum(-1)


def test_ex_4_3(capsys) -> None:
    passes(CH4.check_offset_gram, gram, 5, capsys)
    passes(
        CH4.check_offset_gram,
        lambda T, d, base=1e4: torch.tensor(gram(T, d, base), dtype=torch.float64)
        .float(),  # a float32 answer
        5,
        capsys,
    )
    check = CH4.check_offset_gram
    fails(
        check,
        lambda T, d, base=1e4: np.sin(
            (np.arange(T)[:, None] - np.arange(T))[..., None]
            * base ** (-np.arange(0, d, 2) / d)
        ).sum(-1),
        "sum of sines",
        "num_positions = 5, d = 4",
    )
    fails(check, lambda T, d, base=1e4: gram(T, d, base**0.5), "i/d instead of 2i/d")
    fails(check, lambda T, d, base=1e4: 2 * gram(T, d, base), "counted twice")
    fails(
        check,
        lambda T, d, base=1e4: np.cos(
            (np.arange(T)[:, None] - np.arange(T) + 1)[..., None]
            * base ** (-np.arange(0, d, 2) / d)
        ).sum(-1),
        "shifted by one",
    )
    fails(
        check,
        lambda T, d, base=1e4: gram(T, d, base) - np.eye(T) * d / 2,
        "diagonal is wrong",
    )
    fails(check, lambda T, d, base=1e4: np.eye(T), "none of the usual mistakes")


# --------------------------------------------------------------------------- Chapter 5


def rope_dense(m, d, base=10000.0):
    out = np.zeros((d, d))
    for i in range(d // 2):
        phi = m * base ** (-2 * i / d)
        out[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [
            [np.cos(phi), -np.sin(phi)],
            [np.sin(phi), np.cos(phi)],
        ]
    return out


def scores(Q, K, base=10000.0):
    Q, K = np.asarray(Q, dtype=float), np.asarray(K, dtype=float)
    if Q.shape[1] % 2:
        raise ValueError("d must be even")
    d = Q.shape[1]
    q = np.stack([rope_dense(m, d, base) @ x for m, x in enumerate(Q)])
    k = np.stack([rope_dense(n, d, base) @ x for n, x in enumerate(K)])
    return q @ k.T


def scores32(Q, K, base=10000.0):
    """A correct answer from the offsets alone, in float32 with torch."""
    Q = torch.as_tensor(Q, dtype=torch.float32)
    K = torch.as_tensor(K, dtype=torch.float32)
    if Q.shape[1] % 2:
        raise ValueError("d must be even")
    T, d = Q.shape
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    delta = (torch.arange(T)[:, None] - torch.arange(T)[None, :]).float()
    q0, q1, k0, k1 = Q[:, 0::2], Q[:, 1::2], K[:, 0::2], K[:, 1::2]
    dot = q0[:, None] * k0[None] + q1[:, None] * k1[None]
    cross = q1[:, None] * k0[None] - q0[:, None] * k1[None]
    angle = delta[..., None] * theta
    return (torch.cos(angle) * dot - torch.sin(angle) * cross).sum(-1)


def test_ex_5_3(capsys) -> None:
    passes(CH5.check_rope_scores, scores, 4, capsys)
    passes(CH5.check_rope_scores, scores32, 4, capsys)
    check = CH5.check_rope_scores

    def reversed_offsets(Q, K, base=1e4):
        d = Q.shape[1]
        q = np.stack([rope_dense(-m, d, base) @ x for m, x in enumerate(Q)])
        k = np.stack([rope_dense(-n, d, base) @ x for n, x in enumerate(K)])
        return q @ k.T

    fails(
        check,
        reversed_offsets,
        "wrong sign",
        "first wrong entry S[0, 1]",
        "Delta = m - n = -1",
        "q_m =",
    )

    def cos_only(Q, K, base=1e4):
        T, d = Q.shape
        theta = base ** (-np.arange(0, d, 2) / d)
        delta = np.arange(T)[:, None] - np.arange(T)
        dot = Q[:, None, 0::2] * K[None, :, 0::2] + Q[:, None, 1::2] * K[None, :, 1::2]
        return (np.cos(delta[..., None] * theta) * dot).sum(-1)

    fails(check, cos_only, "sin term is missing")
    fails(check, lambda Q, K, base=1e4: scores(Q, K, base).T, "rows and columns")
    fails(check, lambda Q, K, base=1e4: scores(Q, K, base**0.5), "i/d instead of 2i/d")

    def halves(Q, K, base=1e4):
        d = Q.shape[1]
        order = np.stack([np.arange(d // 2), np.arange(d // 2) + d // 2]).T.ravel()
        return scores(Q[:, order], K[:, order], base)

    fails(check, halves, "split halves")

    def no_validation(Q, K, base=1e4):
        return np.zeros((len(Q), len(K))) if Q.shape[1] % 2 else scores(Q, K, base)

    fails(check, no_validation, "odd d", "got no error")


# --------------------------------------------------------------------------- Chapter 6


def convert(W, n_heads, head_dim, to):
    if head_dim % 2:
        raise ValueError(f"head_dim must be even, got {head_dim}")
    if W.shape[0] != n_heads * head_dim:
        raise ValueError(
            f"W must have n_heads * head_dim rows, got shape {tuple(W.shape)}"
        )
    if to not in ("halves", "interleaved"):
        raise ValueError(f"to must be 'halves' or 'interleaved', got {to!r}")
    order = torch.cat((torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)))
    if to == "interleaved":
        order = torch.argsort(order)
    heads = W.reshape(n_heads, head_dim, -1)
    return heads[:, order].reshape(W.shape)


def test_ex_6_2(capsys) -> None:
    passes(CH6.check_convert_qk_weight, convert, 8, capsys)
    check = CH6.check_convert_qk_weight
    other = {"halves": "interleaved", "interleaved": "halves"}
    fails(
        check,
        lambda W, h, d, to: convert(W, h, d, other.get(to, to)),
        "direction is swapped",
        "n_heads = 4, head_dim = 8, to = 'halves'",
    )
    fails(check, lambda W, h, d, to: convert(W, 1, h * d, to), "whole matrix")
    # the failure shows the first differing entry, not the expected row order
    message = fails(check, lambda W, h, d, to: convert(W, h, d, to) * 0 + 1,
                    "at [0, 0]")
    assert "row order" not in message and "[0, 2, 4, 6" not in message

    def odd_first(W, h, d, to):
        convert(W, h, d, to)
        order = torch.cat((torch.arange(1, d, 2), torch.arange(0, d, 2)))
        return W.reshape(h, d, -1)[:, order].reshape(W.shape)

    fails(check, odd_first, "odd coordinates first")
    fails(check, lambda W, h, d, to: convert(W, h, d, to)[:-1], "shape")

    def library_errors(W, h, d, to):
        return (
            convert(W, h, d, to)
            if d % 2 == 0 and to in other and W.shape[0] == h * d
            else W.reshape(h, d // 2, 2, W.shape[1])
        )

    fails(check, library_errors, "W with 30 rows", "got RuntimeError")

    namespace = dict(vars(CH6))
    exec(  # noqa: S102 - a learner's answer that calls the chapter's own helpers
        "def via_helpers(W, n_heads, head_dim, to):\n"
        "    convert(W, n_heads, head_dim, to)\n"
        "    perm = interleaved_to_halves_perm(head_dim)\n"
        "    perm = perm if to == 'halves' else torch.argsort(perm)\n"
        "    return permute_head_rows(W, n_heads, perm)\n",
        namespace,
    )
    namespace["convert"] = convert
    fails(
        check,
        namespace["via_helpers"],
        "reshape and transpose only",
        "permute_head_rows",
    )
    assert namespace["permute_head_rows"] is CH6.permute_head_rows, (
        "the spy was not removed"
    )


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def test_ex_6_3(capsys) -> None:
    passes(CH6.check_rotate_half, rotate_half, 4, capsys)
    check = CH6.check_rotate_half
    fails(check, lambda x: -rotate_half(x), "wrong half", "x = (1, 2, 3, 4)")
    fails(check, lambda x: torch.cat(x.chunk(2, -1)[::-1], -1), "minus sign is missing")
    fails(
        check,
        lambda x: torch.stack((-x[..., 1::2], x[..., 0::2]), -1).flatten(-2),
        "interleaved quarter turn",
    )
    fails(
        check,
        lambda x: rotate_half(x) if x.ndim == 1 else rotate_half(x)[..., :1],
        "shape (2, 3, 5, 8)",
    )


def next_positions(mask, new):
    if mask.ndim != 2:
        raise ValueError(
            f"attention_mask must have shape (batch, seq_len), got {mask.shape}"
        )
    return mask.long().sum(1, keepdim=True) + torch.arange(new)


def test_ex_6_5(capsys) -> None:
    passes(CH6.check_next_position_ids, next_positions, 7, capsys)
    check = CH6.check_next_position_ids
    # float position ids have the right values but cannot index a cache
    fails(check, lambda m, n: next_positions(m, n).float(), "integer positions",
          "float32")
    fails(check, lambda m, n: next_positions(m, n).double(), "integer positions",
          "float64")
    # the first differing position is shown
    fails(check, lambda m, n: next_positions(m, n) + (torch.arange(n) > 0),
          "at position 1", "the values before this position are right")
    fails(
        check,
        lambda m, n: m.shape[1] + torch.arange(n).expand(m.shape[0], n),
        "padding is counted",
        "attention_mask = [[0, 0, 1, 1, 1]",
    )
    fails(
        check, lambda m, n: torch.arange(n).expand(m.shape[0], n), "cache is forgotten"
    )
    fails(check, lambda m, n: next_positions(m, n) - 1, "(real tokens - 1)")
    fails(check, lambda m, n: next_positions(m, n) + 1, "not (real tokens + 1)")
    fails(
        check,
        lambda m, n: (
            m.sum(-1, keepdim=True) + torch.arange(n) if m.ndim == 2 else m.sum()
        ),
        "a 1-D mask",
        "got no error",
    )


# --------------------------------------------------------------------------- Chapter 7


def finite_sum(delta, d, base=10000.0):
    theta = base ** (-np.arange(0, d, 2) / d)
    return np.cos(np.multiply.outer(np.asarray(delta, dtype=float), theta)).mean(-1)


def first_zero(d, base=10000.0):
    grid = np.arange(0.0, 5000.0, 0.05)
    j = int(np.argmax(finite_sum(grid, d, base) <= 0))
    return brentq(lambda x: finite_sum(x, d, base), grid[j - 1], grid[j], xtol=1e-12)


def test_ex_7_2(capsys) -> None:
    passes(CH7.check_first_zero_finite_sum, first_zero, 4, capsys)
    # a correct answer in float32 passes too, and one computed with a coarser bracket
    passes(CH7.check_first_zero_finite_sum,
           lambda d, base=1e4: np.float32(first_zero(d, base)), 4, capsys)
    passes(CH7.check_first_zero_finite_sum,
           lambda d, base=1e4: torch.tensor(first_zero(d, base), dtype=torch.float64),
           4, capsys)
    check = CH7.check_first_zero_finite_sum
    fails(
        check,
        lambda d, base=1e4: float(np.ceil(first_zero(d, base))),
        "*integer* offset",
        "d = 2, base = 10000",
    )
    x0 = brentq(lambda x: sici(x)[1], 0.3, 1.0)
    fails(
        check, lambda d, base=1e4: CH7.first_zero_integral(base), "zero of the integral"
    )
    fails(
        check,
        lambda d, base=1e4: 3 * np.pi / 2 if d == 2 else first_zero(d, base),
        "not the first",
    )
    fails(check, lambda d, base=1e4: first_zero(d, base) + 1e-3,
          "|difference| 1.00e-03", "d = 2, base = 10000")
    assert x0 > 0.6


def base_for_context(L):
    if L < 10:
        raise ValueError(f"the context length L must be at least 10, got {L}")
    x0 = brentq(lambda x: sici(x)[1], 0.3, 1.0)
    return brentq(
        lambda b: CH7.first_zero_integral(b) - L,
        (L - 3.8) / x0,
        (L + 3.8) / x0,
        xtol=1e-9,
        rtol=1e-12,
    )


def test_ex_7_3(capsys) -> None:
    passes(CH7.check_base_for_context, base_for_context, 4, capsys)
    passes(CH7.check_base_for_context, lambda L: np.float32(base_for_context(L)), 4,
           capsys)
    check = CH7.check_base_for_context
    x0 = brentq(lambda x: sici(x)[1], 0.3, 1.0)
    fails(check, lambda L: L / x0, "approximation L / x0", "L = 100")
    fails(check, lambda L: (L + 3.8) / x0, "sufficient bound")
    fails(check, lambda L: float(L), "base equals L")
    fails(check, lambda L: L * x0, "times x0")
    fails(check, lambda L: base_for_context(max(L, 10)), "L = 0", "got no error")


# --------------------------------------------------- checks hold values, not solutions


def check_source(stem: str, name: str) -> str:
    """The source of one check function, as the notebook (and the student edition) shows
    it."""
    for cell in read(NOTEBOOKS / f"{stem}.ipynb").cells:
        if f"def {name}(" in cell.source:
            text = cell.source[cell.source.index(f"def {name}("):]
            end = text.find("\ndef ", 1)
            return text if end < 0 else text[:end]
    raise LookupError(name)


@pytest.mark.parametrize("stem, name, forbidden", [
    ("06_rope_in_code", "check_convert_qk_weight",
     ("permute_head_rows(W", "interleaved_to_halves_perm(8)")),
    ("06_rope_in_code", "check_next_position_ids",
     ("position_ids_from_mask", "cumsum")),
    ("07_long_range_decay", "check_first_zero_finite_sum", ("brentq(",)),
    ("07_long_range_decay", "check_base_for_context",
     ("brentq(", "first_zero_integral(b) -")),
])
def test_chapter_6_and_7_checks_hold_expected_values(stem, name, forbidden) -> None:
    """The student edition shows the check's source: it must not compute the answer."""
    source = check_source(stem, name)
    for text in forbidden:
        assert text not in source, f"{name} computes the answer with {text!r}"


@pytest.mark.parametrize("stem, name, forbidden", [
    ("01_attention_cant_see_order", "check_unchanged_causal_outputs",
     ("output_shift(", "range(T)")),
    ("05_deriving_rope", "check_rope_scores", ("rope_matrix(", "_scores_by_matrices")),
    ("10_positions_in_2d", "check_axial_rope", ("_axial_reference",)),
    ("12_debugging_rope", "check_rope_for_meta_layout", ("apply_rope_halves(",
                                                         "argsort(")),
    ("12_debugging_rope", "check_rope_parameters_for", ("modern_rope_keys",
                                                         "rope_scaling\"]")),
    ("12_debugging_rope", "check_dynamic_ntk_logits", ("dynamic_inv_freq(",
                                                       "rope_with_inv_freq(")),
    # 12.4: no decoding step of its own (the old decode_variant), and no count of the
    # real tokens (the new token's position)
    ("12_debugging_rope", "check_decode_step", ("decode_variant", ".sum(", "cumsum",
                                                "logits_at_positions(")),
])
def test_chapters_1_10_12_checks_hold_expected_values(stem, name, forbidden) -> None:
    source = check_source(stem, name)
    for text in forbidden:
        assert text not in source, f"{name} computes the answer with {text!r}"


# ------------------------------------------------------------ Chapter 12 (12.5, 12.6)

CH12 = chapter("12_debugging_rope")


def parameters(checkpoint, override=None):
    """Exercise 12.5 written independently: one pass over both spellings."""
    def modern(rope):
        return {("rope_type" if k == "type" else k): v for k, v in (rope or {}).items()}

    own = modern(checkpoint.get("rope_parameters") or checkpoint.get("rope_scaling"))
    new = modern(override)
    if own.get("rope_type", "default") not in ("default", new.get("rope_type",
                                                                  own.get("rope_type"))):
        raise ValueError(f"the override's {new.get('rope_type')} would replace the "
                         f"checkpoint's {own['rope_type']}")
    result = {"rope_type": "default", "rope_theta": checkpoint.get(
        "rope_theta", own.get("rope_theta", 10000.0))} | own | new
    if result.get("factor", 1.0) < 1:
        raise ValueError("factor must be at least 1")
    if result["rope_type"] in ("yarn", "llama3", "longrope"):
        result.setdefault("original_max_position_embeddings",
                          checkpoint["max_position_embeddings"])
    return result


def test_ex_12_5_shows_one_key_not_the_answer(capsys) -> None:
    passes(CH12.check_rope_parameters_for, parameters, 7, capsys)

    def without_original(checkpoint, override=None):
        result = parameters(checkpoint, override)
        result.pop("original_max_position_embeddings", None)
        return result

    message = fails(CH12.check_rope_parameters_for, without_original,
                    "Exercise 12.5", "original_max_position_embeddings is missing",
                    "expected: 'original_max_position_embeddings': 8192",
                    "got: no key 'original_max_position_embeddings'")
    assert "low_freq_factor': 1.0" not in message.split("input:")[0]
    message = fails(CH12.check_rope_parameters_for,
                    lambda c, o=None: dict(parameters(c, o), rope_theta=1.0),
                    "expected 'rope_theta': 10000.0, got 'rope_theta': 1.0",
                    "compare key by key")
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
    for T, (points, expected, _) in CH12.DYNAMIC_CASES.items():
        rows = CH12.exact_grid((T + 1, 16))
        got = dynamic_float64(rows[-1], rows[:-1], 10000.0, 2.0, 64)[points]
        assert torch.allclose(got, torch.tensor(expected, dtype=torch.float64),
                              rtol=1e-10, atol=1e-10)


def test_ex_12_6_float64_and_transformers_float32_frequencies_pass(capsys) -> None:
    passes(CH12.check_dynamic_ntk_logits, dynamic_float64, 6, capsys)

    def transformers_frequencies(q, raw_keys, base, factor, length):
        if raw_keys.shape[-1] % 2:
            raise ValueError("head_dim must be even")
        T, d = raw_keys.shape
        config = LlamaConfig(head_dim=d, max_position_embeddings=length,
                             rope_parameters={"rope_type": "dynamic",
                                              "rope_theta": base, "factor": factor})
        inv_freq = ROPE_INIT_FUNCTIONS["dynamic"](config, seq_len=T)[0]
        assert inv_freq.dtype == torch.float32
        angles = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq.double()
        cos, sin = angles.cos().repeat(1, 2), angles.sin().repeat(1, 2)
        half = lambda x: torch.cat((-x[..., d // 2:], x[..., : d // 2]), -1)  # noqa: E731
        keys = raw_keys * cos + half(raw_keys) * sin
        return keys @ (q * cos[-1] + half(q) * sin[-1])

    passes(CH12.check_dynamic_ntk_logits, transformers_frequencies, 6, capsys)
    message = fails(CH12.check_dynamic_ntk_logits,
                    lambda *a: dynamic_float64(*a) + (torch.arange(a[1].shape[0]) == 1),
                    "Exercise 12.6, case T = 40", "at logit 1", "none of the usual")
    assert "-9.3975" not in message  # logit 0 is right: only the first wrong one shows
    fails(CH12.check_dynamic_ntk_logits, lambda *a: dynamic_float64(*a)[:-1],
          "a tensor of shape (40,)")


# ----------------------------------------------------------------- Chapter 11 (11.2)

CH11 = chapter("11_rope_at_speed")


def rope_in_place(x, cos, sin):
    """Exercise 11.2 written here: save the first half, then update both halves."""
    if x.shape[-1] % 2:
        raise ValueError(f"head_dim must be even, got {x.shape[-1]}")
    x1, x2 = x.chunk(2, dim=-1)
    saved = x1.clone()
    x1.mul_(cos).sub_(x2 * sin)
    x2.mul_(cos).add_(saved * sin)
    return x


def test_ex_11_2_literals_are_the_rotation_in_float64() -> None:
    """The check's expected values against the rotation computed here in float64 from
    the exact angles m * 10000 ** (-2i/d), on the check's own inputs."""
    for shape, expected in CH11.INPLACE_EXPECTED.items():
        x = CH11.grid_input(shape, torch.float64)
        d = shape[-1]
        angles = torch.arange(shape[2], dtype=torch.float64)[:, None] * 10000.0 ** (
            -torch.arange(0, d, 2, dtype=torch.float64) / d)
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        c, s = angles.cos(), angles.sin()
        want = torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), -1)
        got = torch.tensor(expected, dtype=torch.float64).reshape(shape)
        assert torch.allclose(got, want, rtol=0, atol=1e-11)


def test_ex_11_2_right_answers_pass_and_the_named_mistakes_fail(capsys) -> None:
    passes(CH11.check_rope_inplace, rope_in_place, 10, capsys)
    check = CH11.check_rope_inplace

    def full_buffer(x, cos, sin):  # right values, but a full-size copy of x
        if x.shape[-1] % 2:
            raise ValueError("head_dim must be even")
        old = x.clone()
        h = x.shape[-1] // 2
        x[..., :h] = old[..., :h] * cos - old[..., h:] * sin
        x[..., h:] = old[..., h:] * cos + old[..., :h] * sin
        return x

    fails(check, full_buffer, "no tensor larger than half of x", "a full-size buffer")

    def second_sign(x, cos, sin):  # one flipped sign: the second half subtracts
        h = x.shape[-1] // 2
        saved = x[..., :h].clone()
        x[..., :h] = saved * cos - x[..., h:] * sin
        x[..., h:] = x[..., h:] * cos - saved * sin
        return x

    message = fails(check, second_sign, "Exercise 11.2", "looks like one sign flipped",
                    "the second half")
    # position 0 is the identity: the first difference shown is at position 1
    assert re.search(r"at \[0, 0, [1-9]", message), message
