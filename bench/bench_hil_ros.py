#!/usr/bin/env python3
"""hil_sim.launch.py under ROS 2: CPU per process, watchdog trips and tick periods over a run.

Starts ``ros2 launch freeflyer_control hil_sim.launch.py`` (the README's command, the example
testbed planar_4link at its 250 Hz; extra launch arguments after ``--``), lets it settle for
``--warmup`` s, then measures for ``--duration`` s:

* CPU per process of the launch (the launch process itself, the emulator, the bridge, the
  controller, gjm_node, robot_state_publisher, or the one composed process): utime + stime from
  /proc/<pid>/stat over the window, in cores (CPU seconds per wall second), and the total;
* watchdog trips and stale inputs, from the nodes' output: the bridge's ``TRIP`` lines, the
  controller's ``commands zeroed`` lines, the emulator's refused commands;
* the bridge's and the controller's diagnostics at the end (ticks, tick overruns, zeroed ticks);
* trips in the warm-up: a bridge tripped then (the known start-up trip on a busy machine,
  docs/hil.md) is reset once through ``/testbed_bridge/reset`` before the window, as an operator
  would, so that the window measures a running graph; the row and the reset's answer say so;
* period statistics from a probe node in this process (its CPU is not counted in the total):
  intervals between the bridge's /joint_states and between the controller's
  /joint_effort_commands on their DDS publish times (p50, p99, max), and the missed periods
  (periods of the window in which nothing was published).

Usage, in a shell where ROS 2 and a workspace with this package are sourced:

    python bench/bench_hil_ros.py [--duration 120] [--warmup 10] [--repeat 1] [-- composed:=false]
    python bench/bench_hil_ros.py --compare "composed:=false" --duration 60   # both, interleaved

Without rclpy it prints "skipped: rclpy not available" and exits 0. This is a benchmark, not a
test: nothing in test/ depends on timings.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from bench_core import process_cpu_seconds  # noqa: E402  (this folder; also puts the working tree first on sys.path)

RATE = 250.0  # Hz, the example testbed's (config/testbeds/planar_4link.yaml)
NODE_NAMES = ("testbed_emulator", "testbed_bridge", "controller_node", "gjm_node", "robot_state_publisher",
              "testbed_graph")
# Lines of the nodes' output that mean a watchdog acted (bridge trips, zeroed controller commands).
EVENTS = {"bridge trips": re.compile(r"TRIP \w+"),
          "controller zeroed": re.compile(r"commands zeroed \("),
          "stale": re.compile(r"stale"),
          "refused": re.compile(r"refused")}


def _children(root: int) -> list[int]:
    """Every descendant of ``root`` (from /proc/*/stat parent ids)."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            parent[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        kids = [p for p, pp in parent.items() if pp == pid]
        out += kids
        todo += kids
    return out


def _label(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return f"pid {pid}"
    text = " ".join(argv)
    for name in NODE_NAMES:
        if f"__node:={name}" in text or any(a.endswith("/" + name) for a in argv):
            return name
    if "launch" in argv[1:3] or any(a.endswith("ros2") for a in argv[:2]):
        return "ros2 launch"
    return os.path.basename(argv[0]) if argv else f"pid {pid}"


WARM_UP = ("from freeflyer_control.physics.kernels.plant import make_plant; "
           "from freeflyer_control.model import load_robot; from freeflyer_control.physics.state import make_state; "
           "ff = load_robot('planar_4link'); print(make_plant(ff, make_state(ff), 1e-3)[1])")


@dataclass
class Run:
    label: str
    cpu: dict = field(default_factory=dict)       # process -> cores
    events: dict = field(default_factory=dict)    # event -> count in the window
    probe: dict = field(default_factory=dict)
    diagnostics: dict = field(default_factory=dict)
    wall: float = 0.0
    ticks: tuple = (None, None)                   # the bridge's tick count at the window's ends
    load: tuple = ()
    lines: list = field(default_factory=list)
    warmup_trips: list = field(default_factory=list)  # TRIP lines before the window
    reset: str = ""                                    # the bridge's answer to the reset before the window


class Probe:
    """Publish times of the bridge's states and the controller's commands, and the last
    diagnostics of each node (rclpy, in a thread)."""

    def __init__(self):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        rclpy.init(args=[])  # not sys.argv: its launch arguments would read as remap rules
        self.node = Node("bench_hil_ros_probe")
        qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
        self.times = {"joint_states": [], "joint_effort_commands": []}
        self.diag = {}
        self.node.create_subscription(JointState, "joint_states",
                                      lambda m, i: self.times["joint_states"].append(i["source_timestamp"]), qos)
        self.node.create_subscription(Float64MultiArray, "joint_effort_commands",
                                      lambda m, i: self.times["joint_effort_commands"].append(i["source_timestamp"]),
                                      qos)
        self.node.create_subscription(DiagnosticArray, "diagnostics", self._on_diag, 10)
        from std_srvs.srv import Trigger
        self._trigger = Trigger
        self.reset_client = self.node.create_client(Trigger, "/testbed_bridge/reset")
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def _on_diag(self, msg) -> None:
        for status in msg.status:
            self.diag[status.name] = (status.level, status.message, {kv.key: kv.value for kv in status.values})

    def ticks(self) -> int | None:
        """The bridge's tick count in its newest diagnostics (2 Hz)."""
        diag = self.diag.get("freeflyer: testbed bridge")
        return int(diag[2]["ticks"]) if diag and "ticks" in diag[2] else None

    def reset(self) -> None:
        for v in self.times.values():
            v.clear()

    def reset_bridge(self, timeout: float = 5.0) -> str:
        """Call /testbed_bridge/reset; its answer (it refuses, saying why, while a cause remains)."""
        if not self.reset_client.wait_for_service(timeout_sec=timeout):
            return "service /testbed_bridge/reset not available"
        future = self.reset_client.call_async(self._trigger.Request())
        deadline = time.monotonic() + timeout
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.05)
        answer = future.result() if future.done() else None
        return "no answer" if answer is None else f"{'ok' if answer.success else 'refused'}: {answer.message}"

    def close(self) -> None:
        import rclpy
        self.executor.shutdown()
        self.thread.join(timeout=5.0)
        self.node.destroy_node()
        rclpy.try_shutdown()


def _period_stats(stamps_ns: list[int], period: float) -> dict:
    import numpy as np
    t = np.sort(np.asarray(stamps_ns, dtype=np.int64)) * 1e-9
    if t.size < 3:
        return {"n": int(t.size)}
    dt = np.diff(t)
    span = t[-1] - t[0]
    expected = round(span / period) + 1
    return {"n": int(t.size), "hz": (t.size - 1) / span, "p50": np.percentile(dt, 50) * 1e3,
            "p99": np.percentile(dt, 99) * 1e3, "max": dt.max() * 1e3,
            "missed": max(0, expected - t.size), "expected": expected,
            "late": int(np.sum(dt > 1.5 * period))}


def run_once(label: str, launch_args: list[str], args, probe) -> Run:
    cmd = ["ros2", "launch", "freeflyer_control", "hil_sim.launch.py"] + launch_args
    run = Run(label)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, bufsize=1)
    measuring = threading.Event()
    counts = {k: 0 for k in EVENTS}

    def reader():
        for line in proc.stdout:
            if not measuring.is_set() and EVENTS["bridge trips"].search(line):
                run.warmup_trips.append(line.rstrip())
            if measuring.is_set():
                hits = [k for k, rx in EVENTS.items() if rx.search(line)]
                for k in hits:
                    counts[k] += 1
                if hits and (len(run.lines) < 12 or "bridge trips" in hits):   # every trip, and a sample of the rest
                    run.lines.append(line.rstrip())
            if args.verbose:
                sys.stdout.write(line)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    try:
        time.sleep(args.warmup)
        if run.warmup_trips and probe is not None:
            run.reset = probe.reset_bridge()
            time.sleep(1.0)   # the controller's e-stop is reset by the bridge; both tick again
        pids = [p for p in _children(proc.pid)] + [proc.pid]
        start = {p: process_cpu_seconds(p) for p in pids}
        ticks0 = probe.ticks() if probe else None
        probe and probe.reset()
        measuring.set()
        t0 = time.monotonic()
        load0 = os.getloadavg()
        time.sleep(args.duration)
        end = {p: process_cpu_seconds(p) for p in pids}
        run.wall = time.monotonic() - t0
        run.load = (load0, os.getloadavg())
        measuring.clear()
        for p in pids:
            if start[p] is None or end[p] is None:
                continue
            name = _label(p)
            run.cpu[name] = run.cpu.get(name, 0.0) + (end[p] - start[p]) / run.wall
        if probe is not None:
            run.ticks = (ticks0, probe.ticks())
            run.probe = {k: _period_stats(list(v), 1.0 / RATE) for k, v in probe.times.items()}
            run.diagnostics = dict(probe.diag)
        run.events = dict(counts)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        thread.join(timeout=2)
    return run


def report(runs: list[Run], args) -> None:
    names = [n for n in ("ros2 launch",) + NODE_NAMES if any(n in r.cpu for r in runs)]
    names += sorted({n for r in runs for n in r.cpu} - set(names))
    print(f"hil_sim.launch.py (testbed planar_4link, {RATE:g} Hz), {args.duration:g} s after {args.warmup:g} s; "
          f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, RMW "
          f"{os.environ.get('RMW_IMPLEMENTATION', 'default')}, ROS_DOMAIN_ID {os.environ.get('ROS_DOMAIN_ID', '0')}")
    head = ["cores"] + [r.label for r in runs]
    rows = [[n] + [f"{r.cpu[n]:.3f}" if n in r.cpu else "-" for r in runs] for n in names]
    rows.append(["**total**"] + [f"**{sum(r.cpu.values()):.3f}**" for r in runs])
    # A starved graph does less work (its timers skip periods): CPU per bridge tick, scaled to
    # the full rate, is the cost of the work itself.
    per_tick = []
    for r in runs:
        a, b = r.ticks
        per_tick.append((sum(r.cpu.values()) * r.wall / (b - a)) if a is not None and b and b > a else None)
    rows.append(["bridge ticks in the window"] + [str(r.ticks[1] - r.ticks[0]) if None not in r.ticks else "-"
                                                  for r in runs])
    rows.append(["CPU ms per bridge tick (all processes)"] + [f"{x * 1e3:.2f}" if x else "-" for x in per_tick])
    rows.append([f"cores at the full {RATE:g} Hz"] + [f"{x * RATE:.3f}" if x else "-" for x in per_tick])
    rows.append(["bridge trips in the warm-up (reset before the window)"] + [str(len(r.warmup_trips)) for r in runs])
    for key in EVENTS:
        rows.append([f"{key} (lines)"] + [str(r.events.get(key, "-")) for r in runs])
    for topic in ("joint_states", "joint_effort_commands"):
        for stat in ("hz", "p50", "p99", "max", "missed", "late"):
            vals = []
            for r in runs:
                s = r.probe.get(topic, {})
                v = s.get(stat)
                vals.append("-" if v is None else (f"{v:.2f}" if isinstance(v, float) else
                                                   f"{v} of {s['expected']}" if stat == "missed" else str(v)))
            unit = {"hz": " Hz", "p50": " ms", "p99": " ms", "max": " ms"}.get(stat, "")
            rows.append([f"{topic} interval {stat}{unit}" if stat in ("p50", "p99", "max") else
                         f"{topic} {stat}{unit}"] + vals)
    for name, keys in (("freeflyer: testbed bridge", ("status", "trips", "ticks", "safe_ticks", "tick_overruns")),
                       ("freeflyer: controller", ("status", "ticks", "zero_command_ticks")),
                       ("freeflyer: testbed emulator", ("lag", "step_overruns", "refused_commands"))):
        for key in keys:
            rows.append([f"{name.split(': ')[1]} {key}"] +
                        [r.diagnostics.get(name, (0, "", {}))[2].get(key, "-") for r in runs])
    rows.append(["load average (start -> end, 1 min)"] +
                [f"{r.load[0][0]:.2f} -> {r.load[1][0]:.2f}" if r.load else "-" for r in runs])
    widths = [max(len(str(row[i])) for row in rows + [head]) for i in range(len(head))]
    print("| " + " | ".join(str(h).ljust(w) for h, w in zip(head, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                                for i, (c, w) in enumerate(zip(row, widths))) + " |")
    for r in runs:
        for line in r.warmup_trips[:3]:
            print(f"[{r.label}] in the warm-up: {line}")
        if r.reset:
            print(f"[{r.label}] reset before the window: {r.reset}")
        for line in r.lines:
            print(f"[{r.label}] {line}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=120.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds after the launch before measuring")
    parser.add_argument("--compare", default=None,
                        help="launch arguments of a second configuration, run alternately with the first "
                             "(e.g. 'composed:=false')")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each configuration")
    parser.add_argument("--no-probe", dest="probe", action="store_false",
                        help="no probe node (no period statistics, no diagnostics)")
    parser.add_argument("--verbose", action="store_true", help="show the launch's output")
    parser.add_argument("launch_args", nargs="*", help="launch arguments (after --)")
    args = parser.parse_args(argv)
    try:
        import rclpy  # noqa: F401
    except ImportError as exc:
        print(f"skipped: rclpy not available ({exc}); source a ROS 2 install to run this benchmark")
        return 0
    try:
        from ament_index_python.packages import get_package_share_directory
        get_package_share_directory("freeflyer_control")
    except Exception as exc:  # noqa: BLE001  PackageNotFoundError, or no ament index at all
        print(f"skipped: freeflyer_control is not in a sourced ament workspace ({exc}); colcon build it and "
              "source install/setup.bash")
        return 0
    # The emulator's compiled plant step, compiled (first use after a build) or loaded from numba's
    # cache before any timed run, by the installed package as the emulator will.
    warm = subprocess.run([sys.executable, "-c", WARM_UP], capture_output=True, text=True, cwd="/")
    print((warm.stdout.strip() or warm.stderr.strip().splitlines()[-1]) if warm.returncode == 0 else
          f"warm-up of the plant step failed: {warm.stderr.strip().splitlines()[-1:]}")
    configs = [(" ".join(args.launch_args) or "default", args.launch_args)]
    if args.compare is not None:
        configs.append((args.compare or "default", args.compare.split()))
    probe = Probe() if args.probe else None
    runs = []
    try:
        for _ in range(args.repeat):
            for label, launch_args in configs:
                runs.append(run_once(label, launch_args, args, probe))
                time.sleep(2.0)  # the previous graph's processes and DDS participants go away
    finally:
        if probe is not None:
            probe.close()
    report(runs, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
