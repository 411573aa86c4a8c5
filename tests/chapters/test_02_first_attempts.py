"""Chapter 2's functions, taken from the notebook: the four first attempts and their
measurements."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bookkit.testing import fails, load_chapter, passes

ch = load_chapter("02_first_attempts")
# Timing limits would make these tests fail on a busy machine, not on a bug.

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
    assert np.array_equal(
        ch.integer_positions(T)[:shared], ch.integer_positions(T2)[:shared]
    )
    same = np.allclose(
        ch.normalised_positions(T)[:shared], ch.normalised_positions(T2)[:shared]
    )
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
    assert np.array_equal(
        codes @ 2.0 ** np.arange(bits), np.arange(n)
    )  # least significant first
    assert np.array_equal(
        codes, ch.binary_encoding(2**bits, bits)[:n]
    )  # independent of length


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
    assert (
        np.allclose(low, values[1:])
        and np.allclose(high, values[1:])
        and np.allclose(mean, values[1:])
    )


@settings(max_examples=40)
@given(n=st.integers(1, 30), d=st.integers(1, 20), seed=st.integers(0, 2**32 - 1))
def test_cosine_similarity_matrix(n, d, seed) -> None:
    rng = np.random.default_rng(seed)
    E = rng.standard_normal((n, d)) + 0.1
    C = ch.cosine_similarity_matrix(E)
    assert C.shape == (n, n)
    assert np.allclose(C, C.T) and np.allclose(np.diag(C), 1)
    assert (np.abs(C) <= 1).all()
    scaled = E * rng.uniform(
        0.1, 10, size=(n, 1)
    )  # cosine ignores positive rescaling of rows
    assert np.allclose(ch.cosine_similarity_matrix(scaled), C)


@settings(max_examples=40)
@given(
    n=st.integers(3, 40),
    d=st.integers(2, 12),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_principal_components(n, d, seed, data) -> None:
    E = np.random.default_rng(seed).standard_normal((n, d))
    k = data.draw(st.integers(1, min(n, d)))
    scores, explained = ch.principal_components(E, k)
    assert scores.shape == (n, k) and explained.shape == (k,)
    assert (explained >= 0).all() and explained.sum() <= 1 + 1e-12
    assert (np.diff(explained) <= 1e-12).all()  # largest first
    assert np.allclose(scores.mean(axis=0), 0, atol=1e-10)
    gram = scores.T @ scores
    assert np.allclose(
        gram, np.diag(np.diag(gram)), atol=1e-8
    )  # uncorrelated components
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
@given(
    T=st.integers(12, 100),
    angles=st.lists(st.floats(0.01, 3.0), min_size=1, max_size=3),
    offset=st.integers(1, 3),
)
def test_rotating_codes_have_an_exact_shift_map(T, angles, offset) -> None:
    m = np.arange(T)[:, None]
    codes = np.hstack([np.hstack([np.cos(m * a), np.sin(m * a)]) for a in angles])
    assert ch.shift_map_error(codes, offset=offset) < 1e-6


@settings(max_examples=30, deadline=None)
@given(T=st.integers(10, 60), d=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_shift_map_error_lies_between_zero_and_one(T, d, seed) -> None:
    codes = np.random.default_rng(seed).standard_normal((T, d))
    assert (
        0 <= ch.shift_map_error(codes) <= 1 + 1e-12
    )  # the constant map already achieves 1


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


@given(
    n=st.integers(8, 12),
    d=st.integers(1, 3),
    shift=st.sampled_from([(1, 0), (0, 1), (2, 3)]),
)
def test_axis_grid_shift_error(n, d, shift) -> None:
    # integer positions on each axis: every 2-D shift is a translation, error ~ 0
    assert (
        ch.axis_grid_shift_error(ch.broadcast_code(ch.integer_positions(n), d), shift)
        < 1e-8
    )
    # bits of each axis: a one-row shift of a 3-bit code has carries, no exact affine
    # map
    bits = np.array([[(m >> i) & 1 for i in range(3)] for m in range(8)], dtype=float)
    assert ch.axis_grid_shift_error(bits, (1, 0)) > 0.1
    with pytest.raises(ValueError, match="shift"):
        ch.axis_grid_shift_error(np.arange(n), (0, 0))


@given(T=st.integers(2, 50), scale=st.floats(0.1, 10))
def test_min_neighbour_gap(T, scale) -> None:
    assert np.isclose(
        ch.min_neighbour_gap(ch.broadcast_code(scale * ch.integer_positions(T), 4)),
        2 * scale,
    )
    assert np.isclose(ch.min_neighbour_gap(scale * ch.integer_positions(T)), scale)


def test_html_table_and_first_error() -> None:
    table = ch.html_table(["a", "b"], [["1", "<2>"], ["3", "4"]])
    assert table == (
        '<table class="table"><thead><tr><th>a</th><th>b</th></tr></thead><tbody>'
        "<tr><td>1</td><td>&lt;2&gt;</td></tr><tr><td>3</td><td>4</td></tr>"
        "</tbody></table>"
    )
    captioned = ch.html_table(["x"], [["1"]], caption="m < n")
    assert captioned.startswith(
        '<table class="table"><caption>m &lt; n</caption><thead>'
    )
    numbers = ch.html_table([1, "b"], [[0.5, None]])  # any value, shown as str(value)
    assert "<th>1</th>" in numbers and "<td>0.5</td><td>None</td>" in numbers
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
    with pytest.raises(ValueError, match="offset must be a positive integer"):
        ch.shift_map_error(np.ones((20, 1)), offset=0)
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


# Reference solutions of the coding exercises (the notebook's solution cells are not
# exported).
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


def test_minilm_position_table_ends_at_511() -> None:
    """The chapter's measurements of the learned table, repeated on the real model."""
    tokenizer, model = ch.load_minilm()
    lookup = model.embeddings.position_embeddings
    table = lookup.weight.detach().double().numpy()
    assert table.shape == (512, 384)
    with torch.no_grad():
        assert ch.first_error(lambda: lookup(torch.arange(512))) is None
        assert isinstance(
            ch.first_error(lambda: lookup(torch.tensor([512]))), IndexError
        )
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


# --- Asymmetric random inputs against references written out by hand
# ----------------------- (On symmetric inputs a minimum equals a mean and B = c·A makes
# any average ±1: these tests use inputs where a wrong formula gives a different
# number.)


@settings(max_examples=30)
@given(n=st.integers(2, 9), seed=st.integers(0, 2**32 - 1))
def test_lag_profile_of_a_random_matrix(n, seed) -> None:
    S = np.random.default_rng(seed).standard_normal((n, n))
    low, mean, high = ch.lag_profile(S)
    for delta in range(1, n):
        entries = [S[m, m + delta] for m in range(n - delta)]  # above the diagonal
        assert low[delta - 1] == min(entries) and high[delta - 1] == max(entries)
        assert np.isclose(mean[delta - 1], sum(entries) / len(entries))
    assert np.all(low <= mean) and np.all(mean <= high)


def test_lag_profile_hand_computed() -> None:
    S = np.array([[0.0, 1.0, 5.0], [9.0, 0.0, 3.0], [9.0, 9.0, 0.0]])
    low, mean, high = ch.lag_profile(S)
    assert low.tolist() == [1.0, 5.0] and mean.tolist() == [2.0, 5.0]
    assert high.tolist() == [3.0, 5.0]


@settings(max_examples=30)
@given(n=st.integers(1, 12), d=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_mean_row_cosine_of_unrelated_rows(n, d, seed) -> None:
    rng = np.random.default_rng(seed)
    A, B = rng.standard_normal((n, d)) + 0.3, rng.standard_normal((n, d)) - 0.2
    expected = np.mean(
        [a @ b / (np.sqrt(a @ a) * np.sqrt(b @ b)) for a, b in zip(A, B)]
    )
    assert np.isclose(ch.mean_row_cosine(A, B), expected)


def test_mean_row_cosine_hand_computed() -> None:
    A = np.array([[1.0, 0.0], [1.0, 0.0], [3.0, 4.0]])
    B = np.array([[0.0, 2.0], [5.0, 0.0], [3.0, 4.0]])
    assert ch.mean_row_cosine(A, B) == pytest.approx((0.0 + 1.0 + 1.0) / 3)
    assert ch.mean_row_cosine(A[:1], np.array([[1.0, 1.0]])) == pytest.approx(2**-0.5)


@settings(max_examples=30)
@given(n=st.integers(1, 15), d=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_cosine_similarity_matrix_entries(n, d, seed) -> None:
    E = np.random.default_rng(seed).standard_normal((n, d)) + 0.2
    C = ch.cosine_similarity_matrix(E)
    for i in range(n):
        for j in range(n):
            ei, ej = E[i], E[j]
            expected = ei @ ej / np.sqrt((ei @ ei) * (ej @ ej))
            assert C[i, j] == pytest.approx(expected, abs=1e-12)


@settings(max_examples=30)
@given(n=st.integers(2, 12), bits=st.integers(1, 7), seed=st.integers(0, 2**32 - 1))
def test_hamming_distance_of_random_bit_rows(n, bits, seed) -> None:
    codes = np.random.default_rng(seed).integers(0, 2, (n, bits)).astype(float)
    H = ch.hamming_distance_matrix(codes)
    for i in range(n):
        for j in range(n):
            assert H[i, j] == sum(a != b for a, b in zip(codes[i], codes[j]))


def test_binary_encoding_hand_computed_and_boundary() -> None:
    assert ch.binary_encoding(6, 3).tolist() == [
        [0, 0, 0],
        [1, 0, 0],
        [0, 1, 0],
        [1, 1, 0],
        [0, 0, 1],
        [1, 0, 1],
    ]
    assert ch.binary_encoding(8, 3).shape == (8, 3)  # exactly 2**bits positions fit
    with pytest.raises(ValueError, match="need bits >= 4"):
        ch.binary_encoding(9, 3)
    with pytest.raises(ValueError, match="num_positions must be a positive integer"):
        ch.binary_encoding(0, 3)


@settings(max_examples=30, deadline=None)
@given(
    T=st.integers(12, 40),
    d=st.integers(1, 3),
    offset=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_shift_map_error_matches_an_independent_fit(T, d, offset, seed) -> None:
    codes = np.random.default_rng(seed).standard_normal((T, d))
    X = np.column_stack([codes[: T - offset], np.ones(T - offset)])
    Y = codes[offset:]
    coefficients = np.linalg.pinv(X) @ Y
    expected = np.linalg.norm(X @ coefficients - Y) / np.linalg.norm(Y - Y.mean(axis=0))
    assert ch.shift_map_error(codes, offset) == pytest.approx(expected, rel=1e-9)
    if offset == 1:
        assert ch.shift_map_error(codes) == pytest.approx(expected, rel=1e-9)  # default


def test_shift_map_error_needs_more_pairs_than_unknowns() -> None:
    codes = np.random.default_rng(3).standard_normal(
        (6, 3)
    )  # 5 pairs, 4 unknowns: fine
    assert 0 < ch.shift_map_error(codes) < 1
    with pytest.raises(ValueError, match="fits 4 pairs exactly"):
        ch.shift_map_error(codes[:5])  # 4 pairs, 4 unknowns
    with pytest.raises(ValueError, match="fits 4 pairs exactly"):
        ch.shift_map_error(codes, offset=2)


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(3, 20),
    d=st.integers(2, 6),
    seed=st.integers(0, 2**32 - 1),
    data=st.data(),
)
def test_principal_components_match_the_covariance_eigenbasis(n, d, seed, data) -> None:
    E = np.random.default_rng(seed).standard_normal((n, d)) * np.arange(1, d + 1) + 5.0
    k = data.draw(st.integers(1, min(n, d)))
    scores, explained = ch.principal_components(E, k)
    centred = E - E.mean(axis=0)
    eigenvalues, vectors = np.linalg.eigh(centred.T @ centred)
    order = np.argsort(eigenvalues)[::-1][:k]
    assert explained == pytest.approx(eigenvalues[order] / eigenvalues.sum(), abs=1e-9)
    reference = centred @ vectors[:, order]
    assert np.allclose(np.abs(scores), np.abs(reference), atol=1e-7)


@settings(max_examples=30)
@given(n=st.integers(2, 15), seed=st.integers(0, 2**32 - 1))
def test_range_excursion_against_a_reference(n, seed) -> None:
    rng = np.random.default_rng(seed)
    train = rng.standard_normal((n, 3)) * [1.0, 4.0, 0.5]
    new = rng.standard_normal((4, 3)) * 3
    low, high = train.min(axis=0), train.max(axis=0)
    expected = 0.0
    for code in new:
        for j in range(3):
            outside = max(code[j] - high[j], low[j] - code[j], 0.0)
            expected = max(expected, outside / (high[j] - low[j]))
    assert ch.range_excursion(train, new) == pytest.approx(expected)


def test_range_excursion_hand_computed() -> None:
    train = np.array([[0.0, 10.0], [2.0, 30.0]])  # ranges [0, 2] and [10, 30]
    assert ch.range_excursion(train, [3.0, 20.0]) == pytest.approx(0.5)  # above the max
    assert ch.range_excursion(train, [1.0, 5.0]) == pytest.approx(0.25)  # below the min
    assert ch.range_excursion(train, [[1.0, 5.0], [-1.0, 10.0]]) == pytest.approx(0.5)
    assert ch.range_excursion(train, [[1.0, 10.0], [2.0, 30.0]]) == 0.0


@settings(max_examples=30)
@given(T=st.integers(2, 20), d=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_min_neighbour_gap_of_random_codes(T, d, seed) -> None:
    codes = np.random.default_rng(seed).standard_normal((T, d))
    gaps = [np.sqrt(np.sum((codes[m + 1] - codes[m]) ** 2)) for m in range(T - 1)]
    assert ch.min_neighbour_gap(codes) == pytest.approx(min(gaps))


def test_integer_and_normalised_positions_hand_computed() -> None:
    assert ch.integer_positions(3).tolist() == [0.0, 1.0, 2.0]
    assert ch.normalised_positions(4).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert ch.broadcast_code(np.array([2.0, -1.0]), 3).tolist() == [
        [2.0] * 3,
        [-1.0] * 3,
    ]


def test_cosine_similarity_of_unit_and_opposite_rows() -> None:
    E = np.array(
        [[1.0, 0.0], [0.0, 1.0], [-2.0, 0.0], [3.0, 4.0]]
    )  # unit rows are fine
    expected = np.array(
        [[1, 0, -1, 0.6], [0, 1, 0, 0.8], [-1, 0, 1, -0.6], [0.6, 0.8, -0.6, 1]]
    )
    assert np.allclose(ch.cosine_similarity_matrix(E), expected)
    assert np.array_equal(ch.cosine_similarity_matrix(np.eye(3)), np.eye(3))


@pytest.mark.parametrize("shift", [(6, 1), (1, 6), (0, 6), (6, 0), (-1, 1), (0, 0)])
def test_axis_grid_shift_error_rejects_shifts_off_the_grid(shift) -> None:
    codes = np.random.default_rng(5).normal(size=(6, 3))  # a 6 x 6 grid
    with pytest.raises(ValueError, match="shift must be a non-zero"):
        ch.axis_grid_shift_error(codes, shift)


def test_binary_encoding_says_how_many_bits_are_needed() -> None:
    with pytest.raises(ValueError, match=r"8 positions need bits >= 3"):
        ch.binary_encoding(8, 2)  # positions 0..7: 7 = 0b111
    with pytest.raises(ValueError, match=r"need bits >= 4"):
        ch.binary_encoding(9, 3)  # 8 = 0b1000


def test_axis_grid_shift_error_rejects_constant_codes() -> None:
    with pytest.raises(ValueError, match="all target codes are equal"):
        ch.axis_grid_shift_error(np.ones((6, 3)), (1, 0))


# --- The scorecard: per-coordinate excursions, neighbour gaps, measure_code and score
# --------


def sinusoidal(T: int, d: int, base: float = 10000.0) -> np.ndarray:
    angles = np.arange(T)[:, None] * base ** (-np.arange(0, d, 2) / d)
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(T, d)


def test_coordinate_excursions_hand_computed() -> None:
    train = np.array(
        [[0.0, 10.0, 5.0], [2.0, 30.0, 5.0]]
    )  # ranges [0, 2], [10, 30], {5}
    new = np.array([[3.0, 20.0, 5.0], [1.0, 5.0, 5.0]])
    assert ch.coordinate_excursions(train, new).tolist() == [0.5, 0.25, 0.0]
    assert ch.coordinate_excursions(train, [1.0, 20.0, 6.0]).tolist() == [0, 0, np.inf]
    assert ch.range_excursion(train, new) == 0.5


def test_neighbours_kept_allows_rounding_not_a_smaller_gap() -> None:
    train = np.arange(10.0)[:, None]
    assert ch.neighbours_kept(train, train + 100)  # the same gaps, exactly
    # entries off by up to e move a gap by up to 2 e: allowed when entry_error says so
    wobble = (train + 100) + 1e-10 * (-1.0) ** np.arange(10)[:, None]
    assert ch.neighbours_kept(train, wobble, entry_error=1e-10)
    assert not ch.neighbours_kept(train, wobble)  # exact codes: no such slack
    assert not ch.neighbours_kept(train, (train + 100) / 2)  # halved, like m/T at 2T
    assert not ch.neighbours_kept(train, (train + 100) / 2, entry_error=1e-3)


def test_trig_code_error_bounds_float64_cosines_and_sines() -> None:
    """The entries of a float64 sinusoidal table against 40-digit values (mpmath)."""
    import mpmath

    mpmath.mp.dps = 40
    d, base, T = 64, 10000.0, 1024
    table = sinusoidal(T, d, base)
    bound = ch.trig_code_error(T, base)
    worst = 0.0
    for m in (1, 7, 255, 511, 777, 1023):
        for j in (0, 1, 2, 3, 30, 31, 62, 63):
            angle = m * mpmath.power(base, -mpmath.mpf(2 * (j // 2)) / d)
            exact = mpmath.cos(angle) if j % 2 else mpmath.sin(angle)
            worst = max(worst, abs(float(table[m, j] - exact)))
    assert worst <= bound < 5e-12
    assert ch.trig_code_error(10, 100.0) < ch.trig_code_error(1000, 100.0)


def test_trig_code_error_is_the_stated_bound() -> None:
    """(ln b + 9) u m + 4u: the angle's roundings, then 2 ulp of cos or sin."""
    u = 2.0**-53
    exact = pytest.approx(((np.log(100.0) + 9) * 10 + 4) * u, rel=1e-12, abs=0)
    assert ch.trig_code_error(10, 100.0) == exact
    default_base = pytest.approx((np.log(1e4) + 13) * u, rel=1e-12, abs=0)
    assert ch.trig_code_error(1) == default_base


def test_neighbours_kept_with_equal_and_zero_gaps() -> None:
    assert ch.neighbours_kept(np.zeros((5, 2)), np.ones((5, 2)))  # both gaps 0
    codes = np.arange(12.0).reshape(6, 2)
    assert ch.neighbours_kept(codes, codes + 7.0, entry_error=0.0)


def test_neighbours_kept_on_grids_by_hand() -> None:
    grid = np.array([[[0.0, 0.0], [3.0, 0.0]], [[0.0, 2.0], [3.0, 2.5]]])  # 2 x 2
    # gaps: across 3 and sqrt(9.25), down 2 and 2.5; the smallest is 2
    assert ch.neighbours_kept(np.array([[0.0], [2.0], [4.0]]), grid)
    assert not ch.neighbours_kept(np.array([[0.0], [2.5], [5.0]]), grid)
    assert ch.neighbours_kept(grid, grid + 1.0) and ch.neighbours_kept(grid, grid[:1])
    assert not ch.neighbours_kept(grid, grid[:1] / 2)  # one row: gap 3/2 < 2
    with pytest.raises(ValueError, match="two cells"):
        ch.neighbours_kept(grid, grid[:1, :1])


def test_d3_measurements_by_hand() -> None:
    # box [0, 1] x [0, 2], largest norm sqrt 5
    seen = np.array([[0.0, 0.0], [1.0, 2.0]])
    m = ch.d3_measurements(seen, np.array([[2.0, 2.0], [0.5, 0.005]]), seen, seen)
    assert m["has_code"] and m["width"] == 2 and m["gap_ok"]
    assert m["coordinates_out"] == 1 and m["excursion"] == 1.0
    assert m["outside"] == pytest.approx(1 / np.sqrt(5))
    # 1 % of the range 2 is 0.02: 0.015 beyond is not out of range
    assert ch.d3_measurements(seen, [[1.0, 2.015]], seen, seen)["coordinates_out"] == 0
    none = ch.d3_measurements(seen, None, seen, None)
    assert not none["has_code"] and not none["gap_ok"] and none["coordinates_out"] == 0
    assert np.isnan(none["excursion"]) and np.isnan(none["outside"])


def test_logit_test_groups_by_the_given_spread() -> None:
    codes = np.random.default_rng(2).standard_normal((6, 4))
    default = ch.logit_test(codes, rotary=False)
    grouped = ch.logit_test(codes, rotary=False, spread=lambda s: float(s.shape[0]))
    assert grouped == (6.0, default[1])  # the same bound, the given grouping
    assert default == ch.logit_test(codes, rotary=False, spread=ch.diagonal_spread)


def test_logit_test_bound_holds_for_codes_off_by_entry_error() -> None:
    """Codes whose exact logits are relative, perturbed by up to e per entry: the spread
    stays within the bound computed with entry_error = e, and the bound is not vacuous
    (within a factor 100 of the spread)."""
    d, T, e = 16, 24, 1e-6
    rng = np.random.default_rng(11)
    angles = np.arange(T)[:, None] * 100.0 ** (-np.arange(0, d, 2) / d)
    rotary = np.empty((T, d))
    rotary[:, 0::2], rotary[:, 1::2] = np.cos(angles), np.sin(angles)
    for codes, is_rotary in ((rotary, True), (np.full((T, d), 0.3), False)):
        noisy = codes + e * rng.choice([-1.0, 1.0], size=codes.shape)
        spread, bound = ch.logit_test(noisy, rotary=is_rotary, entry_error=e)
        assert spread <= bound < 100 * spread
    default = ch.logit_test(rotary, rotary=True)
    assert default == ch.logit_test(rotary, rotary=True, entry_error=0.0)


def test_turn_pairs_against_explicit_rotations() -> None:
    rng = np.random.default_rng(4)
    v, angles = rng.standard_normal(6), rng.uniform(-9, 9, size=(5, 3))
    codes = np.empty((5, 6))
    codes[:, 0::2], codes[:, 1::2] = np.cos(angles), np.sin(angles)
    turned = ch.turn_pairs(v, codes)
    for m in range(5):
        for i in range(3):
            c, s = np.cos(angles[m, i]), np.sin(angles[m, i])
            a, b = v[2 * i], v[2 * i + 1]
            assert turned[m, 2 * i] == pytest.approx(a * c - b * s, abs=1e-14)
            assert turned[m, 2 * i + 1] == pytest.approx(a * s + b * c, abs=1e-14)


def test_box_distance_hand_computed() -> None:
    train = np.array([[0.0, 0.0], [3.0, 4.0]])  # box [0, 3] x [0, 4], largest norm 5
    assert ch.box_distance(train, [[1.0, 2.0]]) == 0.0  # inside
    assert ch.box_distance(train, [[6.0, 8.0], [1.0, 1.0]]) == pytest.approx(5 / 5)
    assert ch.box_distance(train, [[-1.0, 2.0]]) == pytest.approx(1 / 5)


def test_logit_test_separates_rotary_from_additive_codes() -> None:
    d, T = 16, 24
    angles = np.arange(T)[:, None] * 100.0 ** (-np.arange(0, d, 2) / d)
    rotary = np.empty((T, d))
    rotary[:, 0::2], rotary[:, 1::2] = np.cos(angles), np.sin(angles)
    e = ch.trig_code_error(T, 100.0)
    spread, bound = ch.logit_test(rotary, rotary=True, entry_error=e)
    assert spread <= bound < 1e-10  # relative logits, up to rounding
    spread, bound = ch.logit_test(sinusoidal(T, d, 100.0), rotary=False, entry_error=e)
    assert spread > 1e6 * bound  # the cross terms see absolute positions
    # an additive code that is the same at every position is relative: logits are equal
    spread, bound = ch.logit_test(np.ones((T, d)), rotary=False)
    assert spread <= bound
    # the rotary logits by an independent computation: q^T R_(n - m) k per plane
    rng = np.random.default_rng(0)
    x = rng.standard_normal(d)
    W_q, W_k = rng.normal(0.0, d**-0.5, size=(2, d, d))
    q, k = W_q @ x, W_k @ x
    qc, kc = q[0::2] + 1j * q[1::2], k[0::2] + 1j * k[1::2]
    theta = 100.0 ** (-np.arange(0, d, 2) / d)
    logit_3_1 = (qc * np.conj(kc) * np.exp(1j * 2 * theta)).real.sum()
    Q, K = ch.turn_pairs(q, rotary), ch.turn_pairs(k, rotary)
    assert (Q @ K.T)[3, 1] == pytest.approx(logit_3_1, abs=1e-12)


def test_measure_code_and_score_of_an_integer_and_a_sinusoidal_code() -> None:
    d, token_norm = 8, 1.0
    integer = ch.measure_code(
        lambda T: ch.broadcast_code(ch.integer_positions(T), d),
        ch.broadcast_code(ch.integer_positions(32), d // 2),
        0,
        token_norm,
        train_len=64,
    )
    assert integer["excursion"] == pytest.approx(64 / 63) and integer["gap_ok"]
    assert integer["coordinates_out"] == d and integer["outside"] == pytest.approx(
        64 / 63
    )
    assert integer["scale"] == pytest.approx(63 * np.sqrt(d))
    assert ch.score(integer) == {
        "D1": True,
        "D2": True,
        "D3": False,
        "D4": True,
        "D5": True,
        "logits": False,
    }
    # slow planes: base 10000 with d = 8 has frequencies 1, 0.1, 0.01, 0.001; in 64
    # positions the last two turn less than once, so new positions leave their range
    e = ch.trig_code_error(128)
    waves = ch.measure_code(
        lambda T: sinusoidal(T, d),
        sinusoidal(32, d // 2),
        0,
        token_norm,
        entry_error=e,
        train_len=64,
    )
    table = sinusoidal(128, d)
    outside = ch.coordinate_excursions(table[:64], table[64:]) >= 0.01
    assert outside[:4].sum() == 0 and outside[4:].all()
    assert waves["coordinates_out"] == 4 and waves["drift_bound"] == 2 * e
    assert waves["gap_ok"] and waves["shift"] < 1e-9 and waves["grid_shift"] < 1e-9
    assert ch.score(waves) == {
        "D1": True,
        "D2": True,
        "D3": False,
        "D4": True,
        "D5": True,
        "logits": False,
    }


def test_measure_code_of_a_rotary_code_measures_offsets() -> None:
    """A rotary code: D3 on the offsets |Delta| < 2L against |Delta| < L, by hand."""
    d, base, L = 8, 10000.0, 64

    def rotary(T: int) -> np.ndarray:
        angles = np.arange(T)[:, None] * base ** (-np.arange(0, d, 2) / d)
        codes = np.empty((T, d))
        codes[:, 0::2], codes[:, 1::2] = np.cos(angles), np.sin(angles)
        return codes

    e = ch.trig_code_error(2 * L, base)
    m = ch.measure_code(
        rotary, rotary(32)[:, : d // 2], 0, 1.0, entry_error=e, rotary=True, train_len=L
    )
    assert m["on_offsets"] and m["scale"] == 0.0
    offsets_seen, offsets_new = np.arange(-(L - 1), L), np.arange(L, 2 * L)
    theta = base ** (-np.arange(0, d, 2) / d)
    seen = np.concatenate(
        [np.cos(np.outer(offsets_seen, theta)), np.sin(np.outer(offsets_seen, theta))],
        axis=1,
    )
    offsets_new = np.concatenate([-offsets_new, offsets_new])
    new = np.concatenate(
        [np.cos(np.outer(offsets_new, theta)), np.sin(np.outer(offsets_new, theta))],
        axis=1,
    )
    expected = ch.coordinate_excursions(seen, new)  # columns in another order
    assert m["coordinates_out"] == (expected >= 0.01).sum()
    assert m["excursion"] == pytest.approx(expected.max(), rel=1e-9)
    # plane 1 (theta = 0.1) sweeps +-6.3 rad over the trained offsets: a full circle
    assert expected[[1, 5]].max() < 0.01
    assert m["gap_ok"] and m["logit_spread"] <= m["logit_bound"]
    assert ch.score(m) == {
        "D1": True,
        "D2": True,
        "D3": False,
        "D4": True,
        "D5": True,
        "logits": True,
    }


def test_measure_code_without_codes_past_the_table() -> None:
    table = np.random.default_rng(0).standard_normal((100, 6))

    def lookup(T: int) -> np.ndarray:
        if T > 100:
            raise IndexError("index out of range in self")
        return table[:T]

    m = ch.measure_code(lookup, None, table.size, 2.0, train_len=64)
    assert not m["has_code"] and np.isnan(m["excursion"]) and not m["gap_ok"]
    assert m["grid_shift"] == np.inf and m["parameters"] == 600 and m["drift"] == 0
    assert ch.score(m) == {
        "D1": True,
        "D2": False,
        "D3": False,
        "D4": False,
        "D5": False,
        "logits": False,
    }
    assert m["scale"] == pytest.approx(np.linalg.norm(table[63]) / 2)


def test_distinct_codes_allow_for_rounding() -> None:
    """Codes equal in exact arithmetic but rounded differently are not distinct."""

    def periodic(T: int) -> np.ndarray:  # period 4: position 4 repeats position 0
        angles = np.arange(T)[:, None] * np.array([np.pi / 2])
        return np.concatenate([np.cos(angles), np.sin(angles)], axis=1)

    m = ch.measure_code(
        periodic, None, 0, 1.0, entry_error=ch.trig_code_error(128), train_len=64
    )
    assert not m["distinct"] and not ch.score(m)["D1"]
    assert not np.array_equal(periodic(5)[0], periodic(5)[4])  # rounding differs


def test_score_thresholds_and_the_d3_note() -> None:
    base = dict(
        distinct=True,
        drift=0.0,
        shift=0.0,
        has_code=True,
        excursion=0.0,
        gap_ok=True,
        parameters=0,
        grid_shift=0.0,
        scale=1.0,
    )
    assert all(ch.score(base).values()) and "logits" not in ch.score(base)
    assert not ch.score(base | {"excursion": 0.01})["D3"]
    assert ch.score(base | {"excursion": 0.0099})["D3"]
    assert not ch.score(base | {"shift": 1e-6})["D2"]
    assert not ch.score(base | {"drift": 1e-3})["D1"]
    assert ch.score(base | {"drift": 1e-3, "drift_bound": 1e-3})["D1"]
    assert not ch.score(base | {"parameters": 5})["D5"]
    assert not ch.score(base | {"grid_shift": 1e-6})["D5"]
    assert ch.score(base | {"grid_shift": 9e-7})["D5"]
    logits = {"logit_spread": 2e-9, "logit_bound": 1e-9}
    assert not ch.score(base | logits)["logits"]
    assert ch.score(base | logits | {"logit_bound": 2e-9})["logits"]
    # a bare excursion (Chapter 10's grid codes): its size as a fraction of the range
    assert (
        ch._d3_note(base | {"excursion": 3.0049})
        == "up to 300% beyond the trained range"
    )
    assert (
        ch._d3_note(base | {"excursion": 0.015}) == "up to 2% beyond the trained range"
    )
    assert ch._d3_note(base | {"excursion": 0.0099}) == "in range"
    assert ch._d3_note(base | {"gap_ok": False}) == (
        "in range, neighbours closer than in training"
    )
    # measure_code's counts: coordinates out of range and the distance from the box
    counted = base | {
        "excursion": 3.0,
        "coordinates_out": 175,
        "width": 384,
        "outside": 0.4,
        "on_offsets": True,
        "d3_reason": "slow planes",
    }
    note = (
        "offsets: 175 of 384 coordinates out of range, "
        "new codes up to 40% of ‖p‖ outside"
    )
    assert ch._d3_note(counted) == note + ": slow planes"
    assert ch._d3_note(counted | {"coordinates_out": 0, "d3_reason": ""}) == (
        "offsets: in range"
    )
    row = counted | logits
    html = ch.scorecard_html({"code": row}, {"code": ch.score(row)})
    assert "✗ " + note + ": slow planes" in html and "✗ spread 2e-09" in html
    row = row | {"logit_bound": 3e-9}
    html = ch.scorecard_html({"code": row}, {"code": ch.score(row)})
    assert "✓ spread within rounding" in html


def test_error_note_hides_rounding_digits() -> None:
    assert ch._error_note(5.4e-15) == "error < 1e-6 (rounding)"
    assert ch._error_note(0.538) == "error 0.54" and ch._error_note(np.inf) == "no code"


def test_the_exercise_samples_are_entries_of_the_sinusoidal_encoding() -> None:
    """The literal expected values of Exercise 2.4's check, against numpy in float64."""
    samples = ch._sinusoidal_samples()
    assert sum(len(points) for points in samples.values()) == 54
    for (T, d, base), points in samples.items():
        for (m, j), value in points.items():
            assert 0 <= m < T and 0 <= j < d
            angle = m * base ** (-2 * (j // 2) / d)
            assert value == pytest.approx(
                np.cos(angle) if j % 2 else np.sin(angle), abs=1e-12
            )  # float64: angles < 600 round < 1e-13


# ------------------------------------------------------ exercise checks


def bits(n, b):
    return ((np.arange(n)[:, None] >> np.arange(b)) & 1).astype(float)


def square(n, b, shift=0.5, sign=-1.0, period=1.0):
    m = np.arange(n, dtype=float)[:, None]
    return 0.5 * (
        1 + sign * np.sign(np.sin(np.pi * (m + shift) / (2.0 ** np.arange(b) * period)))
    )


def test_ex_2_2(capsys) -> None:
    passes(ch.check_square_wave_bits, square, 4, capsys)
    float32_bits = lambda n, b: torch.tensor(square(n, b)).float()  # noqa: E731
    passes(ch.check_square_wave_bits, float32_bits, 4, capsys)
    check = ch.check_square_wave_bits
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
    message = fails(
        check, lambda n, b: 1 - square(n, b), "expected: 0.0 at position 0 ([0, 0])"
    )
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
    passes(ch.check_gray_code, gray, 5, capsys)
    passes(ch.check_gray_code, gray_loop, 5, capsys)
    passes(ch.check_gray_code, lambda n, b: gray(n, b).astype(np.float32), 5, capsys)
    check = ch.check_gray_code
    message = fails(
        check,
        lambda n, b: bits(n, b),
        "plain binary",
        "expected: 1 at position 6 ([2, 0])\n  got: 0.0",
    )
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
    passes(ch.check_sinusoidal_codes, codes, 15, capsys)
    passes(ch.check_sinusoidal_codes, codes32, 15, capsys)
    passes(ch.check_sinusoidal_codes, codes_numpy32, 15, capsys)
    passes(
        ch.check_sinusoidal_codes,
        lambda T, d, base=1e4: torch.from_numpy(codes(T, d, base)),
        15,
        capsys,
    )  # float64 tensors
    check = ch.check_sinusoidal_codes
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

    message = fails(
        check,
        doubled_index,
        "indexed by column",
        "T = 512, d = 64",
        "expected: 0.5403 at PE(1)[1]\n  got: 0.7318",
    )
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
        ch.check_sinusoidal_codes(answer)


def test_ex_2_4_mistakes_are_named_from_the_structure_alone() -> None:
    """The diagnosis reads layout and frequencies off the answer: no reference table."""
    d, base = 10, 37.5
    right = codes(9, d, base)
    assert not any(ch._sinusoidal_mistakes(right, d, base).values())
    assert not any(ch._sinusoidal_mistakes(codes32(9, d, base), d, base).values())
    named = ch._sinusoidal_mistakes(codes(9, d, base, np.cos, np.sin), d, base)
    assert [k for k, v in named.items() if v] == [
        "sin and cos are swapped (cos belongs in the odd columns)"
    ]
    assert ch._sinusoidal_mistakes(right[:1], d, base) == {}  # one row: no frequencies
