"""Plant and controller in lockstep: the engine behind ``freeflyer sim``.

Every control period the :class:`~freeflyer_control.control.loop.ControlLoop` reads the plant's
state (perfect sensing), the plant integrates the held commands over the period (optionally in
several sub-steps), and a recorder samples the state at the log rate.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Sequence

import numpy as np
import pinocchio as pin

from freeflyer_control.control.effort import ControlEffort
from freeflyer_control.control.loop import ControlLoop, TickInfo
from freeflyer_control.control.maneuvers import make_maneuver
from freeflyer_control.control.mode_switch import initial_mode, parse_schedule, schedule_problem
from freeflyer_control.control.references import JointReference
from freeflyer_control.model import DEFAULT_ROBOT, FreeFlyerModel, load_robot
from freeflyer_control.model.joint_limits import limit_violations
from freeflyer_control.model.perturb import perturbed_mass_properties
from freeflyer_control.physics.actuators import generalized_forces
from freeflyer_control.physics.contact import ContactSample, WallContact, base_reaction
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.plant import Plant, PlantDiverged
from freeflyer_control.physics.state import (
    State,
    base_position,
    base_quaternion_xyzw,
    base_twist_world,
    joint_positions,
    make_state,
)
from freeflyer_control.sim.body_momentum import group_momenta
from freeflyer_control.sim.limits import run_size_problem
from freeflyer_control.sim.metrics import contact_metrics, run_metrics
from freeflyer_control.sim.progress import report_progress
from freeflyer_control.sim.stream import TimeseriesStream, keeps_partial, stop_fields
from freeflyer_control.sim.perturbation import Perturbation


@dataclass
class SimConfig:
    """Attributes:
    robot: bundled name, robot config .yaml or .urdf path; base / ee complete a bare URDF.
    mode: initial maneuvering mode; mode_schedule, if given, overrides it from t = 0.
    controller: computed_torque or resolved_rate.
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
    """

    RUN_KIND: ClassVar[str] = "sim"  # run.json's kind (sim.run_record)
    robot: str = DEFAULT_ROBOT
    base: str | None = None
    ee: Sequence[str] | None = None
    mode: str = "floating"
    controller: str = "computed_torque"
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


def run_simulation(config: SimConfig, progress: Callable[[float, float], None] | None = None,
                   *, fast: bool | None = None, stream: TimeseriesStream | None = None) -> SimResult:
    """Run ``config`` to the end; ``progress(t, duration)`` is called now and then.

    ``fast``: None takes the compiled path (:mod:`freeflyer_control.sim.fast`, same results to
    round-off) when numba is installed and the configuration is covered; False forces the
    Python path; True requires the compiled path and says why it cannot be used.

    ``stream``: receives every sample as it is recorded (:mod:`freeflyer_control.sim.stream`);
    if the run stops early (Ctrl-C, an exception), ``stream.partial`` holds what was recorded
    and the exception goes on.
    """
    config.validate()
    if fast is not False:
        result = _try_fast(config, progress, required=bool(fast), stream=stream)
        if result is not None:
            return result
    ff = load_robot(config.robot, base=config.base, end_effectors=config.ee)
    model = ff if config.mass_error == 0 else perturbed_mass_properties(ff, config.mass_error, config.seed)
    perturbation = config.perturbation or Perturbation()
    model = perturbation.controller_model(model)
    measure = perturbation.sensing(ff) or (lambda t, true_state: true_state)
    maneuver = make_maneuver(config.maneuver)
    mode, schedule = initial_mode(config.mode, config.mode_schedule)

    state = initial_state(ff, config, maneuver)

    loop = ControlLoop(model, maneuver, controller=config.controller, mode=mode,
                       base_actuation=config.base_actuation)
    loop.start(state)
    duration = float(config.duration or maneuver.duration)
    dt = 1.0 / config.rate
    substeps = int(config.plant_substeps)
    plant = Plant(perturbation.plant_model(ff), state, dt / substeps)
    has_wall = getattr(maneuver, "wall_point", None) is not None
    if has_wall:
        plant.contact = WallContact(ff, maneuver.frame, maneuver.wall_point, maneuver.wall_normal,
                                    mass=config.wall_mass)
    recorder = Recorder(ff, stream, contact=has_wall)
    n_ticks = int(round(duration * config.rate))
    log_every = max(1, int(round(config.rate / config.log_rate)))

    wall0 = time.perf_counter()
    last_progress = [wall0]
    info = actuation = diverged = None
    t_reached = 0.0

    def partial(exc: BaseException) -> SimResult:
        return stopped_result(ff, config, recorder, loop, exc, duration=duration, t_reached=t_reached,
                              wall=time.perf_counter() - wall0, engine="python")

    with keeps_partial(stream, partial):
        for k in range(n_ticks + 1):
            t = k * dt
            while schedule and schedule[0][0] <= t + 1e-12:
                t_s, m = schedule.pop(0)
                loop.request_mode(m, t, f"schedule at {t_s:g} s")
            contact = plant.contact.sample(plant.state.q, plant.state.v) if plant.contact else None
            actuation, info = loop.tick(t, measure(t, plant.state), dt, None if contact is None else contact.force)
            if k % log_every == 0 or k == n_ticks:
                extra = None if contact is None else contact_samples(plant, actuation, contact, maneuver, t)
                recorder.record(t, plant.state, info, actuation, extra=extra)
            if k == n_ticks:
                break
            try:
                delivered = perturbation.actuation(ff, actuation)
                for _ in range(substeps):
                    plant.step(delivered)
            except PlantDiverged as exc:  # the run ends here; the summary says why
                diverged = exc.reason
                break
            t_reached = t + dt
            report_progress(progress, t, duration, last_progress)
    wall = time.perf_counter() - wall0
    if diverged is None:
        t_reached = duration
    if progress is not None:
        progress(t_reached, duration)

    series = recorder.series()
    result = SimResult(ff, config, series, recorder.columns)
    result.summary = summarize(result, loop, duration, wall, t_reached=t_reached)
    result.summary["engine"] = "python"
    result.summary["plant_diverged"] = diverged
    return result


def contact_samples(plant: Plant, actuation, contact: ContactSample, maneuver, t: float) -> dict:
    """The contact series of one sample: the force on the end-effector (world, N), its
    component into the wall and the setpoint (N), and the base reaction (world, [N; N m]
    about the base_link origin, :func:`~freeflyer_control.physics.contact.base_reaction`)."""
    ff, state = plant.ff, plant.state
    a = plant.acceleration(state.q, state.v, generalized_forces(ff, state.q, actuation, state.v))
    reaction = base_reaction(ff, plant.contact.data, state.q, state.v, a, contact, plant.contact.fid)
    return {"contact_force": contact.force,
            "contact_force_normal": np.array([float(plant.contact.normal @ contact.force)]),
            "contact_force_setpoint": np.array([maneuver.force_reference(t)]),
            "base_reaction": reaction,
            "wall": np.array([plant.contact.offset, plant.contact.speed])}


def stopped_result(ff: FreeFlyerModel, config: SimConfig, recorder: Recorder, loop: ControlLoop | None,
                   exc: BaseException, *, duration: float, t_reached: float, wall: float,
                   engine: str) -> SimResult:
    """What a run that ``exc`` stopped at simulated time ``t_reached`` (s) recorded, with its
    summary (:func:`summarize` of the samples so far, plus :func:`stop_fields`)."""
    result = SimResult(ff, config, recorder.series(), recorder.columns)
    result.summary = summarize(result, loop, duration, wall, t_reached=t_reached)
    result.summary.update(stop_fields(exc, t_reached), engine=engine)
    return result


def _try_fast(config: SimConfig, progress, required: bool, stream=None) -> SimResult | None:
    from freeflyer_control.sim import fast as fast_path

    if not fast_path.available():
        if required:
            raise ValueError("the compiled simulation needs numba: pip install 'freeflyer_control[fast]'")
        return None
    from freeflyer_control.sim.fast.model import NotCovered
    from freeflyer_control.sim.fast.runner import not_covered, run_fast

    reason = not_covered(config)
    if reason is None:
        try:
            return run_fast(config, progress, stream=stream)
        except NotCovered as exc:  # a joint type the kernels do not implement
            reason = str(exc)
    if required:
        raise ValueError(f"the compiled simulation does not cover this run: {reason}")
    return None


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
    return {
        "robot": ff.name,
        "mode": initial_mode(result.config.mode, result.config.mode_schedule)[0],
        "final_mode": final_mode,
        "controller": result.config.controller,
        "maneuver": maneuver.name,
        "duration_s": duration,
        "rate_hz": result.config.rate,
        "base_actuation": base_actuation,
        "mass_error": result.config.mass_error,
        **metrics,
        "real_time_factor": t_reached / wall if wall > 0 else float("inf"),
        "wall_time_s": wall,
        "mode_switches": switches,
        "interrupted": False,
        "error": None,
        "t_reached_s": t_reached,
        "not_available": not_available,
    }
