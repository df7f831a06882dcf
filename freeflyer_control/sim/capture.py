"""Lockstep simulation of a capture: ``freeflyer sim --object NAME --maneuver capture``.

The object floats free and tumbles (its own plant: a one-body free-flyer); the robot's first
grasping end-effector approaches the grasp frame (control.capture.ApproachController); the grasp
closes as soon as the relative pose and speed are within the tolerances, as a plastic impact
(physics.capture.capture_impact, momentum conserved); the combined system is then brought to rest
(control.capture.RestController) by the plant of the robot holding the object.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pinocchio as pin

from freeflyer_control.control.capture import (
    ApproachController,
    CaptureTolerances,
    RestController,
    capture_refusal,
    relative_motion,
)
from freeflyer_control.model import load_robot
from freeflyer_control.model.objects import free_object_model, grasp_frame_name, load_object
from freeflyer_control.physics.capture import capture_impact
from freeflyer_control.physics.closed_chain import object_net_wrench
from freeflyer_control.physics.grasp import grasp_matrix
from freeflyer_control.physics.momentum import world_momentum
from freeflyer_control.physics.kernels.plant import make_plant
from freeflyer_control.physics.state import State, base_rotation, base_twist_world, make_state
from freeflyer_control.sim.cooperative import ObjectSimResult, SampleLog, diverged_reason
from freeflyer_control.sim.pose_record import (
    grasp_wrench_columns,
    object_pose_columns,
    object_pose_sample,
    robot_pose_columns,
    robot_pose_sample,
)
from freeflyer_control.sim.progress import report_progress
from freeflyer_control.sim.stream import TimeseriesStream, keeps_partial, stop_fields

# Where the target starts, relative to where the robot would hold it (world, m and rad), and how
# it tumbles ([v (m/s); w (rad/s)], world axes at its CoM): a slow drift and spin, as of a
# satellite that has lost attitude control, a few centimetres from the capturing hand.
START = {
    "planar": (np.array([0.05, 0.04, 0.0]), np.array([0.0, 0.0, 0.1]),
               np.array([-0.004, 0.002, 0.0, 0.0, 0.0, 0.03])),
    "spatial": (np.array([0.05, 0.04, 0.03]), np.array([0.05, -0.05, 0.1]),
                np.array([-0.004, 0.002, 0.001, 0.01, -0.02, 0.03])),
}
APPROACH_TIMEOUT_S = 20.0
# At rest: every actuated velocity below this (m/s, rad/s).
REST_SPEED = 1e-3
SETTLE_S = 1.0  # without --duration a run ends this long after the system came to rest, s


@dataclass
class CaptureConfig:
    RUN_KIND: ClassVar[str] = "capture"  # run.json's kind (sim.run_record)
    robot: str = "dual_arm_planar"
    obj: str = "planar_box"
    mode: str = "flying"
    rate: float = 500.0
    duration: float | None = None  # s; default: approach timeout + 10 s
    log_rate: float = 50.0
    tolerances: CaptureTolerances = CaptureTolerances()


def initial_states(config: CaptureConfig):
    """(robot, object, capturing end-effector, robot state at its ready pose, free object state)."""
    ff = load_robot(config.robot)
    obj = load_object(config.obj)
    if obj.base != ff.base:
        from freeflyer_control.errors import ModelError
        raise ModelError(f"object '{obj.name}' is for {obj.base} robots; robot '{ff.name}' is {ff.base}: "
                         f"choose an object with base: {ff.base}")
    ee = obj.grasps[0].end_effector
    ff.frame_id(ee)  # refuses an end-effector the robot lacks, naming its links
    robot_state = make_state(ff, joint_positions=ff.ready_pose)
    shift, rpy, twist = START[ff.base]
    X = obj.pose_in_base
    R = pin.rpy.rpyToMatrix(*rpy) @ X.rotation
    free = free_object_model(obj)
    p = X.translation + shift
    kw = dict(base_position=[p[0], p[1], 0.0] if ff.base == "planar" else p,
              base_linear_velocity=twist[:3], base_angular_velocity=twist[3:])
    if ff.base == "planar":
        kw["base_yaw"] = float(np.arctan2(R[1, 0], R[0, 0]))
    else:
        kw["base_orientation_xyzw"] = pin.Quaternion(R).coeffs()
    return ff, obj, ee, robot_state, free, make_state(free, **kw)


def request_capture(ff, obj, ee: str, robot_state: State, free, object_state: State,
                    tol: CaptureTolerances) -> str | None:
    """What the capture service answers now: None (the grasp may close) or the refusal line."""
    return capture_refusal(ee, obj.name, _relative(ff, obj, ee, robot_state, free, object_state), tol)


def _relative(ff, obj, ee, robot_state, free, object_state):
    rdata, odata = ff.create_data(), free.create_data()
    for model, data, s in ((ff.model, rdata, robot_state), (free.model, odata, object_state)):
        pin.forwardKinematics(model, data, s.q, s.v)
        pin.updateFramePlacements(model, data)
    fe, fg = ff.frame_id(ee), free.frame_id(grasp_frame_name(obj, ee))
    return relative_motion(rdata.oMf[fe], pin.getFrameVelocity(ff.model, rdata, fe, pin.LOCAL_WORLD_ALIGNED).vector,
                           odata.oMf[fg], pin.getFrameVelocity(free.model, odata, fg, pin.LOCAL_WORLD_ALIGNED).vector)


def _object_pose_twist(free, state: State) -> tuple[pin.SE3, np.ndarray]:
    lin, ang = base_twist_world(free, state)
    R = base_rotation(free, state.q)
    p = state.q[:3] if free.base == "spatial" else np.array([state.q[0], state.q[1], 0.0])
    return pin.SE3(R, p), np.concatenate([lin, ang])


def _object_momentum(obj, pose: pin.SE3, twist: np.ndarray, planar: bool) -> np.ndarray:
    """[P; L about the world origin] of the free object, world axes (planar [Px, Py, Lz])."""
    P = obj.mass * twist[:3]
    L = pose.rotation @ obj.inertia @ pose.rotation.T @ twist[3:] + np.cross(pose.translation, P)
    h = np.concatenate([P, L])
    return h[[0, 1, 5]] if planar else h


def capture_columns(ff, ee: str) -> dict[str, list[str]]:
    """The series of a capture run and their column labels (timeseries.csv's header); the pose
    series are :mod:`freeflyer_control.sim.pose_record`'s, ``com`` the system CoM (object
    included, world, m), ``grasp_wrenches`` zero until the grasp closes."""
    planar = ff.base == "planar"
    return {"t": ["t"], "phase": ["captured"], "ee_grasp_distance": ["m"],
            "momentum_world": ["Px", "Py", "Lz"] if planar else ["Px", "Py", "Pz", "Lx", "Ly", "Lz"],
            "base_attitude_change": ["rad"], "arm_torques": list(ff.arm_joint_names),
            "grasp_force": ["N"], "grasp_torque": ["N m"],
            **robot_pose_columns(ff), **object_pose_columns(), "com": ["x", "y", "z"],
            **grasp_wrench_columns([ee], planar),
            "thruster_forces": [t.name for t in ff.thrusters]}


def run_capture(config: CaptureConfig, progress: Callable[[float, float], None] | None = None,
                *, stream: TimeseriesStream | None = None) -> ObjectSimResult:
    """Fly the capture (see the module docstring); series and summary figures.

    ``progress`` and ``stream`` as in sim.cooperative.run_object_simulation: a run stopped early
    leaves ``stream.partial``; a plant that diverges ends the run (``summary["plant_diverged"]``).
    """
    ff, obj, ee, robot_state, free, object_state = initial_states(config)
    planar = ff.base == "planar"
    dt = 1.0 / config.rate
    duration = config.duration or APPROACH_TIMEOUT_S + 10.0
    steps = int(round(duration / dt))
    every = max(1, int(round(config.rate / config.log_rate)))
    # The plants are open chains (the object free, then held on one grasp): the compiled step
    # where numba is installed (physics.kernels.plant.make_plant), the note says which.
    (robot_plant, plant_step), (object_plant, _) = make_plant(ff, robot_state, dt), make_plant(free, object_state, dt)
    approach = ApproachController(ff, ee, config.mode)
    rdata, odata = ff.create_data(), free.create_data()
    R0 = base_rotation(ff, robot_state.q)
    fe, fg = ff.frame_id(ee), free.frame_id(grasp_frame_name(obj, ee))
    held_plant = rest = impact = hdata = None
    capture_t = rest_t = None
    refusal = None
    log = SampleLog(capture_columns(ff, ee), stream)
    peak_f = peak_m = 0.0
    grasp_wrench = np.zeros(3 if planar else 6)
    h_before = h_after = None
    started = time.perf_counter()
    last_progress = [started]
    t_reached, diverged = 0.0, None

    def result(t_reached: float) -> ObjectSimResult:
        series = log.series()
        return ObjectSimResult(series, log.columns, _summary(
            config, ff, obj, series, t_reached, time.perf_counter() - started, capture_t, refusal, rest_t,
            peak_f, peak_m, impact, h_before, h_after), ff, config)

    def partial(exc: BaseException) -> ObjectSimResult:
        stopped = result(t_reached)
        stopped.summary.update(stop_fields(exc, t_reached), duration_s=duration)  # planned, not reached
        return stopped

    with keeps_partial(stream, partial):
        for k in range(steps + 1):
            t = k * dt
            if held_plant is None:
                rs, os_ = robot_plant.state, object_plant.state
                for model, data, s in ((ff.model, rdata, rs), (free.model, odata, os_)):
                    pin.forwardKinematics(model, data, s.q, s.v)
                    pin.updateFramePlacements(model, data)
                ee_pose, grasp = rdata.oMf[fe], odata.oMf[fg]
                ee_twist = pin.getFrameVelocity(ff.model, rdata, fe, pin.LOCAL_WORLD_ALIGNED).vector
                grasp_twist = pin.getFrameVelocity(free.model, odata, fg, pin.LOCAL_WORLD_ALIGNED).vector
                rel = relative_motion(ee_pose, ee_twist, grasp, grasp_twist)
                refusal = capture_refusal(ee, obj.name, rel, config.tolerances)
                pose, twist = _object_pose_twist(free, os_)
                h_now = world_momentum(ff, rdata, rs) + _object_momentum(obj, pose, twist, planar)
                if refusal is None:
                    h_before = h_now
                    impact = capture_impact(ff, obj, ee, rs, pose, twist)
                    held_plant = make_plant(impact.held, impact.state, dt, t0=t)[0]
                    hdata = impact.held.create_data()
                    h_after = world_momentum(impact.held, hdata, impact.state)
                    rest = RestController(impact.held, config.mode)
                    capture_t = t
                elif t >= APPROACH_TIMEOUT_S:
                    break
            if held_plant is not None:
                state = held_plant.state
                act = rest.actuation(state)
                if rest_t is None and np.abs(state.v[:ff.nb] if config.mode == "flying" else 0).max(initial=0) < REST_SPEED \
                        and np.abs(state.v[impact.held.arm_v_indices]).max() < REST_SPEED:
                    rest_t = t
                h_now = world_momentum(impact.held, hdata, state)
                dist = 0.0
            else:
                act = approach.actuation(robot_plant.state, ee_pose, grasp, grasp_twist)
                dist = rel[0]
            if k % every == 0 or k == steps:
                sample = {"t": [t], "phase": [0.0 if held_plant is None else 1.0], "ee_grasp_distance": [dist],
                          "momentum_world": h_now,
                          "base_attitude_change": [np.linalg.norm(pin.log3(R0.T @ base_rotation(ff, (held_plant or robot_plant).state.q)))],
                          "arm_torques": act.arm_torques,
                          "grasp_force": [peak_f], "grasp_torque": [peak_m],
                          **_pose_sample(ff, obj, robot_plant, object_plant, free, held_plant, impact, rdata, hdata),
                          "grasp_wrenches": grasp_wrench,
                          "thruster_forces": act.thruster_forces if act.thruster_forces.size else np.zeros(len(ff.thrusters))}
                log.record(sample)
            if k == steps or (config.duration is None and rest_t is not None and t >= rest_t + SETTLE_S):
                break
            if held_plant is not None:
                before = held_plant.state.copy()
                diverged = diverged_reason(lambda: held_plant.step(act))
                if not diverged:
                    grasp_wrench = _grasp_wrench(impact, hdata, before, held_plant.last_acceleration, planar)
                    f, m = _force_and_moment(grasp_wrench, planar)
                    peak_f, peak_m = max(peak_f, f), max(peak_m, m)
            else:
                diverged = diverged_reason(lambda: (robot_plant.step(act), object_plant.step()))
            if diverged:  # the run ends here; the summary says why
                break
            t_reached = t + dt
            report_progress(progress, t, duration, last_progress)
    if diverged is None:
        t_reached = float(log.rows["t"][-1][0]) if log.rows["t"] else 0.0
    if progress is not None:
        progress(duration if diverged is None else t_reached, duration)
    done = result(t_reached)
    done.summary["plant_diverged"] = diverged
    done.summary.update(engine="python", engine_reason="not compiled: the approach and rest laws",
                        plant_step=plant_step)
    return done


def _summary(config, ff, obj, series, t_reached, elapsed, capture_t, refusal, rest_t, peak_f, peak_m,
             impact, h_before, h_after) -> dict:
    """The figures of a capture run that reached ``t_reached`` simulated s in ``elapsed`` wall s
    (``duration_s``: the time it ended, the system at rest, or its planned length)."""
    sampled = len(series["t"]) > 0  # a run stopped before its first sample has no series figures
    return {
        "robot": ff.name, "object": obj.name, "maneuver": "capture", "mode": config.mode, "controller": "capture",
        "duration_s": float(series["t"][-1, 0]) if sampled else config.duration or APPROACH_TIMEOUT_S + 10.0,
        "rate_hz": config.rate,
        "capture_time_s": capture_t, "capture_refused": refusal if capture_t is None else None,
        "time_to_rest_s": None if rest_t is None or capture_t is None else rest_t - capture_t,
        "peak_grasp_force_N": peak_f if capture_t is not None else None,
        "peak_grasp_torque_Nm": peak_m if capture_t is not None else None,
        "capture_impulse": None if impact is None else impact.impulse.tolist(),
        "momentum_jump_at_capture": None if h_before is None else float(np.abs(h_after - h_before).max()),
        "base_attitude_change_rad": float(series["base_attitude_change"].max()) if sampled else None,
        "peak_arm_torque_Nm": float(np.abs(series["arm_torques"]).max()) if sampled else None,
        "real_time_factor": t_reached / elapsed if elapsed > 0 else None,
        "interrupted": False, "error": None, "t_reached_s": t_reached,
    }


def _grasp_wrench(impact, hdata, state: State, accel: np.ndarray, planar: bool) -> np.ndarray:
    """The wrench the end-effector applies to the held object, world axes, about the
    end-effector origin (planar [fx, fy, mz], spatial [f; m])."""
    held, obj = impact.held, impact.obj
    net = object_net_wrench(held, hdata, obj, state.q, state.v, accel)
    ee = hdata.oMf[held.frame_id(obj.grasps[0].end_effector)].translation
    com = hdata.oMf[held.frame_id(obj.name)].translation
    return np.linalg.solve(grasp_matrix(ee[None, :], com, planar).T, net)


def _force_and_moment(wrench: np.ndarray, planar: bool) -> tuple[float, float]:
    """|force| (N) and |moment| (N m) of a grasp wrench (see :func:`_grasp_wrench`)."""
    n = 2 if planar else 3
    return float(np.linalg.norm(wrench[:n])), float(np.linalg.norm(wrench[n:]))


def _pose_sample(ff, obj, robot_plant, object_plant, free, held_plant, impact, rdata, hdata) -> dict:
    """The robot's and the object's pose series (sim.pose_record) and the system CoM (object
    included, world, m): from the two free plants before the grasp closes, from the plant of the
    robot holding the object after."""
    if held_plant is None:
        robot_state, robot_model, data = robot_plant.state, ff, rdata
        pose, twist = _object_pose_twist(free, object_plant.state)
    else:
        robot_state, robot_model, data = held_plant.state, impact.held, hdata
        pin.forwardKinematics(robot_model.model, data, robot_state.q, robot_state.v)
        pin.updateFramePlacements(robot_model.model, data)
        fid = robot_model.frame_id(obj.name)
        pose = data.oMf[fid].copy()
        twist = pin.getFrameVelocity(robot_model.model, data, fid, pin.LOCAL_WORLD_ALIGNED).vector
    com = pin.centerOfMass(robot_model.model, data, robot_state.q)
    if held_plant is None:  # the free object is not in the robot's model
        robot_mass = ff.total_mass
        com = (robot_mass * com + obj.mass * pose.translation) / (robot_mass + obj.mass)
    return {**robot_pose_sample(ff, robot_state), **object_pose_sample(pose, twist), "com": com}
