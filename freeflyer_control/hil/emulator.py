"""The testbed emulator: the hardware interface of an air-bearing testbed around the simulated plant.

It speaks exactly what a testbed config (:mod:`freeflyer_control.hil.config`) describes, so the
bridge can be tested end to end without hardware: marker-body poses in the capture system's own
axes and units, encoder readings with the drivers' names, signs and offsets, efforts and valve
commands in wire order and hardware signs. ``config.emulator`` (see :class:`EmulatorSettings`)
says how imperfect the emulated hardware is. All times are emulated seconds; times closer than
``TIME_TOL`` (1 ns) count as equal, so that ``k / rate`` rounding never moves an event by a step.

Time. :meth:`TestbedEmulator.advance` steps the plant at ``plant_rate`` (zero-order hold over each
step); commands, valves and faults are evaluated at the start of each step, so every on-time and
window is quantized to the plant step. A command arriving between steps acts from the next step.

Sensors. Capture samples are stamped ``k / capture.rate`` (first at t = 0), encoder samples
``k / encoders.rate``; each is taken from the plant state at the first plant step at or after its
stamp (exact when the sensor rate divides the plant rate, else up to one step late) and is
delivered ``latency`` later. Capture: true base_link pose -> + noise (planar: x, y and yaw only)
-> the TRUE capture transform (the config's, with ``settings.capture_axes`` if given) .from_world.
Encoders: ``raw = sign * q + offset``, quantized to ``2 pi / counts_per_rev`` (in m for a
prismatic joint); velocities ``sign * qdot`` + noise, or none when the config says ``estimate``.

Joint and wheel drivers hold their last command until replaced; a command that arrived more than
``command_timeout`` ago is zeroed by the driver's own watchdog (zero torque: in ``speed`` mode too,
the wheel then coasts). ``speed`` mode runs the driver's loop ``torque = J_w gain (w_cmd - w)``,
``J_w`` the wheel's inertia about its axis, ``w`` its speed relative to the base.

Valve board. ``duty``: each command starts one PWM period at its arrival: valve i is commanded
open for ``duty_i * pwm_period`` from the arrival, then closed until the next command. It does not
repeat (a silent bridge leaves the valves shut), and a new command ends the current period early
(a zero command shuts the valves at once), so the bridge must send one command per PWM period.
A duty > 0 whose on-time is below ``min_on_time`` still opens the valve for ``min_on_time`` (the
bridge is supposed to respect the minimum itself). ``bits``: bit i commands valve i open (1) or
closed (0) from the arrival until the next command, with no timeout. Each valve's physical state
follows its commanded state ``valve_delay`` later (opening and closing); an open valve pushes with
exactly its thruster's max_force (on/off, no partial force).

Divergence. If the plant's integration diverges (see :mod:`freeflyer_control.physics.plant`),
the plant holds its last finite state, :attr:`TestbedEmulator.diverged` says why, time still
advances and the sensors fall silent (a dead testbed sends nothing, and nothing non-finite):
the bridge trips on the silence within its timeouts, and :func:`~freeflyer_control.hil.runner.run_hil`
also e-stops it at once with the reason.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pinocchio as pin

from freeflyer_control.inputs.mappings import nearest
from freeflyer_control.inputs.values import shown
from freeflyer_control.physics.actuators import Actuation, applied_actuation, generalized_forces, world_wrench_to_local
from freeflyer_control.physics.plant import PlantDiverged
from freeflyer_control.physics.state import (
    State,
    base_position,
    base_rotation,
    joint_positions,
)

from freeflyer_control.physics.kernels.plant import make_plant
from .config import TestbedConfig
from .emulator_settings import EmulatorSettings

TIME_TOL = 1e-9  # s: event times closer than this are equal (float rounding of k / rate)
FAULT_KINDS = ("capture_dropout", "capture_jump", "encoder_nan", "encoder_freeze", "push")

@dataclass(frozen=True)
class CaptureSample:
    """One geometry_msgs/PoseStamped as the capture system sends it (arrays read-only)."""

    stamp: float                 # s, sample time (the header stamp)
    delivery: float              # s, when it reaches the subscriber (stamp + latency)
    position: np.ndarray         # (3,), capture frame, capture units
    orientation_xyzw: np.ndarray  # (4,), marker body in the capture frame


@dataclass(frozen=True)
class EncoderSample:
    """One sensor_msgs/JointState as the drivers send it (arrays read-only)."""

    stamp: float
    delivery: float
    names: tuple[str, ...]       # hardware names, config channel order
    positions: np.ndarray        # raw = sign * q_urdf + offset, quantized
    velocities: np.ndarray       # sign * qdot (+ noise); empty when config.encoders.velocities == estimate


@dataclass(frozen=True)
class Fault:
    """A hardware fault during [start, start + duration), s (see FAULT_KINDS).

    capture_dropout: no capture samples. capture_jump: ``offset`` (m, world) added to the reported
    base position (swapped markers). encoder_nan: ``joint`` (URDF name) reads NaN. encoder_freeze:
    the drivers republish their last message unchanged (same stamp). push: ``offset`` is a force
    (N, world axes; planar: fx, fy) on the base at the base_link origin (e.g. a dragging hose).
    """

    kind: str
    start: float
    duration: float
    joint: str = ""
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind '{self.kind}'; valid kinds: {list(FAULT_KINDS)}")
        if not (np.isfinite(self.start) and np.isfinite(self.duration) and self.duration >= 0):
            raise ValueError(f"fault {self.kind}: start must be finite and duration finite and >= 0 (s), "
                             f"got start={self.start}, duration={self.duration}")
        offset = np.asarray(self.offset, dtype=float)
        if offset.shape != (3,) or not np.isfinite(offset).all():
            raise ValueError(f"fault {self.kind}: offset must be 3 finite numbers (world x, y, z), got {self.offset!r}")
        object.__setattr__(self, "offset", tuple(float(x) for x in offset))

    def active(self, t: float) -> bool:
        return self.start - TIME_TOL <= t < self.start + self.duration - TIME_TOL


class _Commands:
    """Commands by arrival time. ``at(t)`` (t non-decreasing) is the newest (arrival, value)
    arrived by t; older ones are dropped, and so is a late command that arrives out of order."""

    def __init__(self, zero: np.ndarray):
        self._items = [(-np.inf, zero)]

    def push(self, arrival: float, value: np.ndarray) -> None:
        bisect.insort(self._items, (arrival, value), key=lambda item: item[0])

    def at(self, t: float) -> tuple[float, np.ndarray]:
        while len(self._items) > 1 and self._items[1][0] <= t + TIME_TOL:
            self._items.pop(0)
        return self._items[0]


def _readonly(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.setflags(write=False)  # samples may be republished (encoder_freeze): shared, never changed


class TestbedEmulator:
    """The testbed's hardware interface around a :class:`Plant` (see the module docstring).

    Args:
        config: the testbed config (its robot carries the testbed's thruster layout).
        state: the initial true state.
        settings: default ``EmulatorSettings.from_mapping(config.emulator)``.
        faults: faults to inject (more with :meth:`add_fault`).
        seed: seed of every noise and dropout draw (deterministic).
        compiled: step the plant on the compiled kernel (:mod:`freeflyer_control.physics.kernels.plant`): True (raises
            if it cannot), None (when numba is installed and covers the robot), False (the
            Python ``Plant``, the default). The two agree to round-off; ``plant_note`` says
            which one runs.
    """

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, config: TestbedConfig, state: State, *, settings: EmulatorSettings | None = None,
                 faults: Sequence[Fault] = (), seed: int = 0, compiled: bool | None = False):
        ff = config.robot
        if state.q.shape != (ff.model.nq,) or state.v.shape != (ff.model.nv,):
            raise ValueError(f"state must have q ({ff.model.nq},) and v ({ff.model.nv},) for robot '{ff.name}'; "
                             f"got {state.q.shape}, {state.v.shape}")
        self.config, self.ff = config, ff
        self.settings = settings if settings is not None else EmulatorSettings.from_mapping(config.emulator)
        s = self.settings
        tf = config.capture.transform
        self.capture_transform = replace(tf, axes=s.capture_axes) if s.capture_axes is not None else tf
        self._dt = 1.0 / s.plant_rate
        self._plant, self.plant_note = make_plant(ff, state, self._dt, compiled=compiled)
        self._steps = 0
        self.diverged: str | None = None
        self._rng = np.random.default_rng(seed)
        self._faults: list[Fault] = []
        for fault in faults:
            self.add_fault(fault)

        enc = config.encoders.channels
        self._names = tuple(c.name for c in enc)
        self._channel = {c.joint: i for i, c in enumerate(enc)}
        self._q_idx = np.array([ff.joint_names.index(c.joint) for c in enc], dtype=int)  # into joint_positions
        self._sign = np.array([c.sign for c in enc])
        self._offset = np.array([c.offset for c in enc])
        self._v_idx = np.array([ff.joint_v_index(c.joint) for c in enc], dtype=int)
        arm = [c for c in enc if c.joint in ff.arm_joint_names]  # the efforts' wire order
        self._arm_idx = np.array([ff.arm_joint_names.index(c.joint) for c in arm], dtype=int)
        self._arm_sign = np.array([c.effort_sign for c in arm])
        self._arm_names = [c.name for c in arm]
        by_joint = {c.joint: c for c in enc}
        self._wheel_sign = np.array([by_joint[w].effort_sign for w in ff.wheel_joint_names])
        M = pin.crba(ff.model, ff.create_data(), state.q)
        self._wheel_inertia = M[ff.wheel_v_indices, ff.wheel_v_indices].copy()  # constant: wheels are rotors
        th = config.actuators.thrusters
        layout = [t.name for t in ff.thrusters]
        self._valve_thruster = np.array([layout.index(ch) for ch in th.channels] if th else [], dtype=int)
        self._valve_force = ff.thruster_max_forces[self._valve_thruster]

        self._arm = _Commands(np.zeros(len(ff.arm_joint_names)))
        self._wheels = _Commands(np.zeros(len(ff.wheel_joint_names)))
        self._valves = _Commands(np.zeros(self._valve_thruster.size))  # value: commanded on-time per valve
        self._capture: deque[CaptureSample] = deque()
        self._encoder: deque[EncoderSample] = deque()
        self._last_encoder: EncoderSample | None = None
        self._next = {"capture": 0, "encoders": 0}
        self._sample()

    # --- time and truth ----------------------------------------------------------------------
    @property
    def t(self) -> float:
        """Emulated time, s (a whole number of plant steps since 0)."""
        return self._steps * self._dt

    @property
    def state(self) -> State:
        """The true plant state (a copy)."""
        return self._plant.state.copy()

    def advance(self, t: float) -> None:
        """Step the plant until ``self.t >= t - TIME_TOL``: ``self.t`` ends on the first plant step
        at or after ``t`` (up to one step past it). Sensors are sampled after every step."""
        if not np.isfinite(t):
            raise ValueError(f"advance: time must be finite, got {t}")
        while self.t < t - TIME_TOL:
            if self.diverged is not None:  # a dead testbed: time goes on, nothing is sampled
                self._steps = max(self._steps + 1, int(np.ceil((t - TIME_TOL) / self._dt)))
                continue
            try:
                self._plant.step(tau=self._generalized_forces())
            except PlantDiverged as exc:
                self.diverged = exc.reason
                continue
            self._steps += 1
            self._sample()

    def _generalized_forces(self) -> np.ndarray:
        """The actuators' saturated generalized forces plus the push faults' wrench, which is a
        disturbance and so, unlike ideal base actuation, not bounded by the base limits."""
        act = self.actuation()
        state = self._plant.state
        tau = generalized_forces(self.ff, state.q, replace(act, base_wrench_world=np.zeros(0)), state.v)
        if act.base_wrench_world.any():
            tau[: self.ff.nb] += world_wrench_to_local(self.ff, state.q, act.base_wrench_world)
        return tau

    def applied(self) -> tuple[Actuation, np.ndarray]:
        """What the hardware applies over the next plant step, saturated, and its wrench on the
        base (world axes; the push faults' disturbance left out): ``physics.actuators.applied_actuation``."""
        act = self.actuation()
        return applied_actuation(self.ff, replace(act, base_wrench_world=np.zeros(0)), self._plant.state.q,
                                 self._plant.state.v)

    def actuation(self) -> Actuation:
        """What the hardware applies over the next plant step (URDF signs, robot order); the
        ``base_wrench_world`` is the push faults' force (a disturbance, unbounded)."""
        t, s, ff = self.t, self.settings, self.ff
        arm = self._held(self._arm, t)
        wheels = self._held(self._wheels, t)
        if self.config.actuators.wheel_command == "speed" and wheels.size:
            live = self._wheels.at(t)[0] >= t - s.command_timeout - TIME_TOL
            speed = self._plant.state.v[ff.wheel_v_indices]
            wheels = self._wheel_inertia * s.wheel_speed_gain * (wheels - speed) if live else np.zeros_like(wheels)
        thrust = np.zeros(len(ff.thrusters))
        thrust[self._valve_thruster] = self.valves_open() * self._valve_force
        force = sum((np.array(f.offset) for f in self._faults if f.kind == "push" and f.active(t)), np.zeros(3))
        wrench = np.array([force[0], force[1], 0.0]) if ff.base == "planar" else np.concatenate([force, np.zeros(3)])
        return Actuation(arm, wheels, thrust, wrench)

    def _held(self, commands: _Commands, t: float) -> np.ndarray:
        arrival, value = commands.at(t)
        return value if t - arrival <= self.settings.command_timeout + TIME_TOL else np.zeros_like(value)

    # --- commands (wire format) ---------------------------------------------------------------
    def on_joint_efforts(self, values, now: float) -> None:
        """Float64MultiArray: one effort (N m) per arm joint, in the order of the arm joints in
        ``config.encoders.channels`` (wheels left out), hardware sign (``tau_urdf = effort_sign * value``)."""
        v = self._wire(values, len(self._arm_names), f"joint efforts (arm joints {self._arm_names})")
        tau = np.zeros(v.size)
        tau[self._arm_idx] = self._arm_sign * v
        self._arm.push(now + self.settings.command_latency, tau)

    def on_wheel_command(self, values, now: float) -> None:
        """One value per wheel (robot order), hardware sign: N m or rad/s per ``wheel_command``."""
        v = self._wire(values, self._wheel_sign.size, f"wheel command (wheels {list(self.ff.wheel_joint_names)})")
        self._wheels.push(now + self.settings.command_latency, self._wheel_sign * v)

    def on_thruster_command(self, values, now: float) -> None:
        """One value per valve, channel order: a duty in [0, 1] (``duty``) or 0/1 (``bits``)."""
        th = self.config.actuators.thrusters
        if th is None:
            raise ValueError("this testbed config has no actuators.thrusters section: there are no valves")
        v = self._wire(values, len(th.channels), f"thruster command (valves {list(th.channels)})")
        if th.command == "duty":
            if np.any((v < 0) | (v > 1)):
                raise ValueError(f"thruster duty cycles must be in [0, 1], got {v.tolist()}")
            on = np.where(v > 0, np.maximum(v * th.pwm_period, th.min_on_time), 0.0)
        else:
            if not np.all((v == 0) | (v == 1)):
                raise ValueError(f"thruster bits must be 0 or 1, got {v.tolist()}")
            on = np.where(v == 1, np.inf, 0.0)
        self._valves.push(now + self.settings.command_latency, on)

    @staticmethod
    def _wire(values, size: int, what: str) -> np.ndarray:
        v = np.asarray(values, dtype=float).reshape(-1)
        if v.size != size:
            raise ValueError(f"{what}: expected {size} values, got {v.size}")
        if not np.isfinite(v).all():
            raise ValueError(f"{what}: NaN or Inf in {v.tolist()}")
        return v

    def valves_open(self) -> np.ndarray:
        """Physical state of each valve now (bool, channel order): its command ``valve_delay`` ago."""
        s = self.t - self.settings.valve_delay
        arrival, on = self._valves.at(s)
        return s + TIME_TOL < arrival + on

    def add_fault(self, fault: Fault) -> None:
        if fault.kind == "encoder_nan" and fault.joint not in self.ff.joint_names:
            raise ValueError(f"fault encoder_nan: joint '{fault.joint}' is not a joint of robot '{self.ff.name}'; "
                             f"valid joints (URDF names): {list(self.ff.joint_names)}")
        self._faults.append(fault)

    # --- sensors --------------------------------------------------------------------------------
    def capture_samples(self, now: float) -> list[CaptureSample]:
        """Capture samples delivered by ``now`` (delivery order), removed from the queue."""
        return self._deliver(self._capture, now, self.settings.capture_latency, "capture_samples")

    def encoder_samples(self, now: float) -> list[EncoderSample]:
        """Encoder samples delivered by ``now`` (delivery order), removed from the queue."""
        return self._deliver(self._encoder, now, self.settings.encoder_latency, "encoder_samples")

    def _deliver(self, queue: deque, now: float, latency: float, what: str) -> list:
        if now - latency > self.t + TIME_TOL:
            raise ValueError(f"{what}({now}): samples due by then are not taken yet (emulated time {self.t} s); "
                             f"call advance({now}) first")
        out = []
        while queue and queue[0].delivery <= now + TIME_TOL:
            out.append(queue.popleft())
        return out

    def _sample(self) -> None:
        for key, rate, take in (("capture", self.config.capture.rate, self._take_capture),
                                ("encoders", self.config.encoders.rate, self._take_encoders)):
            while self._next[key] / rate <= self.t + TIME_TOL:
                take(self._next[key] / rate)
                self._next[key] += 1

    def _take_capture(self, stamp: float) -> None:
        s, ff, rng = self.settings, self.ff, self._rng
        if any(f.kind == "capture_dropout" and f.active(stamp) for f in self._faults):
            return
        if s.capture_dropout_rate and rng.random() < s.capture_dropout_rate:
            return
        q = self._plant.state.q
        p, R = base_position(ff, q), base_rotation(ff, q)
        for f in self._faults:
            if f.kind == "capture_jump" and f.active(stamp):
                p = p + np.array(f.offset)
        planar = ff.base == "planar"
        if s.capture_position_noise:
            p = p + rng.normal(0.0, s.capture_position_noise, 3) * (np.array([1.0, 1.0, 0.0]) if planar else 1.0)
        if s.capture_attitude_noise:
            axis = np.array([0.0, 0.0, 1.0]) if planar else rng.normal(size=3)
            R = pin.exp3(axis / np.linalg.norm(axis) * rng.normal(0.0, s.capture_attitude_noise)) @ R
        position, quat = self.capture_transform.from_world(p, R)
        _readonly(position, quat)
        self._capture.append(CaptureSample(stamp, stamp + s.capture_latency, position, quat))

    def _take_encoders(self, stamp: float) -> None:
        s, delivery = self.settings, stamp + self.settings.encoder_latency
        if any(f.kind == "encoder_freeze" and f.active(stamp) for f in self._faults):
            if self._last_encoder is not None:  # a hung driver resends its last message as is
                self._encoder.append(replace(self._last_encoder, delivery=delivery))
            return
        state = self._plant.state
        raw = self._sign * joint_positions(self.ff, state.q)[self._q_idx] + self._offset
        if s.encoder_counts_per_rev:
            count = 2.0 * np.pi / s.encoder_counts_per_rev
            raw = np.round(raw / count) * count
        if self.config.encoders.velocities == "measured":
            vel = self._sign * state.v[self._v_idx]
            if s.encoder_velocity_noise:
                vel = vel + self._rng.normal(0.0, s.encoder_velocity_noise, vel.size)
        else:
            vel = np.zeros(0)
        for f in self._faults:
            if f.kind == "encoder_nan" and f.active(stamp):
                i = self._channel[f.joint]
                raw[i] = np.nan
                if vel.size:
                    vel[i] = np.nan
        _readonly(raw, vel)
        self._last_encoder = EncoderSample(stamp, delivery, self._names, raw, vel)
        self._encoder.append(self._last_encoder)


FAULT_SYNTAX = "kind:start:duration[:joint][:ox,oy,oz] (start and duration in s)"


def parse_fault(text: str) -> Fault:
    """A :class:`Fault` from ``kind:start:duration[:joint][:ox,oy,oz]``.

    Raises:
        ValueError: saying what is wrong and how to write it.
    """
    given = shown(text)
    parts = [p.strip() for p in text.strip().split(":")]
    if not 3 <= len(parts) <= 5:
        raise ValueError(f"fault {given}: write {FAULT_SYNTAX}, e.g. capture_dropout:20:0.5, "
                         "encoder_nan:12:0.1:joint2, push:5:2:0.5,0,0")
    kind = parts[0]
    if kind not in FAULT_KINDS:
        raise ValueError(f"fault {given}: unknown kind {shown(kind)}; kinds: {list(FAULT_KINDS)}")
    times = []
    for name, value in (("start", parts[1]), ("duration", parts[2])):
        try:
            times.append(float(value))
        except ValueError:
            raise ValueError(f"fault {given}: {name} {shown(value)} is not a number of seconds ({FAULT_SYNTAX})") from None
        if not (math.isfinite(times[-1]) and times[-1] >= 0):
            raise ValueError(f"fault {given}: {name} must be a finite number of seconds >= 0, got {value}")
    joint, offset = "", None
    for extra in parts[3:]:
        if "," in extra:
            try:
                offset = tuple(float(x) for x in extra.split(","))
            except ValueError:
                raise ValueError(f"fault {given}: offset {shown(extra)} must be three numbers ox,oy,oz") from None
            if len(offset) != 3:
                raise ValueError(f"fault {given}: offset {shown(extra)} must be three numbers ox,oy,oz")
        elif extra:
            joint = extra
    if joint and kind != "encoder_nan":
        raise ValueError(f"fault {given}: only encoder_nan takes a joint ({shown(joint)} given for {kind})")
    if kind == "encoder_nan" and not joint:
        raise ValueError(f"fault {given}: encoder_nan needs the joint (URDF name), e.g. encoder_nan:12:0.1:joint2")
    if offset is not None and kind not in ("capture_jump", "push"):
        raise ValueError(f"fault {given}: only capture_jump (m) and push (N) take an offset")
    if kind in ("capture_jump", "push") and (offset is None or not any(offset)):
        raise ValueError(f"fault {given}: {kind} needs a non-zero offset ox,oy,oz "
                         f"({'m, world' if kind == 'capture_jump' else 'N, world'}), e.g. {kind}:5:1:0.1,0,0")
    if offset is not None:
        bound, unit, why = OFFSET_BOUNDS[kind]
        if not all(math.isfinite(x) and abs(x) <= bound for x in offset):
            raise ValueError(f"fault {given}: each offset component must be within +-{bound:g} {unit} ({why})")
    return Fault(kind, times[0], times[1], joint, offset or (0.0, 0.0, 0.0))


# A fault's offset: a capture jump no testbed shows, a push no hose gives, is a typo.
OFFSET_BOUNDS = {"capture_jump": (100.0, "m", "no testbed is larger than 100 m"),
                 "push": (1e3, "N", "a 100 kg weight hanging on the base; no hose or cable pulls harder")}


def fault_problem(fault: Fault, ff) -> str | None:
    """Why ``fault`` cannot be injected on robot ``ff`` (its joint is not one), or None."""
    if fault.joint and fault.joint not in ff.joint_names:
        return (f"fault {fault.kind}: {shown(fault.joint)} is not a joint of robot '{ff.name}'; did you mean "
                f"'{nearest(fault.joint, ff.joint_names)[0]}'? (its joints: {', '.join(ff.joint_names)})")
    return None
