"""The allocator's one definition (control/allocation_kernel.py), compiled and interpreted,
against the list-based path that runs without numba: same forces on the same requests."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import BUNDLED_ROBOTS, robot
from test_allocation import degenerate_problems

from freeflyer_control.control import allocation
from freeflyer_control.control import allocation_kernel as kernel
from freeflyer_control.control.allocation import ThrusterAllocator
from freeflyer_control.sim import fast

needs_numba = pytest.mark.skipif(not fast.available(), reason="numba not installed (pip extra 'fast')")

N_WRENCHES = 10_000


def _requests(al: ThrusterAllocator, rng: np.random.Generator, count: int, kind: str) -> np.ndarray:
    """Achievable: made by forces inside [0, u]. Saturated: longer than the thrusters' total
    reach sum_j |B_j| u_j along a random direction, so out of reach whatever the forces."""
    if kind == "achievable":
        return rng.uniform(0.0, 1.0, (count, al.n)) * al.max_forces @ al.B.T
    d = rng.normal(size=(count, al.nb))
    reach = np.linalg.norm(al.B, axis=0) @ al.max_forces
    return d / np.linalg.norm(d, axis=1, keepdims=True) * reach * rng.uniform(1.05, 3.0, (count, 1))


def _kernel_forces(al: ThrusterAllocator, w: np.ndarray,
                   function=kernel.allocate_forces) -> tuple[np.ndarray, int]:
    """(forces, status) of the kernel ``function`` (plain by default) for request w."""
    B, A2, u, params = kernel.allocator_arrays(al.B, al.max_forces, al.fuel_optimal, al.achievable_rtol)
    f = np.zeros(al.n)
    status = function(B, A2, u, params, np.ascontiguousarray(w, dtype=float), f,
                      *kernel.allocation_workspace(al.nb, al.n))
    return f, status


@needs_numba
@pytest.mark.parametrize("kind", ["achievable", "saturated"])
@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_compiled_allocate_equals_the_list_based_path_on_ten_thousand_wrenches(name, kind):
    """The active-set path is the same, so the forces agree to rounding of the solves (the two
    factor each subset differently: SVD against Householder QR). 1e-12 N is ~10^4 eps of the
    forces (~1 N); the flags agree exactly."""
    al = ThrusterAllocator(robot(name))
    assert al._compiled is not None
    rng = np.random.default_rng(13)
    worst = 0.0
    for w in _requests(al, rng, N_WRENCHES, kind):
        fast_res, ref = al.allocate(w), al._allocate_lists(w)
        worst = max(worst, np.abs(fast_res.forces - ref.forces).max())
        assert fast_res.saturated == ref.saturated == (kind == "saturated")
    assert worst <= 1e-12


@needs_numba
def test_compiled_and_list_paths_make_the_same_wrench_with_the_same_fuel_on_degenerate_matrices():
    """Duplicate columns, rank-deficient B, integer B (degenerate vertices), 1-6 rows, 1-15
    thrusters. The achieved wrench and the least fuel are unique, so they agree; the forces may
    not where several vertices tie for least fuel and a ratio test ties exactly (integer B):
    then rounding picks the vertex. Tolerances: rounding amplified by the conditioning of the
    subsets these random matrices produce (up to ~1e6)."""
    for B, u, requests in degenerate_problems(21):
        al = ThrusterAllocator.from_matrix(B, u)
        scale_w = np.abs(B).sum(axis=0) @ u
        for w in requests:
            fast_res, ref = al.allocate(w), al._allocate_lists(w)
            np.testing.assert_allclose(fast_res.achieved, ref.achieved, rtol=0, atol=1e-8 * scale_w)
            assert fast_res.forces.sum() == pytest.approx(ref.forces.sum(), rel=0, abs=1e-8 * u.sum())
            assert fast_res.saturated == ref.saturated


@needs_numba
@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_interpreted_kernel_is_the_function_the_compiled_path_runs(name):
    """The plain functions, run by the interpreter, give bit for bit what numba's compilation of
    them gives (numba keeps IEEE order: no fastmath), so the compiled path has no second copy."""
    from freeflyer_control.control.kernels.allocation import allocate_forces

    al = ThrusterAllocator(robot(name))
    rng = np.random.default_rng(17)
    for kind in ("achievable", "saturated"):
        for w in _requests(al, rng, 100, kind):
            f_py, s_py = _kernel_forces(al, w)
            f_jit, s_jit = _kernel_forces(al, w, allocate_forces)
            np.testing.assert_array_equal(f_py, f_jit)
            assert s_py == s_jit


def test_without_numba_the_allocator_runs_the_list_based_path(monkeypatch):
    monkeypatch.setattr(allocation, "_compiled_kernel", lambda: None)
    al = ThrusterAllocator(robot("spatial_6link"))
    assert al._compiled is None
    w = _requests(al, np.random.default_rng(3), 1, "achievable")[0]
    res = al.allocate(w)
    assert np.linalg.norm(res.residual) < 1e-9 * np.linalg.norm(w)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_kernel_given_a_non_finite_wrench_returns_invalid_and_zero_forces(bad):
    al = ThrusterAllocator(robot("planar_4link"))
    f, status = _kernel_forces(al, np.array([0.1, bad, 0.0]))
    assert status == kernel.INVALID
    assert (f == 0.0).all()


def test_kernel_scales_an_absurdly_large_wrench_instead_of_overflowing():
    """1e308 N: squares would overflow; the direction is what matters once far out of reach,
    so the forces equal those for the same direction at 1e3 N (beyond reach too)."""
    al = ThrusterAllocator(robot("spatial_6link"))
    d = np.array([0.3, -0.2, 0.5, 0.1, 0.0, -0.4])
    f_huge, status = _kernel_forces(al, 1e308 * d)
    f_far, _ = _kernel_forces(al, 1e3 * d)
    assert status & kernel.SATURATED
    np.testing.assert_allclose(f_huge, f_far, rtol=0, atol=1e-9)


_NOTICE = ("compiling the thruster allocator (numba, first use on this machine, 10-30 s; "
           "cached for later runs)")


@needs_numba
@pytest.mark.slow
def test_first_use_says_it_compiles_once_and_later_processes_load_the_cache(tmp_path):
    """A cold numba cache compiles the kernel (10-30 s here) and says so once, while it
    happens; the next process loads the cache and says nothing."""
    import os
    import subprocess
    import sys

    script = ("import numpy as np\n"
              "from freeflyer_control.control.allocation import ThrusterAllocator\n"
              "print(ThrusterAllocator.from_matrix(np.eye(3), np.ones(3)).allocate([0.5, 0, 0]).forces)\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                           timeout=300) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip() == "[0.5 0.  0. ]"
    assert runs[0].stderr.count(_NOTICE) == 1, runs[0].stderr
    assert _NOTICE not in runs[1].stderr, runs[1].stderr
