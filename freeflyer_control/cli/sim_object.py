"""``freeflyer sim --object NAME|PATH``: the held-object maneuvers (sim.cooperative).

cli/sim.py adds the options and hands over to :func:`validate_object_run` and
:func:`run_object` when ``--object`` is given; everything about objects lives here.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from freeflyer_control.cli.common import engine_words
from freeflyer_control.inputs.values import Number, UsageError
from freeflyer_control.sim.output import json_safe

INTERNAL_FORCE = Number(-1e3, 1e3, unit="N")
ALL_OBJECT_MANEUVERS = ("object-transport", "object-rotate", "capture")
# Cooperative control flies every mode the robot's actuators allow (checked in sim.cooperative.prepare).
OBJECT_MODES = ("floating", "rotation-floating", "rotation-flying", "translation-flying", "flying")
CAPTURE_MODES = ("floating", "flying")


def add_object_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--object", metavar="NAME|PATH",
                   help="an object held by the end-effectors (bundled name or object .yaml): flies "
                        "--maneuver object-transport or object-rotate with the cooperative controller")
    p.add_argument("--internal-force", type=INTERNAL_FORCE, default=5.0,
                   help="with --object: squeeze setpoint, N (default 5)")


def object_options_problem(args: argparse.Namespace) -> str | None:
    """Why --object and --maneuver do not go together (one line), or None."""
    if args.object is None:
        if args.maneuver in ALL_OBJECT_MANEUVERS:
            return f"--maneuver {args.maneuver} needs an object: give --object NAME|PATH (e.g. --object planar_box)"
        return None
    if args.maneuver not in ALL_OBJECT_MANEUVERS:
        return f"--object flies the object maneuvers {list(ALL_OBJECT_MANEUVERS)}; got --maneuver {args.maneuver}"
    if args.maneuver == "capture" and args.mode not in CAPTURE_MODES:
        return f"--maneuver capture flies --mode {' or '.join(CAPTURE_MODES)}; got --mode {args.mode}"
    if args.mode not in OBJECT_MODES:
        return f"--object: cooperative control flies --mode {' or '.join(OBJECT_MODES)}; got --mode {args.mode}"
    if args.via_testbed or args.mode_schedule or args.mass_error or args.q0:
        return "--object runs the closed-chain plant alone: drop --via-testbed, --mode-schedule, --mass-error and --q0"
    return None


def _config(args: argparse.Namespace):
    from freeflyer_control.sim.cooperative import ObjectSimConfig

    return ObjectSimConfig(robot=args.robot, obj=args.object, maneuver=args.maneuver, mode=args.mode,
                           rate=args.rate, internal_force=args.internal_force, duration=args.duration,
                           log_rate=args.log_rate, base_actuation=args.base_actuation)


def validate_object_run(args: argparse.Namespace) -> None:
    """Refuse before the run: option combinations, the object (inertia, reach) and a maneuver
    the joint torques cannot hold it through."""
    problem = object_options_problem(args)
    if problem:
        raise UsageError(problem)
    if args.object is None:
        return
    if args.maneuver == "capture":
        from freeflyer_control.sim.capture import initial_states

        initial_states(_capture_config(args))
        return
    from freeflyer_control.sim.cooperative import prepare

    prepare(_config(args))


def _capture_config(args: argparse.Namespace):
    from freeflyer_control.sim.capture import CaptureConfig

    return CaptureConfig(robot=args.robot, obj=args.object, mode=args.mode, rate=args.rate,
                         duration=args.duration, log_rate=args.log_rate)


def run_object(args: argparse.Namespace) -> int:
    from freeflyer_control.cli.outdir import prepare_output_folder

    out = prepare_output_folder(args.out, overwrite=args.overwrite)
    if args.maneuver == "capture":
        return _run_capture(args, out)
    from freeflyer_control.sim.cooperative import run_object_simulation

    config = _config(args)
    s, code, written = _simulate_and_write(args, out, lambda stream, progress: run_object_simulation(
        config, progress, stream=stream))
    if s is None or args.json:
        return code
    print(f"{s['robot']} holding {s['object']}: {s['maneuver']}, cooperative, mode {s['mode']}, "
          f"{s['duration_s']:g} s at {s['rate_hz']:g} Hz ({engine_words(s)})")
    for key, label, unit in (("object_rms_tracking_error_m", "object RMS tracking error", "m"),
                             ("internal_force_rms_error_N", "internal force RMS error", "N"),
                             ("max_grasp_constraint_error_m", "grasp constraint error (max)", "m"),
                             ("momentum_drift", "momentum drift (with object)", ""),
                             ("com_drift_m", "system CoM drift", "m"),
                             ("base_attitude_change_rad", "base attitude change (max)", "rad")):
        print(f"  {label:<30} {s[key]:.3g} {unit}")
    print(f"wrote {len(written)} files to {Path(out).resolve()}/")
    return code


def _simulate_and_write(args: argparse.Namespace, out, simulate):
    """Run ``simulate(stream, progress)`` stoppably, write its outputs (the CSV was streamed) and,
    with ``--json``, print the summary. Returns (summary, exit status, files written); the
    summary is None when the run was stopped (its exit status is then the stop's)."""
    from freeflyer_control.cli.common import replay_wanted
    from freeflyer_control.cli.stopping import diverged_status, run_stoppable
    from freeflyer_control.sim.cooperative import write_object_outputs
    from freeflyer_control.sim.plots import matplotlib_missing

    replay = replay_wanted(args)
    result, stopped = run_stoppable(out, simulate, as_json=args.json)
    if result is None:
        return None, stopped, []
    written = write_object_outputs(result, Path(out), plots=not args.no_plots and matplotlib_missing() is None,
                                   timeseries=False, replay=replay)
    s = result.summary
    code = diverged_status(s)
    if args.json:
        print(json.dumps(json_safe(s), indent=2))
    return s, code, written


def _run_capture(args: argparse.Namespace, out) -> int:
    """A capture run; exit status 1 when the grasp never closed (the refusal is printed)."""
    import sys

    from freeflyer_control.sim.capture import run_capture

    config = _capture_config(args)
    s, code, written = _simulate_and_write(args, out, lambda stream, progress: run_capture(
        config, progress, stream=stream))
    if s is None:
        return code
    if not args.json:
        print(f"{s['robot']} capturing {s['object']}: mode {s['mode']}, {s['duration_s']:g} s at {s['rate_hz']:g} Hz "
              f"({engine_words(s)})")
        for key, label, unit in (("capture_time_s", "grasp closed at", "s"), ("time_to_rest_s", "time to rest", "s"),
                                 ("peak_grasp_force_N", "peak grasp force", "N"),
                                 ("peak_grasp_torque_Nm", "peak grasp torque", "N m"),
                                 ("momentum_jump_at_capture", "momentum jump at the impact", ""),
                                 ("base_attitude_change_rad", "base attitude change (max)", "rad")):
            value = s[key]
            print(f"  {label:<30} " + ("not reached" if value is None else f"{value:.4g} {unit}"))
        print(f"wrote {len(written)} files to {Path(out).resolve()}/")
    if s["capture_refused"] and not code:
        print(f"freeflyer sim: {s['capture_refused']} (the grasp never closed; exit status 1)", file=sys.stderr)
        return 1
    return code
