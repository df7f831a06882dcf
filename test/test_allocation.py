"""Thruster allocation (bounded least squares + least fuel) and pulse-width modulation."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import random_state, robot
from scipy.optimize import linprog, lsq_linear

from freeflyer_control.control import allocation
from freeflyer_control.control.allocation import Allocation, PulseWidthModulator, ThrusterAllocator
from freeflyer_control.physics.actuators import (
    Actuation,
    generalized_forces,
    thruster_matrix,
    world_wrench_to_local,
)

ROBOTS = ("planar_4link", "spatial_6link")


def _allocator(name: str, **kwargs) -> ThrusterAllocator:
    return ThrusterAllocator(robot(name), **kwargs)


def _inside_envelope(al: ThrusterAllocator, rng: np.random.Generator) -> np.ndarray:
    """A wrench made by forces strictly inside [0, max]: achievable by construction."""
    return al.B @ (rng.uniform(0.05, 0.95, al.n) * al.max_forces)


def _beyond_envelope(al: ThrusterAllocator, rng: np.random.Generator) -> np.ndarray:
    """A random direction, 1.2-3 times as far as the thrusters can push along it: out of reach,
    since the achievable set is convex and contains 0."""
    d = rng.normal(size=al.nb)
    # max t s.t. B f = t d, 0 <= f <= u (variables f, t)
    lp = linprog(np.r_[np.zeros(al.n), -1.0], A_eq=np.c_[al.B, -d], b_eq=np.zeros(al.nb),
                 bounds=[(0, ui) for ui in al.max_forces] + [(0, None)], method="highs")
    assert lp.status == 0, lp.message
    t_max = -lp.fun
    return rng.uniform(1.2, 3.0) * t_max * d


def _least_fuel(B: np.ndarray, u: np.ndarray, wrench: np.ndarray) -> float:
    """Reference: min sum(f) s.t. B f = wrench, 0 <= f <= u (HiGHS, tight tolerances)."""
    lp = linprog(np.ones(u.size), A_eq=B, b_eq=wrench, bounds=list(zip(np.zeros_like(u), u)),
                 method="highs", options=dict(primal_feasibility_tolerance=1e-10,
                                              dual_feasibility_tolerance=1e-10))
    assert lp.status == 0, lp.message
    return lp.fun


def _assert_kkt(B: np.ndarray, u: np.ndarray, w: np.ndarray, f: np.ndarray) -> None:
    """KKT conditions of min 1/2 ||B f - w||^2 s.t. 0 <= f <= u (sufficient: the problem is
    convex). g = -gradient: may point out of the box only where a force sits on that bound."""
    g = B.T @ (w - B @ f)
    tol = 1e-10 * np.abs(B).max() * (np.linalg.norm(w) + np.abs(B).sum(axis=0) @ u)
    at_lo, at_hi = f <= 1e-12 * u, f >= (1 - 1e-12) * u  # on a bound, to rounding
    inside = ~at_lo & ~at_hi
    assert (g[at_lo] <= tol).all(), g[at_lo]
    assert (g[at_hi] >= -tol).all(), g[at_hi]
    assert (np.abs(g[inside]) <= tol).all(), g[inside]


# ---------------------------------------------------------------------------------------------
# Allocation


@pytest.mark.parametrize("fuel_optimal", [True, False])
@pytest.mark.parametrize("name", ROBOTS)
def test_achievable_wrenches_are_met_exactly_with_forces_in_bounds(name, fuel_optimal):
    al = _allocator(name, fuel_optimal=fuel_optimal)
    rng = np.random.default_rng(1)
    for _ in range(300):
        w = _inside_envelope(al, rng)
        res = al.allocate(w)
        assert isinstance(res, Allocation)
        assert np.linalg.norm(res.residual) < 1e-9 * np.linalg.norm(w)
        assert not res.saturated
        assert (res.forces >= 0).all() and (res.forces <= al.max_forces).all()
        np.testing.assert_allclose(res.achieved, al.B @ res.forces, rtol=0, atol=1e-15)
        np.testing.assert_allclose(res.residual, res.achieved - w, rtol=0, atol=1e-15)


@pytest.mark.parametrize("name", ROBOTS)
def test_fuel_optimal_forces_use_the_least_total_thrust(name):
    al = _allocator(name)
    plain = _allocator(name, fuel_optimal=False)
    rng = np.random.default_rng(2)
    for _ in range(100):
        w = _inside_envelope(al, rng)
        best = _least_fuel(al.B, al.max_forces, w)
        assert al.allocate(w).forces.sum() <= best + 1e-9
        assert plain.allocate(w).forces.sum() >= best - 1e-9


@pytest.mark.parametrize("name", ROBOTS)
def test_exactly_opposing_thrusters_never_fire_together_when_fuel_optimal(name):
    al = _allocator(name)
    B = al.B
    pairs = [(i, j) for i in range(al.n) for j in range(i + 1, al.n) if np.allclose(B[:, i], -B[:, j])]
    assert pairs, "the bundled layouts have opposing pairs (e.g. planar t1/t3)"
    rng = np.random.default_rng(3)
    for make in (_inside_envelope, _beyond_envelope):  # achievable and saturated
        for _ in range(100):
            f = al.allocate(make(al, rng)).forces
            for i, j in pairs:
                assert min(f[i], f[j]) == 0.0, (i, j, f)


@pytest.mark.parametrize("fuel_optimal", [True, False])
@pytest.mark.parametrize("name", ROBOTS)
def test_unachievable_wrenches_get_the_least_squares_closest_wrench(name, fuel_optimal):
    al = _allocator(name, fuel_optimal=fuel_optimal)
    B, u = al.B, al.max_forces
    rng = np.random.default_rng(4)
    for _ in range(100):
        w = _beyond_envelope(al, rng)
        res = al.allocate(w)
        ref = lsq_linear(B, w, bounds=(0.0, u), method="bvls", tol=1e-15)
        ref_residual = np.linalg.norm(B @ ref.x - w)
        assert ref_residual > 1e-6 * np.linalg.norm(w), "test wrench should be out of reach"
        assert res.saturated
        assert (res.forces >= 0).all() and (res.forces <= u).all()
        _assert_kkt(B, u, w, res.forces)
        # The closest achievable wrench is unique (strictly convex in B f), so compare it.
        np.testing.assert_allclose(res.achieved, B @ ref.x, rtol=0, atol=1e-10 * np.linalg.norm(w))
        assert np.linalg.norm(res.residual) <= ref_residual * (1 + 1e-12)


@pytest.mark.parametrize("name", ROBOTS)
def test_saturated_forces_are_fuel_optimal_for_the_wrench_they_make(name):
    al = _allocator(name)
    rng = np.random.default_rng(5)
    for _ in range(50):
        res = al.allocate(_beyond_envelope(al, rng))
        assert res.saturated
        assert res.forces.sum() <= _least_fuel(al.B, al.max_forces, res.achieved) + 1e-9


@pytest.mark.parametrize("name", ROBOTS)
def test_zero_wrench_gives_zero_forces(name):
    res = _allocator(name).allocate(np.zeros(robot(name).nb))
    assert (res.forces == 0.0).all()
    assert not res.saturated


@pytest.mark.parametrize("name", ROBOTS)
def test_pure_torque_requests_produce_no_net_force(name):
    al = _allocator(name)
    n_lin = 2 if al.nb == 3 else 3
    rng = np.random.default_rng(6)
    for scale in (0.01, 0.1, 1.0, 10.0):  # the largest are beyond the thrusters' couples
        for _ in range(50):
            w = np.zeros(al.nb)
            w[n_lin:] = scale * rng.normal(size=al.nb - n_lin)
            res = al.allocate(w)
            assert np.abs(res.achieved[:n_lin]).max() <= 1e-12 * np.linalg.norm(w)
            if not res.saturated:
                assert np.linalg.norm(res.residual) < 1e-9 * np.linalg.norm(w)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_wrench_raises_value_error(bad):
    w = np.zeros(3)
    w[1] = bad
    with pytest.raises(ValueError, match="NaN or Inf"):
        _allocator("planar_4link").allocate(w)


@pytest.mark.parametrize("name, expected", [("planar_4link", 3), ("spatial_6link", 6)])
def test_wrong_size_wrench_raises_value_error_naming_the_expected_size(name, expected):
    with pytest.raises(ValueError, match=f"must have {expected} entries"):
        _allocator(name).allocate(np.zeros(expected + 1))


def test_same_request_gives_the_same_wrench_and_fuel_whatever_came_before():
    """The allocator warm-starts from the last optimum (test_allocation_warm_start.py): where
    several force sets tie for least fuel the history may pick which one, never the wrench or
    the fuel (1e-10 N: rounding, four orders below any other vertex's difference)."""
    al = _allocator("spatial_6link")
    rng = np.random.default_rng(7)
    w = _inside_envelope(al, rng)
    first = al.allocate(w)
    for _ in range(20):
        al.allocate(_beyond_envelope(al, rng))
    again = al.allocate(w)
    np.testing.assert_allclose(again.achieved, first.achieved, rtol=0, atol=1e-12)
    assert again.forces.sum() == pytest.approx(first.forces.sum(), rel=0, abs=1e-10)


@pytest.mark.parametrize("name", ROBOTS)
def test_world_wrench_allocated_in_base_axes_reaches_the_dynamics_unchanged(name):
    """The allocator's input frame matches physics.actuators: convert with
    world_wrench_to_local, apply the forces as thrusters, get the world wrench back."""
    ff = robot(name)
    al = ThrusterAllocator(ff)
    rng = np.random.default_rng(8)
    for _ in range(10):
        state = random_state(ff, rng)
        w_local = _inside_envelope(al, rng)
        w_world = np.linalg.solve(  # world_wrench_to_local is linear: invert it column-wise
            np.column_stack([world_wrench_to_local(ff, state.q, e) for e in np.eye(ff.nb)]), w_local)
        res = al.allocate(world_wrench_to_local(ff, state.q, w_world))
        via_thrusters = generalized_forces(ff, state.q, Actuation(thruster_forces=res.forces))
        ideal = generalized_forces(ff, state.q, Actuation(base_wrench_world=w_world))
        np.testing.assert_allclose(via_thrusters[: ff.nb], ideal[: ff.nb], rtol=0, atol=1e-12)


def degenerate_problems(seed: int, trials: int = 300):
    """(B, u, requests) beyond the bundled layouts: duplicate columns, rank-deficient B,
    integer B (degenerate vertices), unequal limits, 1 to 6 rows, 1 to 15 thrusters; each
    with a request mostly within reach and one mostly beyond."""
    rng = np.random.default_rng(seed)
    for trial in range(trials):
        m, n = int(rng.integers(1, 7)), int(rng.integers(1, 16))
        B = rng.normal(size=(m, n)) * 10 ** rng.uniform(-2, 2)
        if trial % 4 == 1 and n >= 2:
            B[:, 1] = B[:, 0]
        if trial % 4 == 2 and m >= 2:
            B[1] = 2 * B[0]
        if trial % 4 == 3:
            B = np.round(B)
        u = rng.uniform(0.1, 2.0, n)
        yield B, u, [scale * (B @ rng.uniform(0, u) + 0.2 * rng.normal(size=m) * (np.abs(B) @ u) / n)
                     for scale in (0.5, 3.0)]


@pytest.mark.parametrize("path", ["default", "list-based"])
def test_solver_matches_scipy_on_random_and_degenerate_thruster_matrices(path, monkeypatch):
    """On the path allocate takes (compiled when numba is installed) and on the list-based
    path it takes without numba."""
    if path == "list-based":
        monkeypatch.setattr(allocation, "_compiled_kernel", lambda: None)
    for B, u, requests in degenerate_problems(9):
        al = ThrusterAllocator.from_matrix(B, u)
        for w in requests:
            res = al.allocate(w)
            assert (res.forces >= 0).all() and (res.forces <= u).all()
            ref = lsq_linear(B, w, bounds=(0.0, u), method="bvls", tol=1e-15)
            scale_w = np.linalg.norm(w) + np.abs(B).sum(axis=0) @ u
            assert np.linalg.norm(res.residual) <= np.linalg.norm(B @ ref.x - w) + 1e-12 * scale_w
            _assert_kkt(B, u, w, res.forces)
            if res.forces.any():
                assert res.forces.sum() <= _least_fuel(B, u, res.achieved) + 1e-9 * u.sum()


def test_robot_without_thrusters_allocates_nothing():
    al = ThrusterAllocator.from_matrix(np.zeros((3, 0)), np.zeros(0))
    res = al.allocate([0.1, 0.0, 0.0])
    assert res.forces.shape == (0,) and res.saturated
    np.testing.assert_array_equal(res.residual, [-0.1, 0.0, 0.0])
    assert not al.allocate(np.zeros(3)).saturated


def test_non_positive_max_force_raises_value_error():
    with pytest.raises(ValueError, match="max force must be > 0"):
        ThrusterAllocator.from_matrix(np.eye(3), [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="len\\(max_forces\\) = 2"):
        ThrusterAllocator.from_matrix(np.eye(3), [1.0, 1.0])


def test_allocator_uses_the_robots_thruster_matrix_and_limits():
    ff = robot("planar_4link")
    al = ThrusterAllocator(ff)
    np.testing.assert_array_equal(al.B, thruster_matrix(ff))
    np.testing.assert_array_equal(al.max_forces, ff.thruster_max_forces)


# ---------------------------------------------------------------------------------------------
# Pulse-width modulation


def _sampled_average(pwm: PulseWidthModulator, forces, t0: float, periods: int, samples: int) -> np.ndarray:
    """Average force of the valve commands, sampling ``update`` on a grid of period/samples."""
    dt = pwm.period / samples
    on = np.zeros(pwm.max_forces.size)
    for i in range(periods * samples):
        on += pwm.update(t0 + i * dt, forces)
    return on / (periods * samples) * pwm.max_forces


def test_pwm_average_over_a_period_equals_the_request_when_on_time_reaches_the_minimum():
    f_max = np.array([1.0, 1.0, 0.15, 0.15])
    period, min_on = 0.1, 0.01
    request = np.array([0.1, 0.73, 0.015, 0.15])  # on-times 0.01 (= min), 0.073, 0.01, 0.1 s
    np.testing.assert_allclose(PulseWidthModulator(f_max, period, min_on).duty(request) / period * f_max,
                               request, rtol=0, atol=1e-15)
    samples = 1000
    avg = _sampled_average(PulseWidthModulator(f_max, period, min_on), request, 0.0, 1, samples)
    assert np.all(np.abs(avg - request) <= f_max / samples + 1e-15)


def test_pwm_valve_is_open_for_the_first_on_time_of_each_period():
    pwm = PulseWidthModulator([2.0], period=0.5, min_on_time=0.02)
    for k in range(3):
        start = 1.0 + k * 0.5
        assert pwm.update(start, [0.8])[0]  # on-time 0.2 s
        assert pwm.update(start + 0.199, [0.8])[0]
        assert not pwm.update(start + 0.201, [0.8])[0]
        assert not pwm.update(start + 0.499, [0.8])[0]


@pytest.mark.parametrize("fraction", [0.05, 0.3, 0.5, 0.77, 0.999])
def test_pwm_tiny_request_below_the_minimum_on_time_is_met_on_average(fraction):
    f_max, period, min_on = 1.0, 0.1, 0.02
    request = fraction * min_on / period * f_max  # on-time fraction * min_on < min_on
    for N in (10, 100, 1000):
        pwm = PulseWidthModulator([f_max], period, min_on)
        on_times = np.array([pwm.duty([request])[0] for _ in range(N)])
        assert np.all((on_times == 0.0) | (on_times >= min_on))  # never shorter than the valve can
        average = on_times.sum() / (N * period) * f_max
        assert abs(average - request) <= f_max * min_on / (N * period)
    # The same through update(), sampled finely over 50 periods.
    pwm = PulseWidthModulator([f_max], period, min_on)
    avg = _sampled_average(pwm, [request], 0.0, 50, 200)
    assert abs(avg[0] - request) <= f_max * min_on / (50 * period) + f_max / 200


def test_pwm_requests_outside_zero_to_max_are_clipped():
    pwm = PulseWidthModulator([0.5, 0.5, 0.5], period=0.2, min_on_time=0.01)
    np.testing.assert_allclose(pwm.duty([-3.0, 7.0, 0.5]), [0.0, 0.2, 0.2])
    assert list(pwm.update(0.0, [-3.0, 7.0, 0.0])) == [False, True, False]


def test_pwm_zero_request_drops_the_carried_error():
    """A thruster told to stop fires no late pulse, even with a carry outstanding."""
    pwm = PulseWidthModulator([1.0], period=0.1, min_on_time=0.02)
    assert pwm.duty([0.04])[0] == 0.0  # on-time 0.004 s < 0.01 s: nothing yet, 0.004 s carried
    assert all(pwm.duty([0.0])[0] == 0.0 for _ in range(100))
    assert pwm.duty([0.04])[0] == 0.0  # the carry starts from zero again


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(period=0.0), "period must be a finite time > 0"),
        (dict(period=-0.1), "period must be a finite time > 0"),
        (dict(period=np.nan), "period must be a finite time > 0"),
        (dict(period=0.1, min_on_time=0.2), "must not exceed the PWM period"),
        (dict(period=0.1, min_on_time=-0.01), "min_on_time must be a finite time >= 0"),
        (dict(max_forces=[1.0, 0.0], period=0.1), "max_forces must be one or more finite forces > 0"),
        (dict(max_forces=[], period=0.1), "max_forces must be one or more finite forces > 0"),
    ],
)
def test_pwm_invalid_parameters_raise_value_error(kwargs, message):
    kwargs = {"max_forces": [1.0, 1.0], "min_on_time": 0.0, **kwargs}
    with pytest.raises(ValueError, match=message):
        PulseWidthModulator(**kwargs)


def test_pwm_wrong_size_or_non_finite_requests_and_backwards_time_raise():
    pwm = PulseWidthModulator([1.0, 1.0], period=0.1)
    with pytest.raises(ValueError, match="must have 2 entries"):
        pwm.duty([0.1])
    with pytest.raises(ValueError, match="NaN or Inf"):
        pwm.duty([0.1, np.nan])
    pwm.update(1.0, [0.1, 0.1])
    with pytest.raises(ValueError, match="time went backwards"):
        pwm.update(0.5, [0.1, 0.1])
    pwm.reset()
    pwm.update(0.5, [0.1, 0.1])


def test_pwm_of_allocated_forces_makes_the_requested_wrench_on_average():
    ff = robot("spatial_6link")
    al = ThrusterAllocator(ff)
    period, min_on, N = 0.1, 0.01, 400
    w = np.array([0.3, -0.2, 0.05, 0.02, -0.01, 0.004])  # includes forces below the min bit
    forces = al.allocate(w).forces
    pwm = PulseWidthModulator(ff.thruster_max_forces, period, min_on)
    on_time = sum(pwm.duty(forces) for _ in range(N))
    average_wrench = al.B @ (on_time / (N * period) * ff.thruster_max_forces)
    bound = np.abs(al.B) @ ff.thruster_max_forces * min_on / (N * period)
    assert np.all(np.abs(average_wrench - w) <= bound + 1e-12)
