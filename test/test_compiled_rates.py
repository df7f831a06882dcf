"""ResolvedRate.joint_rates on its compiled path (control.kernels.resolved_rate.task_rates, what
the ROS controller and the Python engine tick on with numba) equals its NumPy / LAPACK definition.

Skipped where numba is not installed (it is the optional 'fast' extra).
"""

import logging

import numpy as np
import pinocchio as pin
import pytest

pytest.importorskip("numba", reason="the compiled path needs numba (pip install .[fast])")

from conftest import random_state, random_unit_quaternion_xyzw, robot, two_link_planar_robot
from freeflyer_control.control.references import TaskReference
from freeflyer_control.control.resolved_rate import ResolvedRate, ResolvedRateGains
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import State

# The two paths evaluate the same law on O(1) data: the GJM's post-processing (~1e-15), then
# the least squares through the Cholesky factor of the Gram matrix (compiled) or LAPACK's SVD
# (NumPy). The compiled path takes the Cholesky route only while the Gram matrix's condition
# stays below 1e6 (GRAM_CONDITION), so the two solutions agree within ~1e-10 of the rates'
# size; measured on these states: <= 1e-14.
ROUND_OFF = 1e-10


def targets(ff, state, rng, *, orientation: bool) -> list[TaskReference]:
    """A target near each end-effector (within 10 cm), with feed-forward twists, with or
    without an attitude."""
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, state.q)
    out = []
    for ee in ff.end_effectors:
        here = data.oMf[ff.frame_id(ee)].translation
        out.append(TaskReference(ee, here + rng.uniform(-0.1, 0.1, 3),
                                 random_unit_quaternion_xyzw(rng) if orientation else None,
                                 rng.uniform(-0.05, 0.05, 3), rng.uniform(-0.1, 0.1, 3)))
    return out


def both_paths(rr: ResolvedRate, state: State, mode, tasks):
    compiled = rr.joint_rates(state, mode, tasks)
    with fastpath.forced("numpy"):
        reference = rr.joint_rates(state, mode, tasks)
    # the NumPy expressions by name (the GJM on the compiled post-processing): the same law
    assert_same_result(rr.joint_rates_numpy(state, mode, tasks), reference)
    return compiled, reference


def assert_same_result(compiled, reference):
    scale = max(1.0, float(np.abs(reference.joint_rates).max()))
    np.testing.assert_allclose(compiled.joint_rates, reference.joint_rates, rtol=0, atol=ROUND_OFF * scale)
    np.testing.assert_allclose(compiled.task_error, reference.task_error, rtol=0, atol=ROUND_OFF)
    for name in ("sigma_min", "manipulability", "damping"):
        assert abs(getattr(compiled, name) - getattr(reference, name)) <= ROUND_OFF, name
    assert compiled.condition_number == pytest.approx(reference.condition_number, rel=ROUND_OFF)
    assert compiled.limited == reference.limited
    assert compiled.task_rows == reference.task_rows


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link", "dual_arm_planar", "spatial_dual_arm",
                                  "spatial_7dof"])
def test_compiled_joint_rates_equal_the_numpy_definition_in_every_mode(name, mode):
    """Random states (base anywhere, moving; momentum non-zero), every end-effector targeted at
    once, position-only and full-pose targets with feed-forward twists."""
    ff = robot(name)
    rr = ResolvedRate(ff)
    rng = np.random.default_rng(7)
    compared = 0
    for trial in range(6):
        state = random_state(ff, rng)
        compiled, reference = both_paths(rr, state, mode, targets(ff, state, rng, orientation=trial % 2 == 1))
        assert_same_result(compiled, reference)
        compared += 1
    assert compared == 6


def test_compiled_joint_rates_equal_the_numpy_definition_where_the_damping_acts():
    """planar_4link nearly straight: the task rows' smallest singular value is below sigma_0,
    so both paths damp (lambda^2 > 0) and the rate limit scales the command."""
    ff = robot("planar_4link")
    gains = ResolvedRateGains(sigma_0=0.5, max_joint_rate=0.05)
    rr = ResolvedRate(ff, gains)
    rng = np.random.default_rng(3)
    state = random_state(ff, rng, joint_range=0.1)  # every joint within 0.1 rad of straight
    compiled, reference = both_paths(rr, state, Mode.FLOATING, targets(ff, state, rng, orientation=True))
    assert reference.damping > 0.0 and reference.limited
    assert_same_result(compiled, reference)


def test_a_tall_task_is_solved_and_reported_on_the_compiled_path_as_on_the_numpy_path(package_log):
    """A planar two-link arm asked for vx, vy and wz: three rows, two joints (least squares),
    and the one warning naming the direction given up, logged once."""
    ff = two_link_planar_robot()
    rng = np.random.default_rng(5)
    state = random_state(ff, rng)
    tasks = targets(ff, state, rng, orientation=True)
    with package_log.at_level(logging.WARNING, "freeflyer_control.control.resolved_rate"):
        compiled_rr = ResolvedRate(ff)
        compiled = compiled_rr.joint_rates(state, Mode.FLOATING, tasks)
        compiled_rr.joint_rates(state, Mode.FLOATING, tasks)
    assert package_log.messages == compiled_rr.warnings and len(compiled_rr.warnings) == 1
    numpy_rr = ResolvedRate(ff)
    with fastpath.forced("numpy"):
        reference = numpy_rr.joint_rates(state, Mode.FLOATING, tasks)
    assert compiled_rr.warnings == numpy_rr.warnings
    assert_same_result(compiled, reference)


def test_a_non_finite_state_raises_on_the_compiled_path_as_on_the_numpy_path():
    """A NaN joint angle: the law must fail (the controller's guard turns it into a fault)."""
    ff = robot("spatial_6link")
    rr = ResolvedRate(ff)
    rng = np.random.default_rng(2)
    state = random_state(ff, rng)
    tasks = targets(ff, state, rng, orientation=True)
    q = state.q.copy()
    q[ff.model.idx_qs[ff.model.getJointId(ff.arm_joint_names[0])]] = np.nan
    bad = State(q, state.v)
    with pytest.raises(np.linalg.LinAlgError):
        rr.joint_rates(bad, Mode.FLOATING, tasks)
    with fastpath.forced("numpy"), pytest.raises(np.linalg.LinAlgError):
        rr.joint_rates(bad, Mode.FLOATING, tasks)


def test_the_compiled_path_hands_out_results_the_next_call_does_not_overwrite():
    """The compiled path fills arrays of its own on every call; a result kept from an earlier
    tick (the controller logs it) must not change."""
    ff = robot("planar_4link")
    rr = ResolvedRate(ff)
    rng = np.random.default_rng(9)
    state = random_state(ff, rng)
    first = rr.joint_rates(state, Mode.FLOATING, targets(ff, state, rng, orientation=False))
    kept = first.joint_rates.copy(), first.task_error.copy()
    rr.joint_rates(random_state(ff, rng), Mode.FLOATING, targets(ff, state, rng, orientation=False))
    np.testing.assert_array_equal(first.joint_rates, kept[0])
    np.testing.assert_array_equal(first.task_error, kept[1])
