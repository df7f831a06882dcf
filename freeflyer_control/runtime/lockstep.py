"""One control period of the simulated plant and the controller in lockstep (sim_loop_node).

In the distributed graph, plant_node and controller_node run their own timers and meet over DDS:
the controller answers a state 0 to 1 period later, and at 1 kHz on a busy machine ticks miss
each other. Here one call does a whole period in a fixed order: the plant steps under the
commands it holds, its measurement goes straight into the controller, the controller ticks on it,
and its commands go straight back to the plant for the next step. The servers are the same
objects the two nodes wrap, so every check (watchdog, plausibility, e-stop, saturation, command
timeout) runs as it does in the distributed graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from freeflyer_control.control.effort import Actuation
from freeflyer_control.ros.conversions import StateFields
from freeflyer_control.runtime.compiled_period import CompiledPeriod
from freeflyer_control.runtime.controller_server import ControllerOutput, ControllerServer
from freeflyer_control.runtime.plant_server import PlantServer


def base_wrench6(wrench: np.ndarray) -> np.ndarray:
    """A base wrench in world axes as the 6-vector (fx fy fz mx my mz; N, N m) that
    /base/wrench_command carries: a planar base's (fx, fy, mz) gets zeros elsewhere."""
    w = np.asarray(wrench, dtype=float)
    return np.array([w[0], w[1], 0.0, 0.0, 0.0, w[2]]) if w.size == 3 else w


@dataclass(frozen=True)
class LockstepPeriod:
    """What one period produced, for the node to publish and log.

    Attributes:
        diverged: the one-line reason when this period's step made the plant diverge, else None.
        measurement: the state to publish (the one the controller ticked on), None once diverged.
        output: the controller's tick (its commands are already held by the plant).
    """

    diverged: str | None
    measurement: StateFields | None
    output: ControllerOutput


class LockstepLoop:
    """Plant step, measurement to the controller, controller tick, commands to the plant.

    Args:
        plant: the simulated plant (its rate is the loop's).
        controller: the controller; its rate must equal the plant's (one tick per step).
        compiled: :meth:`tick_and_step` computes plain periods in one compiled call
            (runtime.compiled_period; the same results); False: always the Python calls.
    """

    def __init__(self, plant: PlantServer, controller: ControllerServer, compiled: bool = True):
        if abs(controller.period - plant.plant.dt) > 1e-12:
            raise ValueError(f"lockstep needs one control tick per plant step: controller rate "
                             f"{1.0 / controller.period:g} Hz differs from plant rate "
                             f"{1.0 / plant.plant.dt:g} Hz (give both the same rate)")
        self.plant = plant
        self.controller = controller
        # As controller_node publishes /base/wrench_command only with ideal base actuation.
        self.ideal_base = controller.base_actuation == "ideal"
        self._stepped_ahead = False   # the plant holds the coming period's state (step_ahead)
        self._measured = None        # (the plant's newest state, its measurement): measure_ahead
        # tick_and_step's plain periods in one compiled call (None: every period in Python)
        self.compiled: CompiledPeriod | None = CompiledPeriod(self) if compiled else None

    def period(self, now: float) -> LockstepPeriod:
        """One period at ``now`` (s, the node clock both servers read): :meth:`step`, then
        :meth:`tick` on its measurement."""
        diverged, fields = self.step(now)
        return LockstepPeriod(diverged, fields, self.tick(fields, now))

    def step(self, now: float) -> tuple[str | None, StateFields | None]:
        """The plant's step under the commands it holds; (divergence reason or None, the
        measurement to publish and to control on, None once diverged). sim_loop_node takes the
        step at the end of the period before (:meth:`opening`, :meth:`step_ahead`)."""
        diverged = self.plant.step(now)
        return diverged, self.plant.measurement()

    def tick(self, fields: StateFields | None, now: float) -> ControllerOutput:
        """The controller's tick on ``fields`` (None: diverged, nothing heard, so its watchdog
        trips as it would with no /joint_states); its commands go to the plant, stamped ``now``:
        :meth:`handover`, the controller's tick, :meth:`command`."""
        self.handover(fields, now)
        out = self.controller.tick(now)
        self.command(out.actuation, now)
        return out

    # sim_loop_node runs the same sequence split where it sleeps: opening (the state), tick,
    # step_ahead, measure_ahead | sleep | opening, tick, step_ahead, measure_ahead | ... The step
    # and the measurement then run right after the commands they need, on the caches the tick
    # left; after the sleep they paid for its cold caches (the step 3-4x its cost here). The
    # node's CPU per period on the emulated slower machine fell by 14-20 % in paired runs; in
    # process under the same CPU limit it barely moved (the CHANGELOG has the pairs).

    def opening(self, now: float) -> tuple[str | None, StateFields | None]:
        """A period's state at ``now`` (s): the measurement of the state the previous period's
        :meth:`step_ahead` reached (taken by :meth:`measure_ahead`), or of the one a
        ``PlantServer.reset`` set since; the period is then :meth:`tick` on it and
        :meth:`step_ahead`. The first period steps here first, as :meth:`period` does. Returns
        (the divergence reason of a step taken here, else None; the measurement to publish and
        tick on, None once diverged)."""
        if not self._stepped_ahead:
            self._stepped_ahead = True
            return self.step(now)
        measured, self._measured = self._measured, None
        # The plant puts a new State object at the end of its history at every step, reset and
        # capture (PlantServer.request_capture): anything else is still the state measured.
        if measured is not None and self.plant.history[-1] is measured[0]:
            return None, measured[1]
        return None, self.plant.measurement()

    def step_ahead(self, now: float) -> str | None:
        """The plant's step under the commands :meth:`tick` just handed it (stamped ``now``, s):
        the next period's state. Returns the divergence reason when this step diverged."""
        return self.plant.step(now)

    def measure_ahead(self) -> None:
        """The measurement of the state :meth:`step_ahead` reached, taken now (while the caches
        are warm) for the next :meth:`opening`, which uses it unless the plant's state has
        changed since (a reset, a capture)."""
        self._measured = (self.plant.history[-1], self.plant.measurement())

    def tick_and_step(self, now: float) -> tuple[ControllerOutput, str | None]:
        """The controller's tick at ``now`` (s) on the state :meth:`handover` gave it, its
        commands to the plant and the plant's step under them (:meth:`step_ahead`): (the tick,
        the divergence reason when the step diverged). A plain period takes one compiled call
        (runtime.compiled_period), any other the Python calls; the result is the same."""
        fused = self.compiled
        if fused is None:
            out = self.controller.tick(now)
        else:
            fused.begin(now)
            out = self.controller.tick(now, fused.law_tick)
            if fused.stepped:
                return out, fused.diverged
        self.command(out.actuation, now)
        return out, self.step_ahead(now)

    def handover(self, fields: StateFields | None, now: float) -> None:
        """The measurement to the controller, as its /joint_states and /base/odom callbacks would
        give it at ``now`` (nothing when None)."""
        if fields is not None:
            self.controller.on_joint_state(fields.joint_names, fields.joint_positions,
                                           fields.joint_velocities, now)
            self.controller.on_base_odometry(fields.base, now)

    def command(self, act: Actuation, now: float) -> None:
        """Hand the plant the commands controller_node would publish (the same topics' subset:
        wheels and thrusters when the robot has them, the base wrench only when ideal)."""
        self.plant.set_arm_torques(act.arm_torques, now)
        if act.wheel_torques.size:
            self.plant.set_wheel_torques(act.wheel_torques, now)
        if act.thruster_forces.size:
            self.plant.set_thruster_forces(act.thruster_forces, now)
        if self.ideal_base:
            self.plant.set_base_wrench_world(base_wrench6(act.base_wrench_world), now)
