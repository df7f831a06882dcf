"""Fuzz of ``ThrusterAllocator.allocate`` (what ActuatorMapper, capture control, the HIL bridge
and the safety envelope call every tick) and of the compiled kernel it runs.

For every distinct bundled thruster layout and both allocation paths (compiled when numba is
installed, and the list-based path without it), adversarial base wrenches: plausible ones,
ones far out of reach, 1e154, 1e308, denormals, NaN and +-Inf entries. The claims, for every
input:

* no exception escapes, except the allocator's contract: ``ValueError`` naming "NaN or Inf"
  for a non-finite wrench (the status "not ok": nothing is returned);
* forces, achieved wrench and residual are finite, and 0 <= f <= f_max;
* the kernel called directly never raises, and gives all-zero forces whenever its status says
  INVALID.

A third test feeds random request sequences (mostly small steps, as a controller's, with
jumps, out-of-reach stretches and adversarial values mixed in) to a warm-starting allocator
and to one with ``warm_start=False`` side by side: the same refusals, the same saturation flag,
the same achieved wrench and the same total thrust to rounding, forces within limits.

``FREEFLYER_FUZZ_N`` sets the number of inputs per layout and path (default 10^4).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import robot
from fuzz_support import adversarial_vector, fuzz_count, fuzz_rng

from freeflyer_control.control import allocation
from freeflyer_control.control import allocation_kernel as kernel
from freeflyer_control.control.allocation import ThrusterAllocator
from freeflyer_control.sim import fast

LAYOUTS = ("planar_4link", "dual_arm_planar", "spatial_6link")  # the others share spatial_6link's


def _allocator(name: str, compiled: bool, monkeypatch) -> ThrusterAllocator:
    if not compiled:
        monkeypatch.setattr(allocation, "_compiled_kernel", lambda: None)
    al = ThrusterAllocator(robot(name))
    assert (al._compiled is not None) == compiled
    return al


@pytest.mark.parametrize("compiled", [pytest.param(True, marks=pytest.mark.skipif(
    not fast.available(), reason="numba not installed")), False])
@pytest.mark.parametrize("name", LAYOUTS)
def test_fuzz_allocate_returns_finite_forces_within_limits_or_refuses_non_finite(name, compiled, monkeypatch):
    al = _allocator(name, compiled, monkeypatch)
    rng = fuzz_rng(13 + LAYOUTS.index(name))
    typical = float(np.linalg.norm(al.B, axis=0) @ al.max_forces) / 2  # half the total reach
    refused = 0
    for _ in range(fuzz_count()):
        w = adversarial_vector(rng, al.nb, typical)
        try:
            res = al.allocate(w)
        except ValueError as err:
            assert "NaN or Inf" in str(err) and not np.isfinite(w).all(), (w, err)
            refused += 1
            continue
        assert np.isfinite(res.forces).all() and np.isfinite(res.achieved).all(), w
        assert np.isfinite(res.residual).all(), w
        assert (res.forces >= 0.0).all() and (res.forces <= al.max_forces).all(), (w, res.forces)
        if np.abs(w).max() > 1e3 * typical:  # far beyond reach, even at 1e308
            assert res.saturated, w
    assert 0 < refused < fuzz_count()  # both kinds of input were drawn


@pytest.mark.skipif(not fast.available(), reason="numba not installed")
@pytest.mark.parametrize("name", LAYOUTS)
def test_fuzz_compiled_kernel_never_raises_and_zeroes_forces_when_invalid(name):
    from freeflyer_control.control.kernels.allocation import allocate_forces

    ff = robot(name)
    B, A2, u, params = kernel.allocator_arrays(allocation.thruster_matrix(ff), ff.thruster_max_forces)
    work, iwork = kernel.allocation_workspace(*B.shape)
    rng = fuzz_rng(23 + LAYOUTS.index(name))
    typical = float(np.linalg.norm(B, axis=0) @ u) / 2
    f = np.empty(u.size)
    for _ in range(fuzz_count()):
        w = adversarial_vector(rng, B.shape[0], typical)
        status = allocate_forces(B, A2, u, params, w, f, work, iwork)
        assert status & kernel.INVALID or status & (kernel.STAGE1_GUARD | kernel.STAGE2_KEPT) == 0, w
        if status & kernel.INVALID:
            assert not np.isfinite(w).all() and (f == 0.0).all()
        else:
            assert np.isfinite(f).all() and (f >= 0.0).all() and (f <= u).all(), (w, f)


def _sequence(rng: np.random.Generator, al: ThrusterAllocator, count: int):
    """Requests: a random walk of the wrench (steps of 1 % of the reach), sometimes jumping to
    a new point, stretching out of reach, or to an adversarial vector for one request."""
    reach = float(np.linalg.norm(al.B, axis=0) @ al.max_forces)
    w = al.B @ (rng.uniform(0.0, 1.0, al.n) * al.max_forces)
    for _ in range(count):
        pick = rng.random()
        if pick < 0.05:
            yield adversarial_vector(rng, al.nb, reach / 2)
            continue
        if pick < 0.08:
            w = al.B @ (rng.uniform(0.0, 1.0, al.n) * al.max_forces)
        elif pick < 0.1:
            w = w * rng.uniform(1.5, 4.0)  # often beyond reach
        w = w + rng.normal(0.0, 0.01 * reach, al.nb)
        yield w.copy()


@pytest.mark.parametrize("compiled", [pytest.param(True, marks=pytest.mark.skipif(
    not fast.available(), reason="numba not installed")), False])
@pytest.mark.parametrize("name", LAYOUTS)
def test_fuzz_warm_and_cold_sequences_make_the_same_wrench_with_the_same_fuel(name, compiled, monkeypatch):
    warm = _allocator(name, compiled, monkeypatch)
    cold = ThrusterAllocator(robot(name), warm_start=False)
    reach = float(np.linalg.norm(warm.B, axis=0) @ warm.max_forces)
    compared = 0
    for w in _sequence(fuzz_rng(31 + LAYOUTS.index(name)), warm, fuzz_count()):
        try:
            a = warm.allocate(w)
        except ValueError as err:
            assert "NaN or Inf" in str(err) and not np.isfinite(w).all(), (w, err)
            with pytest.raises(ValueError, match="NaN or Inf"):
                cold.allocate(w)
            continue
        b = cold.allocate(w)
        assert np.isfinite(a.forces).all() and np.isfinite(a.achieved).all(), w
        assert (a.forces >= 0.0).all() and (a.forces <= warm.max_forces).all(), (w, a.forces)
        size = float(np.abs(w).max())
        # Below, subnormal requests lose relative precision in either path; above, eps |w|
        # exceeds the reach, so rounding alone decides which achievable wrench is closest.
        if not 1e-200 < size < 1e3 * reach:
            continue
        # Rounding: ~eps times the wrench and reach, amplified by bases of condition <= ~1e3.
        scale = 1e-9 * (np.linalg.norm(w) + reach)
        assert a.saturated == b.saturated, w
        np.testing.assert_allclose(a.achieved, b.achieved, rtol=0, atol=scale)
        assert abs(a.forces.sum() - b.forces.sum()) <= 1e-9 * float(warm.max_forces.sum()), w
        compared += 1
    assert compared > fuzz_count() // 2
