"""What every fuzz test shares: how many inputs, the fixed seed, and adversarial numbers.

Each entry point (message readers, controller tick, plant step, bridge callbacks, CLI parsing)
gets its own fuzz module, ``test/test_fuzz_<entry point>.py``. Every one of them draws
:func:`fuzz_count` inputs from a generator seeded with :data:`FUZZ_SEED` and checks the same
three claims: no exception escapes, no output is non-finite, and every output is zero whenever
the status is not ``ok``.

``FREEFLYER_FUZZ_N`` sets the count per entry point (default 10 000, which keeps all fuzz
modules together under a minute on a 2-core machine); ``FREEFLYER_FUZZ_N=200000 pytest -q -k
fuzz`` is the long run.
"""

from __future__ import annotations

import os

import numpy as np

FUZZ_SEED = 20261124
DEFAULT_FUZZ_N = 10_000

# Finite values that pass a plain isfinite() check but are physically absurd, the values
# that hide inside a well-formed message, and the non-finite ones a reader must refuse.
ABSURD_FINITE = (1e154, -1e154, 1e308, -1e308, 1e30, -1e30, 1e10, -1e10,
                 np.finfo(float).tiny, -np.finfo(float).tiny, 5e-324)
NON_FINITE = (float("nan"), float("inf"), float("-inf"))


def fuzz_count() -> int:
    """Inputs per entry point: ``FREEFLYER_FUZZ_N`` or 10 000."""
    raw = os.environ.get("FREEFLYER_FUZZ_N", "")
    if not raw:
        return DEFAULT_FUZZ_N
    try:
        count = int(raw)
    except ValueError:
        raise ValueError(f"FREEFLYER_FUZZ_N must be a whole number, got {raw!r}") from None
    if count < 1:
        raise ValueError(f"FREEFLYER_FUZZ_N must be >= 1, got {count}")
    return count


def fuzz_rng(salt: int = 0) -> np.random.Generator:
    """The fixed-seed generator of one fuzz module (``salt`` keeps modules independent)."""
    return np.random.default_rng([FUZZ_SEED, salt])


def adversarial_float(rng: np.random.Generator, typical: float = 1.0) -> float:
    """One number: usually plausible (``typical`` sets its scale), often absurd or non-finite."""
    pick = rng.random()
    if pick < 0.55:
        return float(rng.normal(0.0, typical))
    if pick < 0.8:
        return float(rng.choice(ABSURD_FINITE))
    if pick < 0.9:
        return float(rng.choice(NON_FINITE))
    return float(10.0 ** rng.uniform(-320, 308) * rng.choice((-1.0, 1.0)))


def adversarial_vector(rng: np.random.Generator, size: int, typical: float = 1.0) -> np.ndarray:
    """A vector that is plausible as a whole, or has one or more adversarial entries."""
    values = rng.normal(0.0, typical, size)
    if size and rng.random() < 0.7:
        for index in rng.choice(size, size=rng.integers(1, size + 1), replace=False):
            values[index] = adversarial_float(rng, typical)
    return values
