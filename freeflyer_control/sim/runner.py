"""Plant and controller in lockstep: the engine behind ``freeflyer sim``.

Every control period the :class:`~freeflyer_control.control.loop.ControlLoop` reads the plant's
state (perfect sensing), the plant integrates the held commands over the period (optionally in
several sub-steps), and a recorder samples the state at the log rate.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np

from freeflyer_control.control.loop import ControlLoop
from freeflyer_control.control.maneuvers import make_maneuver
from freeflyer_control.control.mode_switch import initial_mode
from freeflyer_control.model import load_robot
from freeflyer_control.model.perturb import perturbed_mass_properties
from freeflyer_control.physics.actuators import generalized_forces
from freeflyer_control.physics.contact import ContactSample, WallContact, base_reaction
from freeflyer_control.physics.kernels.plant import make_plant
from freeflyer_control.physics.plant import Plant, PlantDiverged
from freeflyer_control.sim.config import SimConfig, initial_state, parse_mode_schedule  # noqa: F401 (parse_mode_schedule: the API)
from freeflyer_control.sim.progress import report_progress
from freeflyer_control.sim.result import Recorder, SimResult, stopped_result, summarize
from freeflyer_control.sim.stream import TimeseriesStream, keeps_partial
from freeflyer_control.sim.perturbation import Perturbation


def run_simulation(config: SimConfig, progress: Callable[[float, float], None] | None = None,
                   *, fast: bool | None = None, stream: TimeseriesStream | None = None) -> SimResult:
    """Run ``config`` to the end; ``progress(t, duration)`` is called now and then.

    ``fast``: None takes the compiled path (:mod:`freeflyer_control.sim.fast`, same results to
    round-off) when numba is installed and the configuration is covered; False forces the
    Python path; True requires the compiled path and says why it cannot be used. The compiled
    path flies the built-in computed_torque and resolved_rate at their default parameters
    (``config.compiled_controller``); every other law, a user's own among them, runs on the
    Python engine, and the summary's ``engine`` says which ran.

    A control law that fails (:mod:`freeflyer_control.control.law_guard`: it raises, returns a
    non-finite or wildly over-limit effort, or overruns its period) ends the run at that tick
    with zero commands; ``summary["law_fault"]`` says which law, when and why.

    ``stream``: receives every sample as it is recorded (:mod:`freeflyer_control.sim.stream`);
    if the run stops early (Ctrl-C, an exception), ``stream.partial`` holds what was recorded
    and the exception goes on.
    """
    config.validate()
    compiled = config.compiled_controller
    if fast and compiled is None:
        raise ValueError(compiled_refusal(config.controller_name))
    why_python = "asked for (--engine python)"
    if compiled is None:
        why_python = f"not compiled: controller {config.controller_name} (a law of its own, or parameters of its own)"
    if fast is not False and compiled is not None:
        result, why_python = _try_fast(dataclasses.replace(config, controller=compiled), progress,
                                       required=bool(fast), stream=stream)
        if result is not None:
            result.config = config
            return result
    ff = load_robot(config.robot, base=config.base, end_effectors=config.ee)
    model = ff if config.mass_error == 0 else perturbed_mass_properties(ff, config.mass_error, config.seed)
    perturbation = config.perturbation or Perturbation()
    model = perturbation.controller_model(model)
    measure = perturbation.sensing(ff) or (lambda t, true_state: true_state)
    maneuver = make_maneuver(config.maneuver)
    mode, schedule = initial_mode(config.mode, config.mode_schedule)

    state = initial_state(ff, config, maneuver)

    dt = 1.0 / config.rate
    loop = ControlLoop(model, maneuver, controller=config.controller, mode=mode,
                       base_actuation=config.base_actuation, period=dt, overrun_limit=config.overrun_limit)
    loop.start(state)
    duration = float(config.duration or maneuver.duration)
    substeps = int(config.plant_substeps)
    # The plant step compiled where numba is installed (also with a wall: physics.kernels.plant),
    # unless the Python engine was asked for; the first line says which.
    plant, plant_step = make_plant(perturbation.plant_model(ff), state, dt / substeps,
                                   compiled=False if fast is False else None)
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
            if k % log_every == 0 or k == n_ticks or info.fault is not None:
                extra = None if contact is None else contact_samples(plant, actuation, contact, maneuver, t)
                recorder.record(t, plant.state, info, actuation, extra=extra)
            if k == n_ticks or info.fault is not None:  # a failed law ends the run here
                t_reached = t
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
    if diverged is None and loop.fault is None:
        t_reached = duration
    if progress is not None:
        progress(t_reached, duration)

    series = recorder.series()
    result = SimResult(ff, config, series, recorder.columns)
    result.summary = summarize(result, loop, duration, wall, t_reached=t_reached)
    result.summary["engine"] = "python"
    result.summary["engine_reason"] = why_python
    result.summary["plant_step"] = plant_step
    result.summary["plant_diverged"] = diverged
    return result


def compiled_refusal(law: str) -> str:
    """Why the compiled engine cannot fly the law called ``law`` (one line)."""
    return (f"the compiled simulation does not cover this run: controller {law} (computed_torque and "
            "resolved_rate at their default parameters are compiled; other laws run on the python engine)")


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


def _try_fast(config: SimConfig, progress, required: bool, stream=None) -> tuple[SimResult | None, str | None]:
    """(the compiled run's result, None), or (None, why the run takes the Python engine)."""
    from freeflyer_control.sim import fast as fast_path

    if not fast_path.available():
        if required:
            raise ValueError("the compiled simulation needs numba: pip install 'freeflyer_control[fast]'")
        return None, "numba not installed (pip extra 'fast')"
    from freeflyer_control.physics.kernels.arrays import NotCovered
    from freeflyer_control.sim.fast.runner import not_covered, run_fast

    reason = not_covered(config)
    if reason is None:
        try:
            return run_fast(config, progress, stream=stream), None
        except NotCovered as exc:  # a joint type the kernels do not implement
            reason = str(exc)
    if required:
        raise ValueError(f"the compiled simulation does not cover this run: {reason}")
    return None, f"not compiled: {reason}"


