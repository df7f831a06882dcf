#!/usr/bin/env python3
"""Pauses of the whole machine: a process that only sleeps 1 ms at a time, and the times it woke late.

Run it beside ``bench/bench_hil_ros.py`` (another shell, same duration) to tell a stall of the HIL
graph from a pause of the machine under it. A sleeper needs almost no CPU, so on an idle machine it
wakes within a fraction of a millisecond; when it and testbed_graph both lose the same 15-60 ms at
the same instant, no code of the graph caused it. Each late wake-up is printed with its wall time
(to match the nodes' log stamps, which are wall-clock seconds) and the steal time the kernel
counted meanwhile (/proc/stat: time the hypervisor ran something else while a vCPU was runnable):

    python bench/bench_vm_pauses.py --duration 130 --late 8

``--watch NAME`` also follows the busiest process whose command line contains NAME (e.g.
``testbed_graph``): a CPU-bound process is the one the scheduler makes wait when other jobs want
both CPUs, while a sleeper that needs microseconds is served at once. From the run-queue wait
the kernel counts for the process's main thread (/proc/<pid>/schedstat: ready to run, no CPU
given), every episode in which it waited more than ``--late`` ms in every 20 ms is printed with
its wall time, length and total wait. A stall of the graph that the sleeper did not see, while
the graph waited for a CPU, is contention for the CPUs: neither the graph's code nor the VM.

    python bench/bench_vm_pauses.py --duration 130 --late 8 --watch testbed_graph

No ROS needed. This is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def steal_seconds() -> float:
    """Steal time of all CPUs since boot (s), from the first line of /proc/stat (0 where absent)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return 0.0
    return int(fields[8]) / CLK_TCK if len(fields) > 8 else 0.0


def find_process(name: str) -> int | None:
    """Of the processes whose command line contains ``name`` (not this one), the one that has used
    the most CPU (a wrapper such as ``timeout`` or a shell matches too), or None."""
    best, best_cpu = None, -1
    for entry in (e for e in os.listdir("/proc") if e.isdigit()):
        if int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if name.encode() not in f.read():
                    continue
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        cpu = int(fields[11]) + int(fields[12])   # utime + stime, clock ticks
        if cpu > best_cpu:
            best, best_cpu = int(entry), cpu
    return best


def run_queue_wait(pid: int) -> float | None:
    """Seconds the main thread of ``pid`` has waited on a run queue (ready, no CPU), or None."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[1]) * 1e-9
    except (OSError, IndexError, ValueError):
        return None


WAIT_WINDOW = 0.020  # s: about the bridge's command timeout, the shortest watchdog of the example


def tell_episode(args, pid: int, episode: tuple, end: tuple) -> int:
    """Print one episode of waiting for a CPU: (wall time, perf time, wait) at its start and
    (perf time, wait) at its end."""
    print(f"{episode[0]:.3f} {args.watch} (pid {pid}) waited {(end[1] - episode[2]) * 1e3:.1f} ms for a CPU over "
          f"{(end[0] - episode[1] + WAIT_WINDOW) * 1e3:.0f} ms (more than {args.late:g} ms in every "
          f"{WAIT_WINDOW * 1e3:.0f} ms)", flush=True)
    return 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=130.0, help="seconds to watch")
    parser.add_argument("--late", type=float, default=8.0, help="report wake-ups this many ms after the last")
    parser.add_argument("--watch", default=None, help="also report when the process whose command line contains "
                        "this (e.g. testbed_graph) waited for a CPU more than --late ms in a 20 ms window")
    args = parser.parse_args(argv)
    late = args.late / 1e3
    gaps = []
    worst = 0.0
    steal0 = steal_prev = steal_seconds()
    start = last = time.perf_counter()
    pid, waits, contended, episode, episode_end = None, [], 0, None, None
    while last - start < args.duration:
        time.sleep(0.001)
        now = time.perf_counter()
        worst = max(worst, now - last)
        if args.watch:
            if pid is None and int((now - start) * 10) != int((last - start) * 10):
                pid = find_process(args.watch)   # looked for every 0.1 s until it is there
            wait = run_queue_wait(pid) if pid is not None else None
            if wait is not None:
                waits.append((now, wait))
                while waits[0][0] < now - WAIT_WINDOW:
                    waits.pop(0)
                if wait - waits[0][1] > late:     # a contended window: the episode goes on
                    if episode is None:
                        episode = (time.time(), now, waits[0][1])
                    episode_end = (now, wait)
                elif episode is not None and now - episode_end[0] > WAIT_WINDOW:
                    contended += tell_episode(args, pid, episode, episode_end)
                    episode = None
        if now - last > late:
            steal = steal_seconds()
            gaps.append(now - last)
            print(f"{time.time():.3f} woke {(now - last) * 1e3:.1f} ms after the last wake-up; "
                  f"steal +{(steal - steal_prev) * 1e3:.0f} ms (all CPUs)", flush=True)
            steal_prev = steal
        last = now
    if episode is not None:
        contended += tell_episode(args, pid, episode, episode_end)
    print(f"{len(gaps)} wake-ups later than {args.late:g} ms in {args.duration:g} s, "
          f"longest sleep {worst * 1e3:.1f} ms; "
          f"steal {(steal_seconds() - steal0) * 1e3:.0f} ms (all CPUs); load average {os.getloadavg()[0]:.2f}")
    if args.watch:
        print(f"{args.watch}: " + (f"pid {pid}, {contended} episodes of more than {args.late:g} ms waiting for a CPU "
                                   f"in {WAIT_WINDOW * 1e3:.0f} ms" if pid is not None else "never found"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
