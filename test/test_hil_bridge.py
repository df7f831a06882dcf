"""The testbed bridge at its wire, driven by hand: conventions, mappings, valves, safety, refusals.

Each test feeds a :class:`TestbedBridge` the messages a testbed would send for a robot whose true
motion the test writes down (capture samples made with the config's own
``capture.transform.from_world``, encoder readings ``raw = sign * q + offset`` under the drivers'
hardware names, continuous joints read modulo 2 pi), at their rates, and ticks it at the control
rate. No emulator, plant or controller: what goes out is compared with what the claim says.
The closed-loop fault tests (emulated plant, controller, latencies) are in test_hil_faults.py.

The testbed is config/testbeds/planar_4link.yaml: 250 Hz bridge, 100 Hz y-up capture with the
marker body 0.12 m above base_link and turned -90 deg, encoders with their own names, signs
(-1 for elbow, wrist_roll, reaction_wheel) and offsets, 10 Hz valves in the board's own order.
Samples here are noise-free and latency-free unless a test says otherwise, so the estimates are
exact up to float round-off.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pinocchio as pin
import pytest
from conftest import example_testbed, example_variant

from freeflyer_control.control.allocation import ThrusterAllocator
from freeflyer_control.hil.bridge import ARM_SETTLE_TIME, BridgeOutput, TestbedBridge
from freeflyer_control.hil.frames import yaw_matrix
from freeflyer_control.hil.safety import brake_acceleration
from freeflyer_control.physics.actuators import Actuation, thruster_matrix

ROUND_OFF = 1e-9          # noise-free samples of a static or constant-rate robot: exact up to round-off
TIME_TOL = 1e-9           # s: k * period in floating point lands within this of the exact instant
READY = np.array([0.8, -0.8, -0.8, 0.8])   # arm angles, rad (planar_4link's ready pose)


# --- the hand-driven testbed --------------------------------------------------------------------

def moving(p0=(0.4, -0.3), v=(0.0, 0.0), yaw0=0.7, yaw_rate=0.0, q0=(*READY, 2.5), qdot=(0.0,) * 5):
    """True motion at constant rates: base position (m, world, on the table), yaw (rad), joint
    angles in URDF convention (ff.joint_names order: 4 arm joints, then the wheel)."""
    p0, v, q0, qdot = (np.asarray(x, dtype=float) for x in (p0, v, q0, qdot))

    def truth(t: float):
        return np.array([*(p0 + v * t), 0.0]), yaw_matrix(yaw0 + yaw_rate * t), q0 + qdot * t
    return truth


class Rig:
    """A testbed as the bridge sees it, on a simulated clock that starts at 0.

    Before each control tick ``t = k / rate`` the bridge gets every capture sample stamped
    ``j / capture.rate <= t`` and one encoder message stamped ``t`` (250 Hz, like the ticks),
    both arriving at ``t``; after the tick it gets the controller's command (the runner's order:
    a command acts from the next tick). Switch an input off with ``capture = False`` etc.
    ``clock_offset`` (s) is added to every time the bridge is given, stamps and arrivals alike
    (one host clock that steps).
    """

    def __init__(self, cfg=None, truth=None, controller: Callable[[float], Actuation] | None = None,
                 start: float = 0.0):
        self.cfg = cfg or example_testbed()
        self.ff = self.cfg.robot
        self.bridge = TestbedBridge(self.cfg)
        self.truth = truth or moving()
        self.controller = controller or (lambda t: Actuation())
        self.capture = self.encoders = self.commands = True
        self.clock_offset = 0.0
        self.repeat_encoders = False       # resend the last encoder message as is (a hung driver)
        self.k = round(start / self.cfg.period)
        self._next_capture = math.ceil(start * self.cfg.capture.rate - TIME_TOL)
        self.last_capture = self.last_encoders = self.last_command = None   # arrival times, s
        self._last_message = None
        self._continuous = np.array([self.ff.model.joints[self.ff.model.getJointId(n)].nq == 2
                                     for n in self.ff.joint_names])
        self.log: list[tuple[float, BridgeOutput]] = []

    @property
    def t(self) -> float:
        return self.k * self.cfg.period

    def capture_sample(self, t: float):
        p, R, _ = self.truth(t)
        return self.cfg.capture.transform.from_world(p, R)

    def encoder_message(self, t: float):
        """(hardware names, raw positions): raw = sign * q + offset, continuous joints modulo 2 pi."""
        _, _, q = self.truth(t)
        q = np.where(self._continuous, np.angle(np.exp(1j * q)), q)
        ch = self.cfg.encoders.channels
        return [c.name for c in ch], np.array([c.sign * q[i] + c.offset for i, c in enumerate(ch)])

    def feed(self, t: float) -> None:
        while self._next_capture / self.cfg.capture.rate <= t + TIME_TOL:
            stamp = self._next_capture / self.cfg.capture.rate
            self._next_capture += 1
            if self.capture:
                self.bridge.on_capture(stamp + self.clock_offset, *self.capture_sample(stamp), t + self.clock_offset)
                self.last_capture = t
        if self.repeat_encoders:
            self.bridge.on_encoders(*self._last_message, t + self.clock_offset)
        elif self.encoders:
            self._last_message = (t + self.clock_offset, *self.encoder_message(t), [])
            self.bridge.on_encoders(*self._last_message, t + self.clock_offset)
            self.last_encoders = t

    def step(self) -> BridgeOutput:
        t = self.t
        self.feed(t)
        out = self.bridge.tick(t + self.clock_offset)
        self.log.append((t, out))
        if self.commands:
            self.bridge.on_controller(self.controller(t), t + self.clock_offset)
            self.last_command = t
        self.k += 1
        return out

    def run(self, seconds: float) -> list[tuple[float, BridgeOutput]]:
        """Tick for ``seconds``; returns the (time, output) of those ticks."""
        n = round(seconds / self.cfg.period)
        start = len(self.log)
        for _ in range(n):
            self.step()
        return self.log[start:]

    def run_until(self, t_end: float) -> list[tuple[float, BridgeOutput]]:
        start = len(self.log)
        while self.t < t_end - TIME_TOL:
            self.step()
        return self.log[start:]

    def arm(self) -> BridgeOutput:
        """Tick until the bridge forwards the controller; returns that tick's output."""
        start = self.t
        while True:
            out = self.step()
            if out.status == "active":
                return out
            assert out.status == "waiting" and self.t < start + 1.0, f"never armed: {out.status} {out.trip}"


def yaw_of(base) -> float:
    _, _, z, w = base.orientation_xyzw
    return 2.0 * math.atan2(z, w)


def valve_forces(cfg, command: np.ndarray) -> np.ndarray:
    """Mean thrust per thruster (layout order), N, of one period's duty cycles (channel order)."""
    ff = cfg.robot
    forces = np.zeros(len(ff.thrusters))
    layout = [t.name for t in ff.thrusters]
    for channel, duty in zip(cfg.actuators.thrusters.channels, command):
        i = layout.index(channel)
        forces[i] = duty * ff.thrusters[i].max_force
    return forces


def first(log, predicate):
    return next((t, out) for t, out in log if predicate(out))


# --- 1. conventions on the wire -----------------------------------------------------------------

def test_a_static_robot_is_estimated_at_its_true_pose_in_world_and_urdf_convention_once_armed():
    truth = moving(p0=(0.4, -0.3), yaw0=0.7, q0=(*READY, 2.5))
    rig = Rig(truth=truth)
    # The wire really is unlike our conventions: the y-up system reports the marker body
    # 0.12 m up (capture y), world -y as capture z; the elbow reads -q + 0.5, the wheel -q.
    position, _ = rig.capture_sample(0.0)
    np.testing.assert_allclose(position, [0.4, 0.12, 0.3], atol=ROUND_OFF)
    names, raw = rig.encoder_message(0.0)
    assert names == ["shoulder", "elbow", "wrist_pitch", "wrist_roll", "reaction_wheel"]
    np.testing.assert_allclose(raw, [0.8, 0.8 + 0.5, -0.8 - 0.25, -0.8, -2.5], atol=ROUND_OFF)

    out = rig.arm()
    p, _, q = truth(rig.t)
    np.testing.assert_allclose(out.base.position, p, atol=ROUND_OFF)
    assert yaw_of(out.base) == pytest.approx(0.7, abs=ROUND_OFF)
    np.testing.assert_allclose(out.base.linear_velocity, 0.0, atol=ROUND_OFF)
    np.testing.assert_allclose(out.base.angular_velocity, 0.0, atol=ROUND_OFF)
    np.testing.assert_allclose(out.joints.positions, q, atol=ROUND_OFF)
    np.testing.assert_allclose(out.joints.velocities, 0.0, atol=ROUND_OFF)


def test_the_bridge_arms_after_exactly_the_settle_time_of_fresh_data():
    rig = Rig()
    log = rig.run(0.5)
    # Both inputs arrive from the first tick (t = 0): fresh since 0.
    for t, out in log:
        expected = "active" if t >= ARM_SETTLE_TIME - TIME_TOL else "waiting"
        assert out.status == expected, f"t={t:.3f}: {out.status}"
        assert out.trip is None
    # While waiting, nothing moves: zero efforts and wheel torque, valves shut when commanded.
    for t, out in log:
        if out.status == "waiting":
            assert not out.command.joint_efforts.any() and not out.command.wheels.any()
            assert out.command.thrusters is None or not out.command.thrusters.any()


def test_the_bridge_does_not_arm_while_one_input_is_missing():
    rig = Rig()
    rig.capture = False
    assert all(out.status == "waiting" and out.joints is None for _, out in rig.run(0.6))
    rig.capture = True
    start = rig.t
    t_active, _ = first(rig.run(0.5), lambda out: out.status == "active")
    assert t_active == pytest.approx(start + ARM_SETTLE_TIME, abs=rig.cfg.period)


def test_a_base_moved_before_the_bridge_arms_is_reacquired_and_the_bridge_arms_where_it_is():
    # The bridge saw the robot once, then it was set down 0.3 m away (carried onto the table, or
    # a capture pause): no command is out yet, so nothing is lost by following the capture.
    moved = moving(p0=(0.7, -0.3))

    def truth(t):
        return moving()(t) if t < 0.055 else moved(t)
    rig = Rig(truth=truth)
    _, out = first(rig.run(0.6), lambda out: out.status == "active")
    np.testing.assert_allclose(out.base.position, [0.7, -0.3, 0.0], atol=ROUND_OFF)
    assert not rig.bridge.latch.history


def test_the_bridge_arms_only_after_the_settle_time_since_the_last_refused_sample():
    rig = Rig()
    rig.run(0.1)
    t = rig.t
    names, raw = rig.encoder_message(t)
    rig.bridge.on_encoders(t, names[:-1], raw[:-1], [], t)        # refused: the wheel is missing
    t_active, _ = first(rig.run(0.5), lambda out: out.status == "active")
    assert t_active >= t + ARM_SETTLE_TIME - TIME_TOL


# --- 2. effort mapping --------------------------------------------------------------------------

def test_arm_torques_leave_with_hardware_signs_in_channel_order_saturated_at_the_urdf_effort_limit():
    tau = np.array([1.0, 2.0, -5.0, 0.5])   # joint3 asks beyond the 3 N m effort limit
    rig = Rig(controller=lambda t: Actuation(tau, np.array([0.2])))
    rig.arm()
    cmd = rig.step().command
    # Channels shoulder, elbow, wrist_pitch, wrist_roll; effort signs (= encoder signs in the
    # example) +1, -1, +1, -1.
    np.testing.assert_allclose(cmd.joint_efforts, [1.0, -2.0, -3.0, -0.5], atol=0.0)
    # reaction_wheel has sign -1: 0.2 N m leaves as -0.2 (within its 0.5 N m limit).
    np.testing.assert_allclose(cmd.wheels, [-0.2], atol=0.0)


def test_an_effort_sign_unlike_the_encoder_sign_turns_the_efforts_only():
    # The elbow's motor is wired the other way than its encoder: effort_sign +1, sign -1.
    cfg = example_variant(**{"encoders.joints.joint2.effort_sign": 1})
    tau = np.array([1.0, 2.0, -2.5, 0.5])
    truth = moving()
    rig = Rig(cfg, truth=truth, controller=lambda t: Actuation(tau, np.array([0.2])))
    out = rig.arm()
    np.testing.assert_allclose(out.joints.positions, truth(rig.t)[2], atol=ROUND_OFF)   # still read with -1
    np.testing.assert_allclose(rig.step().command.joint_efforts, [1.0, 2.0, -2.5, -0.5], atol=0.0)


def test_wheel_torques_are_saturated_at_the_wheel_max_torque():
    rig = Rig(controller=lambda t: Actuation(np.zeros(4), np.array([2.0])))
    rig.arm()
    np.testing.assert_allclose(rig.step().command.wheels, [-0.5], atol=0.0)   # max_torque 0.5 N m, sign -1


def test_speed_mode_wheels_integrate_torque_over_inertia_from_the_measured_speed():
    cfg = example_variant(**{"actuators.wheels.command": "speed"})
    torque, spin = 0.05, 20.0    # N m; rad/s, the wheel's speed when the bridge arms
    rig = Rig(cfg, truth=moving(qdot=(0, 0, 0, 0, spin)), controller=lambda t: Actuation(np.zeros(4), [torque]))
    # The wheel is a 0.5 kg, 0.07 m disc (urdf/planar_4link.urdf): J = m r^2 / 2 about its axis.
    J = 0.5 * 0.07**2 / 2
    setpoints = [-rig.arm().command.wheels[0]] + [-rig.step().command.wheels[0] for _ in range(25)]
    # From the measured speed (estimated from positions: exact at a constant rate), each tick
    # adds the torque's speed change over one period; the set-point integrates on from itself,
    # not from the measured speed (which stays at 20 rad/s: this wheel is scripted).
    expected = spin + torque / J * cfg.period * np.arange(1, 27)
    np.testing.assert_allclose(setpoints, expected, rtol=1e-6)


@pytest.mark.parametrize("input_name", ["capture", "encoders"])
def test_in_speed_mode_an_off_trip_for_stale_data_holds_the_wheel_at_its_last_measured_speed(input_name):
    # "off" means no torque on the base: a speed-mode wheel must keep its speed, not be stopped
    # (stopping 100 rad/s of a 1.2e-3 kg m^2 wheel hands 0.12 N m s to the base).
    cfg = example_variant(**{"actuators.wheels.command": "speed"})
    rig = Rig(cfg, truth=moving(qdot=(0, 0, 0, 0, 100.0)))
    rig.arm()
    rig.run(0.1)
    setattr(rig, input_name, False)
    tripped = [out for _, out in rig.run(0.1) if out.trip is not None]
    assert tripped and tripped[0].trip.kind == f"{input_name}_stale"
    for out in tripped:
        assert out.command.wheels[0] == pytest.approx(-100.0, abs=1e-6)


# --- 3. valves ----------------------------------------------------------------------------------

def test_a_constant_wrench_leaves_as_duty_cycles_once_per_pwm_period_in_the_boards_channel_order():
    cfg = example_testbed()
    # Base at yaw 90 deg: a world +y push is a base +x push, made by t3 and t5 (both along base
    # +x, at y = +-0.175 m: no torque), 0.3 N each of their 0.6 N, duty 0.5.
    push = np.array([0.0, 0.6, 0.0])
    rig = Rig(truth=moving(yaw0=math.pi / 2), controller=lambda t: Actuation(base_wrench_world=push))
    armed = rig.arm()
    assert armed.command.thrusters is not None        # at once when the bridge starts forwarding
    log = rig.run(0.6)
    sent = [(t, out.command.thrusters) for t, out in log if out.command.thrusters is not None]
    # Then one command at each PWM period start (every 0.1 s = 25 ticks), None on the ticks between.
    starts = [t for t, _ in sent]
    np.testing.assert_allclose(starts, [0.3, 0.4, 0.5, 0.6, 0.7, 0.8], atol=TIME_TOL)
    channels = list(cfg.actuators.thrusters.channels)
    assert channels == ["t1", "t3", "t5", "t7", "t2", "t4", "t6", "t8"]
    for duty in [armed.command.thrusters] + [duty for _, duty in sent]:
        assert duty.shape == (8,) and np.all((duty >= 0) & (duty <= 1))
        expected = np.zeros(8)
        expected[channels.index("t3")] = expected[channels.index("t5")] = 0.5   # wire slots 1 and 2
        np.testing.assert_allclose(duty, expected, atol=1e-9)


def test_the_duty_is_the_allocation_of_the_period_mean_of_the_requests_not_a_sample_of_them():
    # 20 ticks per PWM period (0.08 s at 250 Hz): an alternating request then averages exactly.
    cfg = example_variant(**{"actuators.thrusters.pwm_period": 0.08})
    mean = np.array([0.3, 0.0, 0.0])            # world, base at yaw 0: t3 + t5 at 0.15 N each
    swing = np.array([0.0, 0.9, 0.1])           # +-, tick by tick (estimate noise through the gains)
    rig = Rig(cfg, truth=moving(yaw0=0.0),
              controller=lambda t: Actuation(base_wrench_world=mean + (-1) ** round(t / cfg.period) * swing))
    rig.arm()
    sent = [out.command.thrusters for _, out in rig.run(0.6) if out.command.thrusters is not None]
    # The first command after arming averages a partial period: judge the full periods.
    full = sent[1:]
    assert len(full) >= 5
    expected = ThrusterAllocator(cfg.robot).allocate(mean).forces
    np.testing.assert_allclose(expected[[2, 4]], 0.15, atol=1e-6)    # the allocation the claim names
    for duty in full:
        np.testing.assert_allclose(valve_forces(cfg, duty), expected, atol=1e-6)


def test_requests_that_alternate_sign_every_tick_fire_no_valve():
    # The anti-aliasing claim: a period mean of 0 gives duty 0, whereas sampling one tick would
    # fire half the valves at 0.5 N for the whole period.
    cfg = example_variant(**{"actuators.thrusters.pwm_period": 0.08})
    w = np.array([0.4, -0.3, 0.05])
    rig = Rig(cfg, controller=lambda t: Actuation(base_wrench_world=(-1) ** round(t / cfg.period) * w))
    rig.arm()
    sent = [out.command.thrusters for _, out in rig.run(0.6) if out.command.thrusters is not None]
    assert len(sent[1:]) >= 5
    for duty in sent[1:]:
        np.testing.assert_array_equal(duty, np.zeros(8))


def test_in_bits_mode_each_valve_is_open_for_its_pwm_on_time_from_the_period_start():
    cfg = example_variant(**{"actuators.thrusters.command": "bits", "actuators.thrusters.pwm_period": 0.1,
                     "actuators.thrusters.min_on_time": 0.008})
    # t3 and t5 at 0.156 N of 0.6: on for 0.026 s of each 0.1 s period (between ticks, so the
    # count of open ticks, 7 at 4 ms, does not hang on float rounding).
    push = np.array([0.312, 0.0, 0.0])
    rig = Rig(cfg, truth=moving(yaw0=0.0), controller=lambda t: Actuation(base_wrench_world=push))
    rig.arm()
    log = rig.run_until(0.6)
    channels = list(cfg.actuators.thrusters.channels)
    slots = [channels.index("t3"), channels.index("t5")]
    others = [i for i in range(8) if i not in slots]
    # Bits go out every tick (the board holds them until the next).
    assert all(out.command.thrusters is not None for _, out in log)
    on_time = 0.156 / 0.6 * 0.1
    for t, out in log:
        bits = out.command.thrusters
        phase = t - math.floor(t / 0.1 + 1e-9) * 0.1
        assert set(np.unique(bits)) <= {0.0, 1.0}
        assert not bits[others].any(), f"t={t:.3f}: {bits}"
        np.testing.assert_array_equal(bits[slots], float(phase < on_time), err_msg=f"t={t:.3f}")
    # The first full period (from the next 0.1 s boundary) opens t3 and t5 for ceil(26 / 4) ticks.
    period = [out.command.thrusters[slots[0]] for t, out in log if 0.4 - TIME_TOL <= t < 0.5 - TIME_TOL]
    assert sum(period) == math.ceil(on_time / cfg.period - 1e-9) == 7


# --- 4. safety reactions at the wire ------------------------------------------------------------

def test_an_off_trip_sends_zero_efforts_zero_wheel_torque_and_shut_valves_on_the_very_same_tick():
    busy = Actuation(np.array([1.0, -1.0, 0.5, 0.2]), np.array([0.3]), base_wrench_world=np.array([0.5, 0.2, 0.05]))
    rig = Rig(controller=lambda t: busy)
    rig.arm()
    rig.run(0.05)
    cmd = rig.step().command
    assert cmd.joint_efforts.any() and cmd.wheels.any()     # forwarding the controller until now
    rig.bridge.estop(rig.t, "operator")
    out = rig.step()
    assert out.status == "tripped" and out.trip.kind == "estop" and out.trip.reaction == "off"
    np.testing.assert_array_equal(out.command.joint_efforts, np.zeros(4))
    np.testing.assert_array_equal(out.command.wheels, np.zeros(1))
    # Mid PWM period, yet the valves are commanded shut now (not left to finish their pulse).
    assert out.command.thrusters is not None
    np.testing.assert_array_equal(out.command.thrusters, np.zeros(8))


def test_a_brake_trip_damps_the_joints_and_pushes_the_base_against_its_velocity():
    cfg = example_testbed()
    v = np.array([0.2, 0.05])            # m/s world: over the 0.15 m/s limit, far from any edge
    qdot = np.array([0.3, -0.2, 0.1, 0.4, 0.0])
    rig = Rig(truth=moving(p0=(-0.5, 0.0), v=v, yaw0=0.4, qdot=qdot),
              controller=lambda t: Actuation(np.full(4, 2.0), base_wrench_world=np.array([1.0, 1.0, 0.0])))
    log = rig.run(0.5)
    t_trip, out = first(log, lambda out: out.trip is not None)
    assert out.trip.kind == "base_speed" and out.trip.reaction == "brake" and out.status == "tripped"
    assert t_trip == pytest.approx(ARM_SETTLE_TIME, abs=cfg.period)   # checked from the moment it arms
    signs = np.array([c.effort_sign for c in cfg.encoders.channels])
    for t, out in log:
        if out.trip is None:
            continue
        tau = signs[:4] * out.command.joint_efforts          # back to URDF convention
        # Damping: the efforts take power out of the arm, whatever the controller asked.
        assert tau @ qdot[:4] < 0.0, f"t={t:.3f}: efforts {tau} do not oppose the joint rates {qdot[:4]}"
        assert not out.command.wheels.any()
    # The valves fire at once (the trip's tick) and then once per period, against the motion.
    sent = [(t, out.command.thrusters) for t, out in log if out.trip is not None and out.command.thrusters is not None]
    assert sent[0][0] == pytest.approx(t_trip)
    B = thruster_matrix(cfg.robot)
    for t, duty in sent:
        local = B @ valve_forces(cfg, duty)
        force = yaw_matrix(0.4)[:2, :2] @ local[:2]         # base axes -> world
        cos = force @ v / (np.linalg.norm(force) * np.linalg.norm(v))
        # Against the motion, though not exactly: the request (4/s x 19.5 kg x 0.2 m/s, far
        # beyond the valves' 1.2 N) also asks for the torque that stops the arm's off-centre
        # mass without spinning the base, and the saturated allocation trades some of the
        # force's direction for it (about 35 deg here). Within 45 deg of straight against it:
        assert cos < -math.cos(math.radians(45)), f"t={t:.3f}: braking force {force} vs velocity {v}"


# --- 5. watchdogs -------------------------------------------------------------------------------

@pytest.mark.parametrize("input_name, kind", [("capture", "capture_stale"), ("encoders", "encoders_stale"),
                                              ("commands", "commands_stale")])
def test_an_input_silent_for_longer_than_its_timeout_trips_within_one_tick_after_the_timeout(input_name, kind):
    rig = Rig()
    cfg = rig.cfg
    timeout = {"capture": cfg.capture.timeout, "encoders": cfg.encoders.timeout,
               "commands": cfg.command_timeout}[input_name]
    rig.arm()
    rig.run(0.2)
    setattr(rig, input_name, False)
    log = rig.run(0.2)
    last = getattr(rig, f"last_{input_name}" if input_name != "commands" else "last_command")
    t_trip, out = first(log, lambda out: out.trip is not None)
    assert out.trip.kind == kind and out.trip.reaction == "off"
    # Trips at the first tick past the timeout (TIME_TOL: k * period rounding at the boundary).
    assert last + timeout - TIME_TOL < t_trip <= last + timeout + cfg.period + TIME_TOL
    assert not out.command.joint_efforts.any() and not out.command.thrusters.any()
    assert all(o.status == "active" for t, o in log if t < t_trip)


def test_a_repeated_encoder_message_does_not_feed_the_watchdog():
    rig = Rig()
    rig.arm()
    rig.run(0.2)
    refused = rig.bridge.stats.rejected.total
    rig.repeat_encoders = True               # a hung driver: same stamp, same values, every tick
    log = rig.run(0.2)
    t_trip, out = first(log, lambda out: out.trip is not None)
    assert out.trip.kind == "encoders_stale"
    assert rig.last_encoders + rig.cfg.encoders.timeout - TIME_TOL < t_trip
    assert t_trip <= rig.last_encoders + rig.cfg.encoders.timeout + rig.cfg.period + TIME_TOL
    # Not new data, and not an error either: nothing refused, nothing invalid.
    assert rig.bridge.stats.rejected.total == refused
    assert [trip.kind for trip in rig.bridge.latch.history] == ["encoders_stale"]


# --- 6. refusals counted, not raised ------------------------------------------------------------

def test_a_nan_capture_sample_is_refused_and_trips_capture_invalid():
    rig = Rig()
    rig.arm()
    t = rig.t
    position, quat = rig.capture_sample(t)
    rig.bridge.on_capture(t, [np.nan, *position[1:]], quat, t)
    assert rig.bridge.stats.rejected.counts["nan"] == 1
    out = rig.step()
    assert out.trip.kind == "capture_invalid" and "NaN" in out.trip.reason
    assert out.status == "tripped" and not out.command.thrusters.any()


def test_an_encoder_message_missing_a_joint_is_refused_and_the_trip_names_it():
    rig = Rig()
    rig.arm()
    t = rig.t
    names, raw = rig.encoder_message(t)
    keep = [i for i, n in enumerate(names) if n != "elbow"]
    rig.bridge.on_encoders(t, [names[i] for i in keep], raw[keep], [], t)
    assert rig.bridge.stats.rejected.counts["missing"] == 1
    out = rig.step()
    assert out.trip.kind == "encoders_invalid" and "elbow" in out.trip.reason


@pytest.mark.parametrize("skew", [2.0, -2.0], ids=["2s-ahead", "2s-behind"])
def test_a_capture_stamp_from_another_clock_is_refused_and_then_the_watchdog_decides(skew):
    rig = Rig(start=3.0)        # a clock at 3 s: a stamp 2 s behind is still > 0 (0 means unset)
    rig.arm()
    rig.capture = False
    last = rig.last_capture
    for _ in range(int(0.2 / rig.cfg.period)):
        t = rig.t
        rig.bridge.on_capture(t + skew, *rig.capture_sample(t), t)
        out = rig.step()
        if t - last <= rig.cfg.capture.timeout:
            assert out.status == "active", "a refused stamp trips nothing by itself"
    rejected = rig.bridge.stats.rejected
    assert rejected.counts["clock"] == 50                 # one per tick, every one refused
    assert "stamp: receipt" in rejected.last and f"{-skew:+.3f} s" in rejected.last
    # The samples never fed the watchdog: the capture went stale on time.
    trip = rig.bridge.latch.history[0]
    assert trip.kind == "capture_stale"
    assert last + rig.cfg.capture.timeout - TIME_TOL < trip.time <= last + rig.cfg.capture.timeout + rig.cfg.period


def test_a_non_unit_quaternion_is_refused():
    rig = Rig()
    rig.arm()
    t = rig.t
    position, quat = rig.capture_sample(t)
    rig.bridge.on_capture(t, position, 1.01 * quat, t)      # norm 1.01, beyond the 1e-3 tolerance
    assert rig.bridge.stats.rejected.counts["quaternion"] == 1
    assert "unit quaternion" in rig.bridge.stats.rejected.last
    assert rig.step().trip.kind == "capture_invalid"


def test_refused_messages_before_arming_are_counted_but_trip_nothing():
    rig = Rig()
    rig.run(0.1)
    t = rig.t
    position, _ = rig.capture_sample(t)
    rig.bridge.on_capture(t, position, [np.nan] * 4, t)
    names, raw = rig.encoder_message(t)
    rig.bridge.on_encoders(t, names[:-1], raw[:-1], [], t)
    assert rig.bridge.stats.rejected.total == 2
    assert rig.step().status == "waiting" and not rig.bridge.latch.history


# --- 7. frame check -----------------------------------------------------------------------------

@pytest.mark.parametrize("truth", [
    lambda t: (np.array([0.4, -0.3, 0.2]), yaw_matrix(0.7), np.array([*READY, 0.0])),
    lambda t: (np.array([0.4, -0.3, 0.0]), pin.exp3(np.array([math.pi / 2, 0.0, 0.0])), np.array([*READY, 0.0])),
], ids=["0.2m-above-the-table", "tilted-90deg"])
def test_a_capture_pose_off_the_table_is_refused_and_the_bridge_never_arms(truth):
    rig = Rig(truth=truth)
    log = rig.run(0.5)
    assert rig.bridge.stats.rejected.counts["frame"] == 50      # every sample: 100 Hz for 0.5 s
    trip = rig.bridge.latch.active
    assert trip.kind == "capture_frame" and trip.time == 0.0 and "capture.axes" in trip.reason
    assert all(out.status == "tripped" for _, out in log)
    assert all(not out.command.joint_efforts.any() for _, out in log)
    ok, message = rig.bridge.reset(rig.t)
    assert not ok and "capture.axes" in message


# --- 8. wheel unwrapping ------------------------------------------------------------------------

COUNT = 2 * math.pi / 4096                 # rad: the drivers' 12-bit encoders


def spinning_wheel_rig(spin: float) -> Rig:
    """The example testbed (velocities: estimate) with the wheel at ``spin`` rad/s, read by a
    12-bit encoder modulo 2 pi."""
    rig = Rig(truth=moving(qdot=(0, 0, 0, 0, spin)))
    exact = rig.encoder_message

    def quantized(t):
        names, raw = exact(t)
        return names, np.round(raw / COUNT) * COUNT
    rig.encoder_message = quantized
    return rig


def assert_wheel_tracked(log, spin: float) -> None:
    wheel = example_testbed().robot.joint_names.index("wheel_z_joint")
    ticks = [(t, out) for t, out in log if out.joints is not None]
    rates = np.array([out.joints.velocities[wheel] for _, out in ticks])
    angles = np.array([out.joints.positions[wheel] - (2.5 + spin * t) for t, out in ticks])
    # A single 2 pi slip would take 2 pi / 4 ms = 1571 rad/s from one reading's rate (the filter
    # spreads it over the next readings, still off by ~200 rad/s) and leave a 2 pi offset in the
    # angle; quantization (1.5 mrad) alone moves the rate by a few 0.1 rad/s at most and the
    # angle by about one count.
    assert np.abs(rates - spin).max() < 1.0, f"rate off by up to {np.abs(rates - spin).max():.1f} rad/s"
    assert np.abs(angles).max() < 5 * COUNT


@pytest.mark.parametrize("spin", [300.0, -300.0])
def test_a_fast_wheel_read_modulo_two_pi_is_estimated_at_its_speed(spin):
    assert example_testbed().encoders.velocities == "estimate"
    # 300 rad/s at 250 Hz: 1.2 rad between readings, under the pi that unwrapping can tell apart.
    rig = spinning_wheel_rig(spin)
    rig.run(0.1)                                      # the rate filter starts from two readings
    log = rig.run(0.4)
    assert_wheel_tracked(log, spin)
    assert all(out.status == "active" for t, out in log if t >= ARM_SETTLE_TIME)


def test_a_fast_wheel_keeps_its_speed_estimate_through_one_lost_encoder_message():
    # 450 rad/s (under the 570 rad/s limit): 1.8 rad a reading, 3.6 rad across a lost one.
    rig = spinning_wheel_rig(450.0)
    rig.arm()
    rig.run(0.1)
    rig.encoders = False
    rig.step()
    rig.encoders = True
    assert_wheel_tracked(rig.run(0.2), 450.0)


# --- 9. reset -----------------------------------------------------------------------------------

def test_reset_is_refused_while_an_input_is_stale_and_accepted_once_fresh_for_the_settle_time():
    rig = Rig()
    rig.arm()
    rig.run(0.2)
    rig.capture = False
    rig.run(0.2)
    assert rig.bridge.latch.active.kind == "capture_stale"
    ok, message = rig.bridge.reset(rig.t)
    assert not ok and "capture stale" in message
    rig.capture = True
    resumed = rig.t
    rig.run(0.1)
    ok, message = rig.bridge.reset(rig.t)
    assert not ok and "fresh for less than" in message
    rig.run_until(resumed + ARM_SETTLE_TIME + 2 * rig.cfg.period)
    ok, message = rig.bridge.reset(rig.t)
    assert ok and "capture_stale" in message, message
    assert rig.step().status == "active"


def test_reset_is_refused_until_the_data_has_been_steady_for_the_settle_time_after_a_refused_sample():
    rig = Rig()
    rig.arm()
    t_bad = rig.t
    names, raw = rig.encoder_message(t_bad)
    raw[1] = np.nan
    rig.bridge.on_encoders(t_bad - 1e-3, names, raw, [], t_bad)
    assert rig.step().trip.kind == "encoders_invalid"
    rig.run(0.1)
    ok, message = rig.bridge.reset(rig.t)
    assert not ok and "refused" in message and "NaN" in message, message
    rig.run_until(t_bad + ARM_SETTLE_TIME + rig.cfg.period)
    ok, message = rig.bridge.reset(rig.t)
    assert ok, message
    assert rig.step().status == "active"


def test_reset_is_refused_while_the_base_still_heads_for_the_table_edge():
    # +x at 0.05 m/s from x = 1.05 (footprint 0.30 m, edge at 1.5 m, margin 0.1 m; 0.026 m to
    # stop): the geofence trips at x = 1.074 (t = 0.49 s, after arming at 0.25 s); the base stops
    # at x = 1.08 (t = 0.6 s), 0.12 m from the edge, outside the margin.
    def truth(t):
        x = 1.05 + 0.05 * min(t, 0.6)
        return np.array([x, 0.0, 0.0]), yaw_matrix(0.0), np.array([*READY, 0.0])
    rig = Rig(truth=truth)
    log = rig.run_until(0.55)
    t_trip, out = first(log, lambda out: out.trip is not None)
    assert out.trip.kind == "geofence" and "+x" in out.trip.reason and 0.45 < t_trip < 0.55
    ok, message = rig.bridge.reset(rig.t)
    assert not ok and "geofence" in message and "+x" in message, message
    rig.run_until(1.4)                       # at rest for 0.8 s: the velocity estimate has settled
    ok, message = rig.bridge.reset(rig.t)
    assert ok, message
    assert rig.step().status == "active"


def test_reset_is_refused_while_the_controller_is_still_silent():
    rig = Rig()
    rig.arm()
    rig.commands = False
    rig.run(0.1)
    assert rig.bridge.latch.active.kind == "commands_stale"
    ok, message = rig.bridge.reset(rig.t)
    assert not ok and "controller" in message, message
    rig.commands = True
    rig.run(0.02)
    ok, message = rig.bridge.reset(rig.t)
    assert ok, message
    assert rig.step().status == "active"


def test_reset_with_nothing_tripped_is_a_no_op():
    rig = Rig()
    rig.arm()
    assert rig.bridge.reset(rig.t) == (True, "nothing to reset")


# --- 10. braking acceleration -------------------------------------------------------------------

def test_brake_acceleration_of_planar_4link_is_two_thrusters_over_the_total_mass():
    ff = example_testbed().robot
    a = brake_acceleration(ff)
    # A pure base x push: the two thrusters along +x (t3, t5, 0.6 N each; the +-y pair makes no
    # x force). The bisection resolves 4.8 N / 2^30 = 4.5e-9 N, far inside 1e-6 relative.
    assert a == pytest.approx(2 * 0.6 / ff.total_mass, rel=1e-6)
    # ...and it is the weakest direction: every horizontal direction (including ones between
    # the 15 deg grid) can brake at least that hard without torque.
    allocator = ThrusterAllocator(ff)
    for angle in np.radians(np.arange(0.0, 360.0, 7.0)):
        u = np.array([math.cos(angle), math.sin(angle), 0.0])
        assert not allocator.allocate(a * ff.total_mass * u).saturated, f"{math.degrees(angle):.0f} deg"


def test_without_a_controller_the_bridge_arms_and_forwards_zero_commands_until_one_speaks():
    # On blocks, or before the controller has started: nothing to be silent about yet. The
    # controller watchdog starts with its first command.
    rig = Rig()
    rig.commands = False
    log = rig.run(1.0)
    assert log[-1][1].status == "active" and not rig.bridge.latch.history
    assert all(not out.command.joint_efforts.any() for _, out in log)
    rig.commands = True
    rig.run(0.1)
    rig.commands = False
    rig.run(0.1)
    assert rig.bridge.latch.active.kind == "commands_stale"


def test_a_cause_that_persists_is_recorded_once_per_latch():
    rig = Rig()
    rig.arm()
    rig.bridge.estop(rig.t)
    rig.capture = False
    rig.run(1.0)  # capture stale for ~1 s under the e-stop: one more trip, not one per tick
    assert [trip.kind for trip in rig.bridge.latch.history] == ["estop", "capture_stale"]


# --- 9. clock steps (a restarted simulation clock, a looping bag, an NTP step) -----------------

def _assert_off(out: BridgeOutput) -> None:
    assert out.status == "tripped" and out.trip.reaction == "off"
    assert not out.command.joint_efforts.any() and not out.command.wheels.any()
    assert out.command.thrusters is not None and not out.command.thrusters.any()


def test_a_backwards_clock_step_trips_the_armed_bridge_at_once_and_a_reset_succeeds_after_the_settle_time():
    rig = Rig(controller=lambda t: Actuation(np.full(4, 0.5), np.zeros(1), np.zeros(0), np.array([0.5, 0.0, 0.0])))
    rig.arm()
    rig.run(0.2)
    rig.clock_offset = -10.0
    out = rig.step()
    # The first sample of the tick already reads 10 s less one period than the last tick did.
    assert out.trip.kind == "clock_step" and out.trip.reason == "clock stepped back by 9.996 s"
    _assert_off(out)
    assert rig.bridge.stats.clock_steps == 1
    rig.run(0.02)  # a capture sample and encoder messages on the new clock
    ok, message = rig.bridge.reset(rig.t + rig.clock_offset)
    assert not ok and "inputs fresh for less than 0.25 s" in message
    rig.run(0.28)
    # The estimators restarted on the new clock: no sample refused as out of order.
    assert "out_of_order" not in rig.bridge.stats.rejected.counts
    ok, message = rig.bridge.reset(rig.t + rig.clock_offset)
    assert ok and "clock_step" in message
    assert rig.step().status == "active"


def test_a_backwards_clock_step_with_inputs_stopped_keeps_everything_off_for_longer_than_the_step():
    rig = Rig()
    rig.arm()
    rig.capture = rig.encoders = False
    rig.clock_offset = -10.0
    log = rig.run(11.0)
    assert log[0][1].trip.kind == "clock_step"
    for _, out in log:
        _assert_off(out) if out.command.thrusters is not None else None
        assert out.status == "tripped" and not out.command.joint_efforts.any()
    ok, message = rig.bridge.reset(rig.t + rig.clock_offset)
    assert not ok and "capture never received" in message


def test_a_forward_clock_jump_trips_clock_step():
    rig = Rig()
    rig.arm()
    rig.clock_offset = 10.0
    out = rig.step()
    assert out.trip.kind == "clock_step" and out.trip.reason.startswith("clock jumped forward by 10.004 s")
    _assert_off(out)


def test_the_estop_latch_survives_a_clock_step():
    rig = Rig()
    rig.arm()
    rig.bridge.estop(rig.t, "operator")
    rig.step()
    rig.clock_offset = -10.0
    log = rig.run(0.5)
    assert all(out.trip.kind == "estop" for _, out in log)
    assert [trip.kind for trip in rig.bridge.latch.history] == ["estop", "clock_step"]


def test_encoder_stamps_that_step_back_alone_trip_within_the_timeout_and_are_reacquired_not_refused_forever():
    # 0.3 s back: inside the 0.5 s the stamp may differ from the bridge clock, so only the
    # estimator's ordering can see it. Refused as out of order until the encoders have been
    # silent for their timeout (one late message is not a clock step), then re-acquired.
    rig = Rig(start=3.0)        # stamps 0.3 s back stay > 0 (0 means unset)
    rig.arm()
    rig.encoders = False
    last = rig.last_encoders
    for _ in range(100):
        t = rig.t
        rig.bridge.on_encoders(t - 0.3, *rig.encoder_message(t), [], t)
        rig.step()
    # The message that finds the encoders stale (their timeout after the last accepted one)
    # trips and restarts from scratch: the trip comes when the stale trip would have.
    (step,) = rig.bridge.latch.history
    assert step.kind == "clock_step" and step.reason.startswith("encoders stamps stepped back by 0.280 s")
    assert last + rig.cfg.encoders.timeout - TIME_TOL < step.time <= last + rig.cfg.encoders.timeout + rig.cfg.period
    assert 1 <= rig.bridge.stats.rejected.counts["out_of_order"] <= 5   # at most the timeout's worth
    assert rig.bridge.joint_estimator.t == pytest.approx(rig.t - rig.cfg.period - 0.3)
    assert rig.bridge.reset(rig.t)[0]


def test_one_late_encoder_message_is_refused_as_out_of_order_and_trips_nothing():
    rig = Rig(start=3.0)
    rig.arm()
    t = rig.t
    rig.bridge.on_encoders(t - 0.3, *rig.encoder_message(t - 0.3), [], t)
    assert rig.bridge.stats.rejected.counts["out_of_order"] == 1
    assert all(out.status == "active" for _, out in rig.run(0.2))


@pytest.mark.parametrize("now", [np.nan, np.inf])
def test_a_time_that_is_not_a_time_trips_the_armed_bridge_and_raises_nothing(now):
    rig = Rig()
    rig.arm()
    rig.bridge.on_capture(now, *rig.capture_sample(rig.t), now)
    out = rig.bridge.tick(now)
    assert out.trip.kind == "clock_step" and out.trip.reason == f"clock reads {now} s"
    _assert_off(out)


# --- 10. finite but absurd values, duplicated names, internal faults ----------------------------

@pytest.mark.parametrize("source, value, words", [
    ("encoder position", 1e308, "joint joint2 at -1e+308 rad, outside the plausible"),
    ("encoder position", 40.0, "joint joint2 at -39.5 rad, outside the plausible [-5.642, 5.642] rad"),
    ("capture position", 1e308, "capture: base 1e+308 m from the world origin"),
])
def test_a_finite_but_absurd_sample_is_refused_as_implausible_and_trips_the_armed_bridge(source, value, words):
    rig = Rig()
    rig.arm()
    t = rig.t
    if source == "capture position":
        # Along the capture system's own x axis, which is world x for this config's y-up mapping.
        _, quat = rig.capture_sample(t)
        rig.bridge.on_capture(t, [value, 0.0, 0.0], quat, t)
    else:
        names, raw = rig.encoder_message(t)
        raw[names.index("elbow")] = value      # joint2: sign -1, offset 0.5 rad
        rig.bridge.on_encoders(t, names, raw, [], t)
    assert rig.bridge.stats.rejected.counts["implausible"] == 1
    assert words in rig.bridge.stats.rejected.last, rig.bridge.stats.rejected.last
    out = rig.step()
    assert out.trip.kind.endswith("_invalid") and words in out.trip.reason
    _assert_off(out)


def test_an_encoder_message_with_a_duplicated_name_is_refused_as_the_controller_refuses_it():
    rig = Rig()
    rig.arm()
    t = rig.t
    names, raw = rig.encoder_message(t)
    rig.bridge.on_encoders(t, [*names, names[0]], [*raw, raw[0]], [], t)
    assert rig.bridge.stats.rejected.counts["duplicate"] == 1
    assert f"encoders names repeat a joint: {[*names, names[0]]}" in rig.bridge.stats.rejected.last
    assert rig.step().trip.kind == "encoders_invalid"


def test_a_bridge_tick_that_raises_trips_fault_and_sends_the_safe_commands():
    rig = Rig(controller=lambda t: Actuation(np.full(4, 0.5), np.zeros(1), np.zeros(0), np.array([0.5, 0.0, 0.0])))
    rig.arm()

    def broken(*args):
        raise ValueError("time went backwards")
    rig.bridge._command = broken
    out = rig.step()
    assert out.trip.kind == "fault" and out.trip.reason == "bridge tick raised ValueError: time went backwards"
    _assert_off(out)
    assert rig.bridge.stats.faults == 1
