"""``freeflyer sim --via-testbed``: the simulation run through the emulated testbed and its bridge.

The same maneuver, mode and controller as ``freeflyer sim``, but the controller sees the robot
only through the testbed's hardware interface (motion capture, encoders, valves) and the
bridge's estimation and safety, as on a real air-bearing table. The outputs (CSV, plots,
summary.json) are those of ``freeflyer sim``, recorded from the true plant state, plus what
the testbed did: trips, refused samples, estimation errors.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from freeflyer_control.control.maneuvers import make_maneuver
from freeflyer_control.control.mode_switch import initial_mode
from freeflyer_control.sim.metrics import largest
from freeflyer_control.sim.config import SimConfig, initial_state
from freeflyer_control.sim.result import Recorder, SimResult, stopped_result, summarize
from freeflyer_control.sim.stream import TimeseriesStream, keeps_partial

from .config import load_testbed_config
from .emulator import Fault
from .emulator_settings import EmulatorSettings
from .runner import Event, run_hil


def run_via_testbed(config: SimConfig, testbed: str, *, faults: Sequence[Fault] = (),
                    events: Sequence[Event] = (),
                    progress: Callable[[float, float], None] | None = None,
                    stream: TimeseriesStream | None = None,
                    settings: EmulatorSettings | None = None, seed: int = 0) -> SimResult:
    """Run ``config`` through the testbed config ``testbed`` (a path or a bundled name), with
    ``faults`` injected by the emulator and operator ``events`` (e-stops, resets); ``settings``
    replace the config's emulator section and ``seed`` seeds the emulator's noise and dropouts;
    ``progress(t, duration)`` is called after every controller tick (it throttles itself, as
    :class:`freeflyer_control.sim.progress.ProgressBar` does).

    The testbed fixes the robot and the control rate; ``config.robot`` must name the same robot
    (or be left at its default), and model errors (``mass_error``) are not emulated.

    The plant is recorded from t = 0; until the controller's first tick (the bridge arms once
    capture and encoders have been valid for a while) its signals are NaN. ``stream`` receives
    every sample as it is recorded; if the run stops early, ``stream.partial`` holds what was
    recorded (the testbed's trips, resets and estimation errors are then not available).
    """
    config.validate()
    tb = load_testbed_config(testbed)
    ff = tb.robot
    if config.robot not in (ff.name, SimConfig.robot):
        raise ValueError(f"testbed '{testbed}' carries robot '{ff.name}', not '{config.robot}': "
                         f"drop --robot or give a testbed config for {config.robot}")
    if config.mass_error:
        raise ValueError("--mass-error is not emulated with --via-testbed (the testbed runs the robot's own model)")
    config = replace(config, robot=tb.robot_source)  # the robot flown, as its records name it (run.json)
    maneuver = make_maneuver(config.maneuver)
    state = initial_state(ff, config, maneuver)
    duration = float(config.duration or maneuver.duration)
    mode, schedule = initial_mode(config.mode, config.mode_schedule)
    events = [Event(t, "mode", m) for t, m in schedule] + list(events)

    recorder = Recorder(ff, stream)
    log_every = max(1, round(tb.rate / config.log_rate))
    ticks = {"n": 0, "info": None, "t": 0.0}

    def record(t, truth, out):
        info = out.info or ticks["info"]
        if ticks["n"] % log_every == 0:
            recorder.record(t, truth, info, out.actuation, mode=mode)
        ticks["info"] = info
        ticks["n"] += 1
        ticks["t"] = t
        if progress is not None:
            progress(t, duration)

    def partial(exc: BaseException) -> SimResult:
        result = stopped_result(ff, config, recorder, None, exc, duration=duration, t_reached=ticks["t"],
                                wall=time.perf_counter() - wall0, engine="testbed emulator")
        result.summary.update(_testbed_fields(tb, faults))
        result.summary["not_available"]["testbed"] = \
            "trips, resets and estimation errors not collected: the run stopped early"
        return result

    wall0 = time.perf_counter()
    with keeps_partial(stream, partial):
        run = run_hil(tb, maneuver, state, duration, mode=mode, controller=config.controller, events=events,
                      faults=faults, settings=settings, seed=seed, on_control=record,
                      overrun_limit=config.overrun_limit)
    if progress is not None:
        progress(duration, duration)
    result = SimResult(ff, config, recorder.series(), recorder.columns)
    result.summary = summarize(result, run.controller.loop, duration, run.wall_time)
    s = run.series
    arm = ff.arm_v_indices - ff.nb
    estimation = {
        "estimation_error_base_position_m": largest(np.linalg.norm(
            s["est_base_position"][:, :2] - s["true_base_position"][:, :2], axis=1)),
        "estimation_error_joints_rad": largest(np.abs(s["est_joints"][:, arm] - s["true_joints"][:, arm])),
    }
    for key, value in estimation.items():
        if value is None:
            result.summary["not_available"][key] = "the bridge never had an estimate"
    result.summary.update(_testbed_fields(tb, faults))
    result.summary.update({
        "testbed_trips": [{"t": trip.time, "kind": trip.kind, "reaction": trip.reaction, "reason": trip.reason}
                          for trip in run.trips],
        "testbed_resets": [{"t": t, "ok": ok, "message": message} for t, ok, message in run.resets],
        "plant_diverged": run.emulator.diverged,  # the emulated testbed died (the CLI exits 3)
        "testbed_safe_ticks": run.bridge.stats.safe_ticks,
        "testbed_refused_samples": dict(run.bridge.stats.rejected.counts),
        **estimation,
    })
    return result


def _testbed_fields(tb, faults: Sequence[Fault]) -> dict:
    """Summary entries known before the run: the engine, the testbed config, its rate, the faults."""
    return {
        "engine": "testbed emulator",
        "testbed": str(tb.source),
        "rate_hz": tb.rate,
        "testbed_faults": [f"{f.kind} at {f.start:g} s for {f.duration:g} s" for f in faults],
    }
