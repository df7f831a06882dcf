"""``run_fast``: the lockstep simulation of :func:`freeflyer_control.sim.runner.run_simulation`
with plant and controller in one compiled loop (needs numba).

Covered (:func:`not_covered` says why not otherwise): floating mode with no mode schedule, the
computed-torque controller, a joint-space maneuver (``wilde``, ``station-keeping``), any mass
error of the controller's model, robots whose joints the kernels implement. In floating mode the
controller commands no base wrench, so the base actuation (thrusters / ideal) never acts and the
wheels are idle (zero torque); the arm torques are saturated to the effort limits as
``physics.actuators.saturate`` does. Logging is compiled too: the loop stores (q, v), the
torques and the reference at the log rate, and the Recorder's series are computed from them
after each compiled chunk of ticks (inside the timed region), and streamed if asked.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from freeflyer_control.control.loop import ControlLoop
from freeflyer_control.control.maneuvers import (
    WILDE_PERIOD,
    WILDE_PHASES,
    Wilde,
    make_maneuver,
)
from freeflyer_control.model import load_robot
from freeflyer_control.model.perturb import perturbed_mass_properties
from freeflyer_control.sim.fast import kernels as K
from freeflyer_control.sim.fast import record
from freeflyer_control.sim.fast.model import NotCovered, kernel_model
from freeflyer_control.sim.limits import run_size_problem
from freeflyer_control.sim.progress import report_progress
from freeflyer_control.sim.stream import keeps_partial
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.momentum import world_momentum

_REF_KINDS = {"wilde": 1, "station-keeping": 0}


def not_covered(config) -> str | None:
    """Why ``config`` (a SimConfig) cannot take the compiled path, or None if it can."""
    if config.mode_schedule:
        return "a mode schedule"
    if getattr(config, "perturbation", None) is not None:
        return "a perturbation (dispersed robot, sensors or actuators)"
    if Mode.parse(config.mode) is not Mode.FLOATING:
        return f"mode {config.mode} (only floating is compiled)"
    if config.controller != "computed_torque":
        return f"controller {config.controller}"
    if config.maneuver not in _REF_KINDS:
        return f"maneuver {config.maneuver}"
    return None


def warm_up() -> float:
    """Compile (or load from numba's cache) every kernel on a small robot; returns seconds."""
    from freeflyer_control.sim.runner import SimConfig

    t0 = time.perf_counter()
    run_fast(SimConfig(robot="planar_4link", maneuver="wilde", mode="floating", duration=0.01, rate=1000.0))
    return time.perf_counter() - t0


def run_fast(config, progress: Callable[[float, float], None] | None = None, *, stream=None):
    """Same contract and result as ``run_simulation(config, progress, stream=stream)`` for a
    covered config.

    Raises:
        NotCovered: for a config or robot the compiled path does not implement.
    """
    from freeflyer_control.sim.runner import Recorder, SimResult, initial_state, stopped_result, summarize

    config.validate()
    reason = not_covered(config)
    if reason:
        raise NotCovered(f"the compiled path does not cover {reason}")
    ff = load_robot(config.robot, base=config.base, end_effectors=config.ee)
    model = ff if config.mass_error == 0 else perturbed_mass_properties(ff, config.mass_error, config.seed)
    kp_model = kernel_model(ff)
    kc_model = kp_model if model is ff else kernel_model(model)
    maneuver = make_maneuver(config.maneuver)

    state = initial_state(ff, config, maneuver)  # joint maneuvers only: no ready pose here

    loop = ControlLoop(model, maneuver, controller=config.controller, mode=config.mode,
                       base_actuation=config.base_actuation)
    loop.start(state)
    duration = float(config.duration or maneuver.duration)
    too_large = run_size_problem(duration, config.rate, int(config.plant_substeps), config.log_rate)
    if too_large:  # the log arrays below are sized by it
        raise ValueError(too_large)
    dt = 1.0 / config.rate
    substeps = int(config.plant_substeps)
    recorder = Recorder(ff, stream)
    mode = loop.mode
    n_ticks = round(duration * config.rate)
    log_every = max(1, round(config.rate / config.log_rate))

    q, v = state.q.copy(), state.v.copy()
    mom = np.ascontiguousarray(world_momentum(ff, ff.create_data(), state), dtype=float)
    nv, nb, na = v.size, ff.nb, kp_model.arm_v.size
    M, b = np.empty((nv, nv)), np.empty(nv)
    K.mass_and_bias(kp_model.arrays(), q, v, M, b, K.workspace(kp_model.jint.shape[0], q.size, nv, nb))
    kp, kd = (np.ascontiguousarray(x, dtype=float) for x in (loop.ct.kp, loop.ct.kd))
    ref_rate = float(maneuver.rate) if isinstance(maneuver, Wilde) else 0.1
    args_static = (
        kp_model.arrays(), kc_model.arrays(), model is ff, kp_model.planar, nb, kp_model.arm_v,
        kp_model.arm_q, kp_model.arm_kind, kp_model.wheel_v, kp_model.effort, kp, kd,
        _REF_KINDS[config.maneuver], np.ascontiguousarray(maneuver.q0, dtype=float), ref_rate,
        np.array(WILDE_PHASES, dtype=float), float(WILDE_PERIOD), dt, substeps,
    )
    logged = _logged_ticks(n_ticks, log_every)
    rows = logged.size
    arm_tau, ref_pos, ref_vel = np.empty((rows, na)), np.empty((rows, na)), np.empty((rows, na))
    log_q, log_v = np.empty((rows, q.size)), np.empty((rows, nv))
    chunk = log_every * max(1, 1000 // log_every)  # ticks per compiled call (progress between)

    wall0 = time.perf_counter()
    last_progress = [wall0]
    k, row = 0, 0

    def partial(exc: BaseException):
        return stopped_result(ff, config, recorder, loop, exc, duration=duration,
                              t_reached=min(k, n_ticks) * dt, wall=time.perf_counter() - wall0,
                              engine="compiled (numba)")

    with keeps_partial(stream, partial):
        while k <= n_ticks:
            k_next = min(k + chunk, n_ticks + 1)
            done = K.run_ticks(*args_static, k, k_next, n_ticks, q, v, mom, M, b, arm_tau[row:],
                               ref_pos[row:], ref_vel[row:], log_every, log_q[row:], log_v[row:])
            new = slice(row, row + done)
            row, k = row + done, k_next
            recorder.extend(_series(ff, kp_model, recorder.columns, logged[new] * dt, mode, log_q[new],
                                    log_v[new], arm_tau[new], ref_pos[new], ref_vel[new]))
            report_progress(progress, min(k * dt, duration), duration, last_progress)
    assert row == rows, (row, rows)
    series = recorder.series()
    wall = time.perf_counter() - wall0
    if progress is not None:
        progress(duration, duration)

    result = SimResult(ff, config, series, recorder.columns)
    result.summary = summarize(result, loop, duration, wall)
    result.summary["engine"] = "compiled (numba)"
    return result


def _logged_ticks(n_ticks: int, log_every: int) -> np.ndarray:
    """The ticks the loop logs: every ``log_every``-th and the last, without building the
    (possibly huge) array of all ticks."""
    logged = np.arange(0, n_ticks + 1, log_every)
    return logged if logged[-1] == n_ticks else np.append(logged, n_ticks)


def _series(ff, km, columns, t, mode, log_q, log_v, arm_tau, ref_pos, ref_vel) -> dict[str, np.ndarray]:
    """The Recorder's series (same keys, order and columns) from the logged states."""
    rows, nb = t.size, ff.nb
    model = ff.model
    base_group = np.zeros(km.jint.shape[0], dtype=np.int64)
    base_group[0] = 1
    for name in ff.wheel_joint_names:
        base_group[model.getJointId(name) - 1] = 1
    frames = [model.frames[ff.frame_id(e)] for e in ff.end_effectors]
    ee_body = np.array([f.parentJoint - 1 for f in frames], dtype=np.int64)
    ee_p = np.array([f.placement.translation for f in frames], dtype=float).reshape(-1, 3)
    out = {key: np.empty((rows, len(cols))) for key, cols in columns.items()}
    record.state_series(km.arrays(), km.planar, nb, base_group, ee_body, ee_p, log_q, log_v,
                        out["joint_positions"], out["joint_velocities"], out["base_position"],
                        out["base_orientation_xyzw"], out["base_linear_velocity"],
                        out["base_angular_velocity"], out["com"], out["ee_positions"],
                        out["momentum_total"], out["momentum_base"], out["momentum_arm"])
    out["t"][:, 0] = t
    out["mode"][:] = list(Mode).index(mode)
    out["arm_reference"][:] = ref_pos
    out["arm_reference_rate"][:] = ref_vel
    out["arm_torques"][:] = arm_tau
    for key in ("wheel_torques", "thruster_forces", "base_wrench_world"):
        out[key][:] = 0.0
    out["ee_targets"][:] = np.nan
    out["sigma_min"][:] = np.nan
    out["blend"][:] = 1.0
    return out
