"""runtime.lockstep.LockstepLoop, the ROS-free core of sim_loop_node: plant step, measurement to
the controller, controller tick, commands back to the plant, in that order, every period.

The reference in these tests is the hand-written sequence the distributed graph performs through
its topics (plant_node publishes the measurement, controller_node reads it and publishes every
command topic, plant_node holds what it receives), on the same servers and inputs.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import robot

from freeflyer_control.physics.state import make_state
from freeflyer_control.runtime.controller_server import ControllerServer
from freeflyer_control.runtime.lockstep import LockstepLoop, base_wrench6
from freeflyer_control.runtime.plant_server import PlantServer, SensorNoise

RATE = 200.0
DT = 1.0 / RATE
EE = "ee_link"


def _servers(ff, **ctl_kwargs):
    plant = PlantServer(ff, make_state(ff, joint_positions=ff.ready_pose), rate=RATE)
    return plant, ControllerServer(ff, rate=RATE, **ctl_kwargs)


def _ee(ff, q) -> np.ndarray:
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, q)
    return data.oMf[ff.frame_id(EE)].translation.copy()


def _by_hand(plant: PlantServer, ctl: ControllerServer, now: float, ideal: bool):
    """One period the way the two nodes do it over their topics."""
    plant.step(now)
    fields = plant.measurement()
    ctl.on_joint_state(fields.joint_names, fields.joint_positions, fields.joint_velocities, now)
    ctl.on_base_odometry(fields.base, now)
    out = ctl.tick(now)
    a = out.actuation
    plant.set_arm_torques(a.arm_torques, now)
    if a.wheel_torques.size:
        plant.set_wheel_torques(a.wheel_torques, now)
    if a.thruster_forces.size:
        plant.set_thruster_forces(a.thruster_forces, now)
    if ideal:
        plant.set_base_wrench_world(base_wrench6(a.base_wrench_world), now)
    return out


@pytest.mark.parametrize("base_actuation", ["thrusters", "ideal"])
def test_lockstep_periods_equal_the_distributed_sequence_bit_for_bit(base_actuation):
    """Flying mode with a moving target: arm torques, wheel torques and thrusters (or the ideal
    base wrench) all reach the plant, so a command routed wrongly or dropped changes the state."""
    ff = robot("planar_4link")
    kwargs = dict(mode="flying", base_actuation=base_actuation)
    plant_a, ctl_a = _servers(ff, **kwargs)
    plant_b, ctl_b = _servers(ff, **kwargs)
    loop = LockstepLoop(plant_a, ctl_a)
    target = _ee(ff, plant_a.plant.state.q) + np.array([0.05, -0.03, 0.0])
    for k in range(200):
        now = k * DT
        if k == 2:  # the controller takes references once it has a state
            ctl_a.set_ee_target(EE, target, None)
            ctl_b.set_ee_target(EE, target, None)
        out = loop.period(now).output
        ref = _by_hand(plant_b, ctl_b, now, base_actuation == "ideal")
        assert out.status == ref.status
    np.testing.assert_array_equal(plant_a.plant.state.q, plant_b.plant.state.q)
    np.testing.assert_array_equal(plant_a.plant.state.v, plant_b.plant.state.v)
    # The base actuation reached the plant (it holds the base against the arm's reaction), so
    # the equality above covers it too.
    held = plant_a.actuation(199 * DT)
    assert (held.thruster_forces if base_actuation == "thrusters" else held.base_wrench_world).any()


def _split_period(loop: LockstepLoop, now: float):
    """One period the way sim_loop_node runs it: the state, the tick, the step and the
    measurement ahead."""
    diverged, fields = loop.opening(now)
    out = loop.tick(fields, now)
    ahead = loop.step_ahead(now)
    loop.measure_ahead()
    return diverged, fields, out, ahead


def test_sim_loop_nodes_split_periods_are_the_same_sequence_bit_for_bit():
    """sim_loop_node steps and measures the plant at the end of a period (before its sleep), not
    at the start of the next: the measurements published and ticked on (noise and latency
    included: the same draws in the same order), the commands, and the states reached are the
    distributed sequence's, bit for bit (the split only moves where the sleep falls). The split
    run is one step ahead at the end: the reference takes that step too."""
    ff = robot("planar_4link")
    kwargs = dict(mode="flying", base_actuation="thrusters")
    noise = SensorNoise(joint_position=1e-3, joint_velocity=1e-2, base_position=1e-3)

    def noisy_servers():
        plant = PlantServer(ff, make_state(ff, joint_positions=ff.ready_pose), rate=RATE, noise=noise,
                            latency=2 * DT, seed=7)
        return plant, ControllerServer(ff, rate=RATE, **kwargs)

    plant_a, ctl_a = noisy_servers()
    plant_b, ctl_b = noisy_servers()
    loop = LockstepLoop(plant_a, ctl_a)
    target = _ee(ff, plant_a.plant.state.q) + np.array([0.05, -0.03, 0.0])
    for k in range(200):
        now = k * DT
        if k == 2:
            ctl_a.set_ee_target(EE, target, None)
            ctl_b.set_ee_target(EE, target, None)
        _, fields, out, _ = _split_period(loop, now)
        ref = _by_hand(plant_b, ctl_b, now, ideal=False)
        np.testing.assert_array_equal(fields.joint_positions, ctl_b.joints.positions)   # what b ticked on
        np.testing.assert_array_equal(fields.base.position, ctl_b.base.position)
        np.testing.assert_array_equal(out.actuation.thruster_forces, ref.actuation.thruster_forces)
        np.testing.assert_array_equal(out.actuation.arm_torques, ref.actuation.arm_torques)
    plant_b.step(200 * DT)
    np.testing.assert_array_equal(plant_a.plant.state.q, plant_b.plant.state.q)
    np.testing.assert_array_equal(plant_a.plant.state.v, plant_b.plant.state.v)


def test_a_reset_between_split_periods_is_the_state_the_next_period_publishes():
    """A ~/reset served between two of sim_loop_node's periods replaces the state the plant had
    stepped ahead to: the next period publishes, and the controller ticks on, the initial state."""
    ff = robot("planar_4link")
    plant, ctl = _servers(ff, mode="flying")
    loop = LockstepLoop(plant, ctl)
    initial = plant.measurement().joint_positions.copy()
    _split_period(loop, 0.0)
    ctl.set_ee_target(EE, _ee(ff, plant.plant.state.q) + np.array([0.05, 0.0, 0.0]), None)
    for k in range(1, 50):
        _split_period(loop, k * DT)
    assert np.abs(plant.measurement().joint_positions - initial).max() > 1e-6   # it moved
    plant.reset()
    diverged, fields, out, _ = _split_period(loop, 50 * DT)
    assert diverged is None and out.status == "ok"
    np.testing.assert_array_equal(fields.joint_positions, initial)


def test_a_step_ahead_that_diverges_publishes_nothing_in_the_next_period(monkeypatch):
    """The divergence is reported by the step that diverged (the node logs it then); the next
    period has no state to publish, and the controller's watchdog trips as over topics."""
    from test_object_stops import diverge_on_call

    from freeflyer_control.physics.plant import Plant

    ff = robot("planar_4link")
    plant, ctl = _servers(ff)
    loop = LockstepLoop(plant, ctl)
    for k in range(10):
        assert _split_period(loop, k * DT)[3] is None
    diverge_on_call(monkeypatch, Plant, 1, "the plant diverged (test)")
    assert _split_period(loop, 10 * DT)[3] == "the plant diverged (test)"
    diverged, fields, out, ahead = _split_period(loop, 11 * DT)
    assert diverged is None and fields is None and ahead is None
    assert _split_period(loop, 12 * DT)[2].status == "stale"


def test_lockstep_controller_ticks_on_the_state_of_the_same_period():
    """The measurement a period returns is the state after this period's step, and the
    controller's watchdog sees it as fresh (age zero) at the tick of the same period."""
    ff = robot("planar_4link")
    plant, ctl = _servers(ff)
    loop = LockstepLoop(plant, ctl)
    for k in range(5):
        period = loop.period(k * DT)
        assert period.diverged is None
        np.testing.assert_array_equal(period.measurement.joint_positions,
                                      plant.measurement().joint_positions)
        assert ctl.watchdog.stale(k * DT) == []
    assert period.output.status == "ok", period.output.reason


def test_lockstep_brings_the_end_effector_to_a_target():
    ff = robot("planar_4link")
    plant, ctl = _servers(ff)
    loop = LockstepLoop(plant, ctl)
    loop.period(0.0)
    target = _ee(ff, plant.plant.state.q) + np.array([0.04, 0.03, 0.0])
    ctl.set_ee_target(EE, target, None)
    for k in range(1, int(8.0 * RATE)):
        assert loop.period(k * DT).output.status == "ok"
    # 2 mm, as test_runtime's closed-loop tests (there after 15 s for a 14 cm step; here 5 cm).
    assert np.linalg.norm(_ee(ff, plant.plant.state.q) - target) < 2e-3


def test_estop_in_lockstep_leaves_the_plant_holding_zero_commands():
    ff = robot("planar_4link")
    plant, ctl = _servers(ff, mode="flying")
    loop = LockstepLoop(plant, ctl)
    loop.period(0.0)
    ctl.set_ee_target(EE, _ee(ff, plant.plant.state.q) + np.array([0.05, 0.0, 0.0]), None)
    for k in range(1, 20):
        loop.period(k * DT)
    assert np.any(plant.actuation(19 * DT).arm_torques)
    ctl.estop(20 * DT, "test")
    out = loop.period(20 * DT).output
    assert out.status == "estop"
    act = plant.actuation(20 * DT)
    assert not act.arm_torques.any() and not act.wheel_torques.any() and not act.thruster_forces.any()


def test_a_diverged_plant_in_lockstep_trips_the_controller_watchdog_within_two_periods(monkeypatch):
    """A diverged plant publishes nothing; the hosted controller hears nothing, as over topics."""
    from test_object_stops import diverge_on_call

    from freeflyer_control.physics.plant import Plant

    ff = robot("planar_4link")
    plant, ctl = _servers(ff)
    loop = LockstepLoop(plant, ctl)
    for k in range(10):
        assert loop.period(k * DT).output.status == "ok"
    diverge_on_call(monkeypatch, Plant, 1, "the plant diverged (test)")
    first = loop.period(10 * DT)
    assert first.diverged == "the plant diverged (test)" and first.measurement is None
    # Watchdog 1.5 periods: the state of period 9 is 1 period old at 10, 2 periods at 11.
    assert loop.period(11 * DT).output.status == "stale"


def test_lockstep_refuses_a_controller_rate_other_than_the_plant_rate():
    ff = robot("planar_4link")
    plant = PlantServer(ff, make_state(ff), rate=1000.0)
    with pytest.raises(ValueError, match=r"controller rate 500 Hz differs from plant rate 1000 Hz"):
        LockstepLoop(plant, ControllerServer(ff, rate=500.0))


def test_a_planar_base_wrench_becomes_the_six_vector_of_base_wrench_command():
    np.testing.assert_array_equal(base_wrench6(np.array([1.0, 2.0, 3.0])), [1.0, 2.0, 0.0, 0.0, 0.0, 3.0])
    w = np.arange(6.0)
    np.testing.assert_array_equal(base_wrench6(w), w)
