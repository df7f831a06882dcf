"""Lockstep simulation of a held object: ``freeflyer sim --object NAME --maneuver object-...``.

The robot holding the object (model.objects.attach_object) is integrated by the closed-chain
plant (physics.closed_chain.ClosedChainPlant, loops held); control.cooperative moves the object
along the maneuver's reference and squeezes it to the internal-force setpoint. Momentum and CoM
figures cover the whole system, object included.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar
from pathlib import Path

import numpy as np
import pinocchio as pin

from freeflyer_control.control.cooperative import CooperativeController, ObjectReference, cooperative_mode_problem
from freeflyer_control.control.maneuvers import min_jerk
from freeflyer_control.errors import ModeError, ModelError
from freeflyer_control.model import load_robot
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.grasp_pose import check_object
from freeflyer_control.model.objects import ObjectConfig, attach_object, load_object
from freeflyer_control.physics.closed_chain import ClosedChainPlant
from freeflyer_control.physics.plant import PlantDiverged
from freeflyer_control.physics.gjm import frame_jacobian
from freeflyer_control.physics.grasp import grasp_matrix
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import State, base_position, base_rotation, make_state
from freeflyer_control.sim.body_momentum import group_momenta
from freeflyer_control.sim.writers import write_outputs
from freeflyer_control.sim.pose_record import (
    grasp_wrench_columns,
    object_pose_columns,
    object_pose_sample,
    robot_pose_columns,
    robot_pose_sample,
)
from freeflyer_control.sim.progress import report_progress
from freeflyer_control.sim.stream import TimeseriesStream, keeps_partial, stop_fields

OBJECT_MANEUVERS = ("object-transport", "object-rotate")
MOVE_S, HOLD_S = 4.0, 2.0  # the move (minimum jerk) and the hold after it, s
# The object's displacement (world, m) in object-transport and its turn about world z (rad) in
# object-rotate: inside the bundled robots' closed-chain workspaces from their held poses.
TRANSPORT = {"planar": np.array([0.05, 0.03, 0.0]), "spatial": np.array([0.05, 0.03, 0.02])}
ROTATE_RAD = 0.3
# Peak acceleration of a minimum-jerk move of length D over T: (10 / sqrt(3)) D / T^2.
_MIN_JERK_PEAK = 10.0 / np.sqrt(3.0)


@dataclass
class ObjectSimConfig:
    """robot: bundled name or config; obj: object name or YAML path; maneuver: OBJECT_MANEUVERS;
    mode: any mode the robot's actuators allow; rate: Hz (plant and controller); internal_force:
    squeeze, N; duration: s (default the maneuver's move and hold); log_rate: samples per second;
    base_actuation: "thrusters" (the base wrench allocated to the thrusters) or "ideal"."""

    RUN_KIND: ClassVar[str] = "object"  # run.json's kind (sim.run_record)
    robot: str = "dual_arm_planar"
    obj: str = "planar_box"
    maneuver: str = "object-transport"
    mode: str = "floating"
    rate: float = 500.0
    internal_force: float = 5.0
    duration: float | None = None
    log_rate: float = 50.0
    base_actuation: str = "thrusters"


class ObjectManeuver:
    """The object's reference: from its initial pose X0, a minimum-jerk move then a hold."""

    def __init__(self, name: str, X0: pin.SE3, base: str):
        if name not in OBJECT_MANEUVERS:
            raise ValueError(f"unknown object maneuver '{name}'; choose one of {list(OBJECT_MANEUVERS)}")
        self.name, self.X0 = name, X0
        self.displacement = TRANSPORT[base] if name == "object-transport" else np.zeros(3)
        self.turn = ROTATE_RAD if name == "object-rotate" else 0.0
        self.duration = MOVE_S + HOLD_S

    def __call__(self, t: float) -> ObjectReference:
        s, ds, _ = min_jerk(t / MOVE_S)
        R = pin.rpy.rpyToMatrix(0.0, 0.0, s * self.turn) @ self.X0.rotation
        twist = np.concatenate([ds / MOVE_S * self.displacement, [0.0, 0.0, ds / MOVE_S * self.turn]])
        return ObjectReference(pin.SE3(R, self.X0.translation + s * self.displacement), twist)

    def peak_acceleration(self) -> float:
        """m/s^2: the largest linear acceleration of the object's CoM along the reference."""
        return float(_MIN_JERK_PEAK * np.linalg.norm(self.displacement) / MOVE_S ** 2)


def torque_problem(ff: FreeFlyerModel, held: FreeFlyerModel, obj: ObjectConfig, state: State,
                   maneuver: ObjectManeuver, internal_force: float) -> str | None:
    """Why the arms cannot hold the object through the maneuver (one line), or None.

    A lower bound of the joint torques: the object's peak inertial force (mass times the peak
    acceleration, its most demanding direction being unknown beforehand, applied along each world
    axis) plus the squeeze, shared between the grasps by (W^T)^+, through J^T at the start pose.
    The arms' own inertia only adds to it.
    """
    from freeflyer_control.physics.grasp import squeeze_direction

    data = held.create_data()
    pin.framesForwardKinematics(held.model, data, state.q)
    planar = ff.base == "planar"
    rows = [0, 1, 5] if planar else slice(None)
    ee_pos = np.array([data.oMf[held.frame_id(g.end_effector)].translation for g in obj.grasps])
    W = grasp_matrix(ee_pos, data.oMf[held.frame_id(obj.name)].translation, planar)
    Jc = np.vstack([frame_jacobian(held, data, state.q, g.end_effector)[rows] for g in obj.grasps])
    Jarm = Jc[:, held.arm_v_indices]
    limits = held.arm_effort_limits
    force = obj.mass * maneuver.peak_acceleration()
    squeeze = internal_force * squeeze_direction(ee_pos, planar)
    worst, where = 0.0, None
    for axis in range(2 if planar else 3):
        f_o = np.zeros(W.shape[1])
        f_o[axis] = force
        tau = Jarm.T @ (np.linalg.pinv(W.T) @ f_o + squeeze)
        ratio = np.abs(tau) / limits
        if ratio.max() > worst:
            worst, where = float(ratio.max()), (int(np.argmax(ratio)), tau)
    if worst <= 1.0:
        return None
    i, tau = where
    return (f"object '{obj.name}' ({obj.mass:g} kg) is too heavy for {maneuver.name} on robot '{ff.name}': its "
            f"peak acceleration {maneuver.peak_acceleration():.3g} m/s^2 with a {internal_force:g} N squeeze needs at "
            f"least {abs(tau[i]):.3g} N m at joint '{held.arm_joint_names[i]}' (limit {limits[i]:g} N m); "
            "lighten the object or lower --internal-force")


@dataclass
class ObjectSimResult:
    """series, columns, summary as :class:`~freeflyer_control.sim.runner.SimResult`'s; ``robot``:
    the robot model flown (without the object); ``config``: what was run (ObjectSimConfig or
    CaptureConfig)."""

    series: dict[str, np.ndarray]
    columns: dict[str, list[str]]
    summary: dict = field(default_factory=dict)
    robot: FreeFlyerModel | None = None
    config: object = None

    @property
    def column_names(self) -> dict[str, list[str]]:
        """The column labels, under the name sim.output's writers read."""
        return self.columns


def prepare(config: ObjectSimConfig):
    """Robot, object, the robot holding it, its initial state, the maneuver: everything that can
    be refused before the run (ModelError / ValueError with the reason)."""
    ff = load_robot(config.robot)
    obj = load_object(config.obj)
    angles = check_object(ff, obj)
    held = attach_object(ff, obj)
    state = make_state(held, joint_positions=angles)
    data = held.create_data()
    pin.framesForwardKinematics(held.model, data, state.q)
    maneuver = ObjectManeuver(config.maneuver, data.oMf[held.frame_id(obj.name)].copy(), ff.base)
    mode_problem = cooperative_mode_problem(held, config.mode)
    if mode_problem:
        raise ModeError(mode_problem)
    problem = torque_problem(ff, held, obj, state, maneuver, config.internal_force)
    if problem:
        raise ModelError(problem)
    return ff, obj, held, state, maneuver


def object_columns(ff: FreeFlyerModel, held: FreeFlyerModel, obj: ObjectConfig) -> dict[str, list[str]]:
    """The series of an object run and their column labels (timeseries.csv's header); the pose
    series are :mod:`freeflyer_control.sim.pose_record`'s."""
    xyz, pl = ["x", "y", "z"], ["Px", "Py", "Pz", "Lx", "Ly", "Lz"]
    return {"t": ["t"], **object_pose_columns(), "object_reference": xyz, "object_rotation_error": ["rad"],
            "internal_force": ["N"], "internal_force_setpoint": ["N"], "grasp_constraint_error": ["m"],
            **grasp_wrench_columns([g.end_effector for g in obj.grasps], ff.base == "planar"),
            **robot_pose_columns(held), "base_position_change": ["m"], "base_attitude_change": ["rad"], "com": xyz,
            "arm_torques": list(held.arm_joint_names), "wheel_torques": list(held.wheel_joint_names),
            "thruster_forces": [t.name for t in held.thrusters],
            "base_wrench_world": ["fx", "fy", "mz"] if ff.base == "planar" else ["fx", "fy", "fz", "mx", "my", "mz"],
            **{f"momentum_{g}": pl for g in ("base", "arm", "object", "total")}}


class SampleLog:
    """The samples of an object run, kept as rows and handed to ``stream`` (timeseries.csv, as
    the run goes; :mod:`freeflyer_control.sim.stream`) when there is one."""

    def __init__(self, columns: dict[str, list[str]], stream: TimeseriesStream | None = None):
        self.columns, self.stream = columns, stream
        self.rows: dict[str, list[np.ndarray]] = {key: [] for key in columns}
        if stream is not None:
            stream.begin(columns)

    def record(self, sample: dict) -> None:
        row = {key: np.asarray(sample[key], dtype=float).reshape(-1) for key in self.columns}
        for key, value in row.items():
            self.rows[key].append(value)
        if self.stream is not None:
            self.stream.write(row)

    def series(self) -> dict[str, np.ndarray]:
        return {key: np.vstack(v) if v else np.zeros((0, len(self.columns[key]))) for key, v in self.rows.items()}


def diverged_reason(step: Callable[[], object]) -> str | None:
    """Take one plant step (``step()``); the reason if the plant diverged (PlantDiverged: the
    plant holds its last good state), else None."""
    try:
        step()
    except PlantDiverged as exc:
        return exc.reason
    return None


def run_object_simulation(config: ObjectSimConfig, progress: Callable[[float, float], None] | None = None,
                          *, stream: TimeseriesStream | None = None) -> ObjectSimResult:
    """Fly the object maneuver (see the module docstring); series and summary figures.

    ``progress(t, duration)``: called as the run goes (simulated s). ``stream``: receives every
    sample as it is recorded; if the run stops early (Ctrl-C, an exception), ``stream.partial``
    holds what was recorded, its summary marked (sim.stream.stop_fields). A plant that diverges
    (PlantDiverged) ends the run there: ``summary["plant_diverged"]`` says why.
    """
    ff, obj, held, state, maneuver = prepare(config)
    mode = Mode.parse(config.mode)
    dt = 1.0 / config.rate
    plant = ClosedChainPlant(held, obj, state, dt)
    controller = CooperativeController(held, obj, mode, config.internal_force, base_actuation=config.base_actuation)
    duration = config.duration or maneuver.duration
    steps = int(round(duration / dt))
    every = max(1, int(round(config.rate / config.log_rate)))
    log = SampleLog(object_columns(ff, held, obj), stream)
    data_robot = ff.create_data()
    data_held = held.create_data()
    started = time.perf_counter()
    last_progress = [started]
    t_reached, diverged = 0.0, None

    def result(t_reached: float) -> ObjectSimResult:
        series = log.series()
        summary = _summary(config, ff, obj, series, duration, time.perf_counter() - started, plant, t_reached)
        return ObjectSimResult(series, log.columns, summary, ff, config)

    def partial(exc: BaseException) -> ObjectSimResult:
        stopped = result(t_reached)
        stopped.summary.update(stop_fields(exc, t_reached))
        return stopped

    with keeps_partial(stream, partial):
        for k in range(steps + 1):
            t = k * dt
            ref = maneuver(t)
            tick = controller.tick(plant.state, ref)
            if k % every == 0 or k == steps:
                momenta = _momenta(ff, held, obj, data_robot, data_held, plant.state, tick.object_twist, tick.object_pose)
                squeeze, wrenches = _grasp_wrenches(plant, tick.actuation)
                log.record({
                    "t": [t],
                    **object_pose_sample(tick.object_pose, tick.object_twist),
                    "object_reference": ref.pose.translation,
                    "object_rotation_error": [np.linalg.norm(pin.log3(ref.pose.rotation @ tick.object_pose.rotation.T))],
                    "internal_force": [squeeze],
                    "internal_force_setpoint": [config.internal_force],
                    "grasp_constraint_error": [plant.constraint_error()],
                    "grasp_wrenches": wrenches,
                    **robot_pose_sample(held, plant.state),
                    "base_position_change": [np.linalg.norm(base_position(held, plant.state.q) - base_position(held, state.q))],
                    "base_attitude_change": [np.linalg.norm(pin.log3(base_rotation(held, state.q).T @ base_rotation(held, plant.state.q)))],
                    "com": data_held.com[0].copy(),
                    "arm_torques": tick.actuation.arm_torques,
                    "wheel_torques": _padded(tick.actuation.wheel_torques, held.wheel_v_indices.size),
                    "thruster_forces": _padded(tick.actuation.thruster_forces, len(held.thrusters)),
                    "base_wrench_world": tick.actuation.base_wrench_world if tick.actuation.base_wrench_world.size else np.zeros(3 if ff.base == "planar" else 6),
                    **{f"momentum_{g}": momenta[g] for g in ("base", "arm", "object", "total")},
                })
            if k == steps:
                break
            diverged = diverged_reason(lambda: plant.step(tick.actuation))
            if diverged:  # the run ends here; the summary says why
                break
            t_reached = t + dt
            report_progress(progress, t, duration, last_progress)
    if diverged is None:
        t_reached = duration
    if progress is not None:
        progress(t_reached, duration)
    done = result(t_reached)
    done.summary["plant_diverged"] = diverged
    done.summary.update(engine="python", engine_reason=ENGINE_REASON)
    return done


# Why a held-object run is on the Python engine, in its first line (the figures:
# bench/bench_plant_share.py, docs/benchmarks.md "The plant step from Python").
ENGINE_REASON = ("not compiled: the cooperative law (over two thirds of the run) and the closed-chain "
                 "plant step (under a third: compiled, the run would be at most 1.5x faster)")


def _padded(values: np.ndarray, n: int) -> np.ndarray:
    """An actuator command (empty meaning all zero) as n entries, for the log."""
    return values if values.size else np.zeros(n)


def _grasp_wrenches(plant: ClosedChainPlant, actuation) -> tuple[float, np.ndarray]:
    """The squeeze (N) the plant's grasp wrenches show under the applied (saturated) actuation,
    and those wrenches (:meth:`ClosedChainPlant.grasp_wrenches`, flattened in grasp order)."""
    from freeflyer_control.physics.actuators import generalized_forces
    from freeflyer_control.physics.grasp import squeeze_direction

    tau = generalized_forces(plant.ff, plant.state.q, actuation, plant.state.v)
    f_e = plant.grasp_wrenches(tau).ravel()
    return float(squeeze_direction(plant.ee_positions(), plant.ff.base == "planar") @ f_e), f_e


def _momenta(ff, held, obj, data_robot, data_held, state, object_twist, object_pose) -> dict[str, np.ndarray]:
    """[P; L about the system CoM (object included)] of base, arms, object and total, world axes."""
    robot = group_momenta(ff, data_robot, state)  # the robot alone, about the robot's CoM
    com_robot = data_robot.com[0].copy()
    com = pin.centerOfMass(held.model, data_held, state.q)
    R = object_pose.rotation
    P_o = obj.mass * object_twist[:3]
    L_o = R @ obj.inertia @ R.T @ object_twist[3:] + np.cross(object_pose.translation - com, P_o)

    def shift(h):  # about the robot's CoM -> about the system's
        return np.concatenate([h[:3], h[3:] + np.cross(com_robot - com, h[:3])])

    out = {"base": shift(robot["base"]), "arm": shift(robot["arm"]), "object": np.concatenate([P_o, L_o])}
    out["total"] = out["base"] + out["arm"] + out["object"]
    return out


def _summary(config, ff, obj, s, duration, elapsed, plant, t_reached) -> dict:
    """The figures of an object run; ``t_reached``: the simulated s it reached (a run stopped
    early, or one whose plant diverged, reached less than ``duration``)."""
    if not len(s["t"]):  # stopped before its first sample
        return {"robot": ff.name, "object": obj.name, "maneuver": config.maneuver, "mode": config.mode,
                "controller": "cooperative", "duration_s": duration, "rate_hz": config.rate,
                "t_reached_s": t_reached, "interrupted": False, "error": None}
    err = np.linalg.norm(s["object_position"] - s["object_reference"], axis=1)
    total = s["momentum_total"]
    f_err = s["internal_force"][:, 0] - s["internal_force_setpoint"][:, 0]
    com = s["com"]
    return {
        "robot": ff.name, "object": obj.name, "maneuver": config.maneuver, "mode": config.mode,
        "controller": "cooperative", "duration_s": duration, "rate_hz": config.rate,
        "internal_force_setpoint_N": config.internal_force,
        "max_grasp_constraint_error_m": float(max(plant.max_constraint_error, s["grasp_constraint_error"].max())),
        "object_rms_tracking_error_m": float(np.sqrt(np.mean(err ** 2))),
        "object_max_tracking_error_m": float(err.max()),
        "object_final_error_m": float(err[-1]),
        "object_max_rotation_error_rad": float(s["object_rotation_error"].max()),
        "internal_force_rms_error_N": float(np.sqrt(np.mean(f_err ** 2))),
        "max_abs_linear_momentum": float(np.linalg.norm(total[:, :3], axis=1).max()),
        "max_abs_angular_momentum": float(np.linalg.norm(total[:, 3:], axis=1).max()),
        "momentum_drift": float(np.abs(total - total[0]).max()),
        "com_drift_m": float(np.linalg.norm(com - com[0], axis=1).max()),
        "base_attitude_change_rad": float(s["base_attitude_change"].max()),
        "base_position_change_m": float(np.linalg.norm(s["base_position"] - s["base_position"][0], axis=1).max()),
        "peak_arm_torque_Nm": float(np.abs(s["arm_torques"]).max()),
        "peak_wheel_torque_Nm": float(np.abs(s["wheel_torques"]).max(initial=0.0)),
        "peak_thruster_force_N": float(np.abs(s["thruster_forces"]).max(initial=0.0)),
        "real_time_factor": t_reached / elapsed if elapsed > 0 else None,
        "interrupted": False, "error": None, "t_reached_s": t_reached,
    }


def write_object_outputs(result: ObjectSimResult, out: Path, plots: bool = True, *,
                         timeseries: bool = True, replay: bool = False) -> list[Path]:
    """timeseries.csv, summary.json, run.json, run.mcap (sim.output's conditions), replay.html
    (if ``replay``) and the figures (if ``plots``), into ``out``, by sim.output's writers;
    ``timeseries=False``: the CSV was streamed during the run and is not written again."""
    files = write_outputs(result, out, timeseries=timeseries, replay=replay)
    written = list(files.values())
    if plots:
        written += _capture_plots(result, out) if result.summary["maneuver"] == "capture" else _plots(result, out)
    return written


def _plots(result: ObjectSimResult, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s, t = result.series, result.series["t"][:, 0]
    title = f"{result.summary['robot']}: {result.summary['maneuver']}, {result.summary['mode']}"
    paths = []
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.plot(s["object_reference"][:, 0], s["object_reference"][:, 1], "k--", label="reference")
    ax.plot(s["object_position"][:, 0], s["object_position"][:, 1], label="object CoM")
    ax.set(xlabel="x (m)", ylabel="y (m)", title=f"{title}\nobject path")
    ax.axis("equal")
    ax.legend()
    paths.append(_save(fig, out / "object_path.png", plt))
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(t, s["internal_force"][:, 0], label="internal force")
    ax.plot(t, s["internal_force_setpoint"][:, 0], "k--", label="setpoint")
    ax.set(xlabel="t (s)", ylabel="squeeze (N)", title=f"{title}\ninternal force")
    ax.legend()
    paths.append(_save(fig, out / "internal_force.png", plt))
    fig, axes = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for g in ("base", "arm", "object", "total"):
        h = s[f"momentum_{g}"]
        axes[0].plot(t, np.linalg.norm(h[:, :3], axis=1), label=g)
        axes[1].plot(t, np.linalg.norm(h[:, 3:], axis=1), label=g)
    axes[0].set(ylabel="|P| (kg m/s)", title=f"{title}\nmomentum (L about the system CoM)")
    axes[1].set(xlabel="t (s)", ylabel="|L| (kg m^2/s)")
    axes[0].legend()
    paths.append(_save(fig, out / "momentum_groups.png", plt))
    return paths


def _capture_plots(result: ObjectSimResult, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s, t = result.series, result.series["t"][:, 0]
    title = f"{result.summary['robot']}: capture of {result.summary['object']}, {result.summary['mode']}"
    fig, axes = plt.subplots(3, 1, figsize=(7, 8), sharex=True)
    axes[0].plot(t, s["ee_grasp_distance"][:, 0])
    axes[0].set(ylabel="end-effector to grasp (m)", title=title)
    h = s["momentum_world"]
    n = h.shape[1] // 2 if h.shape[1] == 6 else 2
    axes[1].plot(t, np.linalg.norm(h[:, :n], axis=1), label="|P| (kg m/s)")
    axes[1].plot(t, np.linalg.norm(h[:, n:], axis=1), label="|L_O| (kg m^2/s)")
    axes[1].set(ylabel="momentum, robot + object")
    axes[1].legend()
    axes[2].plot(t, s["grasp_force"][:, 0], label="peak grasp force so far (N)")
    axes[2].plot(t, s["grasp_torque"][:, 0], label="peak grasp torque so far (N m)")
    axes[2].set(xlabel="t (s)")
    axes[2].legend()
    return [_save(fig, out / "capture.png", plt)]


def _save(fig, path: Path, plt) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
