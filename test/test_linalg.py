"""The small linear-algebra helpers of physics.linalg that the control tick leans on."""

import warnings

import numpy as np
import pytest

from freeflyer_control.physics.linalg import all_finite


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", [0, 3, 6])
def test_all_finite_finds_a_single_nan_or_inf_anywhere(bad, where):
    x = np.linspace(-1.0, 1.0, 7)
    x[where] = bad
    assert not all_finite(x)
    assert not all_finite(np.zeros(3), x)  # in any of the vectors given
    assert all_finite(np.zeros(3), np.ones(7))


def test_all_finite_passes_finite_values_whose_sum_overflows_and_warns_of_nothing():
    """1e308 + 1e308 overflows the quick sum to inf: the exact test must then decide (finite);
    and no NumPy floating-point warning on the way (the check runs every control tick)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert all_finite(np.array([1e308, 1e308, -1e300, 0.0]))
        assert not all_finite(np.array([1e200, np.nan]))
        assert not all_finite(np.array([np.inf, -np.inf]))


def test_all_finite_of_empty_vectors_is_true():
    assert all_finite(np.zeros(0), np.zeros(0))
    assert all_finite()
