"""Lockstep simulation of a capture: ``freeflyer sim --object NAME --maneuver capture``.

The target floats free and tumbles on its own plant (a one-body free-flyer: physics.plant on
model.objects.free_object_model), from its config's ``initial_state`` (model.object_state) or,
without one, a few centimetres off its held pose (``START``). The robot flies
control.capture_mission.CaptureMission: optional bias pre-loading, the approach (naive or
reactionless), the first grasp as a plastic impact once within the tolerances
(physics.capture.capture_impact, momentum conserved), the stow, the second hand's reach and its
loop closure (physics.capture.close_loop), the closed chain held at rest (or, with one grasp,
the rest law). The plant changes with the system: robot and target apart, the robot holding the
target by one hand (physics.plant), both hands (physics.closed_chain.ClosedChainPlant).

The controller sees the target through ``sensor_noise`` and believes its nominal mass
properties; ``target_*`` dispersions change only the truth (campaigns).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pinocchio as pin

from freeflyer_control.control.capture import CaptureTolerances, capture_refusal, relative_motion
from freeflyer_control.control.capture_mission import PHASES, CaptureMission, CaptureOptions
from freeflyer_control.errors import ModelError
from freeflyer_control.model import load_robot
from freeflyer_control.model.objects import (
    ObjectConfig,
    attach_object,
    free_object_model,
    grasp_frame_name,
    load_object,
    with_grasp_placement,
)
from freeflyer_control.physics.actuators import generalized_forces
from freeflyer_control.physics.bias_momentum import stack_momentum, wheel_momentum
from freeflyer_control.physics.capture import capture_impact, close_loop
from freeflyer_control.physics.closed_chain import ClosedChainPlant, object_net_wrench
from freeflyer_control.physics.free_body import BodyState, free_body
from freeflyer_control.physics.grasp import grasp_matrix
from freeflyer_control.physics.kernels.plant import make_plant
from freeflyer_control.physics.linalg import cross3
from freeflyer_control.physics.momentum import world_momentum
from freeflyer_control.physics.plant import Plant
from freeflyer_control.physics.state import (
    State,
    base_position,
    base_rotation,
    base_twist_world,
    make_state,
)
from freeflyer_control.sim.cooperative import ObjectSimResult, SampleLog, diverged_reason
from freeflyer_control.sim.pose_record import (
    grasp_wrench_columns,
    object_pose_columns,
    object_pose_sample,
    robot_pose_columns,
    robot_pose_sample,
)
from freeflyer_control.sim.progress import report_progress
from freeflyer_control.sim.result import applied_or_nan
from freeflyer_control.sim.stream import TimeseriesStream, keeps_partial, stop_fields

# Without an initial_state: where the target starts relative to where the robot would hold it
# (world, m and rad), and how it tumbles ([v (m/s); w (rad/s)], world axes at its CoM): a slow
# drift and spin a few centimetres from the capturing hand.
START = {
    "planar": (np.array([0.05, 0.04, 0.0]), np.array([0.0, 0.0, 0.1]),
               np.array([-0.004, 0.002, 0.0, 0.0, 0.0, 0.03])),
    "spatial": (np.array([0.05, 0.04, 0.03]), np.array([0.05, -0.05, 0.1]),
                np.array([-0.004, 0.002, 0.001, 0.01, -0.02, 0.03])),
}
# s: the approach's deadline after it begins (a grasp that has not closed by then is refused).
APPROACH_TIMEOUT_S = 40.0
# s: without --duration a run ends this long after the stack came to rest (the final figures are
# then those of a stack that has settled, not of one just under the rest threshold).
SETTLE_S = 5.0
# s: a run without --duration stops this long after the first grasp if the stack is not at rest.
REST_TIMEOUT_S = 60.0


@dataclass
class CaptureConfig:
    """A capture run: robot, target, the mission's options, rates, and the target's dispersions.

    Attributes:
        robot, obj: bundled names or paths.
        mode, approach, bias, both_arms, base_actuation, tolerances: control.capture_mission.CaptureOptions.
        rate: Hz (plants and controller); duration: s (default: until at rest, or the timeouts);
        log_rate: samples per second.
        target_mass_scale, target_inertia_scale, target_spin_scale: the true target's mass,
            principal inertia (per body axis) and spin rate relative to its config (1: nominal).
        target_spin_tilt: rad, a rotation vector (body axes) turning the spin axis.
        sensor_noise: standard deviations of the target measurement: ``position`` m,
            ``attitude`` rad, ``velocity`` m/s, ``rate`` rad/s (white, each tick).
        seed: the noise's seed.
    """

    RUN_KIND: ClassVar[str] = "capture"  # run.json's kind (sim.run_record)
    robot: str = "dual_arm_planar"
    obj: str = "planar_box"
    mode: str = "flying"
    rate: float = 500.0
    duration: float | None = None
    log_rate: float = 50.0
    tolerances: CaptureTolerances = field(default_factory=CaptureTolerances)
    approach: str = "naive"
    bias: bool = False
    both_arms: bool = True
    base_actuation: str = "thrusters"
    target_mass_scale: float = 1.0
    target_inertia_scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    target_spin_scale: float = 1.0
    target_spin_tilt: tuple[float, float, float] = (0.0, 0.0, 0.0)
    sensor_noise: dict = field(default_factory=dict)
    seed: int = 0

    def options(self) -> CaptureOptions:
        return CaptureOptions(mode=self.mode, approach=self.approach, bias=self.bias, both_arms=self.both_arms,
                              base_actuation=self.base_actuation, tolerances=self.tolerances)


def true_target(obj: ObjectConfig, config: CaptureConfig) -> ObjectConfig:
    """The target as it really is: ``obj`` with the config's mass and inertia dispersions."""
    if config.target_mass_scale == 1.0 and tuple(config.target_inertia_scale) == (1.0, 1.0, 1.0):
        return obj
    s = np.sqrt(np.asarray(config.target_inertia_scale, dtype=float))
    inertia = np.diag(s) @ obj.inertia @ np.diag(s)  # principal moments of a diagonal inertia scale by s^2
    return dataclasses.replace(obj, mass=obj.mass * config.target_mass_scale, inertia=inertia)


def target_start(ff, obj: ObjectConfig, robot_state: State, config: CaptureConfig | None = None) -> BodyState:
    """The target's state at the start (world): its ``initial_state`` relative to the robot's
    start pose, or ``START`` off its held pose; spin scaled and tilted as ``config`` says."""
    servicer = pin.SE3(base_rotation(ff, robot_state.q), base_position(ff, robot_state.q))
    if obj.initial_state is not None:
        pose, v, w = obj.initial_state.in_world(servicer)
    else:
        shift, rpy, twist = START[ff.base]
        X = servicer * obj.pose_in_base
        pose = pin.SE3(pin.rpy.rpyToMatrix(*rpy) @ X.rotation, X.translation + shift)
        v, w = twist[:3].copy(), twist[3:].copy()
    if config is not None:
        body_w = pose.rotation.T @ w
        tilt = np.asarray(config.target_spin_tilt, dtype=float)
        if ff.base == "planar":
            tilt = np.zeros(3)
        w = pose.rotation @ (pin.exp3(tilt) @ body_w) * config.target_spin_scale
    if ff.base == "planar":
        yaw = float(np.arctan2(pose.rotation[1, 0], pose.rotation[0, 0]))
        pose = pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, yaw), np.array([pose.translation[0], pose.translation[1], 0.0]))
        v, w = np.array([v[0], v[1], 0.0]), np.array([0.0, 0.0, w[2]])
    return BodyState(pose, v, w)


def free_state(free, start: BodyState) -> State:
    """The free target's plant state for ``start``."""
    kw = dict(base_linear_velocity=start.linear_velocity, base_angular_velocity=start.angular_velocity)
    p, R = start.pose.translation, start.pose.rotation
    if free.base == "planar":
        kw.update(base_position=[p[0], p[1], 0.0], base_yaw=float(np.arctan2(R[1, 0], R[0, 0])))
    else:
        kw.update(base_position=p, base_orientation_xyzw=pin.Quaternion(R).coeffs())
    return make_state(free, **kw)


def initial_states(config: CaptureConfig):
    """(robot, object, capturing end-effector, robot state at its ready pose, free target model,
    its state): the nominal object; the free target is the true one (dispersed)."""
    ff = load_robot(config.robot)
    obj = load_object(config.obj)
    if obj.base != ff.base:
        raise ModelError(f"object '{obj.name}' is for {obj.base} robots; robot '{ff.name}' is {ff.base}: "
                         f"choose an object with base: {ff.base}")
    ee = obj.grasps[0].end_effector
    ff.frame_id(ee)  # refuses an end-effector the robot lacks, naming its links
    robot_state = make_state(ff, joint_positions=ff.ready_pose)
    free = free_object_model(true_target(obj, config))
    return ff, obj, ee, robot_state, free, free_state(free, target_start(ff, obj, robot_state, config))


def request_capture(ff, obj, ee: str, robot_state: State, free, object_state: State,
                    tol: CaptureTolerances) -> str | None:
    """What the capture service answers now for the free target: None (the first grasp may
    close) or the refusal line."""
    rdata, odata = ff.create_data(), free.create_data()
    for model, data, s in ((ff.model, rdata, robot_state), (free.model, odata, object_state)):
        pin.forwardKinematics(model, data, s.q, s.v)
        pin.updateFramePlacements(model, data)
    fe, fg = ff.frame_id(ee), free.frame_id(grasp_frame_name(obj, ee))
    rel = relative_motion(rdata.oMf[fe], pin.getFrameVelocity(ff.model, rdata, fe, pin.LOCAL_WORLD_ALIGNED).vector,
                          odata.oMf[fg], pin.getFrameVelocity(free.model, odata, fg, pin.LOCAL_WORLD_ALIGNED).vector)
    return capture_refusal(ee, obj.name, rel, tol)


def _object_pose_twist(free, state: State) -> tuple[pin.SE3, np.ndarray]:
    lin, ang = base_twist_world(free, state)
    R = base_rotation(free, state.q)
    p = state.q[:3] if free.base == "spatial" else np.array([state.q[0], state.q[1], 0.0])
    return pin.SE3(R, p), np.concatenate([lin, ang])


def body_state(free, state: State) -> BodyState:
    """The free target's plant state as a physics.free_body.BodyState."""
    pose, twist = _object_pose_twist(free, state)
    return BodyState(pose, twist[:3], twist[3:])


def _object_momentum(obj, pose: pin.SE3, twist: np.ndarray, planar: bool) -> np.ndarray:
    """[P; L about the world origin] of the free object, world axes (planar [Px, Py, Lz])."""
    P = obj.mass * twist[:3]
    L = pose.rotation @ obj.inertia @ pose.rotation.T @ twist[3:] + cross3(pose.translation, P)
    h = np.concatenate([P, L])
    return h[[0, 1, 5]] if planar else h


class _Sensor:
    """The controller's measurement of the free target: the truth plus white noise."""

    def __init__(self, noise: dict, seed: int, planar: bool):
        known = {"position", "attitude", "velocity", "rate"}
        unknown = set(noise) - known
        if unknown:
            raise ValueError(f"sensor_noise: unknown key(s) {sorted(unknown)}; known: {sorted(known)}")
        self.sigma = {k: float(noise.get(k, 0.0)) for k in known}
        self.rng = np.random.default_rng(seed)
        self.planar = planar

    def measure(self, truth: BodyState) -> BodyState:
        s = self.sigma
        if not any(s.values()):
            return truth
        mask = np.array([1.0, 1.0, 0.0]) if self.planar else np.ones(3)
        turn = np.array([0.0, 0.0, 1.0]) if self.planar else np.ones(3)
        n = lambda key, m: s[key] * m * self.rng.normal(size=3)  # noqa: E731
        R = pin.exp3(n("attitude", turn)) @ truth.pose.rotation
        return BodyState(pin.SE3(R, truth.pose.translation + n("position", mask)),
                         truth.linear_velocity + n("velocity", mask), truth.angular_velocity + n("rate", turn))


def capture_columns(ff, end_effectors: list[str]) -> dict[str, list[str]]:
    """The series of a capture run and their column labels (timeseries.csv's header); the pose
    series are :mod:`freeflyer_control.sim.pose_record`'s (the robot's, and the target's free or
    held), ``com`` the system CoM (target included, world, m), ``grasp_wrenches`` per grasp of
    ``end_effectors``, zero while that grasp is open. Torques and forces as the plant applied them,
    and as commanded (``*_commanded``), as sim.result.Recorder's."""
    planar = ff.base == "planar"
    arm, wheels, thrusters = list(ff.arm_joint_names), list(ff.wheel_joint_names), [t.name for t in ff.thrusters]
    return {"t": ["t"], "phase": ["index"], "ee_grasp_distance": ["m"],
            "momentum_world": ["Px", "Py", "Lz"] if planar else ["Px", "Py", "Pz", "Lx", "Ly", "Lz"],
            "base_attitude_change": ["rad"],
            **robot_pose_columns(ff), **object_pose_columns(), "com": ["x", "y", "z"],
            "arm_torques": arm, "arm_torques_commanded": arm, "wheel_torques": wheels,
            "wheel_torques_commanded": wheels, "thruster_forces": thrusters, "thruster_forces_commanded": thrusters,
            "wheel_momentum": ["Lz"] if planar else ["Lx", "Ly", "Lz"],
            "fuel": ["N s"], "grasp_force": ["N"], "grasp_torque": ["N m"],
            **grasp_wrench_columns(end_effectors, planar),
            "grasp_constraint_error": ["m"], "grasp_constraint_rotation_error": ["rad"]}


@dataclass
class _Run:
    """What the loop keeps between ticks."""

    capture_t: float | None = None
    loop_t: float | None = None
    rest_t: float | None = None
    refusal: str | None = None
    impact: object = None
    hdata: object = None
    closure: object = None
    peak_f: float = 0.0
    peak_m: float = 0.0
    fuel: float = 0.0
    fuel_at_capture: float | None = None
    h_jump: float | None = None
    loop_jump: float | None = None
    w_after_impact: float | None = None
    start_distance: float | None = None
    stack: object = None
    approach_attitude: float = 0.0
    grasp_rows: object = None  # the last step's wrench of each closed grasp (_grasp_wrench_rows)


def run_capture(config: CaptureConfig, progress: Callable[[float, float], None] | None = None,
                *, stream: TimeseriesStream | None = None) -> ObjectSimResult:
    """Fly the capture (see the module docstring); series and summary figures.

    ``progress`` and ``stream`` as in sim.cooperative.run_object_simulation: a run stopped early
    leaves ``stream.partial``; a plant that diverges ends the run (``summary["plant_diverged"]``).
    """
    ff, obj, ee, robot_state, free, object_state = initial_states(config)
    truth = true_target(obj, config)
    planar = ff.base == "planar"
    dt = 1.0 / config.rate
    duration = config.duration
    horizon = duration if duration is not None else APPROACH_TIMEOUT_S + REST_TIMEOUT_S
    steps = int(round(horizon / dt))
    every = max(1, int(round(config.rate / config.log_rate)))
    mission = CaptureMission(ff, obj, config.options())
    sensor = _Sensor(config.sensor_noise, config.seed, planar)
    # The open-chain plants (the target free, then held by one hand): the compiled step where
    # numba is installed (physics.kernels.plant.make_plant); the closed chain's is Python.
    plant, plant_step = make_plant(ff, robot_state, dt)
    object_plant: Plant | None = make_plant(free, object_state, dt)[0]
    model = ff
    data = ff.create_data()
    R0 = base_rotation(ff, robot_state.q)
    run = _Run()
    run.stack = stack_momentum(ff, data, robot_state, free_body(truth), body_state(free, object_state))
    grasping = [g.end_effector for g in obj.grasps][:1 if mission.second is None else 2]
    log = SampleLog(capture_columns(ff, grasping), stream)
    started = time.perf_counter()
    last_progress = [started]
    t_reached, diverged = 0.0, None

    def result(t_reached: float) -> ObjectSimResult:
        series = log.series()
        return ObjectSimResult(series, log.columns, _summary(config, ff, obj, series, t_reached,
                                                             time.perf_counter() - started, mission, run), ff, config)

    def partial(exc: BaseException) -> ObjectSimResult:
        stopped = result(t_reached)
        stopped.summary.update(stop_fields(exc, t_reached), duration_s=horizon)
        return stopped

    with keeps_partial(stream, partial):
        for k in range(steps + 1):
            t = k * dt
            state = plant.state
            target = body_state(free, object_plant.state) if object_plant is not None else None
            seen = sensor.measure(target) if target is not None else None
            if mission.phase in ("approach", "reach"):
                run.refusal = mission.grasp_refusal(state, seen)
                if run.start_distance is None and mission.phase == "approach":
                    run.start_distance = float(np.linalg.norm(
                        mission.grasp_motion(state, seen)[1].translation - mission.grasp_motion(state, seen)[3].translation))
                if run.refusal is None and mission.phase == "approach":
                    plant, object_plant, model = _close_first(ff, obj, truth, ee, plant, object_plant, free, mission, run, t, dt)
                    data, state, target, seen = model.create_data(), plant.state, None, None
                elif run.refusal is None:
                    plant, model = _close_second(ff, plant, mission, run, t, dt, data)
                    data, state = model.create_data(), plant.state
                elif mission.phase == "approach" and t - mission.events.started.get("approach", 0.0) >= APPROACH_TIMEOUT_S:
                    break
            act = mission.actuation(state, t, seen)
            if run.rest_t is None and mission.at_rest(state):
                run.rest_t = t
            logged = k % every == 0 or k == steps
            # What the actuators apply of the command (for the log, and the thrusters' impulse).
            applied = applied_or_nan(model, act, state.q, state.v)[0] if logged or act.thruster_forces.size else None
            if logged:
                log.record(_sample(ff, obj, model, data, plant, object_plant, free, truth, mission, act, applied, R0,
                                   t, run, len(grasping)))
            if k == steps or (duration is None and (
                    (run.rest_t is not None and t >= run.rest_t + SETTLE_S)
                    or (run.capture_t is not None and t >= run.capture_t + REST_TIMEOUT_S))):
                break
            before = plant.state.copy()
            if object_plant is None:
                diverged = diverged_reason(lambda: plant.step(act))
            else:
                diverged = diverged_reason(lambda: (plant.step(act), object_plant.step()))
            if diverged:  # the run ends here; the summary says why
                break
            if act.thruster_forces.size:  # the impulse the thrusters gave (applied, within their limits)
                run.fuel += float(np.sum(applied.thruster_forces)) * dt
            if run.capture_t is None:
                run.approach_attitude = max(run.approach_attitude, _turned(ff, R0, plant.state))
            else:
                run.grasp_rows = _grasp_wrench_rows(plant, run, before, act, planar)
                f, m = _force_and_moment(run.grasp_rows, planar)
                run.peak_f, run.peak_m = max(run.peak_f, f), max(run.peak_m, m)
            t_reached = t + dt
            report_progress(progress, t, horizon, last_progress)
    if diverged is None:
        t_reached = float(log.rows["t"][-1][0]) if log.rows["t"] else 0.0
    if progress is not None:
        progress(horizon if diverged is None else t_reached, horizon)
    done = result(t_reached)
    done.summary["plant_diverged"] = diverged
    done.summary.update(engine="python", engine_reason="not compiled: the capture laws", plant_step=plant_step)
    return done


def _turned(ff, R0: np.ndarray, state: State) -> float:
    """The base's attitude change since R0, rad."""
    return float(np.linalg.norm(pin.log3(R0.T @ base_rotation(ff, state.q))))


def _close_first(ff, obj, truth, ee, plant, object_plant, free, mission, run, t, dt):
    """The first grasp closes (plastic impact): the robot holding the (true) target from now on."""
    pose, twist = _object_pose_twist(free, object_plant.state)
    rs = plant.state
    h_before = world_momentum(ff, plant.data, rs) + _object_momentum(truth, pose, twist, ff.base == "planar")
    impact = capture_impact(ff, truth, ee, rs, pose, twist)
    h_after = world_momentum(impact.held, impact.held.create_data(), impact.state)
    run.h_jump = float(np.abs(h_after - h_before).max())
    run.impact, run.capture_t, run.fuel_at_capture = impact, t, run.fuel
    run.hdata = impact.held.create_data()
    _, w = base_twist_world(impact.held, impact.state)
    run.w_after_impact = float(np.linalg.norm(w))
    held = make_plant(impact.held, impact.state, dt, t0=t)[0]
    # The controller holds what it believes: the nominal target, grasped where the hand closed.
    mission.grasped(impact.state, with_grasp_placement(obj, ee, impact.obj.grasps[0].placement), t)
    return held, None, impact.held


def _close_second(ff, plant, mission, run, t, dt, data):
    """The second grasp closes the loop (an internal impulse): the closed-chain plant from now on."""
    state = plant.state
    h_before = world_momentum(plant.ff, data, state)
    closure = close_loop(ff, run.impact.obj, mission.second.end_effector, state)
    h_after = world_momentum(closure.held, closure.held.create_data(), closure.state)
    run.loop_jump = float(np.abs(h_after - h_before).max())
    run.closure, run.loop_t = closure, t
    believed = dataclasses.replace(closure.obj, mass=mission.obj.mass, inertia=mission.obj.inertia)
    mission.loop_closed(closure.state, attach_object(ff, believed), believed, t)
    return ClosedChainPlant(closure.held, closure.obj, closure.state, dt, t), closure.held


def _grasp_wrench_rows(plant, run, state: State, act, planar: bool) -> np.ndarray:
    """The wrench each closed grasp's hand applies to the held target over the last step (one row
    per grasp: world axes, about the end-effector origin, planar [fx, fy, mz], spatial [f; m]; at
    the step's start under the held command): from the net wrench on the object (one grasp) or
    the closed chain's grasp wrenches (two)."""
    if isinstance(plant, ClosedChainPlant):  # at the new state, under the command held over the step
        tau = generalized_forces(plant.ff, plant.state.q, act, plant.state.v)
        rows = plant.grasp_wrenches(tau)
    else:
        held, obj = plant.ff, run.impact.obj
        hdata = run.hdata
        net = object_net_wrench(held, hdata, obj, state.q, state.v, plant.last_acceleration)
        e = hdata.oMf[held.frame_id(obj.grasps[0].end_effector)].translation
        c = hdata.oMf[held.frame_id(obj.name)].translation
        rows = np.linalg.solve(grasp_matrix(e[None, :], c, planar).T, net)[None, :]
    return rows


def _force_and_moment(rows: np.ndarray, planar: bool) -> tuple[float, float]:
    """The largest |force| (N) and |moment| (N m) among grasp wrench rows (:func:`_grasp_wrench_rows`)."""
    n = 2 if planar else 3
    return float(np.linalg.norm(rows[:, :n], axis=1).max()), float(np.linalg.norm(rows[:, n:], axis=1).max())


def _sample(ff, obj, model, data, plant, object_plant, free, truth, mission, act, applied, R0, t, run,
            grasps: int) -> dict:
    """One logged sample (:func:`capture_columns`) of the system as it is at ``t``: the robot and
    the free target on their two plants, or the robot holding the target (``model``: the robot
    with the target attached, its ``obj.name`` frame at the target's CoM); ``applied``: what the
    actuators apply of the command ``act`` (sim.result.applied_or_nan)."""
    planar = ff.base == "planar"
    state = plant.state
    h = world_momentum(model, data, state)
    pin.forwardKinematics(model.model, data, state.q, state.v)
    pin.updateFramePlacements(model.model, data)
    com = pin.centerOfMass(model.model, data, state.q)
    if object_plant is not None:
        pose, twist = _object_pose_twist(free, object_plant.state)
        h = h + _object_momentum(truth, pose, twist, planar)
        com = (ff.total_mass * com + truth.mass * pose.translation) / (ff.total_mass + truth.mass)
    else:
        fid = model.frame_id(obj.name)
        pose = data.oMf[fid].copy()
        twist = pin.getFrameVelocity(model.model, data, fid, pin.LOCAL_WORLD_ALIGNED).vector
    nb = 3 if planar else 6
    wrenches = np.zeros(grasps * nb)
    if run.grasp_rows is not None and object_plant is None:
        rows = np.asarray(run.grasp_rows).ravel()[:grasps * nb]
        wrenches[:rows.size] = rows
    if mission.phase in ("approach", "reach"):
        target = body_state(free, object_plant.state) if object_plant is not None else None
        _, ee, _, grasp, _ = mission.grasp_motion(state, target)
        distance = float(np.linalg.norm(ee.translation - grasp.translation))
    else:
        distance = 0.0
    errors = plant.constraint_errors() if isinstance(plant, ClosedChainPlant) else (0.0, 0.0)
    return {"t": [t], "phase": [PHASES.index(mission.phase)], "ee_grasp_distance": [distance],
            "momentum_world": h, "base_attitude_change": [_turned(ff, R0, state)],
            **robot_pose_sample(ff, state), **object_pose_sample(pose, twist), "com": com,
            "arm_torques": applied.arm_torques, "arm_torques_commanded": act.arm_torques,
            "wheel_torques": applied.wheel_torques,
            "wheel_torques_commanded": act.wheel_torques if act.wheel_torques.size else np.zeros(ff.wheel_v_indices.size),
            "thruster_forces": applied.thruster_forces,
            "thruster_forces_commanded": act.thruster_forces if act.thruster_forces.size else np.zeros(len(ff.thrusters)),
            "wheel_momentum": wheel_momentum(model, data, state), "fuel": [run.fuel],
            "grasp_force": [run.peak_f], "grasp_torque": [run.peak_m], "grasp_wrenches": wrenches,
            "grasp_constraint_error": [errors[0]], "grasp_constraint_rotation_error": [errors[1]]}


def _summary(config, ff, obj, series, t_reached, elapsed, mission, run) -> dict:
    """The figures of a capture run that reached ``t_reached`` simulated s in ``elapsed`` wall s."""
    sampled = len(series["t"]) > 0
    after = series["t"][:, 0] >= run.capture_t if sampled and run.capture_t is not None else None
    ev = mission.events
    norm = lambda x: float(np.linalg.norm(x))  # noqa: E731
    wheels = series["wheel_momentum"] if sampled else np.zeros((0, 1))
    return {
        "robot": ff.name, "object": obj.name, "maneuver": "capture", "mode": config.mode, "controller": "capture",
        "approach": config.approach, "bias_momentum": config.bias, "both_arms": mission.second is not None,
        "duration_s": float(series["t"][-1, 0]) if sampled else config.duration,
        "rate_hz": config.rate,
        "start_grasp_distance_m": run.start_distance,
        "approach_time_planned_s": None if ev.approach_plan is None else ev.approach_plan.duration,
        "approach_plan_reachable": None if ev.approach_plan is None else ev.approach_plan.reachable,
        "capture_time_s": run.capture_t, "capture_refused": run.refusal if run.capture_t is None else None,
        "second_grasp_time_s": run.loop_t, "second_grasp_problem": ev.second_grasp_problem,
        "time_to_rest_s": None if run.rest_t is None or run.capture_t is None else run.rest_t - run.capture_t,
        "approach_base_attitude_change_rad": run.approach_attitude,
        "base_attitude_change_rad": float(series["base_attitude_change"].max()) if sampled else None,
        "base_angular_velocity_after_impact_rad_s": run.w_after_impact,
        "peak_base_angular_velocity_after_capture_rad_s":
            float(np.linalg.norm(series["base_angular_velocity"][after], axis=1).max()) if after is not None and after.any() else None,
        "final_base_angular_velocity_rad_s": norm(series["base_angular_velocity"][-1]) if sampled else None,
        "target_angular_momentum_Nms": norm(run.stack.target[1]),
        "bias_momentum_Nms": None if ev.bias is None else norm(ev.bias),
        "bias_loaded_s": ev.bias_loaded,
        "peak_wheel_momentum_Nms": float(np.linalg.norm(wheels, axis=1).max()) if sampled and wheels.size else 0.0,
        "final_wheel_momentum_Nms": norm(wheels[-1]) if sampled and wheels.size else 0.0,
        "fuel_N_s": run.fuel,
        "fuel_approach_N_s": run.fuel if run.fuel_at_capture is None else run.fuel_at_capture,
        "fuel_detumble_N_s": None if run.fuel_at_capture is None else run.fuel - run.fuel_at_capture,
        "peak_grasp_force_N": run.peak_f if run.capture_t is not None else None,
        "peak_grasp_torque_Nm": run.peak_m if run.capture_t is not None else None,
        "capture_impulse": None if run.impact is None else run.impact.impulse.tolist(),
        "momentum_jump_at_capture": run.h_jump,
        "momentum_jump_at_loop_closure": run.loop_jump,
        "max_grasp_constraint_error_m": float(series["grasp_constraint_error"].max()) if sampled else None,
        "max_grasp_constraint_rotation_error_rad": float(series["grasp_constraint_rotation_error"].max()) if sampled else None,
        "reactionless_task_rank_min": ev.reactionless_task_rank_min,
        "reactionless_task_residual_max": ev.reactionless_residual_max if config.approach == "reactionless" else None,
        "peak_arm_torque_Nm": float(np.abs(series["arm_torques"]).max()) if sampled else None,
        "peak_arm_torque_commanded_Nm": float(np.abs(series["arm_torques_commanded"]).max()) if sampled else None,
        "peak_wheel_torque_Nm": float(np.abs(series["wheel_torques"]).max(initial=0.0)) if sampled else None,
        "peak_thruster_force_N": float(np.abs(series["thruster_forces"]).max(initial=0.0)) if sampled else None,
        "final_phase": mission.phase,
        "real_time_factor": t_reached / elapsed if elapsed > 0 else None,
        "interrupted": False, "error": None, "t_reached_s": t_reached,
    }
