"""ComputedTorque.effort on its compiled path (control.kernels.computed_torque.joint_space_effort,
what the ROS controller, the Python engine and the Gymnasium environments tick on with numba)
equals its NumPy / Pinocchio definition (ComputedTorque.effort_numpy) in every mode.

Skipped where numba is not installed (it is the optional 'fast' extra).
"""

import numpy as np
import pytest

pytest.importorskip("numba", reason="the compiled path needs numba (pip install .[fast])")

from conftest import BUNDLED_ROBOTS, random_state, random_unit_quaternion_xyzw, robot
from freeflyer_control.control.base_control import BaseGains
from freeflyer_control.control.computed_torque import ComputedTorque, JointGains
from freeflyer_control.control.references import BaseReference, JointReference
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.actuators import mode_support
from freeflyer_control.physics.modes import Mode

# The two paths evaluate the same law: Pinocchio's CRBA and RNEA against the kernels' (equal to
# ~1e-15 on O(1) inertias, test_compiled_plant), then H* u + C* formed explicitly (NumPy) or
# through one Cholesky factorisation of the free-base block (compiled; test_compiled_post), and
# in rotation-floating a 1x1 or 3x3 solve for the wheels. Torques here are O(1-10) N m; the
# agreement measured on these states is <= 1e-13 of their size, 1e-10 leaves room for the
# conditioning of the free-base block of the 7-DOF arm.
ROUND_OFF = 1e-10


def references(ff, rng):
    na = len(ff.arm_joint_names)
    joint = JointReference(rng.uniform(-1, 1, na), rng.uniform(-0.5, 0.5, na), rng.uniform(-0.3, 0.3, na))
    position = rng.uniform(-0.5, 0.5, 3)
    if ff.base == "planar":
        position[2] = 0.0
        yaw = rng.uniform(-np.pi, np.pi)
        quat = np.array([0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2)])
    else:
        quat = random_unit_quaternion_xyzw(rng)
    base = BaseReference(position, quat, rng.uniform(-0.1, 0.1, 3), rng.uniform(-0.1, 0.1, 3))
    return joint, base


def both_paths(ct: ComputedTorque, state, mode, joint, base):
    compiled = ct.effort(state, mode, joint, base)
    with fastpath.forced("numpy"):
        reference = ct.effort(state, mode, joint, base)
    return compiled, reference


def assert_same_effort(compiled, reference):
    for name in ("arm_torques", "wheel_torques", "base_wrench_world"):
        a, b = getattr(compiled, name), getattr(reference, name)
        assert a.shape == b.shape, name
        scale = max(1.0, float(np.abs(b).max(initial=0.0)))
        np.testing.assert_allclose(a, b, rtol=0, atol=ROUND_OFF * scale, err_msg=name)


@pytest.mark.parametrize("name", BUNDLED_ROBOTS + ("spatial_dual_arm",))
def test_the_compiled_law_equals_the_numpy_definition_in_every_mode_the_robot_flies(name):
    ff = robot(name)
    rng = np.random.default_rng(7)
    ct = ComputedTorque(ff, JointGains(kp=rng.uniform(0.5, 3.0, len(ff.arm_joint_names)), kd=1.5),
                        BaseGains(0.4, 1.1, 0.3, 0.9))
    flown = [mode for mode in Mode if mode_support(ff, mode) is None]
    assert Mode.FLOATING in flown
    for mode in flown:
        assert ct._compiled_torque().covers(mode) or mode is Mode.ROTATION_FLOATING
        for _ in range(4):
            state = random_state(ff, rng)
            joint, base = references(ff, rng)
            compiled, reference = both_paths(ct, state, mode, joint, base)
            assert_same_effort(compiled, reference)


def test_rotation_floating_clips_the_wheels_and_lets_the_attitude_go_on_both_paths():
    """A demand far beyond the wheel's torque: the clip and the second solve of
    rotation_floating_forces, on the compiled path too."""
    ff = robot("planar_4link")
    rng = np.random.default_rng(11)
    ct = ComputedTorque(ff, JointGains(kp=1.0, kd=1.0), BaseGains(0.25, 1.0, 400.0, 40.0))
    state = random_state(ff, rng)
    joint, base = references(ff, rng)
    compiled, reference = both_paths(ct, state, Mode.ROTATION_FLOATING, joint, base)
    assert np.abs(reference.wheel_torques) == pytest.approx(ff.wheel_max_torques)   # clipped
    assert_same_effort(compiled, reference)


def test_the_compiled_path_returns_fresh_arrays_each_tick():
    """A caller keeps the effort of a tick (TickInfo, the blend): the next tick must not
    overwrite it."""
    ff = robot("planar_4link")
    rng = np.random.default_rng(3)
    ct = ComputedTorque(ff)
    joint, base = references(ff, rng)
    first = ct.effort(random_state(ff, rng), Mode.FLOATING, joint, base)
    kept = first.arm_torques.copy()
    ct.effort(random_state(ff, rng), Mode.FLOATING, joint, base)
    np.testing.assert_array_equal(first.arm_torques, kept)


def test_a_given_mass_matrix_takes_the_numpy_path():
    """``M=`` (a caller that has the mass matrix at this q) keeps the reference path, and its
    H*, C* in last_dynamics."""
    ff = robot("planar_4link")
    rng = np.random.default_rng(5)
    ct = ComputedTorque(ff)
    state = random_state(ff, rng)
    joint, base = references(ff, rng)
    import pinocchio as pin

    M = pin.crba(ff.model, ff.create_data(), state.q)
    ct.last_dynamics = None
    effort = ct.effort(state, Mode.FLOATING, joint, base, M=M)
    assert ct.last_dynamics is not None
    assert_same_effort(effort, ct.effort(state, Mode.FLOATING, joint, base))
