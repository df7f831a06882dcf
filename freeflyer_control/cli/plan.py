"""``freeflyer plan``: nonholonomic planning of a planar free-floating robot, run on the plant.

Sub-commands (all start from rest, zero momentum, base at the world origin with yaw --theta0):

* ``reorient``: self-correcting planning, square joint loops that turn the base by --dtheta;
* ``lyapunov``: Lyapunov planning of [base yaw, joints] toward a target, with stall detection;
* ``piw``: Cartesian planning of the end-effector through the path-independent workspace.

Each plan is executed on the full-dynamics plant by the computed-torque loop in floating mode,
and the result is printed (``--json`` for a machine-readable summary). Joints are counted from
1 along the arm (as in the papers) on the command line. ``--base-yaw-rate`` starts the base
spinning (non-zero momentum), which the planners refuse with the reason.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from freeflyer_control.cli.common import (
    add_robot_arguments,
    check_joint_limits,
    robot_from_args,
    validation_robot,
)
from freeflyer_control.model.joint_positions import parse_joint_positions
from freeflyer_control.cli.options import require_matplotlib
from freeflyer_control.inputs.values import ANGLE, Number, UsageError, Whole
from freeflyer_control.sim.limits import MIN_RATE_HZ
from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.state import State, make_state


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="nonholonomic planning (planar, zero momentum), run on the plant")
    plans = p.add_subparsers(dest="plan", required=True, metavar="PLANNER")

    r = plans.add_parser("reorient", help="self-correcting planning: joint loops that turn the base")
    _common(r)
    r.add_argument("--dtheta", type=ANGLE, required=True, help="requested change of base yaw, rad")
    r.add_argument("--side", type=SIDE, default=0.1, help="side dq of the square loops, rad (default 0.1)")
    r.add_argument("--joints", default="1,2", help="the joint plane i,j, counted from 1 (default 1,2)")
    r.add_argument("--edge-time", type=EDGE_TIME, default=0.5, help="s per loop edge (default 0.5)")
    r.add_argument("--passes", type=PASSES, default=1,
                   help="plan-execute-measure passes (self-correction; default 1)")
    r.add_argument("--g-min", type=POSITIVE, default=1e-3,
                   help="refuse where |g(q)| is below this, rad/rad^2 (default 1e-3)")
    r.set_defaults(run=run_reorient)

    ly = plans.add_parser("lyapunov", help="Lyapunov planning of base yaw and joints")
    _common(ly)
    ly.add_argument("--theta-target", type=ANGLE, required=True, help="target base yaw, rad")
    ly.add_argument("--q-target", metavar="JSON", required=True, help="target joint angles, rad (as --q0)")
    ly.add_argument("--a-theta", type=GAIN, default=1.0, help="weight of the yaw error, 1/s")
    ly.add_argument("--a-q", type=GAIN, default=1.0, help="weight of the joint errors, 1/s")
    ly.add_argument("--max-joint-rate", type=JOINT_RATE, default=0.5, help="rad/s (default 0.5)")
    ly.add_argument("--t-max", type=T_MAX, default=60.0, help="give up after this long, s")
    ly.add_argument("--plot", metavar="PNG", help="write plots of the planned and executed paths")
    ly.set_defaults(run=run_lyapunov)

    pw = plans.add_parser("piw", help="end-effector to a point with a final base yaw, through the PIW")
    _common(pw)
    pw.add_argument("--target", metavar="JSON", required=True,
                    help="end-effector target [x, y], m from the system CoM, world axes")
    pw.add_argument("--theta-target", type=ANGLE, required=True, help="final base yaw, rad")
    pw.add_argument("--circle-radius", type=CIRCLE_RADIUS, default=0.04, help="re-orientation circles, m")
    pw.add_argument("--compare-straight", action="store_true",
                    help="also run resolved rate along the straight line and report it")
    pw.add_argument("--plot", metavar="PNG", help="write the end-effector path and base yaw plot")
    pw.set_defaults(run=run_piw)


def _common(p: argparse.ArgumentParser) -> None:
    add_robot_arguments(p)
    p.add_argument("--q0", metavar="JSON", help="initial joint angles, rad (default: ready pose or 0)")
    p.add_argument("--theta0", type=ANGLE, default=0.0, help="initial base yaw, rad (default 0)")
    p.add_argument("--base-yaw-rate", type=YAW_RATE, default=0.0,
                   help="initial base yaw rate, rad/s (non-zero momentum: the planners refuse it)")
    p.add_argument("--rate", type=PLAN_RATE, default=100.0,
                   help=f"control rate on the plant, Hz, at most {PLAN_RATE.hi:g} (default 100)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(validate=validate)


# What the options accept (argparse refuses anything else, naming the option). The plans are
# executed on the plant tick by tick, so the rate and the times bound the run's length.
PLAN_RATE = Number(MIN_RATE_HZ, 1e4, unit="Hz")
POSITIVE = Number(0.0, lo_open=True)
SIDE = Number(0.0, 3.2, lo_open=True, unit="rad")  # a square loop wider than a half turn is no loop
EDGE_TIME = Number(0.0, 10.0, lo_open=True, unit="s")
PASSES = Whole(1, 10, what="passes")
GAIN = Number(0.0, 1e3, lo_open=True, unit="1/s")
JOINT_RATE = Number(0.0, 100.0, lo_open=True, unit="rad/s")
YAW_RATE = Number(-1e3, 1e3, unit="rad/s")
T_MAX = Number(0.0, 3600.0, lo_open=True, unit="s")
CIRCLE_RADIUS = Number(0.0, 10.0, lo_open=True, unit="m")
MAX_PLAN_TICKS = 10**7  # a Lyapunov execution: --t-max x --rate control ticks, each logged


def validate(args: argparse.Namespace) -> None:
    """The JSON options and joint numbers of the planner, checked against the robot; a start
    (--q0) or target (--q-target) outside the URDF limits is refused (the plan is flown); a
    --plot needs matplotlib."""
    if getattr(args, "plot", None):
        require_matplotlib("--plot")
    if args.plan == "lyapunov" and args.t_max * args.rate > MAX_PLAN_TICKS:
        raise UsageError(f"--t-max {args.t_max:g} s at --rate {args.rate:g} Hz is "
                         f"{args.t_max * args.rate:.3g} control ticks, above the limit of "
                         f"{MAX_PLAN_TICKS:.0e}; lower --t-max or --rate")
    if args.plan == "piw":
        parse_target(args.target)
    ff = validation_robot(args)
    if args.plan == "reorient":
        parse_joint_pair(args.joints, len(ff.arm_joint_names))
    for option, text in (("--q0", args.q0), ("--q-target", getattr(args, "q_target", None))):
        if text:
            check_joint_limits(ff, parse_joint_positions(ff, text, option), option, refuse=True,
                               command=f"plan {args.plan}")


def parse_target(text: str) -> np.ndarray:
    """--target: a JSON [x, y], m from the system CoM, world axes."""
    try:
        target = np.asarray(json.loads(text), dtype=float)
    except (TypeError, ValueError, RecursionError, OverflowError):
        raise UsageError(f"--target must be a JSON list [x, y] in m, got {text!r}") from None
    if target.shape != (2,) or not np.all(np.isfinite(target)) or np.any(np.abs(target) > 1e3):
        raise UsageError(f"--target must be [x, y] (m from the system CoM, each within 1000 m), "
                         f"got {text!r}")
    return target


def _start(args: argparse.Namespace) -> tuple[FreeFlyerModel, State]:
    ff = robot_from_args(args)
    q0 = parse_joint_positions(ff, args.q0, "--q0") if args.q0 else dict(ff.ready_pose)
    state = make_state(ff, base_yaw=args.theta0, joint_positions=q0,
                       base_angular_velocity=(0.0, 0.0, args.base_yaw_rate))
    return ff, state


def _settings(args: argparse.Namespace):
    from freeflyer_control.analysis.reorient import ExecutionSettings

    return ExecutionSettings(rate=args.rate)


def _print(args: argparse.Namespace, summary: dict, lines: list[str]) -> None:
    if args.json:
        print(json.dumps(summary, indent=2, default=_jsonable))
    else:
        print("\n".join(lines))


def _jsonable(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    return float(x)


def parse_joint_pair(text: str, n: int) -> tuple[int, int]:
    """'i,j' (1-based) -> (i-1, j-1), checked against the number of arm joints."""
    try:
        i, j = (int(s) for s in text.split(","))
    except ValueError:  # also a wrong count of numbers
        raise UsageError(f"--joints must be two joint numbers 'i,j' counted from 1, got {text!r}") from None
    if not (1 <= i <= n and 1 <= j <= n) or i == j:
        raise UsageError(f"--joints {text}: give two different joints between 1 and {n}")
    return i - 1, j - 1


def run_reorient(args: argparse.Namespace) -> int:
    from freeflyer_control.analysis.reorient import self_correcting_reorientation

    ff, state = _start(args)
    joints = parse_joint_pair(args.joints, len(ff.arm_joint_names))
    results = self_correcting_reorientation(
        ff, state, args.dtheta, args.side, joints, passes=args.passes, settings=_settings(args),
        edge_time=args.edge_time, g_min=args.g_min)
    summary = results[0].as_dict()
    summary["theta_final_simulated"] = results[-1].theta_final_simulated
    summary["theta_error_simulated"] = args.theta0 + args.dtheta - results[-1].theta_final_simulated
    summary["loops_executed"] = sum(r.plan.loops_predicted for r in results)
    if len(results) > 1:
        summary["passes"] = [r.as_dict() for r in results]
    s = summary
    _print(args, summary, [
        f"{ff.name}: turn the base by {args.dtheta:g} rad with loops in the "
        f"({s['joint_names'][0]}, {s['joint_names'][1]}) plane, side {args.side:g} rad",
        f"  g(q0)                    {s['g']:.6g} rad/rad^2 ({s['direction']} loops)",
        f"  loops predicted          {s['loops_predicted']} ({s['loops_fractional']:.3f}; last side "
        f"{s['last_side']:.4g} rad)",
        f"  loops executed           {s['loops_executed']} in {len(results)} pass(es)",
        f"  theta final predicted    {s['theta_final_predicted']:.6f} rad",
        f"  theta final simulated    {s['theta_final_simulated']:.6f} rad "
        f"(error {s['theta_error_simulated']:.2e})",
    ])
    return 0


def run_lyapunov(args: argparse.Namespace) -> int:
    from freeflyer_control.analysis.lyapunov import (
        LyapunovGains,
        execute_lyapunov,
        plan_lyapunov,
        plot_lyapunov,
    )

    ff, state = _start(args)
    targets = parse_joint_positions(ff, args.q_target, "--q-target")
    q_target = np.array([targets.get(n, 0.0) for n in ff.arm_joint_names])
    gains = LyapunovGains(a_theta=args.a_theta, a_q=args.a_q, max_joint_rate=args.max_joint_rate)
    plan = plan_lyapunov(ff, state, args.theta_target, q_target, gains, t_max=args.t_max)
    result = execute_lyapunov(ff, state, plan, _settings(args))
    summary = result.as_dict()
    if args.plot:
        summary["plot"] = str(plot_lyapunov(result, args.plot, ff.arm_joint_names))
    s = summary
    lines = [
        f"{ff.name}: Lyapunov plan to yaw {args.theta_target:g} rad, joints "
        f"{np.round(q_target, 4).tolist()} rad: {s['status'].upper()}",
        f"  {s['reason']}",
        f"  planned   yaw {s['theta_final_planned']:.6f} rad, max joint error "
        f"{s['q_error_planned_max']:.3g} rad, {s['duration_s']:.2f} s",
        f"  simulated yaw {s['theta_final_simulated']:.6f} rad (error {s['theta_error_simulated']:.2e})",
    ]
    if args.plot:
        lines.append(f"  wrote {s['plot']}")
    _print(args, summary, lines)
    return 0


def run_piw(args: argparse.Namespace) -> int:
    from freeflyer_control.analysis.piw_planner import (
        execute_piw,
        plan_piw,
        plot_piw,
        straight_line_resolved_rate,
    )

    ff, state = _start(args)
    target = parse_target(args.target)
    plan = plan_piw(ff, state, target, args.theta_target, circle_radius=args.circle_radius)
    result = execute_piw(ff, state, plan, _settings(args))
    summary = result.as_dict()
    straight = None
    if args.compare_straight:
        straight = straight_line_resolved_rate(ff, state, target, rate=args.rate)
        summary["straight_line_resolved_rate"] = straight.as_dict()
    if args.plot:
        summary["plot"] = str(plot_piw(result, args.plot, straight))
    s = summary
    lines = [
        f"{ff.name}: end-effector to {target.tolist()} m with base yaw {args.theta_target:g} rad via "
        f"the PIW [{s['piw'][0]:.3f}, {s['piw'][1]:.3f}] m",
        f"  legs: {len(s['legs'])} ({s['circles']} re-orientation circles, "
        f"{s['circle_turn_rad']:.4f} rad each), {s['duration_s']:.1f} s",
        f"  simulated: end-effector error {s['ee_error_simulated_m'] * 1000:.2f} mm, yaw "
        f"{s['theta_final_simulated']:.5f} rad (error {s['theta_error_simulated']:.2e})",
    ]
    if args.compare_straight:
        st = s["straight_line_resolved_rate"]
        lines.append(f"  straight line (resolved rate): end-effector error {st['ee_error_m'] * 1000:.1f} mm, "
                     f"min sigma {st['sigma_min_min']:.2g}, yaw {st['theta_final']:.4f} rad")
    _print(args, summary, lines)
    return 0
