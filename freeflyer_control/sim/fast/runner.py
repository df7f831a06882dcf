"""``run_fast``: the lockstep simulation of :func:`freeflyer_control.sim.runner.run_simulation`
with plant and controller in one compiled loop (needs numba).

Covered (:func:`not_covered` says why not otherwise): the computed-torque and resolved-rate
controllers on every maneuver they fly (the joint maneuvers ``wilde`` and ``station-keeping``,
the end-effector maneuvers ``ee-point`` and ``ee-circle``; resolved rate as computed torque's
reference generator on the latter) in every maneuvering mode, with mode schedules (run-time
switches, blended as :class:`~freeflyer_control.control.mode_switch.ModeSwitcher` does),
reaction wheels (rotation-floating: as many wheels as attitude axes), the base wrench through
the thrusters (the allocator's one definition, compiled) or as an ideal bounded wrench, any
mass error of the controller's model, robots whose joints the kernels implement. Every plant
step is checked for divergence as ``Plant.step`` checks it, and a diverged run ends as on the
Python engine (docs/conventions.md). Not covered: the impedance law (and so ``ee-contact``),
dispersed runs (perturbations).

Logging is compiled too: the loop stores (q, v), the efforts and the reference at the log
rate, and the Recorder's series are computed from them after each compiled chunk of ticks
(inside the timed region), and streamed if asked. Mode-schedule entries are applied between
chunks, by the run's :class:`~freeflyer_control.control.loop.ControlLoop` (its history and
refusals are the Python engine's); each chunk flies one mode (and its blend).
"""

from __future__ import annotations

import math
import sys
import threading
import time
from dataclasses import dataclass
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np

from freeflyer_control.control.allocation_kernel import allocation_workspace, allocator_arrays
from freeflyer_control.control.kernels import computed_torque as CK
from freeflyer_control.control.kernels import resolved_rate as TK
from freeflyer_control.control.loop import ControlLoop
from freeflyer_control.control.maneuvers import (
    WILDE_PERIOD,
    WILDE_PHASES,
    EECircle,
    EEPoint,
    Wilde,
    make_maneuver,
)
from freeflyer_control.control.mode_switch import initial_mode
from freeflyer_control.model import load_robot
from freeflyer_control.model.perturb import perturbed_mass_properties
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.actuators import base_wrench_limits, thruster_matrix
from freeflyer_control.physics.gjm import mode_layout
from freeflyer_control.physics.kernels import divergence
from freeflyer_control.physics.kernels import reduced as PC
from freeflyer_control.physics.kernels import rigid_body as K
from freeflyer_control.physics.kernels.arrays import NotCovered, frames_in_bodies, kernel_model
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.momentum import world_momentum
from freeflyer_control.physics.plant import energy_reason, velocity_bounds, velocity_reason
from freeflyer_control.physics.reduced import reduced_plan
from freeflyer_control.physics.state import rotation_from_xyzw
from freeflyer_control.sim.fast import loop as tick_loop
from freeflyer_control.sim.fast import record
from freeflyer_control.sim.config import SimConfig, initial_state
from freeflyer_control.sim.limits import run_size_problem
from freeflyer_control.sim.perturbation import Perturbation
from freeflyer_control.sim.progress import report_progress
from freeflyer_control.sim.result import Recorder, SimResult, applied_rows, stopped_result, summarize
from freeflyer_control.sim.stream import keeps_partial

_REF_KINDS = {"wilde": 1, "station-keeping": 0, "ee-point": TK.REF_EE_POINT, "ee-circle": TK.REF_EE_CIRCLE}
_CONTROLLERS = ("computed_torque", "resolved_rate")
_MODES = list(Mode)  # mode codes of the kernels: indices in this list
_BASE_ACTUATION = {"none": CK.BASE_NONE, "ideal": CK.BASE_IDEAL, "thrusters": CK.BASE_THRUSTERS}
# Wall seconds of the first compiled call after which the user is told the kernels are being
# compiled: loading them from numba's cache takes ~0.5 s, compiling them 30-90 s.
COMPILE_NOTICE_AFTER_S = 1.5


def not_covered(config) -> str | None:
    """Why ``config`` (a SimConfig) cannot take the compiled path, or None if it can."""
    perturbation = getattr(config, "perturbation", None)
    if perturbation is not None:
        cls = type(perturbation)
        if cls.sensing is not Perturbation.sensing or cls.actuation is not Perturbation.actuation:
            return ("a perturbation with sensing or actuation code of its own (the compiled engine applies "
                    "Perturbation.sensor_model and actuator_gains)")
    if config.controller not in _CONTROLLERS:
        return f"controller {config.controller} (computed_torque and resolved_rate are compiled)"
    if config.maneuver not in _REF_KINDS:
        return f"maneuver {config.maneuver} (wilde, station-keeping, ee-point and ee-circle are compiled)"
    return None


def warm_up() -> float:
    """Compile (or load from numba's cache) every kernel on a small robot; returns seconds."""
    t0 = time.perf_counter()
    run_fast(SimConfig(robot="planar_4link", maneuver="wilde", duration=0.01, rate=1000.0,
                       mode_schedule=[(0.0, "rotation-floating"), (0.005, "flying")], base_actuation="ideal"))
    return time.perf_counter() - t0


_compiled = {"done": False}


@contextmanager
def compile_notice(stream=None, after: float = COMPILE_NOTICE_AFTER_S):
    """Around the first compiled call of the process: if it takes longer than ``after`` s
    (numba compiling, not loading its cache), say so on ``stream`` (stderr) while it happens,
    and how long it took when it is done."""
    if _compiled["done"]:
        yield
        return
    stream = stream if stream is not None else sys.stderr
    told = threading.Event()

    def tell():
        told.set()
        print("freeflyer sim: compiling the simulation kernels (first use on this machine, about a "
              "minute; cached for later runs)...", file=stream, flush=True)

    timer = threading.Timer(after, tell)
    timer.daemon = True
    t0 = time.perf_counter()
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        _compiled["done"] = True
        if told.is_set():
            print(f"freeflyer sim: kernels compiled in {time.perf_counter() - t0:.0f} s", file=stream, flush=True)


def _allocator(loop, nb: int) -> tuple:
    """(B, A2, u, params, work, iwork) of the control loop's thruster allocator, the arrays its
    compiled kernel takes (zero thrusters where the robot has none)."""
    alloc = loop.mapper.allocator
    if alloc is None:
        B, A2, u, params = allocator_arrays(np.zeros((nb, 0)), np.zeros(0))
        return (B, A2, u, params, *allocation_workspace(nb, 0))
    # Fresh scratch: each run starts cold; the warm start then lives in iwork across chunks.
    arrays = allocator_arrays(alloc.B, alloc.max_forces, alloc.fuel_optimal, alloc.achievable_rtol, alloc.warm_start)
    return (*arrays, *allocation_workspace(alloc.nb, alloc.n))


def _due_tick(t_switch: float, dt: float) -> int:
    """The first tick k whose time k dt the Python engine counts as reaching ``t_switch``
    (``t_switch <= k dt + 1e-12``)."""
    k = max(0, math.ceil((t_switch - 1e-12) / dt) - 1)
    while not t_switch <= k * dt + 1e-12:
        k += 1
    return k


def _mode_table(ff) -> np.ndarray:
    """(5, 2): per mode code, the commanded base coordinates c0:c1 (contiguous)."""
    table = np.zeros((len(_MODES), 2), dtype=np.int64)
    for i, mode in enumerate(_MODES):
        c = base_partition(ff.base, mode).commanded_slice
        table[i] = (c.start, c.stop)
    return table


def _reduced_layouts(ff) -> np.ndarray:
    """(5, nv + 4): per mode code, the layout of its H*, C* for ``physics.kernels.reduced.reduced_post``,
    as ``physics.reduced.reduced_dynamics`` builds it for ComputedTorque: the wheels idle
    (eliminated) in every mode but rotation-floating, where they are actuated."""
    return np.stack([reduced_plan(PC, ff, mode, mode is not Mode.ROTATION_FLOATING).layout for mode in _MODES])


def run_fast(config, progress: Callable[[float, float], None] | None = None, *, stream=None):
    """Same contract and result as ``run_simulation(config, progress, stream=stream)`` for a
    covered config.

    Raises:
        NotCovered: for a config or robot the compiled path does not implement.
    """
    config.validate()
    reason = not_covered(config)
    if reason:
        raise NotCovered(f"the compiled path does not cover {reason}")
    ff = load_robot(config.robot, base=config.base, end_effectors=config.ee)
    perturbation = config.perturbation or Perturbation()
    model = ff if config.mass_error == 0 else perturbed_mass_properties(ff, config.mass_error, config.seed)
    model = perturbation.controller_model(model)
    plant_ff = perturbation.plant_model(ff)
    kr_model = kernel_model(ff)  # the records' (the Recorder's robot: as designed)
    kp_model = kr_model if plant_ff.model is ff.model else kernel_model(plant_ff)
    kc_model = kr_model if model.model is ff.model else kernel_model(model)
    maneuver = make_maneuver(config.maneuver)
    mode0, schedule = initial_mode(config.mode, config.mode_schedule)
    n_att = 1 if ff.base == "planar" else 3
    modes = {Mode.parse(m) for m in [mode0] + [m for _, m in schedule]}
    flies_wheels = Mode.ROTATION_FLOATING in modes
    if flies_wheels and kp_model.wheel_v.size not in (0, n_att):
        raise NotCovered(f"rotation-floating with {kp_model.wheel_v.size} wheels for {n_att} attitude axes "
                         "is not compiled (a least-squares wheel solve)")

    state = initial_state(ff, config, maneuver)

    with fastpath.deferred():  # the Python laws' kernels: the compiled loop below runs its own
        loop = ControlLoop(model, maneuver, controller=config.controller, mode=mode0,
                           base_actuation=config.base_actuation)
        loop.start(state)
    duration = float(config.duration or maneuver.duration)
    too_large = run_size_problem(duration, config.rate, int(config.plant_substeps), config.log_rate)
    if too_large:  # the log arrays below are sized by it
        raise ValueError(too_large)
    dt = 1.0 / config.rate
    substeps = int(config.plant_substeps)
    recorder = Recorder(ff, stream)
    n_ticks = round(duration * config.rate)
    log_every = max(1, round(config.rate / config.log_rate))
    due = [(_due_tick(t_s, dt), t_s, m) for t_s, m in schedule]

    q, v = state.q.copy(), state.v.copy()
    mom = np.ascontiguousarray(world_momentum(ff, ff.create_data(), state), dtype=float)
    nv, nb, na, nw = v.size, ff.nb, kp_model.arm_v.size, kp_model.wheel_v.size
    M, b = np.empty((nv, nv)), np.empty(nv)
    K.mass_and_bias(kp_model.arrays(), q, v, M, b, K.workspace(kp_model.jint.shape[0], q.size, nv, nb))
    ct = loop.ct
    kp, kd = (np.ascontiguousarray(x, dtype=float) for x in (ct.kp, ct.kd))
    bg = ct.base_gains
    gains = np.array([bg.kp_linear, bg.kd_linear, bg.kp_attitude, bg.kd_attitude])
    base_ref = maneuver.base_reference(0.0)  # the joint maneuvers hold the start pose
    max_force, max_torque = base_wrench_limits(ff)
    ref_rate = float(maneuver.rate) if isinstance(maneuver, Wilde) else 0.1
    # What no tick of this run can use is passed as None: numba then compiles the loop without
    # it (a first run compiles only what it flies; docs/benchmarks.md, "First run").
    commands_base = modes != {Mode.FLOATING}
    sensor = _Sensing(perturbation.sensor_model(ff), q.size, v.size, dt)
    alloc = _allocator(loop, nb) if commands_base and loop.mapper.allocator is not None else None
    # run_ticks' arguments before and after ``sense``, the same in every call
    head = (
        kp_model.arrays(), kc_model.arrays(), model.model is plant_ff.model, kp_model.planar, nb, kp_model.arm_v,
        kp_model.arm_q, kp_model.arm_kind, kp_model.wheel_v, _reduced_layouts(ff), kp_model.effort,
        np.asarray(ff.wheel_max_torques, dtype=float).reshape(-1), np.asarray(ff.wheel_max_speeds, dtype=float).reshape(-1),
        float(max_force), float(max_torque), _BASE_ACTUATION[loop.mapper.base_actuation], alloc,
        True if flies_wheels else None,
    )
    tail = (
        perturbation.actuator_gains(ff),
        np.ascontiguousarray(thruster_matrix(plant_ff), dtype=float).reshape(nb, -1),
        np.asarray(plant_ff.thruster_max_forces, dtype=float).reshape(-1), kp, kd, gains,
        np.ascontiguousarray(base_ref.position, dtype=float), np.ascontiguousarray(
            rotation_from_xyzw(base_ref.orientation_xyzw), dtype=float),
    )
    task = _task_arrays(model, loop, maneuver, state, mode0) if maneuver.task_space else None
    ref_args = (_REF_KINDS[config.maneuver], np.ascontiguousarray(maneuver.q0, dtype=float), ref_rate,
                np.array(WILDE_PHASES, dtype=float), float(WILDE_PERIOD), dt, substeps,
                config.controller == "resolved_rate", task,
                np.stack([mode_layout(PC, model, mode) for mode in _MODES]))
    cmd = _mode_table(ff)
    logged = _logged_ticks(n_ticks, log_every)
    rows = logged.size
    out = {"arm": np.empty((rows, na)), "pos": np.empty((rows, na)), "vel": np.empty((rows, na)),
           "wheel": np.empty((rows, nw)), "wrench": np.empty((rows, nb)), "blend": np.empty(rows),
           "thrust": np.zeros((rows, len(ff.thrusters))),  # stays zero without an allocator (ideal, none)
           "mode": np.empty(rows, dtype=np.int64), "q": np.empty((rows, q.size)), "v": np.empty((rows, nv)),
           "targets": np.full((rows, 3 * len(ff.end_effectors) if task else 0), np.nan), "sigma": np.empty(rows)}
    chunk = log_every * max(1, 1000 // log_every)  # ticks per compiled call (progress between)
    v_bounds = velocity_bounds(ff)
    div = np.zeros(7)
    div[0] = 0.5 * float(v @ M @ v)  # the kinetic energy the first step's check starts from

    with compile_notice():  # compile (or load) before the clock starts: zero ticks, zero rows
        switcher = loop.switcher
        scratch = tick_loop.tick_scratch(head[0], head[1], q.size, nv, nb, kp_model.arm_v,
                                         kp_model.wheel_v, 0 if alloc is None else alloc[0].shape[1], task)
        tick_loop.run_ticks(*head, sensor.chunk(0), *tail, _MODES.index(switcher.mode), -1, 0.0, 1.0, cmd, *ref_args,
                            0, 0, n_ticks,
                     q, v, mom, M, b, v_bounds, div, log_every, out["q"], out["v"], out["arm"], out["pos"], out["vel"],
                     out["wheel"], out["wrench"], out["thrust"], out["blend"], out["targets"], out["sigma"], scratch)
        # what the plant applies: the commands through the run's actuator gains, on its model
        applied = _Applied(plant_ff, lambda act: perturbation.actuation(ff, act), loop.mapper.base_actuation == "ideal")
        _series(ff, kr_model, recorder.columns, logged[:0] * dt, out, slice(0, 0), applied)

    wall0 = time.perf_counter()
    last_progress = [wall0]
    k, row = 0, 0
    diverged, t_reached = None, duration

    def partial(exc: BaseException):
        return stopped_result(ff, config, recorder, loop, exc, duration=duration,
                              t_reached=min(k, n_ticks) * dt, wall=time.perf_counter() - wall0,
                              engine="compiled (numba)")

    with keeps_partial(stream, partial):
        while k <= n_ticks:
            while due and due[0][0] <= k:  # == k: chunks end at the next due tick
                _, t_s, m = due.pop(0)
                loop.request_mode(m, k * dt, f"schedule at {t_s:g} s")
            switcher = loop.switcher
            code = _MODES.index(switcher.mode)
            previous = -1 if switcher.previous is None or switcher.blend_time == 0.0 else _MODES.index(switcher.previous)
            k_next = min(k + chunk, n_ticks + 1, due[0][0] if due else n_ticks + 1)
            try:
                done = tick_loop.run_ticks(
                    *head, sensor.chunk(k_next - k), *tail, code, previous, float(switcher.switched_at), float(switcher.blend_time), cmd,
                    *ref_args, k, k_next, n_ticks, q, v, mom, M, b, v_bounds, div, log_every, out["q"][row:],
                    out["v"][row:], out["arm"][row:], out["pos"][row:], out["vel"][row:], out["wheel"][row:],
                    out["wrench"][row:], out["thrust"][row:], out["blend"][row:], out["targets"][row:],
                    out["sigma"][row:], scratch)
            except (np.linalg.LinAlgError, ValueError) as exc:
                if div[1] != divergence.STEPPING:  # the control law's, not the plant's: as on the Python engine
                    raise
                done = int(div[6])  # the plant could not be evaluated: Plant.step's divergence
                diverged = _divergence(div, dt, substeps, f"the dynamics could not be evaluated ({exc})")
            else:
                if div[1] > 0:
                    diverged = _divergence(div, dt, substeps, _step_reason(ff, q, v, v_bounds, div))
            new = slice(row, row + done)
            out["mode"][new] = code
            row, k = row + done, k_next
            recorder.extend(_series(ff, kr_model, recorder.columns, logged[new] * dt, out, new, applied))
            if diverged is not None:
                t_reached = int(div[2]) * dt  # the last tick whose steps all went through
                break
            report_progress(progress, min(k * dt, duration), duration, last_progress)
    assert diverged is not None or row == rows, (row, rows)
    series = recorder.series()
    wall = time.perf_counter() - wall0
    if progress is not None:
        progress(t_reached, duration)

    result = SimResult(ff, config, series, recorder.columns)
    result.summary = summarize(result, loop, duration, wall, t_reached=t_reached)
    result.summary["engine"] = "compiled (numba)"
    result.summary["engine_reason"] = result.summary["plant_step"] = None   # the Python engine's say why
    result.summary["plant_diverged"] = diverged
    return result


class _Sensing:
    """run_ticks' ``sense`` for a run whose controller reads through ``model`` (a
    ``sim.perturbation.SensorModel``, or None: perfect sensing, and ``sense`` None)."""

    def __init__(self, model, nq: int, nv: int, dt: float):
        self.model = model
        if model is None:
            return
        std = np.ascontiguousarray(model.std, dtype=float)
        depth = model.delay_ticks(dt) + 2  # the ticks the Sensor's history can hold, and one
        self.noisy = bool(std.any())
        self.rng = np.random.default_rng(model.seed)  # the Sensor's generator, drawn in tick order
        self.state = (std, float(model.latency), np.empty((depth, nq)), np.empty((depth, nv)),
                      np.zeros(1, dtype=np.int64), np.empty(nq), np.empty(nv), np.empty(nv), self.noisy)
        self.none = np.empty((0, nv))

    def chunk(self, ticks: int):
        """``sense`` for a call of run_ticks over ``ticks`` ticks (their noise drawn now)."""
        if self.model is None:
            return None
        noise = self.rng.normal(0.0, 1.0, (ticks, self.none.shape[1])) if self.noisy and ticks else self.none
        return (noise, *self.state)


def _step_reason(ff, q, v, v_bounds, div) -> str:
    """Why the plant step ``run_ticks`` rejected diverged (``physics.plant``'s words); q, v: the
    rejected state."""
    if div[1] == divergence.DIVERGED_SPEED:
        return velocity_reason(ff, q, v, v_bounds)
    return energy_reason(div[0], div[4], div[5])


def _divergence(div, dt: float, substeps: int, reason: str) -> str:
    """``Plant.diverged`` of the step ``div`` says failed: "plant diverged at t = <end of the
    step> s: <reason>"."""
    t_step = int(div[2]) * dt + (int(div[3]) + 1) * dt / substeps
    return f"plant diverged at t = {t_step:.6g} s: {reason}"


def _task_arrays(model, loop, maneuver, state, mode) -> tuple:
    """The ``task`` tuple of ``control.kernels.resolved_rate.ee_joint_reference`` for the run's
    end-effector maneuver: its targets' parameters, the end-effector frames of the
    controller's ``model``, the target attitudes, the commanded GJM rows, the resolved-rate gains
    and the integrated joint reference (the loop's, at the start).

    The commanded rows come from the Python law itself: one ``ResolvedRate.joint_rates`` at the
    start state, which also says, once, what a tall task gives up, as the Python engine's first
    tick does."""
    q_int = np.array(loop.q_integrated, dtype=float)
    rr = loop.rr
    # The NumPy path: the rows are all this needs, not worth compiling the law's own kernel for.
    commanded = set(rr.joint_rates_numpy(state, mode, maneuver.task_references(0.0)).task_rows)
    use = np.array([[(e, r) in commanded for r in rr._row_names] for e in model.end_effectors], dtype=np.int64)
    if isinstance(maneuver, EEPoint):
        params, axes = np.array([maneuver.move_time, 0.0]), maneuver.offsets
    elif isinstance(maneuver, EECircle):
        params, axes = np.array([maneuver.period, maneuver.radius]), maneuver.axes
    else:
        raise NotCovered(f"the compiled path does not cover maneuver {maneuver.name}")
    g = rr.gains
    return (_REF_KINDS[maneuver.name], params, np.ascontiguousarray(maneuver.starts), np.ascontiguousarray(axes),
            *frames_in_bodies(model, model.end_effectors),
            np.ascontiguousarray([rotation_from_xyzw(x) for x in maneuver.attitudes], dtype=float), use,
            np.array([g.k_position, g.k_orientation]), np.array([g.sigma_0, g.lambda_max]),
            np.array(rr.rate_limit, dtype=float), q_int)


def _logged_ticks(n_ticks: int, log_every: int) -> np.ndarray:
    """The ticks the loop logs: every ``log_every``-th and the last, without building the
    (possibly huge) array of all ticks."""
    logged = np.arange(0, n_ticks + 1, log_every)
    return logged if logged[-1] == n_ticks else np.append(logged, n_ticks)


@dataclass(frozen=True)
class _Applied:
    """How a run's commands become what its plant applies: ``deliver`` (the actuator gains of
    its dispersions), then saturation on ``plant_ff`` (the robot as flown); ``ideal``: the base
    wrench is the ideal actuator's (else the thrusters carry it)."""

    plant_ff: object
    deliver: object
    ideal: bool


def _series(ff, km, columns, t, out, new, applied: _Applied) -> dict[str, np.ndarray]:
    """The Recorder's series (same keys, order and columns) of the logged rows ``new`` of
    ``out`` (the arrays run_ticks fills, commands as computed). The applied torques and forces
    are the commands delivered and saturated as the plant step does (``sim.result.applied_rows``)."""
    rows = t.size
    model = ff.model
    base_group = np.zeros(km.jint.shape[0], dtype=np.int64)
    base_group[0] = 1
    for name in ff.wheel_joint_names:
        base_group[model.getJointId(name) - 1] = 1
    ee_body, _, ee_p = frames_in_bodies(ff, ff.end_effectors)
    series = {key: np.empty((rows, len(cols))) for key, cols in columns.items()}
    record.state_series(km.arrays(), km.planar, ff.nb, base_group, ee_body, ee_p, out["q"][new], out["v"][new],
                        series["joint_positions"], series["joint_velocities"], series["base_position"],
                        series["base_orientation_xyzw"], series["base_linear_velocity"],
                        series["base_angular_velocity"], series["com"], series["ee_positions"],
                        series["momentum_total"], series["momentum_base"], series["momentum_arm"])
    series["t"][:, 0] = t
    series["mode"][:, 0] = out["mode"][new]
    series["arm_reference"][:] = out["pos"][new]
    series["arm_reference_rate"][:] = out["vel"][new]
    series["arm_torques_commanded"][:] = out["arm"][new]
    series["wheel_torques_commanded"][:] = out["wheel"][new]
    series["base_wrench_commanded"][:] = out["wrench"][new]
    series["thruster_forces_commanded"][:] = out["thrust"][new]
    series.update(applied_rows(applied.plant_ff, out["arm"][new], out["wheel"][new], out["thrust"][new],
                               out["wrench"][new] if applied.ideal else None, out["q"][new], out["v"][new],
                               applied.deliver))
    series["ee_targets"][:] = out["targets"][new] if out["targets"].shape[1] else np.nan
    series["sigma_min"][:, 0] = out["sigma"][new]
    series["blend"][:, 0] = out["blend"][new]
    return series
