"""``freeflyer sim``: plant and controllers in lockstep, without ROS; writes CSV, plots and a summary."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from freeflyer_control.cli.common import (
    engine_words,
    add_robot_arguments,
    check_joint_limits,
    replay_wanted,
    validation_robot,
    validation_testbed,
)
from freeflyer_control.model.joint_positions import parse_joint_positions
from freeflyer_control.inputs.values import SEED, Number, UsageError, Whole
from freeflyer_control.cli.options import warn
from freeflyer_control.control.mode_switch import entries_never_flown
from freeflyer_control.cli.outdir import prepare_output_folder
from freeflyer_control.cli.sim_object import ALL_OBJECT_MANEUVERS, add_object_arguments, run_object, validate_object_run
from freeflyer_control.cli.stopping import diverged_status, run_stoppable
from freeflyer_control.control.effort import BASE_ACTUATION
from freeflyer_control.control.maneuvers import MANEUVERS
from freeflyer_control.physics.modes import Mode
from freeflyer_control.sim.limits import MAX_RATE_HZ, MAX_SUBSTEPS, MIN_RATE_HZ, run_size_problem
from freeflyer_control.sim.metrics import NOT_AVAILABLE
from freeflyer_control.sim.config import SimConfig, parse_mode_schedule
from freeflyer_control.sim.runner import run_simulation

# Shown at the end of a run: the figures a reader checks first.
HEADLINE = (
    ("max_abs_linear_momentum", "max |P|", "{:.3g} kg m/s"),
    ("max_abs_angular_momentum", "max |L|", "{:.3g} kg m^2/s"),
    ("com_drift_m", "system CoM drift", "{:.3g} m"),
    ("base_attitude_change_rad", "base attitude change (max)", "{:.4g} rad"),
    ("base_position_change_m", "base position change (max)", "{:.4g} m"),
    ("rms_tracking_error", "RMS tracking error", "{:.4g}"),
    ("real_time_factor", "real-time factor", "{:.1f}"),
)

# ee-contact runs also show these.
CONTACT_HEADLINE = (
    ("contact_force_rms_error_n", "contact force RMS error", "{:.3g} N"),
    ("peak_base_reaction_force_n", "peak base reaction force", "{:.3g} N"),
    ("peak_base_reaction_torque_nm", "peak base reaction torque", "{:.3g} N m"),
    ("base_linear_velocity_change_m_s", "base velocity change (max)", "{:.3g} m/s"),
)

MATPLOTLIB_MISSING = ("freeflyer sim: warning: matplotlib is not installed, so no plots will be written "
                      "(the other outputs are): pip install matplotlib, or install this package with its "
                      "'pypi' extra; --no-plots skips the plots without this warning")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sim", help="closed-loop simulation of a free-flyer (no ROS)")
    add_robot_arguments(p)
    p.add_argument("--mode", default="floating", choices=[m.value for m in Mode])
    p.add_argument("--controller", default="computed_torque", metavar="NAME|MODULE:CLASS",
                   help="the control law: a name (computed_torque, resolved_rate, impedance, or one an "
                        "installed package registers: freeflyer controllers lists them) or the import path "
                        "of your own, e.g. my_lab.laws:SlidingMode (default computed_torque)")
    p.add_argument("--controller-param", action="append", default=[], metavar="NAME=VALUE",
                   help="a parameter of the law (repeatable; freeflyer controllers NAME lists them), "
                        "e.g. --controller-param kp=2")
    p.add_argument("--overrun-limit", type=OVERRUN_LIMIT, default=0, metavar="N",
                   help="stop the run when the law takes more CPU time than the control period on N "
                        "ticks running, as a node or the testbed bridge does at 3 (default 0: count and "
                        "report overruns only, so that a run's outcome does not depend on the machine)")
    p.add_argument("--maneuver", default="wilde", choices=MANEUVERS + ALL_OBJECT_MANEUVERS)
    p.add_argument("--duration", type=DURATION, help="seconds (default: the maneuver's own length)")
    p.add_argument("--rate", type=RATE, default=250.0,
                   help=f"control rate, Hz, at most {MAX_RATE_HZ:g} (default 250)")
    p.add_argument("--substeps", type=SUBSTEPS, default=1, help="plant steps per control period")
    p.add_argument("--mode-schedule", metavar="T:MODE,...",
                   help='switches at increasing times, s, e.g. "0:floating,20:flying" (an entry at 0 '
                        'sets the initial mode)')
    p.add_argument("--mass-error", type=MASS_ERROR, default=0.0,
                   help="relative mass-property error of the controller's model, in [0, 1), e.g. 0.1")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the mass-property error")
    p.add_argument("--wall-mass", type=WALL_MASS, metavar="KG",
                   help="with --maneuver ee-contact: the wall is a free body of this mass, touched at its "
                        "centre of mass (default: a fixed wall)")
    p.add_argument("--base-actuation", default="thrusters", choices=BASE_ACTUATION)
    p.add_argument("--log-rate", type=LOG_RATE, default=50.0, help="samples per second written")
    p.add_argument("--q0", metavar="JSON", help="initial joint angles (default: see docs)")
    p.add_argument("--engine", default="auto", choices=("auto", "python", "compiled"),
                   help="compiled: the numba lockstep (pip extra 'fast'; computed torque on the joint "
                        "maneuvers wilde and station-keeping, every mode, mode schedules, wheels, thrusters "
                        "or ideal base actuation); auto: compiled when it applies, else python (default). "
                        "The python engine's plant step is compiled too where numba is installed (ee-contact's "
                        "wall and capture's plants included); held objects keep the Python closed-chain step "
                        "(the cooperative law is over two thirds of such a run: docs/benchmarks.md). A run's "
                        "first line names its engine, why, and its plant step")
    p.add_argument("--via-testbed", metavar="CONFIG", nargs="?", const="planar_4link",
                   help="close the loop through the emulated testbed of this testbed config (a .yaml "
                        "or a bundled name; default planar_4link): capture, encoders, valves, bridge, "
                        "safety (sets the robot and the rate)")
    p.add_argument("--fault", action="append", default=[], metavar="KIND:START:DURATION[:JOINT][:OX,OY,OZ]",
                   help="with --via-testbed: a fault the emulated testbed injects (capture_dropout, "
                        "capture_jump, encoder_nan, encoder_freeze, push), e.g. capture_dropout:5:0.5")
    p.add_argument("--estop-at", type=EVENT_TIME, action="append", default=[], metavar="T",
                   help="with --via-testbed: an e-stop at T s")
    p.add_argument("--reset-at", type=EVENT_TIME, action="append", default=[], metavar="T",
                   help="with --via-testbed: a reset of the testbed bridge at T s (refused while the cause persists)")
    p.add_argument("--campaign", metavar="SPEC.yaml",
                   help="replay one run of this campaign spec (with --run; the spec sets everything else)")
    p.add_argument("--run", dest="campaign_run", type=Whole(0, None, what="run index"), metavar="I",
                   help="with --campaign: the run")
    p.add_argument("--out", default="sim_out", help="output folder (default ./sim_out); created if missing")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the outputs of an earlier run in --out (refused without it)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--no-replay", action="store_true",
                   help="skip replay.html, the run's 3-D replay in a browser (needs the 'replay' extra)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_object_arguments(p)
    p.set_defaults(run=run, validate=validate)


# What the options accept (argparse refuses anything else, naming the option).
DURATION = Number(0.0, lo_open=True, unit="s")
RATE = Number(MIN_RATE_HZ, MAX_RATE_HZ, unit="Hz")
LOG_RATE = Number(1e-3, MAX_RATE_HZ, unit="Hz")  # far below it, rate / log_rate overflows the runner
SUBSTEPS = Whole(1, MAX_SUBSTEPS, what="plant steps per control period")
MASS_ERROR = Number(0.0, 1.0, hi_open=True, unit="(relative)")
WALL_MASS = Number(0.0, 1e6, lo_open=True, unit="kg")  # a million kg is a fixed wall: leave it out
EVENT_TIME = Number(0.0, unit="s")
OVERRUN_LIMIT = Whole(0, 1_000_000, what="ticks")
OPTION_NAMES = {"duration": "--duration", "rate": "--rate", "substeps": "--substeps",
                "log_rate": "--log-rate"}


def validate(args: argparse.Namespace) -> None:
    """What can be refused before the run: option combinations, the mode schedule, --fault,
    --q0 (JSON, and inside the URDF limits: the run starts there), and the run's size
    (:mod:`freeflyer_control.sim.limits`). Warns about schedule entries the run never reaches."""
    from freeflyer_control.hil.emulator import parse_fault

    if args.campaign is not None or args.campaign_run is not None:
        return _validate_replay(args)
    validate_object_run(args)
    if args.object is not None:
        return
    if (args.fault or args.estop_at or args.reset_at) and not args.via_testbed:
        raise UsageError("--fault, --estop-at and --reset-at need --via-testbed")
    if args.wall_mass is not None and args.maneuver != "ee-contact":
        raise UsageError(f"--wall-mass is the wall of --maneuver ee-contact; maneuver '{args.maneuver}' "
                         "has no wall: drop --wall-mass")
    if args.via_testbed and args.maneuver == "ee-contact":
        raise UsageError("--maneuver ee-contact is not emulated with --via-testbed (the emulated testbed has "
                         "no wall); run it without --via-testbed")
    if args.via_testbed and args.mass_error:
        raise UsageError("--mass-error is not emulated with --via-testbed (the testbed runs the "
                         "robot's own model); drop one of them")
    for text in args.fault:
        try:
            parse_fault(text)
        except ValueError as exc:
            raise UsageError(f"--fault: {exc}") from None
    schedule = _schedule(args)
    ff, rate, names = _robot_and_rate(args)
    _check_law(args, ff)
    if args.q0:
        check_joint_limits(ff, parse_joint_positions(ff, args.q0, "--q0"), "--q0", refuse=True,
                           command="sim")
    duration = args.duration or _maneuver_duration(ff, args)
    problem = run_size_problem(duration, rate, args.substeps, args.log_rate, names)
    if problem:
        raise UsageError(problem)
    for t, mode in entries_never_flown(schedule, duration):
        warn("sim", f"--mode-schedule entry {t:g}:{mode} is at or after the end of the run "
                    f"({duration:g} s) and is never flown; give a longer --duration or drop it")
    for option, times in (("--estop-at", args.estop_at), ("--reset-at", args.reset_at)):
        for t in times:
            if t >= duration:
                warn("sim", f"{option} {t:g} is at or after the end of the run ({duration:g} s) and "
                            "never happens; give a longer --duration or drop it")


def _check_law(args: argparse.Namespace, ff) -> None:
    """Make the law (``args.law``) from --controller and --controller-param, refusing an unknown
    law, a bad parameter, a maneuver the law cannot fly or --engine compiled for a law the
    compiled engine does not implement, before anything runs."""
    from freeflyer_control.control.maneuvers import make_maneuver
    from freeflyer_control.laws import make_law, parse_assignments

    try:
        args.law = make_law(args.controller, parse_assignments(args.controller_param))
    except ValueError as exc:
        raise UsageError(f"--controller: {exc}") from None
    from freeflyer_control.control.mode_switch import initial_mode
    mode = initial_mode(args.mode, _schedule(args))[0]
    refusal = args.law.refuses(ff, make_maneuver(args.maneuver)) or args.law.refuses_mode(Mode.parse(mode))
    if refusal:
        raise UsageError(refusal)
    if args.engine == "compiled" and getattr(args.law, "compiled_name", None) is None:
        from freeflyer_control.sim.runner import compiled_refusal

        raise UsageError(compiled_refusal(args.law.label()))


def _validate_replay(args: argparse.Namespace) -> None:
    from freeflyer_control.campaign.spec import load_spec

    if args.campaign is None or args.campaign_run is None:
        raise UsageError("--campaign SPEC.yaml and --run I go together (replay run I of the campaign)")
    spec = load_spec(args.campaign)
    if args.campaign_run >= spec.runs:
        raise UsageError(f"--run {args.campaign_run}: the campaign has runs 0 .. {spec.runs - 1}")
    args.campaign_spec = spec


def _schedule(args: argparse.Namespace) -> list[tuple[float, str]]:
    if args.mode_schedule is None:
        return []
    return parse_mode_schedule(args.mode_schedule, "--mode-schedule")


def _robot_and_rate(args: argparse.Namespace):
    """The robot flown and the control rate: the testbed's with --via-testbed, else --robot's
    and --rate; with the option names the size check uses."""
    if args.via_testbed:
        tb = validation_testbed(args.via_testbed)
        rate_name = f"the testbed's rate ({args.via_testbed})"
        return tb.robot, tb.rate, {**OPTION_NAMES, "rate": rate_name}
    return validation_robot(args), args.rate, OPTION_NAMES


def _maneuver_duration(ff, args: argparse.Namespace) -> float:
    """The maneuver's own length on this robot (what a run without --duration flies)."""
    from freeflyer_control.control.maneuvers import make_maneuver
    from freeflyer_control.physics.state import make_state

    maneuver = make_maneuver(args.maneuver)
    maneuver.start(ff, make_state(ff))
    return float(maneuver.duration)


def run(args: argparse.Namespace) -> int:
    from freeflyer_control.model import load_robot

    if args.object is not None:
        return run_object(args)
    q0 = None
    if args.q0:
        q0 = parse_joint_positions(load_robot(args.robot, base=args.base, end_effectors=args.ee),
                                   args.q0, "--q0")
    config = SimConfig(
        robot=args.robot, base=args.base, ee=args.ee, mode=args.mode, controller=getattr(args, "law", args.controller),
        overrun_limit=args.overrun_limit or None,
        maneuver=args.maneuver, duration=args.duration, rate=args.rate, plant_substeps=args.substeps,
        mode_schedule=_schedule(args),
        mass_error=args.mass_error, seed=args.seed, base_actuation=args.base_actuation,
        log_rate=args.log_rate, initial_joint_positions=q0, wall_mass=args.wall_mass,
    )
    fast = {"auto": None, "python": False, "compiled": True}[args.engine]
    if not args.via_testbed and (args.fault or args.estop_at or args.reset_at):
        raise ValueError("--fault, --estop-at and --reset-at need --via-testbed")
    out = prepare_output_folder(args.out, overwrite=args.overwrite)
    plots = not args.no_plots and _plots_possible()
    replay = replay_wanted(args)
    result, stopped = run_stoppable(out, lambda stream, progress: _simulate(args, config, fast, stream, progress),
                                    as_json=args.json)
    if result is None:
        return stopped

    from freeflyer_control.sim.writers import write_outputs

    files = write_outputs(result, out, timeseries=False, replay=replay)
    written = list(files.values())
    if plots:
        from freeflyer_control.sim.plots import write_plots

        written += write_plots(result, out)
    code = diverged_status(result.summary)
    if args.json:
        print(json.dumps(result.summary, indent=2, default=float))
        return code
    print_summary(result.summary)
    print(f"wrote {len(written)} files to {out.resolve()}/")
    for path in written:
        print(f"  {Path(path).name}")
    return code


def _simulate(args: argparse.Namespace, config: SimConfig, fast, stream, progress):
    """The run: one run of a campaign (--campaign), through the emulated testbed (--via-testbed),
    or plant and controller in lockstep."""
    if args.campaign is not None:
        from freeflyer_control.campaign.worker import simulate

        return simulate(args.campaign_spec, args.campaign_run, progress=progress, stream=stream)
    if args.via_testbed:
        from freeflyer_control.hil.emulator import parse_fault
        from freeflyer_control.hil.runner import Event
        from freeflyer_control.hil.sim import run_via_testbed

        faults = [parse_fault(text) for text in args.fault]
        events = [Event(t, "estop", "e-stop (--estop-at)") for t in args.estop_at]
        events += [Event(t, "reset") for t in args.reset_at]
        return run_via_testbed(config, args.via_testbed, faults=faults, events=events,
                               progress=progress, stream=stream)
    return run_simulation(config, progress=progress, fast=fast, stream=stream)


def _figure(summary: dict, key: str, fmt: str) -> str:
    """A summary figure formatted, or "not available" with the reason."""
    value = summary.get(key)
    if value is None:
        why = summary.get("not_available", {}).get(key)
        return NOT_AVAILABLE + (f" ({why})" if why else "")
    return fmt.format(value)


def print_summary(s: dict) -> None:
    """The summary's headline figures, testbed events and mode switches, on stdout."""
    print(f"{s['robot']}: {s['maneuver']} maneuver, {s['controller']}, mode {s['mode']}"
          f" -> {s['final_mode']}, {s['duration_s']:g} s at {s['rate_hz']:g} Hz ({engine_words(s)})")
    for key, label, fmt in HEADLINE:
        value = _figure(s, key, fmt)
        if key == "rms_tracking_error" and s.get(key) is not None:
            value += f" {s['tracking_error_units']}"
        print(f"  {label:<28} {value}")
    if "contact_force_rms_error_n" in s:
        for key, label, fmt in CONTACT_HEADLINE:
            print(f"  {label:<28} {_figure(s, key, fmt)}")
    if s.get("law_overruns"):
        print(f"  {'law overruns':<28} {s['law_overruns']} ticks over the period (longest "
              f"{s['law_longest_tick_s'] * 1e3:.3g} ms of CPU)")
    for trip in s.get("testbed_trips") or []:
        print(f"  testbed trip at t={trip['t']:.3f} s ({trip['reaction']}): {trip['reason']}")
    for reset in s.get("testbed_resets") or []:
        print(f"  testbed reset at t={reset['t']:.3f} s: {reset['message']}")
    if "testbed" in s:
        print(f"  {'estimation error (max)':<28} base {_figure(s, 'estimation_error_base_position_m', '{:.3g} m')}, "
              f"joints {_figure(s, 'estimation_error_joints_rad', '{:.3g} rad')}")
    for switch in s["mode_switches"] or []:
        verdict = "switched" if switch["accepted"] else f"REFUSED ({switch['reason']})"
        print(f"  t={switch['t']:.2f} s  {switch['from']} -> {switch['to']}: {verdict}")


def _plots_possible() -> bool:
    """Whether plots can be written; if matplotlib is missing, say so now, before the run."""
    from freeflyer_control.sim.plots import matplotlib_missing

    if matplotlib_missing() is None:
        return True
    print(MATPLOTLIB_MISSING, file=sys.stderr)
    return False
