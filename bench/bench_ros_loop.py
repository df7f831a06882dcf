#!/usr/bin/env python3
"""The plant -> controller -> plant loop under ROS 2: latency, missed periods and CPU, per way of
running the loop.

Starts plant_node and controller_node (this checkout's code, with the robot's ROS parameter file
config/<robot>.yaml and ``rate`` overridden) in one or more of three ways (``--loops``):

* ``distributed``: two processes with their own timers (the graph on hardware; the default);
* ``lockstep``: sim_loop_node, both nodes in one process, one timer steps the plant and then
  ticks the controller on the new state (sim.launch.py's default);
* ``composed``: sim_loop_node --composed, both nodes in one process and one executor with their
  own timers and subscriptions (the distributed graph, minus the process boundary);

one after the other at each ``--rate``. It sends the controller an
end-effector target so that every tick runs the task-space controller (``--no-task``: it only
holds the pose), and records in a probe node, with receive times on the system clock (the
clock the plant stamps its messages with):

* state delivery: /joint_states header stamp (the plant's publish time) -> probe receive;
* loop latency: /joint_states stamp -> the first /joint_effort_commands the probe receives
  after it received that state. This is the answer to that state: it includes the wait for
  the controller's next tick (the two timers are not phase-locked: 0 to 1 period), the tick's
  compute time and two DDS hops;
* the same on publish times only (the commands' DDS source timestamps), which leaves out the
  probe's own delays: the first command published after the state was (a lower bound: a
  command published within the state's delivery time was computed from the previous state);
* intervals between states and between commands;
* missed periods: periods of the measured window in which the plant published no state, or
  the controller no command (a late timer catches up with a short interval, so these count
  what never came); late periods: gaps longer than 1.5 periods; and plant periods in which no
  new command arrived (the plant then holds the previous command);
* CPU of each node process over the measured window (user + system time, /proc), in % of one
  core;
* where a period goes: the per-period cost breakdown the nodes publish on /diagnostics
  (``period_us.*``, freeflyer_control.runtime.period_costs), averaged over the diagnostics
  windows of the measured window: message conversion in (commands into the plant, states into
  the controller, or the lockstep hand-over), the plant step, the measurement, the controller
  tick, message conversion out (state and command messages) and their publication, each the
  mean CPU time per period (load distorts it far less than wall time); then the CPU per period of the loop thread outside those stages (the waits,
  wake-ups and timers of the loop), of the thread that serves the executor's other callbacks
  (parameters, services, references, diagnostics), and of the middleware's threads (DDS).

After the runs a summary table puts the ways and rates side by side, with the load average
before each run (the 2 cores are shared: compare rows of one invocation, not across runs).

``--compare DIR`` runs the nodes of another checkout (e.g. a ``git worktree`` of main) beside
this one's, interleaved: at each rate and way, DIR's nodes then this checkout's (the label says
which), so that before and after see the same load.

Usage (from the repository root, in a shell where ROS 2 is sourced):

    python bench/bench_ros_loop.py [--rate 500 [1000 ...]] [--loops distributed[,lockstep,composed]]
                                   [--robot planar_4link] [--duration 10] [--warmup 2] [--no-task]
                                   [--compare DIR]

    # issue 13's comparison (about 2.5 minutes):
    python bench/bench_ros_loop.py --rate 1000 500 --loops distributed,lockstep,composed --duration 8

    # issue 22's slower machine, emulated (root): each node's CPU share calibrated so that
    # sum(range(10**7)) takes 0.39 s in it (bench/slow_cpu.py)
    python bench/bench_ros_loop.py --rate 500 250 --loops lockstep,distributed --slow-machine 0.39

Without rclpy it prints "skipped: rclpy not available" and exits 0. This is a benchmark, not a
test: nothing in test/ depends on timings.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench_core import process_cpu_seconds  # noqa: E402  (this folder)


def _percentiles(values_s):
    import numpy as np

    if len(values_s) == 0:
        return ["-"] * 4
    v = np.asarray(values_s) * 1e3
    return [f"{np.percentile(v, 50):.3f}", f"{np.percentile(v, 99):.3f}", f"{v.max():.3f}", str(len(v))]


LOOPS = {  # way of running the loop -> the processes (module, extra arguments)
    "distributed": [("plant_node", []), ("controller_node", [])],
    "lockstep": [("sim_loop_node", [])],
    "composed": [("sim_loop_node", ["--composed"])],
}


def _start_nodes(args, env, rate, loop, source=REPO):
    """plant_node and controller_node of the checkout ``source``, as child processes, the
    ``loop`` way."""
    env = dict(env)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p) != REPO]
    env["PYTHONPATH"] = os.pathsep.join([str(source)] + paths)
    param_file = source / "config" / f"{args.robot}.yaml"
    files = [str(param_file)] if param_file.is_file() else []
    # The overrides go under the node keys of config/<robot>.yaml (`-p rate:=...` would go
    # under /**, which rcl applies before the file's /**/<node> sections: the file would win).
    overrides = {f"/**/{node}": {"ros__parameters": {"robot": args.robot, "rate": float(rate)}}
                 for node in ("plant_node", "controller_node")}
    with tempfile.NamedTemporaryFile("w", prefix="bench_ros_loop_", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(overrides, f)
    files.append(f.name)
    ros_args = ["--ros-args"] + [x for path in files for x in ("--params-file", path)]
    procs = []
    for module, extra in LOOPS[loop]:
        cmd = [sys.executable, "-m", f"freeflyer_control.nodes.{module}"] + extra + ros_args
        # cwd: `python -m` puts the working directory first on sys.path.
        popen = args.slow.popen if args.slow is not None else subprocess.Popen
        procs.append(popen(cmd, env=env, start_new_session=True, cwd=str(source),
                           stdout=subprocess.DEVNULL if not args.verbose else None,
                           stderr=subprocess.DEVNULL if not args.verbose else None))
    return procs


def _stop(procs):
    # SIGTERM, not SIGINT: background jobs of a non-interactive shell ignore SIGINT, and
    # rclpy shuts down cleanly on SIGTERM too.
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def run(args) -> int:
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from freeflyer_control.model import load_robot

    env = dict(os.environ)
    env.setdefault("ROS_DOMAIN_ID", str(101 + os.getpid() % 100))  # keep the run to itself
    os.environ["ROS_DOMAIN_ID"] = env["ROS_DOMAIN_ID"]

    ff = load_robot(args.robot)
    rclpy.init()
    from diagnostic_msgs.msg import DiagnosticArray

    probe = Probe(Node("bench_ros_loop_probe"), ff, JointState, Float64MultiArray, PoseStamped,
                  QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE), DiagnosticArray)
    executor = SingleThreadedExecutor()
    executor.add_node(probe.node)
    summary = []
    try:
        sources = [("before", Path(args.compare).resolve()), ("after", REPO)] if args.compare else [("", REPO)]
        for rate in args.rate:
            for loop in args.loops:
                for label, source in sources:
                    row = _one_run(args, env, probe, executor, rate, loop, source, label)
                    if row is None:
                        return 1
                    summary.append(row)
    finally:
        executor.shutdown()
        probe.node.destroy_node()
        rclpy.try_shutdown()
    if len(summary) > 1:
        _print_summary(summary)
    return 0


class Probe:
    """The probe node: records /joint_states stamps and receive times, /joint_effort_commands
    receive and publish times, and publishes the end-effector target."""

    def __init__(self, node, ff, JointState, Float64MultiArray, PoseStamped, qos, DiagnosticArray):
        self.node, self.ff, self.PoseStamped = node, ff, PoseStamped
        self.clear()
        node.create_subscription(JointState, "joint_states", self._on_state, qos)
        node.create_subscription(Float64MultiArray, "joint_effort_commands", self._on_command, qos)
        node.create_subscription(DiagnosticArray, "diagnostics", self._on_diagnostics, 100)
        self.target_pub = node.create_publisher(PoseStamped, f"ee_target/{ff.end_effectors[0]}", 10)

    def clear(self):
        self.js_log, self.cmd_log = [], []   # (stamp_ns, recv_ns) and (recv_ns, source_ns)
        self.costs = []                      # (recv_ns, node name, {name: us per period})
        self.moving = False                  # a non-zero command was received
        self.dropped = []                    # (recv_ns, periods the lockstep schedule dropped so far)

    def _on_diagnostics(self, m):
        t = time.time_ns()
        for status in m.status:
            values = {kv.key[len(COST_PREFIX):]: float(kv.value) for kv in status.values
                      if kv.key.startswith(COST_PREFIX)}
            if values:
                self.costs.append((t, status.hardware_id, values))
            for kv in status.values:
                if kv.key == "dropped_periods":   # lockstep: the schedule's count so far
                    self.dropped.append((t, int(kv.value)))

    def _on_state(self, m):
        self.js_log.append((m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec, time.time_ns()))

    def _on_command(self, m, info):   # two parameters: rclpy passes the message info too
        self.cmd_log.append((time.time_ns(), info["source_timestamp"]))
        if not self.moving and any(m.data):
            self.moving = True

    def target(self):
        """A target 5 cm from the ready pose's end-effector: the task-space path every tick."""
        import pinocchio as pin

        from freeflyer_control.physics.state import make_state

        ff = self.ff
        state = make_state(ff, joint_positions=dict(ff.ready_pose))
        data = ff.create_data()
        pin.framesForwardKinematics(ff.model, data, state.q)
        ee = data.oMf[ff.frame_id(ff.end_effectors[0])].translation
        msg = self.PoseStamped()
        msg.header.frame_id = "world"
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (
            float(ee[0] + 0.05), float(ee[1] - 0.03), float(ee[2]))
        msg.pose.orientation.w = 0.0   # all-zero quaternion: position only
        return msg


def _one_run(args, env, probe, executor, rate, loop, source=REPO, label=""):
    """One way of running the loop at one rate, with the nodes of the checkout ``source``:
    start, measure, stop; print its tables and return its summary row (None on failure, said
    on stderr)."""
    import numpy as np

    period = 1.0 / rate
    load_before = os.getloadavg()   # the nodes compete with whatever else runs
    probe.clear()
    procs = _start_nodes(args, env, rate, loop, source)
    name = f"{loop} ({label})" if label else loop
    try:
        deadline = time.monotonic() + 60.0
        while (not probe.js_log or not probe.cmd_log) and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
            if any(p.poll() is not None for p in procs):
                print(f"{name}: a node exited early; rerun with --verbose", file=sys.stderr)
                return None
        if not probe.js_log or not probe.cmd_log:
            print(f"{name}: no /joint_states or /joint_effort_commands within 60 s", file=sys.stderr)
            return None
        if args.task:
            msg = probe.target()
            # The controller refuses references until it has its first state: publish until
            # the arm moves.
            deadline = time.monotonic() + 30.0
            while not probe.moving and time.monotonic() < deadline:
                if probe.target_pub.get_subscription_count():
                    probe.target_pub.publish(msg)
                t_next = time.monotonic() + 0.5
                while not probe.moving and time.monotonic() < t_next:
                    executor.spin_once(timeout_sec=0.05)
            if not probe.moving:
                print(f"{name}: the controller did not take the end-effector target", file=sys.stderr)
                return None
        t_end = time.monotonic() + args.warmup + args.duration
        t_measure = time.time_ns() + int(args.warmup * 1e9)
        cpu0 = None
        while time.monotonic() < t_end:
            executor.spin_once(timeout_sec=0.05)
            if cpu0 is None and time.time_ns() >= t_measure:
                cpu0 = ([process_cpu_seconds(p.pid) for p in procs], time.monotonic())
        cpu1 = ([process_cpu_seconds(p.pid) for p in procs], time.monotonic())
        t_end_ns = time.time_ns()
        # The diagnostics window that ends just after the measured one (2 Hz: within 0.5 s).
        t_more = time.monotonic() + 0.6
        while time.monotonic() < t_more:
            executor.spin_once(timeout_sec=0.05)
    finally:
        _stop(procs)
    # The emulated machine's speed moves from minute to minute (the VM's own does): measured
    # again just after the run, in a group of the nodes' share.
    emulated = args.slow.calibrate(3) if args.slow is not None else None
    js_log, cmd_log = probe.js_log, probe.cmd_log
    cpu = [f"{100 * (b - a) / (cpu1[1] - cpu0[1]):.0f}" if a is not None and b is not None else "-"
           for a, b in zip(cpu0[0], cpu1[0])]
    cpu_text = " + ".join(f"{module} {c} %" for (module, _), c in zip(LOOPS[loop], cpu))

    js = np.array([(s, r) for s, r in js_log if s >= t_measure], dtype=np.int64)
    cmd_pub = np.array([src for r, src in cmd_log if r >= t_measure], dtype=np.int64)
    cmd = np.array([r for r, _ in cmd_log if r >= t_measure], dtype=np.int64)
    if len(js) < 10 or len(cmd) < 10:
        print(f"{name}: too few messages in the measurement window", file=sys.stderr)
        return None
    stamps, recv = js[:, 0], js[:, 1]
    delivery = (recv - stamps) * 1e-9
    # The answer to state k: the first command received after the state was received.
    idx = np.searchsorted(cmd, recv, side="right")
    ok = idx < len(cmd)
    loop_lat = (cmd[idx[ok]] - stamps[ok]) * 1e-9
    # The same on publish times (DDS source timestamps), free of the probe's own delays: the
    # first command published after the state was. (A command published within the state's
    # delivery time was still computed from the previous state: a lower bound.)
    cmd_pub.sort()
    pidx = np.searchsorted(cmd_pub, stamps, side="right")
    pok = pidx < len(cmd_pub)
    loop_pub = (cmd_pub[pidx[pok]] - stamps[pok]) * 1e-9
    js_dt = np.diff(stamps) * 1e-9
    cmd_dt = np.diff(cmd) * 1e-9
    span = (stamps[-1] - stamps[0]) * 1e-9
    # Missed periods: the periods of the window minus the messages that came (a late timer
    # catches up with a short interval, so this counts what never came); late: gaps > 1.5 periods.
    expected = round(span / period) + 1
    missed_plant = max(0, expected - len(stamps))
    missed_ctrl = max(0, expected - len(cmd))
    late_plant = int(np.sum(js_dt > 1.5 * period))
    late_ctrl = int(np.sum(cmd_dt > 1.5 * period))
    # Plant periods without a new command: no command received between two state receipts.
    counts = np.diff(np.searchsorted(cmd, recv))
    no_new = int(np.sum(counts == 0))
    # The same on publish times: no command published between two states. The probe's receipt
    # order is its own (one executor wake-up takes a burst topic by topic); the publish order
    # is the graph's. (For the distributed graph a command published just before the next
    # state may still reach the plant after its step: a lower bound there.)
    no_new_pub = int(np.sum(np.diff(np.searchsorted(cmd_pub, stamps)) == 0))

    rows = [("state delivery (plant publish -> probe)", *_percentiles(delivery)),
            ("loop latency (state publish -> answer)", *_percentiles(loop_lat)),
            ("  same, on publish times (lower bound)", *_percentiles(loop_pub)),
            ("state interval", *_percentiles(js_dt)),
            ("command interval", *_percentiles(cmd_dt))]
    print(f"\nROS loop ({name}): {args.robot}, plant and controller at {rate:g} Hz (period "
          f"{period * 1e3:.3f} ms), {args.duration:g} s after {args.warmup:g} s warm-up, "
          f"{'end-effector target (task-space control)' if args.task else 'pose hold'}")
    print(f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs "
          f"(load average {load_before[0]:.2f} before the run), RMW "
          f"{os.environ.get('RMW_IMPLEMENTATION', 'default')}, ROS_DOMAIN_ID {os.environ['ROS_DOMAIN_ID']}")
    _print_table(("metric", "p50 ms", "p99 ms", "max ms", "n"), rows)
    print(f"plant: {len(stamps)} states in {span:.2f} s ({len(stamps) / span:.1f} Hz): missed periods "
          f"{missed_plant} of {expected} ({100 * missed_plant / expected:.2f} %), late (gap > 1.5 periods) "
          f"{late_plant}")
    if loop == "lockstep" and probe.dropped:
        # The schedule's count at the diagnostics just before the window and at the last one
        # (diagnostics at 2 Hz: the window's edges are known to 0.5 s).
        before = [n for t, n in probe.dropped if t <= t_measure]
        print(f"  of which dropped by sim_loop_node's schedule (lag past its bound, runtime.schedule): "
              f"{probe.dropped[-1][1] - (before[-1] if before else 0)}; the rest: states published "
              "late or lost on the way")
    print(f"controller: {len(cmd)} commands ({len(cmd) / span:.1f} Hz): missed periods {missed_ctrl} of "
          f"{expected} ({100 * missed_ctrl / expected:.2f} %), late (gap > 1.5 periods) {late_ctrl}")
    print(f"plant periods without a new command (previous one held): {no_new} of {len(counts)} "
          f"({100 * no_new / max(len(counts), 1):.2f} %); on publish times {no_new_pub} "
          f"({100 * no_new_pub / max(len(counts), 1):.2f} %)")
    print(f"CPU over the window, % of one core: {cpu_text}")
    # Per period each process ran: the plant's states, the controller's commands (lockstep: one
    # period publishes both).
    periods = {"plant_node": len(stamps), "controller_node": len(cmd)}
    cpu_per_period = {module: (b - a) * 1e6 / max(periods.get(module, len(stamps)), 1)
                      for (module, _), a, b in zip(LOOPS[loop], cpu0[0], cpu1[0]) if a is not None and b is not None}
    _print_costs(probe.costs, t_measure, t_end_ns, period, cpu_per_period, loop)
    quota = "-"
    if emulated is not None:
        # What decides whether a period is served: the node's CPU per period against the CPU its
        # group may use in a period (share x period).
        budget_us = args.slow.share * period * 1e6
        quota = " + ".join(f"{v / budget_us:.2f}" for v in cpu_per_period.values())
        print(f"emulated machine just after the run: sum(range(10**7)) takes {emulated:.3f} s in a node's "
              f"group (the issue's slower machine: 0.39 s); CPU per period / the group's CPU per period "
              f"({budget_us:.0f} us): {quota}")
    p50, p99 = (f"{np.percentile(loop_lat, q) * 1e3:.2f}" if len(loop_lat) else "-" for q in (50, 99))
    p99_pub = f"{np.percentile(loop_pub, 99) * 1e3:.2f}" if len(loop_pub) else "-"
    n = max(len(counts), 1)
    return (name, f"{rate:g}", f"{load_before[0]:.2f}", f"{100 * missed_plant / expected:.2f}",
            f"{100 * missed_ctrl / expected:.2f}", f"{100 * no_new / n:.2f} / {100 * no_new_pub / n:.2f}",
            p50, p99, p99_pub, cpu_text,
            " + ".join(f"{v:.0f}" for v in cpu_per_period.values()),
            f"{emulated:.3f}" if emulated is not None else "-", quota)


COST_PREFIX = "period_us."
# The breakdown's rows: (key of runtime.period_costs, what it is), in period order.
COST_ROWS = (
    ("messages_in", "conversion in: messages taken (deserialized) by the loop"),
    ("commands_in", "conversion in: commands into the plant"),
    ("states_in", "conversion in: states into the controller"),
    ("handover", "conversion in: the measurement handed to the controller"),
    ("step", "plant step"),
    ("measurement", "plant measurement (state fields)"),
    ("state_msgs", "conversion out: state messages"),
    ("state_publish", "publication: /joint_states, /base/odom (TF at tf_rate)"),
    ("tick", "controller tick (sim_loop_node: with the plant's step)"),
    ("command_msgs", "conversion out: command messages"),
    ("command_publish", "publication: commands"),
    ("loop_overhead", "loop thread outside the stages: waits, wake-ups, timers"),
    ("callback_thread_cpu", "executor thread: parameters, services, references, diagnostics"),
    ("middleware_threads_cpu", "middleware threads (DDS)"),
)
STAGE_KEYS = ("messages_in", "commands_in", "states_in", "handover", "step", "measurement", "state_msgs", "state_publish",
              "tick", "command_msgs", "command_publish")
CPU_KEYS = ("loop_overhead", "callback_thread_cpu", "middleware_threads_cpu")


def _print_costs(costs, t0_ns, t1_ns, period, cpu_per_period, loop):
    """The per-period cost breakdown: the nodes' diagnostics windows that end inside the measured
    window (and the one just after it), weighted by their periods (the stages by their timed
    periods: runtime.period_costs times them on one period in SAMPLE_EVERY)."""
    nodes = {}
    for t, node, values in costs:
        if t0_ns + 0.5e9 <= t <= t1_ns + 0.6e9 and values.get("periods", 0) > 0:
            acc = nodes.setdefault(node, {})
            w = values["periods"]
            timed = values.get("timed_periods", w)   # (a checkout that timed every period)
            for key, value in values.items():
                if key not in ("periods", "timed_periods"):
                    weight = timed if key in STAGE_KEYS else w
                    acc[key] = acc.get(key, 0.0) + weight * value
                    acc["weight." + key] = acc.get("weight." + key, 0.0) + weight
            acc["periods"] = acc.get("periods", 0.0) + w
    cpu_text = ", ".join(f"{m} {v:.1f} us" for m, v in cpu_per_period.items())
    if not nodes:
        print("per-period cost: no period_us.* on /diagnostics (nodes of a checkout without "
              f"runtime/period_costs.py); process CPU per period it ran (/proc): {cpu_text}")
        return
    names = sorted(nodes)   # controller_node, plant_node
    means = {n: {k: v / nodes[n]["weight." + k] for k, v in nodes[n].items()
                 if k != "periods" and not k.startswith("weight.")} for n in names}
    head = ("per period, us (% of the period)",) + tuple("sim_loop_node" if loop == "lockstep" else n for n in names)
    rows = []
    for key, text in COST_ROWS:
        if any(key in means[n] for n in names):
            rows.append((text,) + tuple(f"{means[n][key]:.1f} ({100e-6 * means[n][key] / period:.1f} %)"
                                        if key in means[n] else "-" for n in names))
    total = tuple(sum(means[n].get(k, 0.0) for k in STAGE_KEYS + CPU_KEYS) for n in names)
    rows.append(("sum: the process's CPU per period",) + tuple(
        f"{t:.1f} ({100e-6 * t / period:.1f} %)" for t in total))
    print(f"Per-period cost (the nodes' /diagnostics period_us.*, {int(sum(nodes[n]['periods'] for n in names))} "
          f"periods; CPU time):")
    _print_table(head, rows)
    print(f"process CPU per period it ran (/proc; plant: per state, controller: per command): {cpu_text}")


def _print_table(head, rows):
    widths = [max(len(r[i]) for r in list(rows) + [head]) for i in range(len(head))]
    fmt = "| " + " | ".join(f"{{:{'<' if i == 0 else '>'}{w}}}" for i, w in enumerate(widths)) + " |"
    print(fmt.format(*head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(fmt.format(*r))


def _print_summary(summary):
    print("\nSummary (one invocation, runs one after the other; load average before each run):")
    print("(no new command: at the probe / on publish times; latency: state publish -> the answer the "
          "probe received, p99 also on publish times; with --cpu-share / --slow-machine, emulated s: "
          "sum(range(10**7)) in a node's group just after the run, and CPU / quota: the node's CPU per "
          "period over what its group may use in a period)")
    _print_table(("loop", "Hz", "load", "plant missed %", "controller missed %", "no new command %",
                  "latency p50 ms", "p99 ms", "p99 ms, publish", "CPU, % of one core", "CPU us / period",
                  "emulated s", "CPU / quota"),
                 summary)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, nargs="+", default=[500.0],
                        help="plant and control rate(s), Hz")
    parser.add_argument("--loops", default="distributed",
                        help=f"comma-separated ways of running the loop, in order: {', '.join(LOOPS)}")
    parser.add_argument("--robot", default="planar_4link", help="bundled robot name")
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds ignored at the start")
    parser.add_argument("--no-task", dest="task", action="store_false",
                        help="no end-effector target: the controller only holds the pose")
    parser.add_argument("--verbose", action="store_true", help="show the nodes' output")
    parser.add_argument("--compare", metavar="DIR", default=None,
                        help="another checkout (e.g. a git worktree of main) whose nodes run before this "
                             "one's at each rate and way, interleaved (labels 'before' and 'after')")
    parser.add_argument("--cpu-share", type=float, default=None, metavar="F",
                        help="emulate a slower machine: each node process gets at most F of a core "
                             "(Linux CPU bandwidth control; root; bench/slow_cpu.py), e.g. 0.5 for a "
                             "core half as fast. The probe runs at full speed")
    parser.add_argument("--slow-machine", type=float, default=None, metavar="S",
                        help="emulate a machine on which sum(range(10**7)) takes S s of wall time (issue "
                             "22's slower machine: 0.39): --cpu-share calibrated to it just before the runs")
    args = parser.parse_args(argv)
    if args.cpu_share is not None and args.slow_machine is not None:
        parser.error("give --cpu-share or --slow-machine, not both")
    args.loops = [x.strip() for x in args.loops.split(",") if x.strip()]
    unknown = [x for x in args.loops if x not in LOOPS]
    if unknown or not args.loops:
        parser.error(f"--loops {','.join(unknown) or '(empty)'}: give one or more of {', '.join(LOOPS)}")
    try:
        import rclpy  # noqa: F401
    except ImportError as exc:
        print(f"skipped: rclpy not available ({exc}); source a ROS 2 install to run this benchmark")
        return 0
    if args.cpu_share is None and args.slow_machine is None:
        args.slow = None
        return run(args)
    from slow_cpu import CALIBRATION, SlowCpu, SlowCpuError, full_speed, share_for

    try:
        share = args.cpu_share if args.cpu_share is not None else share_for(args.slow_machine)
        with SlowCpu(share) as slow:
            args.slow = slow
            print(f"slower machine emulated: each node process limited to {slow.share:g} of a core "
                  f"(CFS quota {slow.quota_us} us every {slow.period_us} us); {CALIBRATION} takes "
                  f"{slow.calibrate(5):.3f} s wall in such a process, {full_speed(5):.3f} s in this one "
                  "(the issue's slower machine of the same kind: 0.39 s)")
            return run(args)
    except SlowCpuError as exc:
        parser.error(f"--cpu-share / --slow-machine: {exc}")


if __name__ == "__main__":
    sys.exit(main())
