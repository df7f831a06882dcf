"""What a run recorded: the samples (:class:`Recorder`), the result (:class:`SimResult`) and the
figures it is judged by (:func:`summarize`), for every engine (Python, compiled, via testbed)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from freeflyer_control.control.effort import ControlEffort
from freeflyer_control.control.loop import ControlLoop, TickInfo
from freeflyer_control.control.maneuvers import make_maneuver
from freeflyer_control.control.mode_switch import initial_mode
from freeflyer_control.control.references import JointReference
from freeflyer_control.model import FreeFlyerModel
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import (
    State,
    base_position,
    base_quaternion_xyzw,
    base_twist_world,
    joint_positions,
)
from freeflyer_control.sim.body_momentum import group_momenta
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.metrics import contact_metrics, run_metrics
from freeflyer_control.sim.stream import TimeseriesStream, stop_fields


@dataclass
class SimResult:
    """Attributes:
    robot: the plant's model.
    config: what was run.
    series: name -> array over the log samples (first axis time); see :class:`Recorder`.
    column_names: name -> labels of the array's second axis.
    summary: the run's figures (summary.json).
    """

    robot: FreeFlyerModel
    config: SimConfig
    series: dict[str, np.ndarray]
    column_names: dict[str, list[str]]
    summary: dict = field(default_factory=dict)


class Recorder:
    """Samples the closed loop into named time series, and into ``stream`` (timeseries.csv as
    the run goes) if one is given."""

    def __init__(self, ff: FreeFlyerModel, stream: TimeseriesStream | None = None, contact: bool = False):
        self.ff = ff
        self.data = ff.create_data()
        self.rows: dict[str, list[np.ndarray]] = {}
        self.stream = stream
        xyz = ["x", "y", "z"]
        arm = list(ff.arm_joint_names)
        self.columns = {
            "t": ["t"],
            "mode": ["mode_index"],
            "joint_positions": list(ff.joint_names),
            "joint_velocities": list(ff.joint_names),
            "arm_reference": arm,
            "arm_reference_rate": arm,
            "base_position": xyz,
            "base_orientation_xyzw": ["qx", "qy", "qz", "qw"],
            "base_linear_velocity": xyz,
            "base_angular_velocity": xyz,
            "com": xyz,
            "arm_torques": arm,
            "wheel_torques": list(ff.wheel_joint_names),
            "thruster_forces": [t.name for t in ff.thrusters],
            "base_wrench_world": ["fx", "fy", "mz"] if ff.base == "planar" else ["fx", "fy", "fz", "mx", "my", "mz"],
            "ee_positions": [f"{ee}_{a}" for ee in ff.end_effectors for a in xyz],
            "ee_targets": [f"{ee}_{a}" for ee in ff.end_effectors for a in xyz],
            "sigma_min": ["sigma_min"],
            "blend": ["blend"],
        }
        for group in ("total", "base", "arm"):
            self.columns[f"momentum_{group}"] = ["Px", "Py", "Pz", "Lx", "Ly", "Lz"]
        if contact:  # a run with a wall (ee-contact): see contact_samples
            self.columns.update({
                "contact_force": ["fx", "fy", "fz"],
                "contact_force_normal": ["force_N"],
                "contact_force_setpoint": ["setpoint_N"],
                "base_reaction": ["fx", "fy", "fz", "mx", "my", "mz"],
                "wall": ["offset_m", "speed_m_s"],  # along the wall normal (0 for a fixed wall)
            })
        if stream is not None:
            stream.begin(self.columns)

    def record(self, t: float, state: State, info, actuation, mode: Mode | None = None,
               extra: dict[str, np.ndarray] | None = None) -> None:
        """One sample of the plant ``state`` at ``t`` (s) and of the controller's tick ``info``.

        ``info`` None (a controller that has not ticked yet, e.g. waiting for a testbed's
        first measurements): its signals are NaN and ``mode`` is recorded as the mode in force.
        """
        if info is None:
            info = _no_tick_info(self.ff, mode)
        ff, data = self.ff, self.data
        lin, ang = base_twist_world(ff, state)
        momenta = group_momenta(ff, data, state)  # also runs forward kinematics
        pin.updateFramePlacements(ff.model, data)
        ee_pos = np.concatenate([data.oMf[ff.frame_id(ee)].translation for ee in ff.end_effectors]) \
            if ff.end_effectors else np.zeros(0)
        targets = np.full(ee_pos.size, np.nan)
        for task in info.tasks:
            i = ff.end_effectors.index(task.frame)
            targets[3 * i: 3 * i + 3] = task.position
        rr = info.resolved_rate
        sample = {
            "t": np.array([t]),
            "mode": np.array([list(Mode).index(info.mode)]),
            "joint_positions": joint_positions(ff, state.q),
            "joint_velocities": state.v[ff.nb:].copy(),
            "arm_reference": info.joint_reference.position,
            "arm_reference_rate": info.joint_reference.velocity,
            "base_position": base_position(ff, state.q),
            "base_orientation_xyzw": base_quaternion_xyzw(ff, state.q),
            "base_linear_velocity": lin,
            "base_angular_velocity": ang,
            "com": data.com[0].copy(),
            "arm_torques": actuation.arm_torques,
            "wheel_torques": actuation.wheel_torques,
            "thruster_forces": actuation.thruster_forces,
            "base_wrench_world": info.effort.base_wrench_world,
            "ee_positions": ee_pos,
            "ee_targets": targets,
            "sigma_min": np.array([rr.sigma_min if rr else np.nan]),
            "blend": np.array([info.blend]),
            "momentum_total": momenta["total"],
            "momentum_base": momenta["base"],
            "momentum_arm": momenta["arm"],
            **(extra or {}),
        }
        self.extend({key: np.asarray(value, dtype=float).reshape(-1) for key, value in sample.items()})

    def extend(self, samples: dict[str, np.ndarray]) -> None:
        """Add one sample (arrays of shape (k,)) or a block of them ((n, k)) of every series."""
        for key, value in samples.items():
            self.rows.setdefault(key, []).append(value)
        if self.stream is not None:
            self.stream.write(samples)

    def series(self) -> dict[str, np.ndarray]:
        """Every series as an (n, k) array, n = samples so far (0 before the first)."""
        return {key: np.vstack(self.rows[key]) if self.rows.get(key) else np.zeros((0, len(cols)))
                for key, cols in self.columns.items()}


def _no_tick_info(ff: FreeFlyerModel, mode: Mode | str | None) -> TickInfo:
    """Tick info whose every signal is NaN, in ``mode`` (default floating): what the Recorder
    writes for a controller that has not ticked."""
    arm, nan = len(ff.arm_joint_names), np.nan
    return TickInfo(
        mode=Mode.parse(mode or Mode.FLOATING),
        blend=nan,
        effort=ControlEffort(np.full(arm, nan), np.full(len(ff.wheel_joint_names), nan), np.full(ff.nb, nan)),
        joint_reference=JointReference(np.full(arm, nan), np.full(arm, nan), np.full(arm, nan)),
        tasks=(), resolved_rate=None, allocation_residual=np.full(6, nan))


def stopped_result(ff: FreeFlyerModel, config: SimConfig, recorder: Recorder, loop: ControlLoop | None,
                   exc: BaseException, *, duration: float, t_reached: float, wall: float,
                   engine: str) -> SimResult:
    """What a run that ``exc`` stopped at simulated time ``t_reached`` (s) recorded, with its
    summary (:func:`summarize` of the samples so far, plus :func:`stop_fields`)."""
    result = SimResult(ff, config, recorder.series(), recorder.columns)
    result.summary = summarize(result, loop, duration, wall, t_reached=t_reached)
    result.summary.update(stop_fields(exc, t_reached), engine=engine)
    return result


def law_fields(loop: ControlLoop | None) -> dict:
    """The control law's part of a summary: ``law_fault`` (None, or one line: which law, when,
    why: the run ended there), its overruns (ticks whose law CPU time exceeded the period) and
    its longest tick, s (control.law_guard); those two are None on the compiled engine, which
    runs its laws inside the compiled loop."""
    timing = loop.guard.timing if loop is not None else None
    if timing is None or timing.ticks == 0:
        # A run stopped before its loop could be asked, or the compiled engine (its laws run in
        # the compiled loop, never timed per tick): no figure, and nothing missing from the run.
        return {"law_fault": None if loop is None or loop.fault is None else str(loop.fault),
                "law_overruns": None, "law_longest_tick_s": None}
    return {"law_fault": None if loop.fault is None else str(loop.fault),
            "law_overruns": timing.overruns, "law_longest_tick_s": timing.longest_s}


def summarize(result: SimResult, loop: ControlLoop | None, duration: float, wall: float, *,
              t_reached: float | None = None) -> dict:
    """The figures a run is judged by (summary.json).

    ``duration``: the run's planned length, s; ``t_reached``: the simulated time it reached
    (default: all of it); ``wall``: s it took. ``loop`` None (a run stopped before its control
    loop could be asked): the final mode is the last one recorded, and the base actuation and
    the mode switches are not available. A figure whose signals are missing is None, and
    ``not_available`` says why (:func:`~freeflyer_control.sim.metrics.run_metrics`).
    """
    ff = result.robot
    t_reached = duration if t_reached is None else t_reached
    if loop is not None:
        final_mode, maneuver = loop.mode.value, loop.maneuver
        base_actuation = loop.mapper.base_actuation
        switches = [m.as_dict() for m in loop.switcher.history]
    else:
        recorded = result.series.get("mode", np.zeros((0, 1)))
        final_mode = list(Mode)[int(recorded[-1, 0])].value if len(recorded) else None
        maneuver, base_actuation, switches = make_maneuver(result.config.maneuver), None, None
    metrics = run_metrics(ff, result.series, maneuver.task_space)
    if "contact_force_normal" in result.series:
        metrics.update(contact_metrics(result.series, metrics["not_available"]))
        metrics["wall_mass_kg"] = result.config.wall_mass
        moving = result.series.get("wall")
        metrics["wall_final_speed_m_s"] = float(moving[-1, 1]) if moving is not None and len(moving) else None
    not_available = metrics.pop("not_available")
    if loop is None:
        not_available["mode_switches"] = not_available["base_actuation"] = \
            "not collected: the run stopped early"
    law = law_fields(loop)
    return {
        "robot": ff.name,
        "mode": initial_mode(result.config.mode, result.config.mode_schedule)[0],
        "final_mode": final_mode,
        "controller": result.config.controller_name,
        "maneuver": maneuver.name,
        "duration_s": duration,
        "rate_hz": result.config.rate,
        "base_actuation": base_actuation,
        "mass_error": result.config.mass_error,
        **metrics,
        "real_time_factor": t_reached / wall if wall > 0 else float("inf"),
        "wall_time_s": wall,
        "mode_switches": switches,
        **law,
        "interrupted": False,
        "error": None,
        "t_reached_s": t_reached,
        "not_available": not_available,
    }
