"""Chapter 2's functions, taken from the notebook: the four first attempts and their measurements."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nbload import chapter

ch = chapter("02_first_attempts")

lengths = st.integers(1, 300)


@given(T=lengths)
def test_integer_and_normalised_positions(T) -> None:
    integer, normalised = ch.integer_positions(T), ch.normalised_positions(T)
    assert integer.shape == normalised.shape == (T,)
    assert np.array_equal(integer, np.arange(T))
    assert np.allclose(normalised * T, integer)
    assert normalised.min() >= 0 and normalised.max() < 1


@given(T=st.integers(2, 50), T2=st.integers(2, 50))
def test_normalised_codes_depend_on_the_length_integer_codes_do_not(T, T2) -> None:
    shared = min(T, T2)
    assert np.array_equal(ch.integer_positions(T)[:shared], ch.integer_positions(T2)[:shared])
    same = np.allclose(ch.normalised_positions(T)[:shared], ch.normalised_positions(T2)[:shared])
    assert same == (T == T2)


@given(T=st.integers(1, 40), d=st.integers(1, 40))
def test_broadcast_code_repeats_the_value_in_every_coordinate(T, d) -> None:
    code = ch.broadcast_code(ch.integer_positions(T), d)
    assert code.shape == (T, d)
    assert np.array_equal(code, np.arange(T)[:, None] * np.ones(d))
    assert np.allclose(np.linalg.norm(code, axis=1), np.arange(T) * np.sqrt(d))


@settings(max_examples=60)
@given(bits=st.integers(1, 12), data=st.data())
def test_binary_codes_are_unique_bits_of_m(bits, data) -> None:
    n = data.draw(st.integers(1, 2**bits))
    codes = ch.binary_encoding(n, bits)
    assert codes.shape == (n, bits)
    assert set(np.unique(codes)) <= {0.0, 1.0}
    assert len(np.unique(codes, axis=0)) == n
    assert np.array_equal(codes @ 2.0 ** np.arange(bits), np.arange(n))  # least significant first
    assert np.array_equal(codes, ch.binary_encoding(2**bits, bits)[:n])  # independent of length


@settings(max_examples=40)
@given(bits=st.integers(1, 9), seed=st.integers(0, 2**32 - 1))
def test_hamming_distance_is_a_metric_equal_to_squared_distance(bits, seed) -> None:
    codes = ch.binary_encoding(2**bits, bits)
    H = ch.hamming_distance_matrix(codes)
    assert np.array_equal(H, H.T) and (np.diag(H) == 0).all()
    squared = ((codes[:, None, :] - codes[None, :, :]) ** 2).sum(-1)
    assert np.array_equal(H, squared)
    a, b, c = np.random.default_rng(seed).integers(0, 2**bits, 3)
    assert H[a, c] <= H[a, b] + H[b, c]


@given(m=st.integers(0, 510))
def test_neighbours_differ_in_the_bits_a_carry_flips(m) -> None:
    H = ch.hamming_distance_matrix(ch.binary_encoding(512, 9)[[m, m + 1]])
    assert H[0, 1] == bin(m ^ (m + 1)).count("1")


@given(values=st.lists(st.floats(-5, 5), min_size=2, max_size=30))
def test_lag_profile_of_a_toeplitz_matrix_is_flat_per_offset(values) -> None:
    n = len(values)
    S = np.array([[values[abs(i - j)] for j in range(n)] for i in range(n)])
    low, mean, high = ch.lag_profile(S)
    assert len(low) == len(mean) == len(high) == n - 1
    assert np.allclose(low, values[1:]) and np.allclose(high, values[1:]) and np.allclose(mean, values[1:])


@settings(max_examples=40)
@given(n=st.integers(1, 30), d=st.integers(1, 20), seed=st.integers(0, 2**32 - 1))
def test_cosine_similarity_matrix(n, d, seed) -> None:
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((n, d)) + 0.1
    C = ch.cosine_similarity_matrix(E)
    assert C.shape == (n, n)
    assert np.allclose(C, C.T) and np.allclose(np.diag(C), 1)
    assert (np.abs(C) <= 1).all()
    scaled = E * rng.uniform(0.1, 10, size=(n, 1))  # cosine ignores positive rescaling of rows
    assert np.allclose(ch.cosine_similarity_matrix(scaled), C)


@settings(max_examples=40)
@given(n=st.integers(3, 40), d=st.integers(2, 12), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_principal_components(n, d, seed, data) -> None:
    E = np.random.default_rng(seed).standard_normal((n, d))
    k = data.draw(st.integers(1, min(n, d)))
    scores, explained = ch.principal_components(E, k)
    assert scores.shape == (n, k) and explained.shape == (k,)
    assert (explained >= 0).all() and explained.sum() <= 1 + 1e-12
    assert (np.diff(explained) <= 1e-12).all()  # largest first
    assert np.allclose(scores.mean(axis=0), 0, atol=1e-10)
    gram = scores.T @ scores
    assert np.allclose(gram, np.diag(np.diag(gram)), atol=1e-8)  # uncorrelated components
    full_scores, full = ch.principal_components(E, min(n, d))
    assert np.isclose(full.sum(), 1)
    assert np.allclose((full_scores**2).sum(), ((E - E.mean(0)) ** 2).sum())


@settings(max_examples=30, deadline=None)
@given(T=st.integers(8, 80), d=st.integers(1, 4), scale=st.floats(0.01, 100))
def test_translation_codes_have_an_exact_shift_map(T, d, scale) -> None:
    codes = ch.broadcast_code(scale * ch.integer_positions(T), d)
    assert ch.shift_map_error(codes) < 1e-8
    assert ch.shift_map_error(ch.broadcast_code(ch.normalised_positions(T), d)) < 1e-8


@settings(max_examples=30, deadline=None)
@given(T=st.integers(12, 100), angles=st.lists(st.floats(0.01, 3.0), min_size=1, max_size=3),
       k=st.integers(1, 3))
def test_rotating_codes_have_an_exact_shift_map(T, angles, k) -> None:
    m = np.arange(T)[:, None]
    codes = np.hstack([np.hstack([np.cos(m * a), np.sin(m * a)]) for a in angles])
    assert ch.shift_map_error(codes, k=k) < 1e-6


@settings(max_examples=30, deadline=None)
@given(T=st.integers(10, 60), d=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_shift_map_error_lies_between_zero_and_one(T, d, seed) -> None:
    codes = np.random.default_rng(seed).standard_normal((T, d))
    assert 0 <= ch.shift_map_error(codes) <= 1 + 1e-12  # the constant map already achieves 1


@given(bits=st.integers(4, 10))
def test_binary_codes_have_no_exact_shift_map(bits) -> None:
    assert ch.shift_map_error(ch.binary_encoding(2**bits, bits)) > 0.3


@settings(max_examples=40)
@given(n=st.integers(2, 40), seed=st.integers(0, 2**32 - 1))
def test_range_excursion(n, seed) -> None:
    rng = np.random.default_rng(seed)
    train = rng.standard_normal((n, 3))
    inside = train.min(0) + rng.uniform(0, 1, (5, 3)) * (train.max(0) - train.min(0))
    assert ch.range_excursion(train, inside) == 0
    width = train.max(0) - train.min(0)
    outside = train.max(0) + 0.5 * width
    assert np.isclose(ch.range_excursion(train, outside), 0.5)
    constant = np.hstack([train, np.zeros((n, 1))])
    assert ch.range_excursion(constant, np.append(inside[0], 1.0)) == np.inf


@given(n=st.integers(8, 12), d=st.integers(1, 3), shift=st.sampled_from([(1, 0), (0, 1), (2, 3)]))
def test_axis_grid_shift_error(n, d, shift) -> None:
    # integer positions on each axis: every 2-D shift is a translation, error ~ 0
    assert ch.axis_grid_shift_error(ch.broadcast_code(ch.integer_positions(n), d), shift) < 1e-8
    # bits of each axis: a one-row shift of a 3-bit code has carries, no exact affine map
    bits = np.array([[(m >> i) & 1 for i in range(3)] for m in range(8)], dtype=float)
    assert ch.axis_grid_shift_error(bits, (1, 0)) > 0.1
    with pytest.raises(ValueError, match="shift"):
        ch.axis_grid_shift_error(np.arange(n), (0, 0))


@given(T=st.integers(2, 50), scale=st.floats(0.1, 10))
def test_min_neighbour_gap(T, scale) -> None:
    assert np.isclose(ch.min_neighbour_gap(ch.broadcast_code(scale * ch.integer_positions(T), 4)),
                      2 * scale)
    assert np.isclose(ch.min_neighbour_gap(scale * ch.integer_positions(T)), scale)


def test_html_table_and_first_error() -> None:
    table = ch.html_table(["a", "b"], [["1", "<2>"], ["3", "4"]])
    assert table == ('<table class="table"><thead><tr><th>a</th><th>b</th></tr></thead><tbody>'
                     "<tr><td>1</td><td>&lt;2&gt;</td></tr><tr><td>3</td><td>4</td></tr>"
                     "</tbody></table>")
    assert ch.first_error(lambda: 1) is None
    assert isinstance(ch.first_error(lambda: [][1]), IndexError)


def test_bad_inputs_raise_clear_errors() -> None:
    for bad in (0, -3, 2.5, True, "5"):
        with pytest.raises(ValueError, match="positive integer"):
            ch.integer_positions(bad)
        with pytest.raises(ValueError, match="positive integer"):
            ch.normalised_positions(bad)
    with pytest.raises(ValueError, match="one scalar per position"):
        ch.broadcast_code(np.zeros((3, 2)), 4)
    with pytest.raises(ValueError, match="d .* must be a positive integer"):
        ch.broadcast_code(np.zeros(3), 0)
    with pytest.raises(ValueError, match="need bits >= 10"):
        ch.binary_encoding(513, 9)
    with pytest.raises(ValueError, match="bits must be a positive integer"):
        ch.binary_encoding(4, 0)
    with pytest.raises(ValueError, match="2-D array"):
        ch.hamming_distance_matrix(np.zeros(4))
    with pytest.raises(ValueError, match="only 0 and 1"):
        ch.hamming_distance_matrix(np.full((2, 2), 0.5))
    with pytest.raises(ValueError, match="square matrix"):
        ch.lag_profile(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="shape \\(N, d\\)"):
        ch.cosine_similarity_matrix(np.ones(3))
    with pytest.raises(ValueError, match="rows \\[1\\] are zero vectors"):
        ch.cosine_similarity_matrix(np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="at most min\\(N, d\\) = 2"):
        ch.principal_components(np.random.default_rng(0).standard_normal((5, 2)), 3)
    with pytest.raises(ValueError, match="no variance"):
        ch.principal_components(np.ones((4, 3)), 1)
    with pytest.raises(ValueError, match="fits 5 pairs exactly"):
        ch.shift_map_error(np.random.default_rng(0).standard_normal((6, 8)))
    with pytest.raises(ValueError, match="shape \\(positions, d\\)"):
        ch.shift_map_error(np.arange(10.0))
    with pytest.raises(ValueError, match="k \\(the offset\\)"):
        ch.shift_map_error(np.ones((20, 1)), k=0)
    with pytest.raises(ValueError, match="all target codes are equal"):
        ch.shift_map_error(np.ones((20, 1)))
    with pytest.raises(ValueError, match="same width"):
        ch.range_excursion(np.zeros((3, 2)), np.zeros((3, 4)))
    with pytest.raises(ValueError, match="two positions"):
        ch.min_neighbour_gap(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="every row needs 2 cells"):
        ch.html_table(["a", "b"], [["1"]])
    with pytest.raises(ValueError, match="shape \\(positions, d\\)"):
        ch.axis_grid_shift_error(np.zeros((2, 2, 2)), (1, 0))
    with pytest.raises(ValueError, match="start must be 0 to 1"):
        ch.similarity_explorer(np.eye(3), [0, 1], start=2)
    with pytest.raises(ValueError, match="zero row"):
        ch.mean_row_cosine(np.zeros((2, 3)), np.ones((2, 3)))


# Reference solutions of the coding exercises (the notebook's solution cells are not exported).
def square_wave_bits(n: int, bits: int) -> np.ndarray:
    wave = np.sin(np.pi * (np.arange(n)[:, None] + 0.5) / 2.0 ** np.arange(bits))
    return 0.5 * (1 - np.sign(wave))


def gray_code(n: int, bits: int) -> np.ndarray:
    if n > 2**bits:
        raise ValueError("too few bits")
    m = np.arange(n)
    return (((m ^ (m >> 1))[:, None] >> np.arange(bits)) & 1).astype(float)


def sinusoidal_codes(T: int, d: int, base: float = 10000.0) -> np.ndarray:
    if d % 2:
        raise ValueError("odd d")
    angles = np.arange(T)[:, None] * base ** (-np.arange(0, d, 2) / d)
    codes = np.empty((T, d))
    codes[:, 0::2], codes[:, 1::2] = np.sin(angles), np.cos(angles)
    return codes


def test_check_functions_accept_correct_answers(capsys) -> None:
    ch.check_square_wave_bits(square_wave_bits)
    ch.check_gray_code(gray_code)
    ch.check_sinusoidal_codes(sinusoidal_codes)
    assert capsys.readouterr().out.count("checks passed") == 3


def test_check_functions_give_specific_feedback() -> None:
    """A wrong answer is named case by case (the stubs' NotImplementedError passing through
    every check is tested on the real stubs in tests/test_student.py)."""
    with pytest.raises(AssertionError, match="case 8 positions, 3 bits: bit 0 of position 1"):
        ch.check_square_wave_bits(lambda n, bits: ch.binary_encoding(n, bits)[:, ::-1] * 0)
    with pytest.raises(AssertionError, match="case 8 positions, 3 bits: expected rows"):
        ch.check_gray_code(ch.binary_encoding)
    with pytest.raises(AssertionError, match="case 9 positions, 3 bits: expected a ValueError"):
        ch.check_gray_code(lambda n, bits: gray_code(min(n, 2**bits), bits))
    with pytest.raises(AssertionError, match="case position 0"):
        ch.check_sinusoidal_codes(lambda T, d, base=10000.0: sinusoidal_codes(T, d, base)[:, ::-1])
    with pytest.raises(AssertionError, match="case base=100"):
        ch.check_sinusoidal_codes(lambda T, d, base=10000.0: sinusoidal_codes(T, d))
    with pytest.raises(AssertionError, match="case odd d"):
        ch.check_sinusoidal_codes(lambda T, d, base=10000.0: sinusoidal_codes(T, d + d % 2, base)[:, :d])


def test_minilm_position_table_ends_at_511() -> None:
    """The chapter's measurements of the learned table, repeated on the real model."""
    tokenizer, model = ch.load_minilm()
    lookup = model.embeddings.position_embeddings
    table = lookup.weight.detach().double().numpy()
    assert table.shape == (512, 384)
    with torch.no_grad():
        assert ch.first_error(lambda: lookup(torch.arange(512))) is None
        assert isinstance(ch.first_error(lambda: lookup(torch.tensor([512]))), IndexError)
    assert 0.07 < ch.shift_map_error(table) < 0.08
    scores, explained = ch.principal_components(table, 2)
    turn = np.abs(np.diff(np.unwrap(np.arctan2(scores[:, 1], scores[:, 0])))).mean()
    assert 1.07 < turn < 1.08 and 0.24 < explained.sum() < 0.25


@settings(max_examples=30)
@given(n=st.integers(1, 20), d=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_mean_row_cosine(n, d, seed) -> None:
    A = np.random.default_rng(seed).standard_normal((n, d)) + 0.5
    assert np.isclose(ch.mean_row_cosine(A, A), 1)
    assert np.isclose(ch.mean_row_cosine(A, -A), -1)
    assert np.isclose(ch.mean_row_cosine(A, 3 * A), 1)
    with pytest.raises(ValueError, match="same shape"):
        ch.mean_row_cosine(A, A[:, :0] if d > 1 else np.zeros((n + 1, d)))


def test_similarity_explorer_starts_at_the_chosen_row() -> None:
    S = ch.cosine_similarity_matrix(np.random.default_rng(0).standard_normal((6, 3)))
    fig = ch.similarity_explorer(S, [0, 2, 5], start=1)
    assert [trace.visible for trace in fig.data] == [False, True, False]
    assert "position 2" in fig.layout.title.text and fig.layout.sliders[0].active == 1
    assert np.allclose(fig.data[1].y, S[2].round(3))
