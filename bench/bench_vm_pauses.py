#!/usr/bin/env python3
"""Pauses of the whole machine: a process that only sleeps 1 ms at a time, and the times it woke late.

Run it beside ``bench/bench_hil_ros.py`` (another shell, same duration) to tell a stall of the HIL
graph from a pause of the machine under it. A sleeper needs almost no CPU, so on an idle machine it
wakes within a fraction of a millisecond; when it and testbed_graph both lose the same 15-60 ms at
the same instant, no code of the graph caused it. Each late wake-up is printed with its wall time
(to match the nodes' log stamps, which are wall-clock seconds) and the steal time the kernel
counted meanwhile (/proc/stat: time the hypervisor ran something else while a vCPU was runnable):

    python bench/bench_vm_pauses.py --duration 130 --late 8

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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=130.0, help="seconds to watch")
    parser.add_argument("--late", type=float, default=8.0, help="report wake-ups this many ms after the last")
    args = parser.parse_args(argv)
    late = args.late / 1e3
    gaps = []
    worst = 0.0
    steal0 = steal_prev = steal_seconds()
    start = last = time.perf_counter()
    while last - start < args.duration:
        time.sleep(0.001)
        now = time.perf_counter()
        worst = max(worst, now - last)
        if now - last > late:
            steal = steal_seconds()
            gaps.append(now - last)
            print(f"{time.time():.3f} woke {(now - last) * 1e3:.1f} ms after the last wake-up; "
                  f"steal +{(steal - steal_prev) * 1e3:.0f} ms (all CPUs)", flush=True)
            steal_prev = steal
        last = now
    print(f"{len(gaps)} wake-ups later than {args.late:g} ms in {args.duration:g} s, longest sleep {worst * 1e3:.1f} ms; "
          f"steal {(steal_seconds() - steal0) * 1e3:.0f} ms (all CPUs); load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
