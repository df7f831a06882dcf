"""The ROS nodes' logic without ROS (freeflyer_control.runtime): watchdog, controller, plant, GJM.

Times are seconds on the node's clock; the controller ticks every 10 ms (100 Hz) throughout.
"""

from __future__ import annotations

import logging

import numpy as np
import pinocchio as pin
import pytest
from conftest import random_state, robot

from freeflyer_control.errors import ModeError, ModelError
from freeflyer_control.model import load_model
from freeflyer_control.physics.gjm import generalized_jacobian
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import State, joint_positions, make_state
from freeflyer_control.ros.conversions import (
    JointReading,
    fields_from_state,
    multiarray_to_matrix,
    state_from_readings,
)
from freeflyer_control.runtime.controller_server import ControllerServer
from freeflyer_control.runtime.gjm_server import GjmServer
from freeflyer_control.runtime.plant_server import PlantServer, SensorNoise
from freeflyer_control.runtime.watchdog import Watchdog

RATE = 100.0
DT = 1.0 / RATE
EE = "ee_link"


def _t(k: int) -> float:
    """Time of tick k (computed the same way everywhere, so comparisons are exact)."""
    return k * DT


def _ready_state(ff) -> State:
    return make_state(ff, joint_positions=ff.ready_pose)


def _feed(ctl: ControllerServer, fields, now: float) -> None:
    assert ctl.on_joint_state(fields.joint_names, fields.joint_positions, fields.joint_velocities, now)
    assert ctl.on_base_odometry(fields.base, now)


def _is_zero(act, ff) -> bool:
    sizes = (len(ff.arm_joint_names), len(ff.wheel_joint_names), len(ff.thrusters))
    parts = (act.arm_torques, act.wheel_torques, act.thruster_forces)
    return all(p.shape == (n,) and not p.any() for p, n in zip(parts, sizes)) and not act.base_wrench_world.any()


def _ee_position(ff, q) -> np.ndarray:
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, q)
    return data.oMf[ff.frame_id(EE)].translation.copy()


class Lockstep:
    """plant.measurement() -> controller inputs -> tick -> plant commands -> plant.step."""

    def __init__(self, ff, controller: str = "computed_torque", state: State | None = None, **ctl_kwargs):
        self.ff = ff
        self.plant = PlantServer(ff, state if state is not None else _ready_state(ff), rate=RATE)
        self.ctl = ControllerServer(ff, rate=RATE, controller=controller, **ctl_kwargs)
        self.k = 0
        self.clock_offset = 0.0   # s the controller's clock reads ahead of the plant's (a clock step)

    @property
    def now(self) -> float:
        return _t(self.k)

    def step(self, feed: bool = True):
        now = self.now
        if feed:
            _feed(self.ctl, self.plant.measurement(), now + self.clock_offset)
        out = self.ctl.tick(now + self.clock_offset)
        a = out.actuation
        self.plant.set_arm_torques(a.arm_torques, now)
        self.plant.set_wheel_torques(a.wheel_torques, now)
        self.plant.set_thruster_forces(a.thruster_forces, now)
        self.plant.step(now)
        self.k += 1
        return out

    def run(self, seconds: float):
        out = None
        for _ in range(int(round(seconds * RATE))):
            out = self.step()
            assert out.status == "ok", out.reason
        return out

    @property
    def arm_q(self) -> np.ndarray:
        ff = self.ff
        return joint_positions(ff, self.plant.plant.state.q)[ff.arm_v_indices - ff.nb]


# ---------------------------------------------------------------------------------------------
# Watchdog


def test_watchdog_reports_never_received_and_stale_with_ages():
    wd = Watchdog(0.015, ("joint_states", "base_odometry"))
    assert wd.stale(0.0) == ["joint_states never received", "base_odometry never received"]
    wd.feed("joint_states", 1.0)
    assert wd.stale(1.01) == ["base_odometry never received"]
    wd.feed("base_odometry", 1.01)
    assert wd.stale(1.01) == [] and wd.stale(1.015) == []
    stale = wd.stale(1.5)
    assert len(stale) == 2
    assert stale[0].startswith("joint_states stale for 0.500 s") and "0.015" in stale[0]
    assert stale[1].startswith("base_odometry stale for 0.490 s")
    wd.feed("joint_states", 1.5)
    wd.feed("base_odometry", 1.5)
    assert wd.stale(1.5) == []
    with pytest.raises(ValueError, match="timeout"):
        Watchdog(0.0, ("x",))


# ---------------------------------------------------------------------------------------------
# ControllerServer: safety


def test_waiting_before_inputs_with_zero_commands_sized_for_the_robot():
    ff = robot("planar_4link")
    ctl = ControllerServer(ff, rate=RATE)
    out = ctl.tick(0.0)
    assert out.status == "waiting" and "never received" in out.reason
    assert out.actuation.arm_torques.tolist() == [0.0] * 4
    assert out.actuation.thruster_forces.tolist() == [0.0] * 8
    assert out.actuation.wheel_torques.tolist() == [0.0]
    # only one of the two inputs: still waiting, and references cannot be set yet
    ctl.on_joint_state(*_joint_args(fields_from_state(ff, _ready_state(ff))), now=_t(1))
    out = ctl.tick(_t(1))
    assert out.status == "waiting" and "base_odometry never received" in out.reason and _is_zero(out.actuation, ff)
    with pytest.raises(ValueError, match="no joint states and odometry"):
        ctl.set_ee_target(EE, np.zeros(3), None)
    assert ctl.stats.trips == []  # waiting is not a trip


def _joint_args(fields):
    return fields.joint_names, fields.joint_positions, fields.joint_velocities


def test_stale_inputs_zero_the_command_within_two_periods_and_recover():
    ff = robot("planar_4link")
    rng = np.random.default_rng(11)
    plant = PlantServer(ff, random_state(ff, rng), rate=RATE)  # moving: the controller has work to do
    ctl = ControllerServer(ff, rate=RATE)
    for k in range(5):
        _feed(ctl, plant.measurement(), _t(k))
        out = ctl.tick(_t(k))
        assert out.status == "ok" and out.info is not None
        assert np.all(np.isfinite(out.actuation.arm_torques)) and np.any(out.actuation.arm_torques)
        plant.set_arm_torques(out.actuation.arm_torques, _t(k))
        plant.step(_t(k))
    last_input = _t(4)
    # inputs stop: the first tick after the last input still runs on it ...
    out = ctl.tick(_t(5))
    assert out.status == "ok" and np.any(out.actuation.arm_torques)
    # ... the second one (two control periods after the last input) is a zero command
    out = ctl.tick(_t(6))
    assert out.status == "stale", out
    assert _is_zero(out.actuation, ff)
    assert "joint_states stale" in out.reason and "base_odometry stale" in out.reason
    assert ctl.stats.trips == [(_t(6), out.reason)]
    assert _t(6) - last_input <= 2 * DT + 1e-12
    for k in range(7, 12):  # stays stopped, one trip only
        out = ctl.tick(_t(k))
        assert out.status == "stale" and _is_zero(out.actuation, ff)
    assert len(ctl.stats.trips) == 1 and ctl.stats.zero_ticks == 6
    # inputs return: running again
    _feed(ctl, plant.measurement(), _t(12))
    out = ctl.tick(_t(12))
    assert out.status == "ok" and np.all(np.isfinite(out.actuation.arm_torques)) and np.any(out.actuation.arm_torques)


def test_one_stale_input_is_enough():
    ff = robot("planar_4link")
    fields = fields_from_state(ff, _ready_state(ff))
    ctl = ControllerServer(ff, rate=RATE)
    _feed(ctl, fields, _t(0))
    assert ctl.tick(_t(0)).status == "ok"
    for k in (1, 2):  # joint states keep coming, odometry stops after t=0
        ctl.on_joint_state(*_joint_args(fields), now=_t(k))
    out = ctl.tick(_t(2))
    assert out.status == "stale" and "base_odometry" in out.reason and "joint_states" not in out.reason
    assert _is_zero(out.actuation, ff)


def test_estop_latches_and_reset_holds_the_current_pose():
    ff = robot("planar_4link")
    sim = Lockstep(ff)
    sim.run(0.1)
    # something to do: an end-effector target 10 cm away
    sim.ctl.set_ee_target(EE, _ee_position(ff, sim.plant.plant.state.q) + [-0.1, 0.05, 0.0], None)
    sim.run(1.0)
    sim.ctl.estop(sim.now, "operator pressed stop")
    t_stop = sim.now
    for _ in range(50):  # fresh inputs every tick, still stopped
        out = sim.step()
        assert out.status == "estop" and out.reason == "operator pressed stop"
        assert _is_zero(out.actuation, ff)
    assert sim.ctl.stats.trips == [(t_stop, "operator pressed stop")]
    sim.ctl.estop(sim.now, "again")  # already latched: not a second trip
    assert len(sim.ctl.stats.trips) == 1
    q_at_reset = joint_positions(ff, sim.ctl.state.q)[ff.arm_v_indices - ff.nb]
    ok, msg = sim.ctl.reset_estop()
    assert ok and "cleared" in msg
    out = sim.step()
    assert out.status == "ok"
    assert out.info.tasks == ()  # the old target is gone ...
    np.testing.assert_allclose(out.info.joint_reference.position, q_at_reset, atol=1e-12)  # ... the pose held
    sim.run(2.0)
    out = sim.step()
    np.testing.assert_allclose(out.info.joint_reference.position, q_at_reset, atol=1e-12)
    assert sim.ctl.reset_estop() == (True, "not e-stopped")


def test_nan_joint_state_refused_counted_and_without_effect():
    ff = robot("planar_4link")
    state = random_state(ff, np.random.default_rng(5))
    good = fields_from_state(ff, state)
    a, b = ControllerServer(ff, rate=RATE), ControllerServer(ff, rate=RATE)
    for ctl in (a, b):
        _feed(ctl, good, _t(0))
    out_a, out_b = a.tick(_t(0)), b.tick(_t(0))
    np.testing.assert_array_equal(out_a.actuation.arm_torques, out_b.actuation.arm_torques)
    # a gets a corrupt joint state at t1 (and good odometry); b gets only the odometry
    bad_pos = good.joint_positions.copy()
    bad_pos[1] = np.nan
    assert not a.on_joint_state(good.joint_names, bad_pos, good.joint_velocities, _t(1))
    assert a.stats.errors.counts["nan"] == 1 and a.stats.errors.total == 1
    assert "NaN" in a.stats.errors.last
    for ctl in (a, b):
        assert ctl.on_base_odometry(good.base, _t(1))
    out_a, out_b = a.tick(_t(1)), b.tick(_t(1))
    assert out_a.status == out_b.status == "ok"
    assert np.all(np.isfinite(out_a.actuation.arm_torques)) and np.any(out_a.actuation.arm_torques)
    for part in ("arm_torques", "wheel_torques", "thruster_forces"):
        np.testing.assert_array_equal(getattr(out_a.actuation, part), getattr(out_b.actuation, part))
    # repeated bad messages do not feed the watchdog: they end in the zero command
    bad_vel = good.joint_velocities.copy()
    bad_vel[0] = np.inf
    assert not a.on_joint_state(good.joint_names, good.joint_positions, bad_vel, _t(2))
    a.on_base_odometry(good.base, _t(2))
    assert a.stats.errors.counts["nan"] == 2
    out = a.tick(_t(2))
    assert out.status == "stale" and "joint_states" in out.reason and _is_zero(out.actuation, ff)


# ---------------------------------------------------------------------------------------------
# ControllerServer: clock steps (a restarted simulation clock, a looping bag, an NTP step)


def test_watchdog_reports_an_input_received_after_now_as_a_clock_step():
    wd = Watchdog(0.015, ("joint_states",))
    wd.feed("joint_states", 20.0)
    assert wd.stale(20.01) == []
    # Without the step check the age would be -10 s: "fresh" for the next 10 s.
    assert wd.stale(10.0) == ["joint_states received before the clock stepped back by 10.000 s"]


def _running(ff, seconds: float = 1.0, **kwargs) -> Lockstep:
    sim = Lockstep(ff, **kwargs)
    sim.run(seconds)
    return sim


def test_backwards_clock_step_with_inputs_stopped_zeroes_at_the_next_tick_for_as_long_as_they_stay_stopped():
    ff = robot("planar_4link")
    sim = _running(ff)
    sim.clock_offset = -10.0
    t_last = sim.now - DT
    out = sim.step(feed=False)
    # The clock reads 10 s less one period than at the last tick.
    assert out.status == "clock_step" and out.reason.startswith("clock stepped back by 9.990 s")
    assert _is_zero(out.actuation, ff)
    assert sim.ctl.stats.trips[-1] == (sim.now - DT - 10.0, "clock stepped back by 9.990 s")
    assert sim.ctl.stats.clock_steps == 1 and sim.ctl.stats.last_clock_step == "clock stepped back by 9.990 s"
    for _ in range(int(11.0 * RATE)):  # longer than the step: the old arrival times never count again
        out = sim.step(feed=False)
        assert out.status == "clock_step" and _is_zero(out.actuation, ff), (sim.now, out)
    assert sim.now - t_last > 11.0


def test_after_a_clock_step_fresh_inputs_rearm_after_the_settle_time_and_hold_the_current_pose():
    ff = robot("planar_4link")
    sim = _running(ff, maneuver=None)
    sim.ctl.set_ee_target(EE, _ee_position(ff, sim.plant.plant.state.q) + [-0.1, 0.05, 0.0], None)
    sim.run(0.5)
    sim.clock_offset = -10.0
    statuses = []
    while True:
        out = sim.step()
        statuses.append(out.status)
        if out.status == "ok":
            break
        assert _is_zero(out.actuation, ff) and "clock stepped back by 9.990 s" in out.reason
    # Zero from the step until the inputs have been fresh for the settle time (the tick at the
    # step counts as the first fresh one): 0.25 s at 100 Hz is 25 ticks of zeros.
    assert statuses == ["clock_step"] * 25 + ["ok"]
    assert out.info.tasks == ()  # the target set on the old clock is dropped ...
    q_hold = out.info.joint_reference.position
    np.testing.assert_allclose(q_hold, joint_positions(ff, sim.ctl.state.q)[ff.arm_v_indices - ff.nb], atol=1e-12)
    sim.run(1.0)  # ... and the arm holds where it was re-armed
    np.testing.assert_allclose(sim.step().info.joint_reference.position, q_hold, atol=1e-12)


def test_a_forward_clock_jump_is_a_clock_step_too():
    ff = robot("planar_4link")
    sim = _running(ff)
    sim.clock_offset = 10.0
    out = sim.step()
    assert out.status == "clock_step" and out.reason.startswith("clock jumped forward by 10.010 s")
    assert _is_zero(out.actuation, ff)
    for _ in range(30):
        out = sim.step()
    assert out.status == "ok"


def test_a_scripted_maneuver_goes_on_in_the_control_time_across_a_clock_step():
    # The control law's clock never steps: the Wilde maneuver's reference would otherwise jump
    # back 10 s (1 rad of joint 1); after the step the controller holds the pose it re-armed at.
    from freeflyer_control.control.maneuvers import Wilde

    ff = robot("planar_4link")
    sim = _running(ff, seconds=2.0, maneuver=Wilde())
    sim.clock_offset = -10.0
    for _ in range(26):
        out = sim.step()
    assert out.status == "ok" and sim.ctl.loop.maneuver.name == "hold"
    assert sim.ctl._control_time > 2.0  # went on from 2 s, not back to -8 s


def test_an_input_stamped_before_the_last_tick_is_caught_as_a_step_between_ticks():
    ff = robot("planar_4link")
    sim = _running(ff)
    fields = sim.plant.measurement()
    assert sim.ctl.on_joint_state(*_joint_args(fields), now=sim.now - 5.0)
    assert sim.ctl.stats.clock_steps == 1 and "stepped back by" in sim.ctl.stats.last_clock_step
    assert sim.step(feed=False).status == "clock_step"


def test_the_estop_latch_survives_a_clock_step():
    ff = robot("planar_4link")
    sim = _running(ff)
    sim.ctl.estop(sim.now, "operator pressed stop")
    sim.clock_offset = -10.0
    for _ in range(100):
        out = sim.step()
        assert out.status == "estop" and _is_zero(out.actuation, ff)
    assert sim.ctl.stats.clock_steps == 1
    # The inputs stayed fresh for more than the settle time on the new clock: released, the
    # controller runs at once.
    assert sim.ctl.reset_estop()[0]
    assert sim.step().status == "ok"


@pytest.mark.parametrize("now", [np.nan, np.inf, -np.inf])
def test_a_tick_at_a_time_that_is_not_a_time_is_a_zero_clock_step(now):
    ff = robot("planar_4link")
    sim = _running(ff)
    out = sim.ctl.tick(now)
    assert out.status == "clock_step" and f"clock reads {now} s" in out.reason and _is_zero(out.actuation, ff)


# ---------------------------------------------------------------------------------------------
# ControllerServer: finite but absurd inputs, and a control law that fails


def _absurd(fields, where: str, value: float):
    """``fields`` with one finite but absurd entry."""
    jp, jv = fields.joint_positions.copy(), fields.joint_velocities.copy()
    b = fields.base
    pos, lin, ang = b.position.copy(), b.linear_velocity.copy(), b.angular_velocity.copy()
    {"joint_position": jp, "joint_velocity": jv, "base_position": pos, "base_linear": lin,
     "base_angular": ang}[where][1 if where.startswith("joint") else 0] = value
    return type(fields)(fields.joint_names, jp, jv, type(b)(pos, b.orientation_xyzw, lin, ang))


@pytest.mark.parametrize("where, value, words", [
    ("joint_position", 1e308, "joint joint2 at 1e+308 rad, outside the plausible [-5.642, 5.642] rad"),
    ("joint_velocity", 1e154, "joint joint2 moving at 1e+154 rad/s, beyond the plausible 3 rad/s"),
    ("base_position", 1e308, "base 1e+308 m from the world origin"),
    ("base_linear", 1e154, "base speed 1e+154 m/s beyond the plausible 5 m/s (max_base_speed)"),
    ("base_angular", -1e154, "base rate 1e+154 rad/s beyond the plausible 10 rad/s (max_base_rate)"),
])
def test_finite_but_absurd_inputs_are_refused_counted_and_zero_the_command_until_a_plausible_one(where, value, words):
    ff = robot("planar_4link")
    sim = _running(ff, seconds=0.2)
    calls = []
    law = sim.ctl.loop.tick
    sim.ctl.loop.tick = lambda *a: calls.append(a) or law(*a)
    good = sim.plant.measurement()
    bad = _absurd(good, where, value)
    joints_ok = sim.ctl.on_joint_state(*_joint_args(bad), now=sim.now)
    base_ok = sim.ctl.on_base_odometry(bad.base, now=sim.now)
    assert [joints_ok, base_ok].count(False) == 1
    out = sim.ctl.tick(sim.now)
    assert out.status == "implausible" and words in out.reason and _is_zero(out.actuation, ff)
    assert sim.ctl.stats.errors.counts["implausible"] == 1 and words in sim.ctl.stats.errors.last
    assert calls == []  # refused before the control law: the plausibility check is the first line
    assert sim.ctl.stats.trips[-1][1] == out.reason
    sim.k += 1
    assert sim.step().status == "ok"  # a plausible message clears it


def test_the_base_speed_bound_is_a_setting():
    ff = robot("planar_4link")
    fields = fields_from_state(ff, make_state(ff, base_linear_velocity=[0.2, 0.0, 0.0]))
    strict = ControllerServer(ff, rate=RATE, max_base_speed=0.1)
    _joints_ok = strict.on_joint_state(*_joint_args(fields), now=0.0)
    assert _joints_ok and not strict.on_base_odometry(fields.base, 0.0)
    assert "beyond the plausible 0.1 m/s" in strict.stats.errors.last
    default = ControllerServer(ff, rate=RATE)
    _feed(default, fields, 0.0)
    assert default.tick(0.0).status == "ok"


def test_a_control_law_that_raises_gives_a_counted_zero_fault_and_the_next_tick_runs_again():
    ff = robot("planar_4link")
    sim = _running(ff, seconds=0.2)
    law = sim.ctl.loop.tick

    def broken(*args):
        raise np.linalg.LinAlgError("Singular matrix")
    sim.ctl.loop.tick = broken
    out = sim.step()
    assert out.status == "fault" and out.reason == "control law raised LinAlgError: Singular matrix"
    assert _is_zero(out.actuation, ff) and sim.ctl.stats.faults == 1
    assert sim.ctl.stats.last_fault == out.reason and sim.ctl.stats.trips[-1][1] == out.reason
    sim.ctl.loop.tick = law
    assert sim.step().status == "ok"


def test_a_control_law_that_returns_non_finite_commands_gives_a_zero_fault():
    ff = robot("planar_4link")
    sim = _running(ff, seconds=0.2)
    law = sim.ctl.loop.tick

    def overflowing(*args):
        actuation, info = law(*args)
        actuation.arm_torques[0] = np.inf
        return actuation, info
    sim.ctl.loop.tick = overflowing
    out = sim.step()
    assert out.status == "fault" and out.reason == "control law gave non-finite commands"
    assert _is_zero(out.actuation, ff)


# ---------------------------------------------------------------------------------------------
# ControllerServer: modes and controllers


def test_validate_and_request_mode(package_log):
    ff = robot("planar_4link")
    ctl = ControllerServer(ff, rate=RATE)
    assert ctl.validate_mode("flying") is None
    assert ctl.validate_mode("rotation_floating") is None  # underscores accepted
    reason = ctl.validate_mode("hovering")
    assert "hovering" in reason and all(m.value in reason for m in Mode)
    assert ctl.mode is Mode.FLOATING
    with package_log.at_level(logging.INFO):
        switch = ctl.request_mode("flying", 2.5, "operator")
    assert switch.accepted and switch.from_mode is Mode.FLOATING and switch.to_mode is Mode.FLYING
    assert ctl.mode is Mode.FLYING
    assert any("floating -> flying" in m and "operator" in m for m in package_log.messages)
    assert ctl.loop.switcher.history[-1] == switch


BARE_URDF = """<?xml version="1.0"?>
<robot name="bare_arm">
  <link name="base"><inertial><origin xyz="0 0 0"/><mass value="5"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="link1"><inertial><origin xyz="0.25 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="link1"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="5" velocity="2"/></joint>
  <link name="tool"/>
  <joint name="tool_joint" type="fixed"><parent link="link1"/><child link="tool"/><origin xyz="0.5 0 0"/></joint>
</robot>
"""


@pytest.mark.parametrize("end_effectors", [None, ["tool"]], ids=["no-ee", "ee"])
def test_urdf_only_robot_cannot_fly(end_effectors):
    ff = load_model(BARE_URDF, base="planar", end_effectors=end_effectors)
    assert ff.thrusters == ()
    ctl = ControllerServer(ff, rate=RATE)
    reason = ctl.validate_mode("flying")
    assert reason is not None and "thrusters" in reason
    switch = ctl.request_mode("flying", 0.0, "test")
    assert not switch.accepted and "thrusters" in switch.reason and ctl.mode is Mode.FLOATING
    assert ctl.validate_mode("floating") is None
    with pytest.raises(ModeError, match="thrusters"):
        ControllerServer(ff, rate=RATE, mode="flying")
    # the node still runs: it holds the arm
    _feed(ctl, fields_from_state(ff, make_state(ff, joint_positions=[0.3])), 0.0)
    out = ctl.tick(0.0)
    assert out.status == "ok" and out.actuation.arm_torques.shape == (1,)
    assert out.actuation.thruster_forces.shape == (0,)


def test_set_controller_at_run_time():
    ff = robot("planar_4link")
    sim = Lockstep(ff)
    sim.run(0.5)
    with pytest.raises(ValueError, match="computed_torque"):
        sim.ctl.set_controller("pid")
    sim.ctl.set_controller("resolved_rate")
    assert sim.ctl.loop.controller == "resolved_rate"
    target = _ee_position(ff, sim.plant.plant.state.q) + np.array([-0.1, 0.1, 0.0])
    sim.ctl.set_ee_target(EE, target, None)
    sim.run(15.0)
    assert np.linalg.norm(_ee_position(ff, sim.plant.plant.state.q) - target) < 2e-3
    sim.ctl.set_controller("computed_torque")  # and back, without a jump to a stale reference
    out = sim.step()
    assert out.status == "ok" and np.max(np.abs(out.actuation.arm_torques)) < 1e-3
    sim.run(2.0)
    assert np.linalg.norm(_ee_position(ff, sim.plant.plant.state.q) - target) < 2e-3


# computed_torque closes the resolved-rate loop on its own joint reference (not on the lagging
# measured joints), so a step target does not excite the tracking loop into ringing.
@pytest.mark.parametrize("controller", ["resolved_rate", "computed_torque"])
def test_ee_target_reached_in_closed_loop(controller):
    ff = robot("planar_4link")
    sim = Lockstep(ff, controller=controller)
    sim.run(0.1)
    start = _ee_position(ff, sim.plant.plant.state.q)
    target = start + np.array([-0.1, 0.1, 0.0])
    sim.ctl.set_ee_target(EE, target, None)
    out = sim.run(15.0)
    assert out.info.tasks and out.info.tasks[0].frame == EE
    err = np.linalg.norm(_ee_position(ff, sim.plant.plant.state.q) - target)
    assert err < 2e-3, f"end-effector {err * 1e3:.2f} mm from its target after 15 s"


def test_joint_trajectory_followed():
    ff = robot("planar_4link")
    sim = Lockstep(ff)
    sim.run(0.1)
    arm = list(ff.arm_joint_names)
    q0 = np.array([ff.ready_pose[n] for n in arm])
    q1 = q0 + np.array([0.3, -0.2, 0.1, 0.25])
    # names in another order than the model's; times relative to now
    names = arm[::-1]
    sim.ctl.set_joint_trajectory(names, [(0.0, q0[::-1], []), (3.0, q1[::-1], [])], sim.now)
    t_start = sim.now
    worst = 0.0
    while sim.now < t_start + 3.0:
        out = sim.step()
        ref = out.info.joint_reference
        assert np.all((np.minimum(q0, q1) - 1e-12 <= ref.position) & (ref.position <= np.maximum(q0, q1) + 1e-12))
        worst = max(worst, np.max(np.abs(sim.arm_q - ref.position)))
    assert worst < 0.1  # tracking, with the lag of K_P = K_D = 1
    out = sim.run(7.0)
    np.testing.assert_allclose(out.info.joint_reference.position, q1, atol=1e-12)  # held after the last point
    np.testing.assert_allclose(sim.arm_q, q1, atol=2e-3)
    with pytest.raises(ValueError, match="arm joints"):
        sim.ctl.set_joint_trajectory(arm[:3], [(1.0, q0[:3], [])], sim.now)


def test_twist_command_moves_the_target_and_stops_after_timeout():
    ff = robot("planar_4link")
    sim = Lockstep(ff, controller="resolved_rate")
    sim.run(0.1)
    # move the arm first, so that the pose at start-up is not where the twist starts from
    arm = list(ff.arm_joint_names)
    q0 = np.array([ff.ready_pose[n] for n in arm])
    sim.ctl.set_joint_trajectory(arm, [(0.0, q0, []), (1.0, q0 + 0.2, [])], sim.now)
    sim.run(4.0)
    p_before = _ee_position(ff, sim.plant.plant.state.q)
    v = np.array([0.02, -0.01, 0.0])
    t0 = sim.now
    sim.ctl.set_ee_twist(EE, t0, v, np.zeros(3))
    timeout = sim.ctl.references.twist_timeout
    positions = {}
    while sim.now < t0 + timeout + 1.0 - 1e-9:
        now = sim.now
        out = sim.step()
        (task,) = out.info.tasks
        positions[round(now - t0, 6)] = task.position.copy()
        if now - t0 <= timeout:
            np.testing.assert_allclose(task.linear_velocity, v)
        else:
            np.testing.assert_array_equal(task.linear_velocity, 0.0)
    start = positions[0.0]
    np.testing.assert_allclose(start, p_before, atol=2e-3)  # from the current pose, not the start-up one
    np.testing.assert_allclose(positions[0.2] - start, 0.2 * v, atol=1e-12)
    np.testing.assert_allclose(positions[round(timeout, 6)] - start, timeout * v, atol=1e-12)
    np.testing.assert_allclose(positions[1.0] - start, timeout * v, atol=1e-12)  # stopped
    sim.run(5.0)
    assert np.linalg.norm(_ee_position(ff, sim.plant.plant.state.q) - (start + timeout * v)) < 2e-3
    with pytest.raises(ValueError, match="end-effectors"):
        sim.ctl.set_ee_twist("link2", sim.now, v, np.zeros(3))


# ---------------------------------------------------------------------------------------------
# PlantServer


def test_plant_commands_held_then_zeroed_after_timeout():
    ff = robot("planar_4link")
    plant = PlantServer(ff, _ready_state(ff), rate=RATE, command_timeout=0.1)
    arm, wheels, thr = np.array([0.1, -0.2, 0.3, -0.4]), np.array([0.05]), np.arange(8) * 0.1
    plant.set_arm_torques(arm, 1.0)
    plant.set_wheel_torques(wheels, 1.0)
    plant.set_thruster_forces(thr, 1.05)
    for now in (1.0, 1.05, 1.099):
        a = plant.actuation(now)
        np.testing.assert_array_equal(a.arm_torques, arm)
        np.testing.assert_array_equal(a.wheel_torques, wheels)
        # Stamped 1.05: at 1.0 it is from the future (the clock stepped back), so not applied.
        np.testing.assert_array_equal(a.thruster_forces, thr if now >= 1.05 else np.zeros(8))
    a = plant.actuation(1.11)
    assert not a.arm_torques.any() and not a.wheel_torques.any()
    np.testing.assert_array_equal(a.thruster_forces, thr)  # sent later: still fresh
    a = plant.actuation(1.16)
    assert not a.thruster_forces.any() and a.thruster_forces.shape == (8,)
    with pytest.raises(ValueError):
        plant.set_arm_torques([0.0, np.nan, 0.0, 0.0], 1.2)
    with pytest.raises(ValueError):
        plant.set_thruster_forces(np.zeros(7), 1.2)


def test_plant_reset_restores_initial_state_and_zeroes_commands():
    ff = robot("planar_4link")
    s0 = random_state(ff, np.random.default_rng(2))
    plant = PlantServer(ff, s0, rate=RATE)
    plant.set_arm_torques([1.0, 1.0, 1.0, 1.0], 0.0)
    plant.set_thruster_forces(np.ones(8), 0.0)
    for k in range(10):
        plant.step(_t(k))
    assert not np.allclose(plant.plant.state.q, s0.q)
    plant.reset()
    np.testing.assert_array_equal(plant.plant.state.q, s0.q)
    np.testing.assert_array_equal(plant.plant.state.v, s0.v)
    assert plant.plant.t == 0.0
    assert _is_zero(plant.actuation(0.0), ff)
    np.testing.assert_array_equal(plant.measurement().joint_positions, fields_from_state(ff, s0).joint_positions)



def test_plant_server_that_diverges_reports_it_once_and_publishes_nothing_until_reset():
    # plant_node at 10 Hz with a controller saturating every arm joint: the plant diverges at its
    # first step (see test_momentum_and_plant). The server says why once, holds, publishes nothing.
    ff = robot("planar_4link")
    server = PlantServer(ff, make_state(ff), rate=10.0)
    server.set_arm_torques(ff.arm_effort_limits, 0.0)
    reason = server.step(0.0)
    assert reason.startswith("plant diverged at t = 0.1 s: kinetic energy went from 0 J to ")
    assert (server.status, server.reason) == ("diverged", reason)
    assert server.measurement() is None
    d = server.diagnostics()
    assert (d["status"], d["reason"]) == ("diverged", reason) and np.isfinite(d["linear_momentum"])
    for k in range(1, 5):  # later steps: nothing to report again, nothing integrated
        assert server.step(k * 0.1) is None
    assert server.plant.t == 0.0 and not server.plant.state.v.any()
    server.reset()
    assert (server.status, server.reason) == ("ok", "")
    assert server.measurement() is not None and server.step(1.0) is None


def test_plant_server_drops_commands_stamped_after_now_when_the_clock_steps_back():
    # A restarted simulation clock: commands stamped at 100 s must not be held for the 10 s the
    # clock needs to catch up with them.
    ff = robot("planar_4link")
    server = PlantServer(ff, make_state(ff), rate=RATE, command_timeout=0.1)
    server.set_arm_torques([0.5, 0.0, 0.0, 0.0], 100.0)
    assert server.actuation(100.05).arm_torques[0] == 0.5
    assert _is_zero(server.actuation(90.0), ff)
    server.set_arm_torques([0.2, 0.0, 0.0, 0.0], 90.0)  # sent after the step: fresh again
    assert server.actuation(90.01).arm_torques[0] == 0.2


@pytest.mark.parametrize("kwargs, message", [
    ({"rate": float("nan")}, "rate must be a finite number of Hz > 0, got nan"),
    ({"rate": 0.0}, "rate must be a finite number of Hz > 0, got 0.0"),
    ({"rate": 100.0, "command_timeout": float("inf")}, "command_timeout must be a finite number of seconds > 0"),
    ({"rate": 100.0, "latency": float("nan")}, "latency must be a finite number of seconds >= 0, got nan"),
    ({"rate": 1e6, "latency": 1.0}, "latency 1.0 s at 1000000.0 Hz is 1e+06 steps of history; at most 100000"),
])
def test_plant_server_refuses_non_physical_rates_timeouts_and_latencies(kwargs, message):
    ff = robot("planar_4link")
    with pytest.raises(ValueError) as caught:
        PlantServer(ff, make_state(ff), **kwargs)
    assert message in str(caught.value)

def test_plant_latency_delays_measurements_by_whole_steps():
    ff = robot("planar_4link")
    s0 = random_state(ff, np.random.default_rng(4))
    plant = PlantServer(ff, s0, rate=RATE, latency=0.03)
    truth = [fields_from_state(ff, s0).joint_positions]
    measured = [plant.measurement().joint_positions]
    for k in range(8):
        plant.step(_t(k))
        truth.append(fields_from_state(ff, plant.plant.state).joint_positions)
        measured.append(plant.measurement().joint_positions)
    for k, m in enumerate(measured):
        np.testing.assert_array_equal(m, truth[max(k - 3, 0)], err_msg=f"step {k}")
    assert not np.array_equal(measured[5], truth[5])
    with pytest.raises(ValueError, match="latency"):
        PlantServer(ff, s0, rate=RATE, latency=-0.01)


@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_plant_noise_has_the_configured_std(name):
    ff = robot(name)
    state = random_state(ff, np.random.default_rng(6))
    noise = SensorNoise(joint_position=0.01, joint_velocity=0.02, base_position=0.003, base_attitude=0.005,
                        base_linear_velocity=0.004, base_angular_velocity=0.006)
    truth = fields_from_state(ff, state)
    exact = PlantServer(ff, state, rate=RATE)
    m = exact.measurement()
    for a, b in ((m.joint_positions, truth.joint_positions), (m.joint_velocities, truth.joint_velocities),
                 (m.base.position, truth.base.position), (m.base.orientation_xyzw, truth.base.orientation_xyzw),
                 (m.base.linear_velocity, truth.base.linear_velocity),
                 (m.base.angular_velocity, truth.base.angular_velocity)):
        np.testing.assert_array_equal(a, b)

    plant = PlantServer(ff, state, rate=RATE, noise=noise, seed=1)
    n = 1500
    samples = [plant.measurement() for _ in range(n)]
    dims = 2 if ff.base == "planar" else 3
    R_true = pin.Quaternion(truth.base.orientation_xyzw[3], *truth.base.orientation_xyzw[:3]).toRotationMatrix()

    def check(values, sigma, what):
        values = np.asarray(values)
        assert abs(values.mean()) < 4 * sigma / np.sqrt(values.size), what
        assert abs(values.std() / sigma - 1.0) < 0.1, f"{what}: std {values.std():.4g}, configured {sigma}"

    check([s.joint_positions - truth.joint_positions for s in samples], 0.01, "joint position")
    check([s.joint_velocities - truth.joint_velocities for s in samples], 0.02, "joint velocity")
    check([(s.base.position - truth.base.position)[:dims] for s in samples], 0.003, "base position")
    check([(s.base.linear_velocity - truth.base.linear_velocity)[:dims] for s in samples], 0.004, "base velocity")
    ang = slice(2, 3) if ff.base == "planar" else slice(0, 3)
    check([(s.base.angular_velocity - truth.base.angular_velocity)[ang] for s in samples], 0.006, "base rate")
    angles = []
    for s in samples:
        q = s.base.orientation_xyzw
        assert abs(np.linalg.norm(q) - 1.0) < 1e-12
        angles.append(np.linalg.norm(pin.log3(pin.Quaternion(q[3], *q[:3]).toRotationMatrix() @ R_true.T)))
    # a rotation by N(0, sigma) about a unit axis: its magnitude has RMS sigma
    assert abs(np.sqrt(np.mean(np.square(angles))) / 0.005 - 1.0) < 0.1
    if ff.base == "planar":  # nothing out of the plane
        for s in samples[:50]:
            assert s.base.position[2] == 0.0 and s.base.linear_velocity[2] == 0.0
            assert not s.base.angular_velocity[:2].any() and not s.base.orientation_xyzw[:2].any()
    with pytest.raises(ValueError, match="joint_position"):
        SensorNoise(joint_position=-0.1)


@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_floating_plant_with_zero_commands_conserves_momentum(name):
    ff = robot(name)
    plant = PlantServer(ff, random_state(ff, np.random.default_rng(8)), rate=RATE)
    d0 = plant.diagnostics()
    assert d0["t"] == 0.0 and d0["linear_momentum"] > 1e-3 and d0["angular_momentum"] > 1e-3
    for k in range(100):
        plant.step(_t(k))
    d1 = plant.diagnostics()
    assert d1["t"] == pytest.approx(1.0)
    assert abs(d1["linear_momentum"] - d0["linear_momentum"]) < 1e-10 * max(1.0, d0["linear_momentum"])
    assert abs(d1["angular_momentum"] - d0["angular_momentum"]) < 1e-10 * max(1.0, d0["angular_momentum"])
    assert not np.allclose(plant.plant.state.q, plant.initial.q)  # it did move


# ---------------------------------------------------------------------------------------------
# GjmServer


def test_gjm_outputs_per_end_effector_row_major():
    ff = robot("dual_arm_planar")
    assert len(ff.end_effectors) == 2
    server = GjmServer(ff)
    state = random_state(ff, np.random.default_rng(9))
    out = server.compute(state)
    assert tuple(out) == tuple(ff.end_effectors)
    for frame, o in out.items():
        G = generalized_jacobian(ff, ff.create_data(), state, Mode.FLOATING, frame)
        np.testing.assert_allclose(o.gjm.matrix, G.matrix, atol=1e-12)
        rows, cols = o.gjm.matrix.shape
        assert o.array.dims == (("twist", rows, rows * cols), ("actuated", cols, cols))
        assert o.array.data == o.gjm.matrix.reshape(-1).tolist()  # row-major, exactly
        assert o.array.data[cols * 1 + 2] == o.gjm.matrix[1, 2]
        np.testing.assert_array_equal(multiarray_to_matrix(o.array.dims, o.array.data), o.gjm.matrix)
        assert o.measures.sigma_min == pytest.approx(np.linalg.svd(o.gjm.matrix, compute_uv=False).min())
    a, b = out.values()
    assert not np.allclose(a.gjm.matrix, b.gjm.matrix)


def test_gjm_mode_change_changes_the_columns():
    ff = robot("planar_4link")
    server = GjmServer(ff, frames=(EE, "link2"))
    state = random_state(ff, np.random.default_rng(10))
    floating = server.compute(state)[EE].gjm
    assert floating.matrix.shape == (3, 4) and floating.column_names == ff.arm_joint_names
    server.set_mode("flying")
    flying = server.compute(state)[EE].gjm
    assert flying.mode is Mode.FLYING
    assert flying.matrix.shape == (3, 4 + ff.nb)
    assert flying.column_names[:4] == ff.arm_joint_names
    assert all(n.startswith("base_") for n in flying.column_names[4:])
    assert not np.allclose(flying.matrix[:, :4], floating.matrix)  # no momentum coupling when flying
    assert server.compute(state)["link2"].array.dims[1] == ("actuated", 7, 7)
    with pytest.raises(ModeError):
        server.set_mode("hovering")
    assert server.mode is Mode.FLYING


def test_gjm_unknown_frame_fails_at_construction_listing_links():
    ff = robot("planar_4link")
    with pytest.raises(ModelError) as info:
        GjmServer(ff, frames=(EE, "gripper_tip"))
    msg = str(info.value)
    assert "gripper_tip" in msg and "links:" in msg and EE in msg and ff.base_link in msg


def test_gjm_of_an_implausible_state_is_refused_and_counted():
    ff = robot("planar_4link")
    server = GjmServer(ff)
    fields = fields_from_state(ff, _ready_state(ff))
    absurd = _absurd(fields, "joint_velocity", 1e154)
    state = state_from_readings(ff, JointReading(absurd.joint_positions, absurd.joint_velocities), absurd.base)
    assert server.compute(state) == {}
    assert server.errors.counts["implausible"] == 1 and "1e+154 rad/s" in server.errors.last
    assert set(server.compute(_ready_state(ff))) == {EE}
