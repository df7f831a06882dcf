"""What one ``freeflyer sim`` run flies (:class:`SimConfig`), and the state it starts from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np

from freeflyer_control.control.law import ControlLaw
from freeflyer_control.control.mode_switch import parse_schedule, schedule_problem
from freeflyer_control.model import DEFAULT_ROBOT, FreeFlyerModel
from freeflyer_control.model.joint_limits import limit_violations
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import State, joint_positions, make_state
from freeflyer_control.sim.limits import run_size_problem
from freeflyer_control.sim.perturbation import Perturbation


@dataclass
class SimConfig:
    """Attributes:
    robot: bundled name, robot config .yaml or .urdf path; base / ee complete a bare URDF.
    mode: initial maneuvering mode; mode_schedule, if given, overrides it from t = 0.
    controller: the control law: a :class:`~freeflyer_control.control.law.ControlLaw` object
        (a user's own, or a built-in one with parameters), or a built-in's name
        (computed_torque, resolved_rate, impedance) at its default parameters. The compiled
        engine flies computed_torque and resolved_rate at their defaults; any other law runs on
        the Python engine.
    maneuver: wilde, ee-point, ee-circle, station-keeping.
    duration: s; None runs the maneuver's own duration.
    rate: control rate, Hz; the plant steps ``plant_substeps`` times per control period.
    mode_schedule: [(t s, mode)], applied when the simulated time reaches t.
    mass_error: relative mass-property error of the controller's model (0.1 = +-10 %).
    seed: seed of that error.
    base_actuation: thrusters (allocated) or ideal (external wrench).
    log_rate: samples per second in the time series.
    initial_joint_positions: joint -> rad; default: zeros for joint-space maneuvers (the arm
        stretched out, as in Wilde et al.), the robot's ready pose for end-effector ones.
    perturbation: the robot as flown vs as designed (:mod:`freeflyer_control.sim.perturbation`);
        None: none. Only the Python engine applies it.
    wall_mass: kg, ee-contact only: the wall is a free body of this mass (None: fixed).
    overrun_limit: control ticks running on which the law takes more CPU time than the period
        before it is stopped (control.law_guard); None (the default): overruns are counted and
        reported, not fatal, so that a simulation's outcome never depends on the machine that
        flies it (a loaded machine stretches CPU times too).
    """

    RUN_KIND: ClassVar[str] = "sim"  # run.json's kind (sim.run_record)
    robot: str = DEFAULT_ROBOT
    base: str | None = None
    ee: Sequence[str] | None = None
    mode: str = "floating"
    controller: str | ControlLaw = "computed_torque"
    maneuver: str = "wilde"
    duration: float | None = None
    rate: float = 250.0
    plant_substeps: int = 1
    mode_schedule: Sequence[tuple[float, str]] = ()
    mass_error: float = 0.0
    seed: int = 0
    base_actuation: str = "thrusters"
    log_rate: float = 50.0
    initial_joint_positions: dict[str, float] | None = None
    perturbation: Perturbation | None = None
    wall_mass: float | None = None
    overrun_limit: int | None = None

    @property
    def controller_name(self) -> str:
        """The law's name (summaries, logs)."""
        return self.controller if isinstance(self.controller, str) else self.controller.label()

    @property
    def compiled_controller(self) -> str | None:
        """The built-in name the compiled engine knows this run's law by, or None (it is not one
        of computed_torque and resolved_rate at their default parameters)."""
        if isinstance(self.controller, str):
            return self.controller
        return getattr(self.controller, "compiled_name", None)

    def validate(self) -> None:
        if not (np.isfinite(self.rate) and self.rate > 0):
            raise ValueError(f"rate must be a positive number of Hz, got {self.rate}")
        if self.duration is not None and not (np.isfinite(self.duration) and self.duration > 0):
            raise ValueError(f"duration must be a positive number of seconds, got {self.duration}")
        if int(self.plant_substeps) < 1:
            raise ValueError(f"plant_substeps must be >= 1, got {self.plant_substeps}")
        if not (np.isfinite(self.log_rate) and self.log_rate > 0):
            raise ValueError(f"log_rate must be a positive number of Hz, got {self.log_rate}")
        if self.wall_mass is not None and (self.maneuver != "ee-contact" or not (
                np.isfinite(self.wall_mass) and self.wall_mass > 0)):
            raise ValueError(f"wall_mass is the mass of ee-contact's floating wall, a finite number of kg > 0; "
                             f"got {self.wall_mass} with maneuver '{self.maneuver}'")
        if not isinstance(self.controller, (str, ControlLaw)):
            raise ValueError(f"controller must be a built-in's name or a ControlLaw, got {type(self.controller).__name__}")
        if self.overrun_limit is not None and not (isinstance(self.overrun_limit, int) and self.overrun_limit >= 1):
            raise ValueError(f"overrun_limit must be a whole number >= 1 of ticks (None: count only), "
                             f"got {self.overrun_limit!r}")
        for _, mode in self.mode_schedule:
            Mode.parse(mode)
        problem = schedule_problem(self.mode_schedule, "mode_schedule")
        if problem is None and self.duration is not None:
            problem = run_size_problem(self.duration, self.rate, int(self.plant_substeps), self.log_rate)
        if problem:
            raise ValueError(problem)


def parse_mode_schedule(text: str, option: str = "mode schedule") -> list[tuple[float, str]]:
    """'0:floating,20:flying' -> [(0.0, 'floating'), (20.0, 'flying')]; out-of-order, negative
    or non-finite times are refused (:func:`freeflyer_control.control.mode_switch.parse_schedule`)."""
    return parse_schedule(text, option)


def initial_state(ff: FreeFlyerModel, config: SimConfig, maneuver) -> State:
    """The state a run starts from: the configured joint angles (default: zeros for joint-space
    maneuvers, the ready pose for end-effector ones), base at the origin with the maneuver's
    initial twist (its in-plane part for a planar base)."""
    q_init = config.initial_joint_positions
    if q_init is None:
        q_init = ff.ready_pose if maneuver.task_space else {}
    twist = maneuver.initial_base_twist
    lin, ang = twist[:3].copy(), twist[3:].copy()
    if ff.base == "planar":
        lin[2] = 0.0
        ang[:2] = 0.0
    state = make_state(ff, joint_positions=q_init, base_linear_velocity=lin, base_angular_velocity=ang)
    if config.perturbation is None:
        return state
    state = config.perturbation.initial_state(ff, state)
    # A dispersed start is checked like --q0: the robot cannot start outside its joint range.
    angles = joint_positions(ff, state.q)
    outside = limit_violations(ff, dict(zip(ff.joint_names, angles)))
    if outside:
        more = f" (and {len(outside) - 1} more)" if len(outside) > 1 else ""
        raise ValueError(f"the dispersed initial state cannot be flown: {outside[0]}{more}; "
                         "narrow the initial-state dispersion")
    return state
