"""What differs, in one simulated run, between the robot as designed and the robot as flown.

A :class:`Perturbation` is the optional ``SimConfig.perturbation``: the lockstep simulation asks it
for the controller's model, the plant's model, the initial state, a measurement model and what the
actuators really do with a command. The base class changes nothing; a layer above ``sim`` (the
Monte-Carlo campaigns) subclasses it. It must be picklable (it travels to worker processes).

The measurement model and the actuators' effect are data (:meth:`Perturbation.sensor_model`,
:meth:`Perturbation.actuator_gains`), not code: both engines apply the same data, the Python
engine through :class:`Sensor` and :meth:`Perturbation.actuation`, the compiled engine in its
loop, so a dispersed run gives the same rows on either (to round-off).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pinocchio as pin

from freeflyer_control.physics.actuators import Actuation
from freeflyer_control.physics.state import State

# Slack (s) of the latency comparison: a state exactly ``latency`` old counts as old enough
# although k * dt carries rounding.
LATENCY_SLACK = 1e-9


@dataclass(frozen=True)
class SensorModel:
    """What the controller reads of the true state: the newest state at least ``latency`` s old
    (so the latency rounded up to whole control periods; the first state until then), its
    configuration moved by Gaussian noise of standard deviation ``std`` (nv,) in the tangent
    space (base translation m and rotation rad in base_link axes, then joint angles rad;
    velocities exact). The noise is ``numpy.random.default_rng(seed)``'s standard normals, nv per
    control tick in tick order, times ``std`` (none drawn when ``std`` is all zero)."""

    latency: float
    std: np.ndarray
    seed: int

    def delay_ticks(self, dt: float) -> int:
        """The ticks of delay at control period ``dt`` s: the smallest d >= 0 with
        d dt >= latency - LATENCY_SLACK."""
        d = 0
        while d * dt < self.latency - LATENCY_SLACK:
            d += 1
        return d


class Perturbation:
    """The identity: every hook returns what it is given."""

    def controller_model(self, ff):
        """The model the controller believes in (``ff``: the robot as designed)."""
        return ff

    def plant_model(self, ff):
        """The robot the plant integrates (``ff``: the robot as designed)."""
        return ff

    def initial_state(self, ff, state: State) -> State:
        """The state the run really starts from (``state``: the configured one)."""
        return state

    def sensor_model(self, ff) -> SensorModel | None:
        """How the controller's readings differ from the true state, or None: perfectly."""
        return None

    def actuator_gains(self, ff) -> tuple[np.ndarray, np.ndarray] | None:
        """(thruster gains (n,), wheel gains (nw,)): each thruster delivers its gain times its
        commanded force, each wheel its gain times its commanded torque, before the plant's
        own limits (of :meth:`plant_model`'s actuators); None: as commanded."""
        return None

    def sensing(self, ff) -> Callable[[float, State], State] | None:
        """A fresh measurement model ``measure(t s, true state) -> state the controller reads``
        for one run (it remembers past states, for latency), or None for perfect sensing."""
        model = self.sensor_model(ff)
        return None if model is None else Sensor(ff, model)

    def actuation(self, ff, command: Actuation) -> Actuation:
        """What the actuators deliver when commanded ``command``."""
        gains = self.actuator_gains(ff)
        if gains is None:
            return command
        thrusters, wheels = gains
        forces = np.array(command.thruster_forces, dtype=float)
        torques = np.array(command.wheel_torques, dtype=float)
        if forces.size:
            forces *= thrusters
        if torques.size:
            torques *= wheels
        return replace(command, thruster_forces=forces, wheel_torques=torques)


class Sensor:
    """:class:`SensorModel` of one run, on the Python engine: call it once per control tick with
    the tick's time (s) and the true state."""

    def __init__(self, ff, model: SensorModel):
        self.ff, self.latency, self.std = ff, model.latency, np.asarray(model.std, dtype=float)
        self.rng = np.random.default_rng(model.seed)
        self.history: deque[tuple[float, State]] = deque()

    def __call__(self, t: float, state: State) -> State:
        self.history.append((t, state.copy()))
        while len(self.history) > 1 and self.history[1][0] <= t - self.latency + LATENCY_SLACK:
            self.history.popleft()
        seen = self.history[0][1]
        if not self.std.any():
            return seen.copy()
        dv = self.rng.normal(0.0, 1.0, self.std.size) * self.std
        return State(pin.integrate(self.ff.model, seen.q, dv), seen.v.copy())
