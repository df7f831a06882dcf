"""physics.actuators' saturation on its compiled path (physics.kernels.actuators.saturated_commands,
what every control tick and plant step runs with numba once warmed) equals its NumPy definition,
bit for bit: the same clips (min/max) and the same wrench bound (one definition, compiled).

Skipped where numba is not installed (it is the optional 'fast' extra).
"""

import numpy as np
import pytest

pytest.importorskip("numba", reason="the compiled path needs numba (pip install .[fast])")

from conftest import BUNDLED_ROBOTS, random_state, robot
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.actuators import (
    Actuation,
    compiled_saturation,
    applied_actuation,
    base_wrench_limits,
    generalized_forces,
    saturate,
)


@pytest.fixture(autouse=True)
def warmed():
    fastpath.warm("saturation")
    assert fastpath.warmed("saturation")


def commands(ff, rng, i):
    """Arm and wheel torques up to twice their limits, thrusters below 0, within and above
    theirs, a wrench zero, within, over its bound, or far over (the bound's overflow guard)."""
    force, _ = base_wrench_limits(ff)
    wrench = rng.normal(size=ff.nb) * (force if i % 2 else 1.0)
    if i % 5 == 0:
        wrench[:] = 0.0
    if i % 7 == 0:
        wrench *= 1e200
    return Actuation(rng.normal(size=len(ff.arm_joint_names)) * ff.arm_effort_limits * 2,
                     rng.normal(size=len(ff.wheel_joint_names)) * np.asarray(ff.wheel_max_torques) * 2,
                     rng.normal(size=len(ff.thrusters)) * np.asarray(ff.thruster_max_forces) * (i % 3),
                     wrench if i % 3 else np.zeros(0))


def both(ff, act, v):
    compiled = saturate(ff, act, v)
    with fastpath.forced("numpy"):
        reference = saturate(ff, act, v)
    return compiled, reference


def assert_identical(a: Actuation, b: Actuation):
    for name in ("arm_torques", "wheel_torques", "thruster_forces", "base_wrench_world"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_the_compiled_saturation_gives_the_numpy_definitions_bits(name):
    ff = robot(name)
    assert compiled_saturation(ff) is not None
    rng = np.random.default_rng(4)
    speeds = np.asarray(ff.wheel_max_speeds, float)
    for i in range(60):
        state = random_state(ff, rng)
        v = state.v.copy()
        # wheels at, below and beyond their speed limit, both ways: the speed rule's cases
        v[ff.wheel_v_indices] = rng.choice([-1.0, 1.0], size=speeds.size) * speeds * rng.choice([0.5, 1.0, 1.5])
        act = commands(ff, rng, i)
        for velocity in (v, None):
            assert_identical(*both(ff, act, velocity))
        tau = generalized_forces(ff, state.q, act, v)
        with fastpath.forced("numpy"):
            np.testing.assert_array_equal(tau, generalized_forces(ff, state.q, act, v))
        applied, on_base = applied_actuation(ff, act, state.q, v)
        with fastpath.forced("numpy"):
            applied_ref, on_base_ref = applied_actuation(ff, act, state.q, v)
        assert_identical(applied, applied_ref)
        np.testing.assert_array_equal(on_base, on_base_ref)


def test_commands_that_are_not_a_periods_own_take_the_numpy_path_and_its_errors():
    ff = robot("planar_4link")
    compiled = compiled_saturation(ff)
    na = len(ff.arm_joint_names)
    arm = np.ones(na)
    # a list, the wrong size, integers, a strided view: the NumPy path (conversions, errors)
    frozen = np.ones(na)
    frozen.flags.writeable = False
    # a list, the wrong size, integers, a strided view, a read-only array (numba would compile
    # each anew, on a tick): the NumPy path (conversions, errors)
    for odd in ([1.0] * na, np.ones(na + 1), np.ones(na, dtype=int), np.ones(2 * na)[::2], frozen):
        assert compiled.saturate(odd, np.zeros(1), np.zeros(8), np.zeros(0), None) is None
    assert compiled.saturate(arm, np.zeros(1), np.zeros(8), np.zeros(0), frozen) is None
    assert_identical(saturate(ff, Actuation(arm_torques=[0.5] * na)),
                     saturate(ff, Actuation(arm_torques=np.full(na, 0.5))))
    with pytest.raises(ValueError, match="arm_torques must have"):
        saturate(ff, Actuation(arm_torques=np.ones(na + 1)))
    # a non-finite entry: the compiled call declines, and the NumPy path says which
    bad = arm.copy()
    bad[2] = np.nan
    assert compiled.saturate(bad, np.zeros(1), np.zeros(8), np.zeros(0), None) is None
    with pytest.raises(ValueError, match="arm_torques contains NaN"):
        saturate(ff, Actuation(arm_torques=bad, wheel_torques=np.zeros(1), thruster_forces=np.zeros(8)))


def test_the_saturated_commands_are_fresh_arrays():
    """A caller keeps a tick's saturated commands (the plant holds them): the next call must not
    overwrite them, nor the commands given."""
    ff = robot("planar_4link")
    rng = np.random.default_rng(9)
    act = commands(ff, rng, 1)
    given = act.arm_torques.copy()
    first = saturate(ff, act)
    kept = first.arm_torques.copy()
    saturate(ff, commands(ff, rng, 2))
    np.testing.assert_array_equal(first.arm_torques, kept)
    np.testing.assert_array_equal(act.arm_torques, given)
    assert first.arm_torques is not act.arm_torques
