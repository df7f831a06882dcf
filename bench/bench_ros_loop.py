#!/usr/bin/env python3
"""The plant -> controller -> plant loop under ROS 2: latency and missed periods at 500 Hz.

Starts plant_node and controller_node (this checkout's code, as two processes, with the robot's
ROS parameter file config/<robot>.yaml and ``rate`` overridden), sends the controller an
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
  new command arrived (the plant then holds the previous command).

Usage (from the repository root, in a shell where ROS 2 is sourced):

    python bench/bench_ros_loop.py [--rate 500] [--robot planar_4link] [--duration 10]
                                   [--warmup 2] [--no-task]

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


def _percentiles(values_s):
    import numpy as np

    if len(values_s) == 0:
        return ["-"] * 4
    v = np.asarray(values_s) * 1e3
    return [f"{np.percentile(v, 50):.3f}", f"{np.percentile(v, 99):.3f}", f"{v.max():.3f}", str(len(v))]


def _start_nodes(args, env):
    """plant_node and controller_node of this checkout, as child processes."""
    param_file = REPO / "config" / f"{args.robot}.yaml"
    files = [str(param_file)] if param_file.is_file() else []
    # The overrides go under the node keys of config/<robot>.yaml (`-p rate:=...` would go
    # under /**, which rcl applies before the file's /**/<node> sections: the file would win).
    overrides = {f"/**/{node}": {"ros__parameters": {"robot": args.robot, "rate": float(args.rate)}}
                 for node in ("plant_node", "controller_node")}
    with tempfile.NamedTemporaryFile("w", prefix="bench_ros_loop_", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(overrides, f)
    files.append(f.name)
    ros_args = ["--ros-args"] + [x for path in files for x in ("--params-file", path)]
    procs = []
    for module in ("plant_node", "controller_node"):
        cmd = [sys.executable, "-m", f"freeflyer_control.nodes.{module}"] + ros_args
        procs.append(subprocess.Popen(cmd, env=env, start_new_session=True,
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
    import numpy as np
    import pinocchio as pin
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from freeflyer_control.model import load_robot
    from freeflyer_control.physics.state import make_state

    env = dict(os.environ)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + paths)
    env.setdefault("ROS_DOMAIN_ID", str(101 + os.getpid() % 100))  # keep the run to itself
    os.environ["ROS_DOMAIN_ID"] = env["ROS_DOMAIN_ID"]

    load_before = os.getloadavg()   # the nodes compete with whatever else runs
    ff = load_robot(args.robot)
    period = 1.0 / args.rate
    rclpy.init()
    node = Node("bench_ros_loop_probe")
    js_log, cmd_log = [], []   # (stamp_ns, recv_ns) and recv_ns
    moving = []                # a non-zero command was received
    qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)

    def on_state(m):
        js_log.append((m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec, time.time_ns()))

    def on_command(m, info):   # two parameters: rclpy passes the message info too
        cmd_log.append((time.time_ns(), info["source_timestamp"]))
        if not moving and any(m.data):
            moving.append(True)

    node.create_subscription(JointState, "joint_states", on_state, qos)
    node.create_subscription(Float64MultiArray, "joint_effort_commands", on_command, qos)
    target_pub = node.create_publisher(PoseStamped, f"ee_target/{ff.end_effectors[0]}", 10)
    executor = SingleThreadedExecutor()
    executor.add_node(node)

    procs = _start_nodes(args, env)
    try:
        deadline = time.monotonic() + 60.0
        while (not js_log or not cmd_log) and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
            if any(p.poll() is not None for p in procs):
                print("a node exited early; rerun with --verbose", file=sys.stderr)
                return 1
        if not js_log or not cmd_log:
            print("no /joint_states or /joint_effort_commands within 60 s", file=sys.stderr)
            return 1
        if args.task:
            # A target 5 cm from the ready pose's end-effector: the task-space path every tick.
            state = make_state(ff, joint_positions=dict(ff.ready_pose))
            data = ff.create_data()
            pin.framesForwardKinematics(ff.model, data, state.q)
            ee = data.oMf[ff.frame_id(ff.end_effectors[0])].translation
            msg = PoseStamped()
            msg.header.frame_id = "world"
            msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (
                float(ee[0] + 0.05), float(ee[1] - 0.03), float(ee[2]))
            msg.pose.orientation.w = 0.0   # all-zero quaternion: position only
            # The controller refuses references until it has its first state: publish until
            # the arm moves.
            deadline = time.monotonic() + 30.0
            while not moving and time.monotonic() < deadline:
                if target_pub.get_subscription_count():
                    target_pub.publish(msg)
                t_next = time.monotonic() + 0.5
                while not moving and time.monotonic() < t_next:
                    executor.spin_once(timeout_sec=0.05)
            if not moving:
                print("the controller did not take the end-effector target", file=sys.stderr)
                return 1
        t_end = time.monotonic() + args.warmup + args.duration
        t_measure = time.time_ns() + int(args.warmup * 1e9)
        while time.monotonic() < t_end:
            executor.spin_once(timeout_sec=0.05)
    finally:
        _stop(procs)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()

    js = np.array([(s, r) for s, r in js_log if s >= t_measure], dtype=np.int64)
    cmd_pub = np.array([src for r, src in cmd_log if r >= t_measure], dtype=np.int64)
    cmd = np.array([r for r, _ in cmd_log if r >= t_measure], dtype=np.int64)
    if len(js) < 10 or len(cmd) < 10:
        print("too few messages in the measurement window", file=sys.stderr)
        return 1
    stamps, recv = js[:, 0], js[:, 1]
    delivery = (recv - stamps) * 1e-9
    # The answer to state k: the first command received after the state was received.
    idx = np.searchsorted(cmd, recv, side="right")
    ok = idx < len(cmd)
    loop = (cmd[idx[ok]] - stamps[ok]) * 1e-9
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

    rows = [("state delivery (plant publish -> probe)", *_percentiles(delivery)),
            ("loop latency (state publish -> answer)", *_percentiles(loop)),
            ("  same, on publish times (lower bound)", *_percentiles(loop_pub)),
            ("state interval", *_percentiles(js_dt)),
            ("command interval", *_percentiles(cmd_dt))]
    head = ("metric", "p50 ms", "p99 ms", "max ms", "n")
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
    fmt = "| " + " | ".join(f"{{:{'<' if i == 0 else '>'}{w}}}" for i, w in enumerate(widths)) + " |"
    print(f"ROS loop: {args.robot}, plant and controller at {args.rate:g} Hz (period {period * 1e3:.3f} ms), "
          f"{args.duration:g} s after {args.warmup:g} s warm-up, "
          f"{'end-effector target (task-space control)' if args.task else 'pose hold'}")
    print(f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs "
          f"(load average {load_before[0]:.2f} before the run), RMW "
          f"{os.environ.get('RMW_IMPLEMENTATION', 'default')}, ROS_DOMAIN_ID {os.environ['ROS_DOMAIN_ID']}")
    print(fmt.format(*head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(fmt.format(*r))
    print(f"plant: {len(stamps)} states in {span:.2f} s ({len(stamps) / span:.1f} Hz): missed periods "
          f"{missed_plant} of {expected} ({100 * missed_plant / expected:.2f} %), late (gap > 1.5 periods) "
          f"{late_plant}")
    print(f"controller: {len(cmd)} commands ({len(cmd) / span:.1f} Hz): missed periods {missed_ctrl} of "
          f"{expected} ({100 * missed_ctrl / expected:.2f} %), late (gap > 1.5 periods) {late_ctrl}")
    print(f"plant periods without a new command (previous one held): {no_new} of {len(counts)} "
          f"({100 * no_new / max(len(counts), 1):.2f} %)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=500.0, help="plant and control rate, Hz")
    parser.add_argument("--robot", default="planar_4link", help="bundled robot name")
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds ignored at the start")
    parser.add_argument("--no-task", dest="task", action="store_false",
                        help="no end-effector target: the controller only holds the pose")
    parser.add_argument("--verbose", action="store_true", help="show the nodes' output")
    args = parser.parse_args(argv)
    try:
        import rclpy  # noqa: F401
    except ImportError as exc:
        print(f"skipped: rclpy not available ({exc}); source a ROS 2 install to run this benchmark")
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
