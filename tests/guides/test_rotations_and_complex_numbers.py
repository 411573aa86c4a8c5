"""The primer "Rotations and complex numbers": its function, taken from the notebook's
export cells, against SciPy's rotations and the evening guide's coordinate rule (two
independent implementations of one turn). float64 throughout (book/checking.md, rule 3).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from bookkit.testing import load_chapter

primer = load_chapter("rotations_and_complex_numbers")
evening = load_chapter("rope_in_one_evening")

finite = st.floats(-1e3, 1e3, allow_nan=False)
angles = st.floats(-200.0, 200.0, allow_nan=False)


@given(finite, finite, angles)
def test_multiplying_is_scipys_rotation(x: float, y: float, phi: float) -> None:
    expected = Rotation.from_euler("z", phi).apply([x, y, 0.0])[:2]
    got = primer.turn_by_multiplying(np.array([x, y]), phi)
    assert np.allclose(got, expected, rtol=0, atol=1e-12 * max(1.0, abs(x), abs(y)))


@given(finite, finite, angles)
def test_multiplying_agrees_with_the_coordinate_rule(x: float, y: float, phi: float
                                                     ) -> None:
    v = np.array([x, y])
    assert np.allclose(primer.turn_by_multiplying(v, phi), evening.turn_arrow(v, phi),
                       rtol=0, atol=1e-12 * max(1.0, abs(x), abs(y)))


def test_the_imaginary_part_is_the_second_coordinate() -> None:
    # asymmetric: (1, 0) turned a quarter turn is (0, 1), i.e. 1 * i = i
    assert np.allclose(primer.turn_by_multiplying(np.array([1.0, 0.0]), np.pi / 2),
                       [0.0, 1.0], atol=1e-15)
    assert np.allclose(primer.turn_by_multiplying(np.array([3.0, 4.0]), 0.0),
                       [3.0, 4.0], atol=0)


def test_bad_input_says_what_to_fix() -> None:
    with pytest.raises(ValueError, match="shape"):
        primer.turn_by_multiplying(np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="finite"):
        primer.turn_by_multiplying(np.ones(2), float("inf"))
