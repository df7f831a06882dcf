"""The thruster allocator's warm start: the last optimal stage-2 basis and stage-1 partition,
tried first on the next request (control/allocation_kernel.py: warm_start, warm_basis_holds,
warm_least_squares, partition_holds), on both paths: compiled (numba) and list-based."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import robot

from freeflyer_control.control import allocation
from freeflyer_control.control import allocation_kernel as kernel
from freeflyer_control.control.allocation import ThrusterAllocator
from freeflyer_control.sim import fast

PATHS = [pytest.param("compiled", marks=pytest.mark.skipif(not fast.available(), reason="numba not installed")),
         "lists"]
ROBOTS = ("planar_4link", "spatial_6link")
STEPS = 400


def _allocator(name: str, path: str, monkeypatch, **kwargs) -> ThrusterAllocator:
    if path == "lists":
        monkeypatch.setattr(allocation, "_compiled_kernel", lambda: None)
    al = ThrusterAllocator(robot(name), **kwargs)
    assert (al._compiled is not None) == (path == "compiled")
    return al


def _reach(al: ThrusterAllocator) -> float:
    """sum_j |B_j| u_j: no achievable wrench is longer (N and N m alike)."""
    return float(np.linalg.norm(al.B, axis=0) @ al.max_forces)


def achievable_walk(al: ThrusterAllocator, rng: np.random.Generator, steps: int = STEPS) -> np.ndarray:
    """Requests like a controller's: B f with f a random walk inside the box (steps of 1 % of
    each max force), so each is achievable and close to the one before."""
    u = al.max_forces
    f = rng.uniform(0.2, 0.8, al.n) * u
    out = []
    for _ in range(steps):
        f = np.clip(f + rng.normal(0.0, 0.01, al.n) * u, 0.0, u)
        out.append(al.B @ f)
    return np.array(out)


def saturated_walk(al: ThrusterAllocator, rng: np.random.Generator, steps: int = STEPS) -> np.ndarray:
    """Requests 1.5 times the reach along a direction that turns ~0.01 rad per request: out of
    reach, whatever the forces, and close to the one before."""
    d = rng.normal(size=al.nb)
    out = []
    for _ in range(steps):
        d += rng.normal(0.0, 0.01, al.nb) * np.linalg.norm(d)
        out.append(d / np.linalg.norm(d) * 1.5 * _reach(al))
    return np.array(out)


# Rounding: forces of ~1 N from solves with bases of condition number <= ~1e2 on these layouts
# agree to ~1e-14 N; 1e-10 of the total max force leaves four orders of margin and still fails
# for any non-optimal vertex (those differ by at least a fraction of a newton).
def _fuel_tol(al: ThrusterAllocator) -> float:
    return 1e-10 * float(al.max_forces.sum())


@pytest.mark.parametrize("walk, saturated", [(achievable_walk, False), (saturated_walk, True)])
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", ROBOTS)
def test_warm_start_returns_the_cold_optimum_fuel(name, path, walk, saturated, monkeypatch):
    """Along a closed-loop-like sequence, against an allocator that solves each request cold:
    the same saturation flag, the same wrench (w itself when achievable; the unique closest
    achievable one otherwise; 1e-9 of |w| + reach is rounding with margin), the same fuel,
    forces within their limits."""
    warm = _allocator(name, path, monkeypatch)
    cold = _allocator(name, path, monkeypatch, warm_start=False)
    for w in walk(warm, np.random.default_rng(1)):
        a, b = warm.allocate(w), cold.allocate(w)
        assert a.saturated == b.saturated == saturated
        np.testing.assert_allclose(a.achieved, b.achieved if saturated else w, rtol=0,
                                   atol=1e-9 * (np.linalg.norm(w) + _reach(warm)))
        assert (a.forces >= 0).all() and (a.forces <= warm.max_forces).all()
        assert a.forces.sum() == pytest.approx(b.forces.sum(), rel=0, abs=_fuel_tol(warm))


def _count_calls(monkeypatch, name: str) -> list[int]:
    calls = [0]
    real = getattr(kernel, name)

    def counted(*args):
        calls[0] += 1
        return real(*args)

    monkeypatch.setattr(kernel, name, counted)
    return calls


@pytest.mark.parametrize("walk", [achievable_walk, saturated_walk])
def test_slowly_varying_requests_skip_bvls_and_the_simplex_on_most_ticks(walk, monkeypatch):
    """The plain kernel (interpreted, so that its stage functions can be counted) on 100
    closed-loop-like requests: BVLS and the simplex run on the first and on the ticks where
    the remembered partition or basis stops holding (2 and 2 achievable, 13 and 3 saturated
    with these seeds), not on every tick; 20 of 100 bounds "most ticks are warm"."""
    al = ThrusterAllocator(robot("spatial_6link"))
    B, A2, u, params = kernel.allocator_arrays(al.B, al.max_forces)
    work, iwork = kernel.allocation_workspace(al.nb, al.n)
    bvls = _count_calls(monkeypatch, "bounded_least_squares")
    simplex = _count_calls(monkeypatch, "least_fuel")
    f = np.zeros(al.n)
    requests = walk(al, np.random.default_rng(3), 100)
    for w in requests:
        kernel.allocate_forces(B, A2, u, params, w, f, work, iwork)
    assert 1 <= bvls[0] <= 20 and 1 <= simplex[0] <= 20, (bvls, simplex)


def _kernel_setup(name: str = "spatial_6link"):
    al = ThrusterAllocator(robot(name))
    B, A2, u, params = kernel.allocator_arrays(al.B, al.max_forces)
    return al, (B, A2, u, params), kernel.allocation_workspace(al.nb, al.n)


def _warm_holds(args, work, iwork, w) -> bool:
    B, _, u, _ = args
    vecs = [np.zeros(max(B.shape)) for _ in range(3)]
    return kernel.warm_start(B, u, w, np.zeros(B.shape[1]), kernel._remembered(work, iwork, *B.shape), *vecs)


def test_warm_start_falls_back_when_the_basis_turns_infeasible():
    al, args, (work, iwork) = _kernel_setup()
    B, u = args[0], args[2]
    rng = np.random.default_rng(4)
    f = np.zeros(al.n)
    w1 = B @ (rng.uniform(0.2, 0.8, al.n) * u)
    assert kernel.allocate_forces(*args, w1, f, work, iwork) == 0
    assert _warm_holds(args, work, iwork, w1 * 1.001)  # a request close by: the basis holds
    far = [w for w in (B @ (rng.uniform(0.0, 1.0, al.n) * u) for _ in range(50))
           if not _warm_holds(args, work, iwork, w)]
    assert far, "no request among 50 random ones left the remembered basis"
    w2 = far[0]
    assert kernel.allocate_forces(*args, w2, f, work, iwork) == 0  # solved cold instead
    fresh = np.zeros(al.n)
    assert kernel.allocate_forces(*args, w2, fresh, *kernel.allocation_workspace(al.nb, al.n)) == 0
    np.testing.assert_allclose(B @ f, w2, rtol=0, atol=1e-9 * np.linalg.norm(w2))
    assert f.sum() == pytest.approx(fresh.sum(), rel=0, abs=_fuel_tol(al))
    assert _warm_holds(args, work, iwork, w2)  # and the new optimum's basis is remembered


def test_basic_forces_a_rounding_error_outside_their_bounds_hold_and_go_onto_the_bound():
    u, cols = [1.0, 1.0, 2.0], [0, 1, 2]
    x = [-1e-18, 0.5, 2.0 + 1e-16]
    assert kernel.warm_basis_holds(x, u, cols, 3, 1e-12)
    assert x == [0.0, 0.5, 2.0]
    for outside in ([-1e-6, 0.5, 1.0], [0.1, 0.5, 2.0 + 1e-6]):
        assert not kernel.warm_basis_holds(outside, u, cols, 3, 1e-12)


def test_partition_holds_only_where_the_kkt_conditions_hold():
    u, tol = [1.0, 1.0, 1.0], 1e-12
    state = [kernel.AT_ZERO, kernel.BASIC, kernel.AT_MAX]
    assert kernel.partition_holds([0.0, 0.5, 1.0], [-1.0, 0.0, 1.0], u, state, 3, tol)
    assert not kernel.partition_holds([0.0, 0.5, 1.0], [1.0, 0.0, 1.0], u, state, 3, tol)  # 0 should rise
    assert not kernel.partition_holds([0.0, 0.5, 1.0], [-1.0, 0.0, -1.0], u, state, 3, tol)  # max should fall
    assert not kernel.partition_holds([0.0, 1.5, 1.0], [-1.0, 0.0, 1.0], u, state, 3, tol)  # free beyond u


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", ROBOTS)
def test_same_request_sequence_gives_the_same_forces_and_reset_restarts_cold(name, path, monkeypatch):
    first = _allocator(name, path, monkeypatch)
    second = _allocator(name, path, monkeypatch)
    rng = np.random.default_rng(5)
    requests = np.r_[achievable_walk(first, rng, 100), saturated_walk(first, rng, 50), achievable_walk(first, rng, 50)]
    for w in requests:
        np.testing.assert_array_equal(first.allocate(w).forces, second.allocate(w).forces)
    first.reset()
    fresh = _allocator(name, path, monkeypatch)
    for w in requests[::-1][:20]:
        np.testing.assert_array_equal(first.allocate(w).forces, fresh.allocate(w).forces)


@pytest.mark.parametrize("path", PATHS)
def test_non_finite_request_forgets_the_basis_like_reset(path, monkeypatch):
    al = _allocator("spatial_6link", path, monkeypatch)
    rng = np.random.default_rng(6)
    for w in achievable_walk(al, rng, 30):
        al.allocate(w)
    with pytest.raises(ValueError, match="NaN or Inf"):
        al.allocate(np.full(al.nb, np.nan))
    w = achievable_walk(al, rng, 1)[0]
    np.testing.assert_array_equal(al.allocate(w).forces, _allocator("spatial_6link", path, monkeypatch).allocate(w).forces)


@pytest.mark.parametrize("path", PATHS)
def test_fuel_optimal_off_is_never_warm(path, monkeypatch):
    """Without stage 2 the stage-1 forces are returned, and those need not be unique: the
    forces are those of the cold solve, bit for bit, whatever came before."""
    warm = _allocator("planar_4link", path, monkeypatch, fuel_optimal=False)
    cold = _allocator("planar_4link", path, monkeypatch, fuel_optimal=False, warm_start=False)
    for w in achievable_walk(warm, np.random.default_rng(7), 100):
        np.testing.assert_array_equal(warm.allocate(w).forces, cold.allocate(w).forces)


@pytest.mark.parametrize("path", PATHS)
def test_tied_pure_torque_gets_the_least_fuel_warm_or_cold(path, monkeypatch):
    """planar_4link makes a pure torque with either couple (equal fuel): after a request that
    leaves a basis on one couple, the warm answer may be the other vertex than the cold one,
    never more fuel, and always the requested wrench."""
    warm = _allocator("planar_4link", path, monkeypatch)
    cold = _allocator("planar_4link", path, monkeypatch, warm_start=False)
    for w in ([0.2, 0.1, 0.05], [0.0, 0.0, 0.05], [0.0, 0.0, -0.03], [-0.1, 0.2, 0.0], [0.0, 0.0, 0.04]):
        a, b = warm.allocate(w), cold.allocate(w)
        np.testing.assert_allclose(a.achieved, w, rtol=0, atol=1e-12)
        assert a.forces.sum() == pytest.approx(b.forces.sum(), rel=0, abs=_fuel_tol(warm))


@pytest.mark.skipif(not fast.available(), reason="numba not installed")
def test_compiled_and_list_paths_agree_along_a_warm_sequence():
    """Same checks in the same order on both paths: the same forces to rounding (1e-12 N, as
    for cold solves in test_allocation_kernel) along a sequence where both stay warm."""
    compiled = ThrusterAllocator(robot("spatial_6link"))
    rng = np.random.default_rng(8)
    requests = np.r_[achievable_walk(compiled, rng, 200), saturated_walk(compiled, rng, 100)]
    for w in requests:
        a, b = compiled.allocate(w), compiled._allocate_lists(w)
        np.testing.assert_allclose(a.forces, b.forces, rtol=0, atol=1e-12)
        assert a.saturated == b.saturated
