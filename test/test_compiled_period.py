"""sim_loop_node's plain periods in one compiled call (runtime.compiled_period, around
sim.fast.period.plain_period) are the Python period's, bit for bit.

Two lockstep loops on equal servers, one computing plain periods in one compiled call and one
computing every period in Python, run the same script under each built-in law the call covers
(computed torque, resolved rate): end-effector targets that move, turn and
come and go, a joint trajectory, mode switches and their blends (the blend and flying mode take
the Python period), an e-stop and its reset, a reset of the plant. Every measurement, command,
tick result and state is compared for exact equality (no tolerance: the compiled call makes the
same compiled calls as the Python period on the same arguments, and writes the arithmetic
between them in the same order), and both paths must have run many periods, so the equality
says something about each and about the hand-over between them.

Skipped where numba is not installed (it is the optional 'fast' extra).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

pytest.importorskip("numba", reason="the compiled period needs numba (pip install .[fast])")

from conftest import robot
from freeflyer_control.physics.state import make_state
from freeflyer_control.runtime.compiled_period import never_plain
from freeflyer_control.runtime.controller_server import ControllerServer
from freeflyer_control.runtime.lockstep import LockstepLoop
from freeflyer_control.runtime.plant_server import PlantServer, SensorNoise

RATE = 200.0
DT = 1.0 / RATE


def _loop(ff, compiled: bool, **ctl_kwargs) -> LockstepLoop:
    plant = PlantServer(ff, make_state(ff, joint_positions=ff.ready_pose), rate=RATE, compiled=True)
    return LockstepLoop(plant, ControllerServer(ff, rate=RATE, **ctl_kwargs), compiled=compiled)


def _period(loop: LockstepLoop, now: float):
    """One period as sim_loop_node runs it: the state, the hand-over, the tick and the step."""
    diverged, fields = loop.opening(now)
    loop.handover(fields, now)
    out, ahead = loop.tick_and_step(now)
    loop.measure_ahead()
    return diverged, fields, out, ahead


def _ee_pose(ff, q, frame):
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, q)
    return data.oMf[ff.frame_id(frame)]


def _assert_same_tick(a, b):
    assert (a.status, a.reason) == (b.status, b.reason)
    for name in ("arm_torques", "wheel_torques", "thruster_forces", "base_wrench_world"):
        np.testing.assert_array_equal(getattr(a.actuation, name), getattr(b.actuation, name), err_msg=name)
    if a.info is None or b.info is None:
        assert a.info is b.info is None
        return
    ia, ib = a.info, b.info
    assert (ia.mode, ia.blend, ia.fault) == (ib.mode, ib.blend, ib.fault)
    for name in ("arm_torques", "wheel_torques", "base_wrench_world"):
        np.testing.assert_array_equal(getattr(ia.effort, name), getattr(ib.effort, name), err_msg=name)
    for name in ("position", "velocity", "acceleration"):
        np.testing.assert_array_equal(getattr(ia.joint_reference, name), getattr(ib.joint_reference, name))
    np.testing.assert_array_equal(ia.allocation_residual, ib.allocation_residual)
    assert (ia.resolved_rate is None) == (ib.resolved_rate is None)
    if ia.resolved_rate is not None:
        ra, rb = ia.resolved_rate, ib.resolved_rate
        np.testing.assert_array_equal(ra.joint_rates, rb.joint_rates)
        np.testing.assert_array_equal(ra.task_error, rb.task_error)
        assert (ra.sigma_min, ra.manipulability, ra.condition_number, ra.damping, ra.limited, ra.task_rows) == \
               (rb.sigma_min, rb.manipulability, rb.condition_number, rb.damping, rb.limited, rb.task_rows)


def _assert_same_servers(a: LockstepLoop, b: LockstepLoop):
    np.testing.assert_array_equal(a.plant.plant.state.q, b.plant.plant.state.q)
    np.testing.assert_array_equal(a.plant.plant.state.v, b.plant.plant.state.v)
    np.testing.assert_array_equal(a.plant.plant.momentum_world, b.plant.plant.momentum_world)
    assert (a.plant.plant.t, a.plant.status, a.plant.reason) == (b.plant.plant.t, b.plant.status, b.plant.reason)
    for key, (value, stamp) in a.plant._cmd.items():
        np.testing.assert_array_equal(value, b.plant._cmd[key][0], err_msg=key)
        assert stamp == b.plant._cmd[key][1], key
    law_a, law_b = a.controller.loop.law, b.controller.loop.law
    np.testing.assert_array_equal(law_a.q_integrated, law_b.q_integrated)
    # (Their CPU times differ, and so may the overruns counted: the ticks timed may not.)
    assert a.controller.loop.guard.timing.ticks == b.controller.loop.guard.timing.ticks
    assert a.controller.stats.ticks == b.controller.stats.ticks


@pytest.mark.parametrize("law", ["computed_torque", "resolved_rate"])
@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link", "dual_arm_planar"])
def test_compiled_periods_are_the_python_periods_bit_for_bit(name, law):
    ff = robot(name)
    fast, ref = _loop(ff, True, controller=law), _loop(ff, False, controller=law)
    assert fast.compiled.refusal is None, fast.compiled.refusal
    ees = ff.end_effectors
    steps = {}   # period -> what both controllers are told before it

    def each(do):
        return lambda: [do(loop.controller) for loop in (fast, ref)]

    q0 = fast.plant.plant.state.q
    pose = _ee_pose(ff, q0, ees[0])
    steps[3] = each(lambda c: c.set_ee_target(ees[0], pose.translation + [0.04, -0.03, 0.0], None))
    quat = pin.Quaternion(pin.exp3(np.array([0.0, 0.0, 0.2])) @ pose.rotation).coeffs()
    steps[60] = each(lambda c: c.set_ee_target(ees[0], pose.translation + [0.02, 0.02, 0.0], quat))
    if len(ees) > 1:
        other = _ee_pose(ff, q0, ees[1]).translation
        steps[80] = each(lambda c: c.set_ee_target(ees[1], other + [0.0, 0.03, 0.0], None))
    steps[100] = each(lambda c: c.set_ee_twist(ees[0], 100 * DT, [0.02, 0.0, 0.0], [0.0, 0.0, 0.1]))
    steps[150] = each(lambda c: c.request_mode("rotation-floating", 150 * DT, "test"))   # a blend: Python
    steps[400] = each(lambda c: c.estop(400 * DT))
    steps[410] = each(lambda c: c.reset_estop())                                         # holds the pose
    steps[430] = each(lambda c: c.set_joint_trajectory(
        list(ff.arm_joint_names), [(0.0, c.loop.law.q_integrated, []), (0.5, c.loop.law.q_integrated + 0.05, [])],
        430 * DT))
    steps[560] = each(lambda c: c.request_mode("flying", 560 * DT, "test"))              # thrusters: Python
    steps[620] = each(lambda c: c.request_mode("floating", 620 * DT, "test"))
    resets = {700}
    for k in range(900):
        now = k * DT
        if k in steps:
            steps[k]()
        if k in resets:
            for loop in (fast, ref):
                loop.plant.reset()
        da, fa, oa, aa = _period(fast, now)
        db, fb, ob, ab = _period(ref, now)
        assert (da, aa) == (db, ab)
        np.testing.assert_array_equal(fa.joint_positions, fb.joint_positions)
        np.testing.assert_array_equal(fa.joint_velocities, fb.joint_velocities)
        np.testing.assert_array_equal(fa.base.position, fb.base.position)
        _assert_same_tick(oa, ob)
        _assert_same_servers(fast, ref)
    # Both paths ran often (the blends, the e-stop, flying mode: Python; the rest compiled).
    assert fast.compiled.compiled > 400, (fast.compiled.compiled, fast.compiled.python)
    assert fast.compiled.python > 250, (fast.compiled.compiled, fast.compiled.python)


def test_a_plant_that_diverges_in_a_compiled_period_diverges_as_in_python():
    """The plant's speed bounds lowered to nothing: the next step diverges, with the Python
    period's reason, and the plant publishes nothing more."""
    ff = robot("planar_4link")
    fast, ref = _loop(ff, True), _loop(ff, False)
    target = _ee_pose(ff, fast.plant.plant.state.q, "ee_link").translation + [0.04, 0.0, 0.0]
    reasons = []
    for k in range(20):
        if k == 2:
            for loop in (fast, ref):
                loop.controller.set_ee_target("ee_link", target, None)
        if k == 10:   # (checked_plant_step reads the bounds from the end of the plant's buffer)
            for loop in (fast, ref):
                nv = loop.plant.plant.state.v.size
                loop.plant.plant._buf[-nv:] = 1e-12
        da, _, oa, aa = _period(fast, k * DT)
        db, _, ob, ab = _period(ref, k * DT)
        assert (da, aa) == (db, ab)
        _assert_same_tick(oa, ob)
        reasons.append(aa)
    assert reasons[10] is not None and "plant diverged" in reasons[10]
    assert all(r is None for r in reasons[:10]) and all(r is None for r in reasons[11:])
    assert fast.plant.status == "diverged" and fast.compiled.compiled == 11   # periods 0-10, the one that diverged among them


@pytest.mark.parametrize("setup, reason", [
    (dict(compiled=False), "the plant steps in Python"),
    (dict(noise=SensorNoise(joint_position=1e-3)), "latency or noise"),
    (dict(latency=2 * DT), "latency or noise"),
])
def test_a_loop_whose_periods_are_never_plain_says_why(setup, reason):
    ff = robot("planar_4link")
    plant = PlantServer(ff, make_state(ff, joint_positions=ff.ready_pose), rate=RATE,
                        **{"compiled": True, **setup})
    assert reason in never_plain(plant, ControllerServer(ff, rate=RATE))
