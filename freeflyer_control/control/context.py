"""What a control law may ask about the robot at this tick (:class:`LawContext`).

The loop makes one context per law and starts it anew every tick (:meth:`LawContext.begin`).
Every quantity is computed when the law first asks for it and then kept for the rest of the tick
(a law that asks for the GJM of ``ee_link`` twice pays once); a law that asks for nothing pays
nothing. During the blend after a mode switch the loop hands the law a second view of the same
tick in the mode being left (:meth:`LawContext.leaving_view`): mode-independent quantities (the
mass matrix, poses) are shared, the mode's own (GJM, H*, C*, Lambda) are computed for it.

Conventions (DESIGN.md §3; docs/conventions.md): SI units; ``world`` axes for every twist,
wrench and momentum unless a docstring says otherwise; joint angles and rates in
``model.arm_joint_names`` order; GJM rows are a point's linear then angular velocity in world
axes (planar: vx, vy, wz) and its columns the arm joints then the commanded base velocities.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pinocchio as pin

from freeflyer_control.control.effort import ControlEffort
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.actuators import base_wrench_limits
from freeflyer_control.physics.dynamics import mass_matrix, nonlinear_effects
from freeflyer_control.physics.gjm import GJM, generalized_jacobian
from freeflyer_control.physics.modes import BasePartition, Mode, base_partition
from freeflyer_control.physics.momentum import world_momentum
from freeflyer_control.physics.operational_space import OperationalSpaceInertia, operational_space_inertia
from freeflyer_control.physics.reduced import ReducedDynamics, reduced_dynamics
from freeflyer_control.physics.state import (
    State,
    base_position,
    base_rotation,
    base_twist_world,
    joint_positions,
)


@dataclass(frozen=True)
class ActuatorLimits:
    """What the robot's actuators can do (the loop clips every effort to these).

    Attributes:
        arm_torque: N m (N for prismatic joints), per arm joint, ``arm_joint_names`` order.
        wheel_torque: N m, per reaction wheel, robot-config order.
        wheel_speed: rad/s, per reaction wheel.
        thruster_force: N, per thruster, robot-config order (each pushes in [0, max]).
        base_force: N, the largest base force the base actuation gives (norm).
        base_torque: N m, the largest base torque about the base_link origin (norm).
    """

    arm_torque: np.ndarray
    wheel_torque: np.ndarray
    wheel_speed: np.ndarray
    thruster_force: np.ndarray
    base_force: float
    base_torque: float

    @classmethod
    def of(cls, ff: FreeFlyerModel) -> "ActuatorLimits":
        force, torque = base_wrench_limits(ff)
        arrays = [np.array(a, dtype=float) for a in (ff.arm_effort_limits, ff.wheel_max_torques,
                                                     ff.wheel_max_speeds, ff.thruster_max_forces)]
        for a in arrays:
            a.setflags(write=False)
        return cls(*arrays, float(force), float(torque))


class LawContext:
    """The robot's quantities at one tick, for the law (see the module docstring).

    Attributes set for every tick:
        model: the controller's model (it may carry mass-property errors: it is what the
            controller believes, not the plant).
        data: Pinocchio data for the law's own calls on ``model`` (scratch: the context uses
            its own).
        mode: the maneuvering mode this effort is for (the mode in force; during a blend the
            leaving view has the old one).
        leaving: True in the view of the mode being left during a blend.
        t: control time, s (the run's time in simulation; the controller's clock on a node).
        period: control period, s.
        state: the measured state (Pinocchio's (q, v)).
        contact_force: measured contact force on the end-effector, world axes, N (3,), or None.
        limits: the actuator limits (:class:`ActuatorLimits`).
        base_actuation: ``thrusters``, ``ideal`` or ``none`` (how the base wrench is produced).
    """

    def __init__(self, model: FreeFlyerModel, period: float, base_actuation: str = "thrusters"):
        self.model = model
        self.data = model.create_data()
        self.period = float(period)
        self.base_actuation = base_actuation
        self.limits = ActuatorLimits.of(model)
        self._own = model.create_data()
        self._arm = model.arm_v_indices - model.nb
        self.t = 0.0
        self.state: State | None = None
        self.mode = Mode.FLOATING
        self.leaving = False
        self.contact_force: np.ndarray | None = None
        self._cache: dict[tuple, Any] = {}

    # --- the loop's side -------------------------------------------------------------------
    def begin(self, t: float, state: State, mode: Mode, period: float | None = None,
              contact_force: np.ndarray | None = None) -> "LawContext":
        """Start a tick: forget everything computed for the previous one."""
        self.t, self.state, self.mode, self.leaving = float(t), state, mode, False
        if period is not None:
            self.period = float(period)
        self.contact_force = contact_force
        self._cache = {}
        return self

    def leaving_view(self, mode: Mode) -> "LawContext":
        """The same tick seen in ``mode``, the mode being left (shares the cache)."""
        view = object.__new__(LawContext)
        view.__dict__.update(self.__dict__)
        view.mode, view.leaving = mode, True
        return view

    def _cached(self, key: tuple, compute: Callable[[], Any]) -> Any:
        try:
            return self._cache[key]
        except KeyError:
            value = self._cache[key] = compute()
            return value

    # --- the state in the package's conventions ----------------------------------------------
    def joint_positions(self) -> np.ndarray:
        """Arm joint angles, rad (m for prismatic joints), ``arm_joint_names`` order."""
        return self._cached(("q_arm",), lambda: joint_positions(self.model, self.state.q)[self._arm])

    def joint_velocities(self) -> np.ndarray:
        """Arm joint rates, rad/s, ``arm_joint_names`` order."""
        return self.state.v[self.model.arm_v_indices]

    def base_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """(position of the base_link origin in world, m (3,); rotation world <- base_link (3, 3))."""
        return self._cached(("base_pose",), lambda: (base_position(self.model, self.state.q),
                                                    base_rotation(self.model, self.state.q)))

    def base_twist(self) -> tuple[np.ndarray, np.ndarray]:
        """(linear velocity of the base_link origin, angular velocity), world axes, m/s and rad/s."""
        return self._cached(("base_twist",), lambda: base_twist_world(self.model, self.state))

    def frame_pose(self, frame: str) -> pin.SE3:
        """Placement of ``frame`` in world (a copy)."""
        def compute():
            if ("fk",) not in self._cache:
                pin.framesForwardKinematics(self.model.model, self._own, self.state.q)
                self._cache[("fk",)] = True
            return self._own.oMf[self.model.frame_id(frame)].copy()
        return self._cached(("pose", frame), compute)

    def momentum(self) -> np.ndarray:
        """The system's momentum [P; L], world axes, L about the world origin (6,): kg m/s, kg m^2/s."""
        return self._cached(("momentum",), lambda: world_momentum(self.model, self._own, self.state))

    # --- the mode's quantities ---------------------------------------------------------------
    def partition(self) -> BasePartition:
        """Which base coordinates the mode commands and which momentum sets (physics.modes)."""
        return base_partition(self.model.base, self.mode)

    def mass_matrix(self) -> np.ndarray:
        """The floating-base mass matrix M (nv, nv) over Pinocchio's velocity coordinates (base
        part in base_link axes, then the joints): full, symmetric; read-only."""
        def compute():
            M = mass_matrix(self.model, self._own, self.state.q)
            M.setflags(write=False)
            return M
        return self._cached(("M",), compute)

    def nonlinear_effects(self) -> np.ndarray:
        """b(q, v) (nv,) of M a + b = tau over Pinocchio's velocity coordinates (base part in
        base_link axes): Coriolis and centrifugal terms (no gravity in orbit); read-only."""
        def compute():
            b = nonlinear_effects(self.model, self._own, self.state.q, self.state.v).copy()
            b.setflags(write=False)
            return b
        return self._cached(("b",), compute)

    def gjm(self, frame: str, point: np.ndarray | None = None) -> GJM:
        """The mode's Generalized Jacobian of ``frame`` (or of ``point``, m, in its axes), with
        its drift: twist = ``gjm.matrix @ [arm joint rates; commanded base velocities (world)]
        + gjm.drift`` (:mod:`freeflyer_control.physics.gjm`)."""
        key = ("gjm", self.mode, frame, None if point is None else tuple(np.asarray(point, float)))
        return self._cached(key, lambda: generalized_jacobian(
            self.model, self._own, self.state, self.mode, frame, point=point, M=self.mass_matrix()))

    def reduced_dynamics(self, idle_wheels: bool = True) -> ReducedDynamics:
        """The mode's H* a + C* = tau (:mod:`freeflyer_control.physics.reduced`): over the
        commanded base coordinates (world axes) then the arm joints (``idle_wheels``: the
        reaction wheels run free, eliminated with the free base) or every joint (wheels too)."""
        return self._cached(("reduced", self.mode, idle_wheels), lambda: reduced_dynamics(
            self.model, self._own, self.state, self.mode, M=self.mass_matrix(), idle_wheels=idle_wheels))

    def operational_space_inertia(self, frame: str, point: np.ndarray | None = None) -> OperationalSpaceInertia:
        """Lambda of ``frame`` (or ``point`` in its axes) in the mode: the inertia it presents to a
        wrench there, rows like the GJM's (:mod:`freeflyer_control.physics.operational_space`)."""
        key = ("osi", self.mode, frame, None if point is None else tuple(np.asarray(point, float)))
        return self._cached(key, lambda: operational_space_inertia(
            self.model, self._own, self.state.q, self.mode, frame, point))

    # --- efforts -----------------------------------------------------------------------------
    def zero_effort(self) -> ControlEffort:
        """No torque anywhere."""
        return ControlEffort.zero(self.model)

    def joint_effort(self, arm_torques, wheel_torques=None, base_wrench_world=None) -> ControlEffort:
        """An effort from arm torques (N m, arm joint order) and optionally wheel torques (N m)
        and a base wrench about the base_link origin, world axes (spatial (fx, fy, fz, mx, my,
        mz), planar (fx, fy, mz))."""
        ff = self.model
        return ControlEffort(
            np.asarray(arm_torques, dtype=float).reshape(-1),
            np.zeros(len(ff.wheel_joint_names)) if wheel_torques is None else np.asarray(wheel_torques, float),
            np.zeros(ff.nb) if base_wrench_world is None else np.asarray(base_wrench_world, float))

    def base_effort(self, forces: np.ndarray) -> np.ndarray:
        """The base wrench (world axes, about the base_link origin, (nb,)) of generalized forces on
        the mode's commanded base coordinates (the first entries of H* a + C*), zero elsewhere."""
        wrench = np.zeros(self.model.nb)
        wrench[self.partition().commanded] = np.asarray(forces, dtype=float)
        return wrench
