#!/usr/bin/env python3
"""What one wake-up of a node costs: rclpy's executor against the period loop (nodes/loop.py).

A controller_node (planar_4link, distributed: its real subscriptions, services, timers and QoS
event handlers; rate 1 Hz so that its own timers hardly wake it) gets one more subscription with
a no-op callback. A publisher in the same process sends it ``--messages`` messages ``--gap`` s
apart, and the thread that serves that subscription is charged its CPU time (its own CPU clock)
per message received: once with the subscription in the node's default group, served by rclpy's
``SingleThreadedExecutor.spin()``; once with it among the node's period-loop inputs
(``PeriodLoop``: its own small wait set, the executor serving the rest from another thread).
Each way runs in a process of its own, the two alternating ``--rounds`` times; the table gives
the median and the range per way.

    python bench/bench_ros_wakeup.py [--messages 2000] [--gap 0.002] [--rounds 3]

Without rclpy it prints "skipped: rclpy not available" and exits 0.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WAYS = ("executor", "period loop")


def one_round(way: str, messages: int, gap: float) -> None:
    """In this process: print the serving thread's CPU time per message received, us."""
    sys.path.insert(0, str(REPO))
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import Float64MultiArray

    from freeflyer_control.nodes.common import COMMAND_QOS
    from freeflyer_control.nodes.controller_node import ControllerNode
    from freeflyer_control.nodes.loop import LoopGroup, PeriodLoop, spin_with_loop
    from freeflyer_control.runtime.period_costs import thread_clock

    rclpy.init(args=["bench", "--ros-args", "-p", "robot:=planar_4link", "-p", "rate:=1.0"])
    node = ControllerNode()
    received = [0]
    serving = {}

    def no_op(_msg) -> None:
        received[0] += 1
        serving.setdefault("clock", thread_clock())

    if way == "period loop":
        # The node's own loop, with the probe subscription as one more input.
        loop = node.period_loop
        sub = node.create_subscription(Float64MultiArray, "wake_probe", no_op, COMMAND_QOS, callback_group=loop.group)
        loop.inputs = loop.inputs + ((sub, no_op),)
    else:
        loop = None
        node.create_subscription(Float64MultiArray, "wake_probe", no_op, COMMAND_QOS)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinner = threading.Thread(target=spin_with_loop, args=(executor, loop), daemon=True)
    spinner.start()
    pub = node.create_publisher(Float64MultiArray, "wake_probe", COMMAND_QOS)
    msg = Float64MultiArray(data=[1.0])
    deadline = time.monotonic() + 10.0
    while not serving and time.monotonic() < deadline:   # the first message: discovery and the clock
        pub.publish(msg)
        time.sleep(0.05)
    time.sleep(0.2)
    start_count, start_cpu = received[0], time.clock_gettime_ns(serving["clock"])
    for _ in range(messages):
        pub.publish(msg)
        time.sleep(gap)
    time.sleep(0.2)
    cpu = time.clock_gettime_ns(serving["clock"]) - start_cpu
    count = received[0] - start_count
    print(f"{cpu * 1e-3 / max(count, 1):.2f} {count}")
    sys.stdout.flush()
    os._exit(0)   # the spinning threads end with the process


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--gap", type=float, default=0.002, help="s between two messages")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one", choices=WAYS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        import rclpy  # noqa: F401
    except ImportError as exc:
        print(f"skipped: rclpy not available ({exc}); source a ROS 2 install to run this benchmark")
        return 0
    if args.one:
        one_round(args.one, args.messages, args.gap)
        return 0
    env = dict(os.environ)
    env.setdefault("ROS_DOMAIN_ID", str(101 + os.getpid() % 100))   # keep the runs to themselves
    results = {way: [] for way in WAYS}
    for _ in range(args.rounds):
        for way in WAYS:
            out = subprocess.run([sys.executable, __file__, "--one", way, "--messages", str(args.messages),
                                  "--gap", str(args.gap)], env=env, capture_output=True, text=True, timeout=600)
            line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
            try:
                us, count = line.split()
            except ValueError:
                print(f"{way}: no result ({out.stderr.strip().splitlines()[-1:]})", file=sys.stderr)
                return 1
            results[way].append((float(us), int(count)))
    load = os.getloadavg()[0]
    print(f"One wake-up of controller_node (planar_4link), CPU of the serving thread per message, "
          f"{args.messages} messages {args.gap * 1e3:g} ms apart, {args.rounds} rounds alternating "
          f"(load average {load:.2f} at the end)")
    print("| way | median us / message | range | messages received |")
    print("|---|---:|---:|---:|")
    for way, runs in results.items():
        values = [us for us, _ in runs]
        print(f"| {way} | {statistics.median(values):.1f} | {min(values):.1f}-{max(values):.1f} | "
              f"{', '.join(str(c) for _, c in runs)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
