"""The simulated plant node's logic: held commands in, noisy delayed measurements out.

Commands are held (zero-order hold) until replaced; a command older than ``command_timeout``
is dropped to zero, like an actuator driver with its own watchdog. Measurements can carry
Gaussian noise and a fixed latency (a queue of past states), so a controller can be tried
against the imperfect sensing of a testbed.

Status. ``ok`` while the plant integrates. ``diverged`` once a step diverged (see
:mod:`freeflyer_control.physics.plant`): the plant holds its last finite state, :meth:`step` does
nothing more, :meth:`measurement` returns None (publish nothing: a frozen state with fresh stamps
would look live to a controller, whose watchdog instead stops the robot on the silence), and
``reason`` says why. :meth:`reset` brings it back. No command, time or rate a caller passes
makes :meth:`step` raise.

Object. Given an object config the server simulates it too (runtime.object_plant): held in
closed chains, or floating free until :meth:`request_capture` closes the grasp.
:meth:`object_reading` gives its pose, twist and grasp wrenches (None unless status is ok).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from freeflyer_control.control.capture import CaptureTolerances
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.model.objects import ObjectConfig
from freeflyer_control.physics.actuators import Actuation
from freeflyer_control.physics.momentum import centroidal_momentum
from freeflyer_control.physics.plant import Plant, PlantDiverged
from freeflyer_control.physics.state import State
from freeflyer_control.ros.conversions import BaseReading, StateFields, fields_from_state, finite_array
from freeflyer_control.runtime.object_plant import ObjectPlant, ObjectReading
from freeflyer_control.physics.kernels.plant import make_plant


@dataclass(frozen=True)
class SensorNoise:
    """Standard deviations of white measurement noise (0: perfect sensing).

    Attributes:
        joint_position: rad. joint_velocity: rad/s. base_position: m. base_attitude: rad (a
        small rotation about a random axis). base_linear_velocity: m/s. base_angular_velocity: rad/s.
    """

    joint_position: float = 0.0
    joint_velocity: float = 0.0
    base_position: float = 0.0
    base_attitude: float = 0.0
    base_linear_velocity: float = 0.0
    base_angular_velocity: float = 0.0

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"noise {name} must be finite and >= 0, got {value}")


# Measurement latency is a queue of past states: a bound keeps a typo from allocating gigabytes.
MAX_DELAY_STEPS = 100_000


class PlantServer:
    """Args:
    ff: the robot.
    state: initial state.
    rate: integration (and publication) rate, Hz.
    command_timeout: s; commands older than this are zeroed (and so are commands stamped later
        than the step's time: the clock stepped back).
    noise: measurement noise.
    latency: s; measurements are this old (rounded to whole steps).
    seed: noise seed.
    obj: the object the robot holds (``state`` must hold it: runtime.object_plant.held_initial_state)
        or, with ``object_free``, the object floating free near the first grasping end-effector.
    capture_tolerances: when a requested capture may close.
    compiled: the integration step of a plant without object: False the Python ``Plant``, True
        the compiled one (physics.kernels.plant, equal to it to round-off), None compiled when numba is
        installed and covers the robot. ``plant_note`` says which one runs, in one line.

    Raises:
        ValueError: a non-finite or non-positive rate or timeout, a negative or too long latency.
        ImportError / NotCovered: ``compiled=True`` and the compiled step cannot be used.
    """

    def __init__(self, ff: FreeFlyerModel, state: State, *, rate: float, command_timeout: float = 0.1,
                 noise: SensorNoise = SensorNoise(), latency: float = 0.0, seed: int = 0,
                 obj: ObjectConfig | None = None, object_free: bool = False,
                 capture_tolerances: CaptureTolerances = CaptureTolerances(), compiled: bool | None = False):
        if not (np.isfinite(rate) and rate > 0):
            raise ValueError(f"rate must be a finite number of Hz > 0, got {rate}")
        if not (np.isfinite(command_timeout) and command_timeout > 0):
            raise ValueError(f"command_timeout must be a finite number of seconds > 0, got {command_timeout}")
        if not (np.isfinite(latency) and latency >= 0):
            raise ValueError(f"latency must be a finite number of seconds >= 0, got {latency}")
        if latency * rate > MAX_DELAY_STEPS:
            raise ValueError(f"latency {latency} s at {rate} Hz is {latency * rate:.3g} steps of history; "
                             f"at most {MAX_DELAY_STEPS}: lower the latency or the rate")
        self.ff = ff
        self.initial = state.copy()
        self._object_args = (obj, object_free, capture_tolerances)
        if obj is None:
            self._plant, self.plant_note = make_plant(ff, state, 1.0 / rate, compiled=compiled)
        else:
            self._plant, self.plant_note = None, "plant step: Python (a held or free object: closed chains)"
        self.objects: ObjectPlant | None = None if obj is None else ObjectPlant(
            ff, obj, state, 1.0 / rate, free=object_free, tolerances=capture_tolerances)
        self.command_timeout = command_timeout
        self.noise = noise
        self.rng = np.random.default_rng(seed)
        self.delay_steps = int(round(latency * rate))
        self.history: deque[State] = deque(maxlen=self.delay_steps + 1)
        self.history.append(self.plant.state.copy())
        n_arm, n_w, n_t = len(ff.arm_joint_names), len(ff.wheel_joint_names), len(ff.thrusters)
        self._cmd = {"arm": (np.zeros(n_arm), -np.inf), "wheels": (np.zeros(n_w), -np.inf),
                     "thrusters": (np.zeros(n_t), -np.inf), "wrench": (np.zeros(ff.nb), -np.inf)}
        self.status = "ok"
        self.reason = ""

    @property
    def plant(self) -> Plant:
        """The robot's plant (with the object: the closed-chain plant once it is held)."""
        return self._plant if self.objects is None else self.objects.plant

    # --- commands ---------------------------------------------------------------------------
    def set_arm_torques(self, values, now: float) -> None:
        self._set("arm", values, now, len(self.ff.arm_joint_names))

    def set_wheel_torques(self, values, now: float) -> None:
        self._set("wheels", values, now, len(self.ff.wheel_joint_names))

    def set_thruster_forces(self, values, now: float) -> None:
        self._set("thrusters", values, now, len(self.ff.thrusters))

    def set_base_wrench_world(self, wrench6, now: float) -> None:
        """A wrench on the base about the base_link origin, world axes (fx fy fz mx my mz)."""
        w = finite_array(wrench6, "base wrench", 6)
        self._set("wrench", w[[0, 1, 5]] if self.ff.base == "planar" else w, now, self.ff.nb)

    def _set(self, key: str, values, now: float, size: int) -> None:
        self._cmd[key] = (finite_array(values, key, size), now)

    def hold(self, arm: np.ndarray, wheels: np.ndarray, thrusters: np.ndarray, wrench_world: np.ndarray | None,
             now: float) -> None:
        """Hold a period's commands at ``now`` (s) as the set_* methods do, given as float64
        vectors of the robot's sizes already checked finite (a controller's saturated output):
        wheels and thrusters when the robot has them, the base wrench (world axes, the robot's
        nb) unless None. For runtime.compiled_period, which checked them in its compiled call."""
        cmd = self._cmd
        cmd["arm"] = (arm, now)
        if wheels.size:
            cmd["wheels"] = (wheels, now)
        if thrusters.size:
            cmd["thrusters"] = (thrusters, now)
        if wrench_world is not None:
            cmd["wrench"] = (wrench_world, now)

    def holds_base_wrench(self, now: float) -> bool:
        """Whether the plant holds a non-zero base wrench command at ``now`` (s) that is not stale."""
        wrench, stamp = self._cmd["wrench"]
        return 0.0 <= now - stamp <= self.command_timeout and bool(wrench.any())

    def actuation(self, now: float) -> Actuation:
        """The held commands, with stale ones zeroed: older than ``command_timeout``, stamped
        after ``now`` (the clock stepped back), or at a non-finite time."""
        parts = [v if 0.0 <= now - t <= self.command_timeout else np.zeros_like(v) for v, t in self._cmd.values()]
        return Actuation(*parts)

    # --- time ---------------------------------------------------------------------------------
    def step(self, now: float) -> str | None:
        """Advance one period under the commands held at ``now`` (s).

        Returns:
            the one-line reason when this step made the plant diverge (report it once), else
            None. Once diverged, a step does nothing until :meth:`reset`.
        """
        if self.status != "ok":
            return None
        return self.stepped(self._step, now)

    def _step(self, now: float) -> None:
        act = self.actuation(now)
        if self.objects is None:
            self.plant.step(act)
        else:
            self.objects.step(act)

    def stepped(self, step: Callable[..., object], *args) -> str | None:
        """Run ``step(*args)`` (it advances the plant one period, or raises PlantDiverged) and
        keep the books of :meth:`step`: the new state in the history, or the divergence's status
        and reason, which it returns (else None). For :meth:`step`, and for a caller that steps
        the plant itself (runtime.compiled_period). Arguments rather than a closure: no closure
        is made on every plant step."""
        try:
            step(*args)
        except PlantDiverged as exc:
            self.status, self.reason = "diverged", exc.reason
            return exc.reason
        self.history.append(self.plant.state.copy())
        return None

    def reset(self, state: State | None = None) -> None:
        if self.objects is None:
            self.plant.state = (state or self.initial).copy()
            self.plant.t = 0.0
        else:  # a captured object floats free again; a held one is back in the hands
            obj, free, tol = self._object_args
            self.objects = ObjectPlant(self.ff, obj, (state or self.initial).copy(), self.plant.dt,
                                       free=free, tolerances=tol)
        self.status, self.reason = "ok", ""
        self.history.clear()
        self.history.append(self.plant.state.copy())
        for key, (v, _) in self._cmd.items():
            self._cmd[key] = (np.zeros_like(v), -np.inf)

    # --- outputs ------------------------------------------------------------------------------
    def measurement(self) -> StateFields | None:
        """The (delayed, noisy) state to publish; None (publish nothing) unless status is ok."""
        if self.status != "ok":
            return None
        fields = fields_from_state(self.ff, self.history[0])
        n = self.noise
        if not any(n.__dict__.values()):
            return fields
        rng = self.rng
        jp = fields.joint_positions + rng.normal(0, n.joint_position, fields.joint_positions.shape)
        jv = fields.joint_velocities + rng.normal(0, n.joint_velocity, fields.joint_velocities.shape)
        b = fields.base
        planar = self.ff.base == "planar"
        mask = np.array([1.0, 1.0, 0.0]) if planar else np.ones(3)
        axis = np.array([0.0, 0.0, 1.0]) if planar else rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        angle = rng.normal(0, n.base_attitude)
        dq = np.concatenate([axis * np.sin(angle / 2), [np.cos(angle / 2)]])
        quat = _quat_mul_xyzw(dq, b.orientation_xyzw)
        ang_mask = np.array([0.0, 0.0, 1.0]) if planar else np.ones(3)
        base = BaseReading(
            b.position + mask * rng.normal(0, n.base_position, 3),
            quat,
            b.linear_velocity + mask * rng.normal(0, n.base_linear_velocity, 3),
            b.angular_velocity + ang_mask * rng.normal(0, n.base_angular_velocity, 3),
        )
        return StateFields(fields.joint_names, jp, jv, base)

    def object_reading(self, now: float) -> ObjectReading | None:
        """The object (pose, twist, grasp wrenches under the commands held at ``now``, s); None
        without an object or unless status is ok."""
        if self.objects is None or self.status != "ok":
            return None
        return self.objects.reading(self.actuation(now))

    def request_capture(self) -> tuple[bool, str]:
        """(success, one-line answer) of the capture service (see runtime.object_plant)."""
        if self.objects is None:
            return False, "capture refused: the plant simulates no object; start it with parameter object:=NAME|PATH"
        if self.status != "ok":
            return False, f"capture refused: the plant is {self.status} ({self.reason}); call ~/reset first"
        closed, message = self.objects.request_capture()
        if closed:
            # The grasp changed the state between two steps (the impact's velocity jump, the
            # closed loop): the newest measurement is of the state after it, not before
            # (sim_loop_node measures a period's state before the capture service can run).
            self.history[-1] = self.plant.state.copy()
        return closed, message

    def diagnostics(self) -> dict[str, float | str]:
        """Simulated time (s), momentum norms of the (held) state (robot and held object; a free
        object not included), status and its reason, and the object's capture state."""
        h = centroidal_momentum(self.plant.ff, self.plant.data, self.plant.state)
        out = {"t": self.plant.t, "linear_momentum": float(np.linalg.norm(h[:3])),
               "angular_momentum": float(np.linalg.norm(h[3:])), "status": self.status,
               "reason": self.reason}
        return out if self.objects is None else {**out, **self.objects.diagnostics()}


def _quat_mul_xyzw(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product a * b of (x, y, z, w) quaternions."""
    av, aw, bv, bw = a[:3], a[3], b[:3], b[3]
    return np.concatenate([aw * bv + bw * av + np.cross(av, bv), [aw * bw - av @ bv]])
