"""A slower machine of the same kind, emulated: each process limited to a share of one core.

Linux's CPU bandwidth control (cgroups, the CFS quota) lets a group of processes run for at most
``quota`` microseconds of CPU in every ``period``; a process alone in a group with quota = share x
period gets ``share`` of a core, on average over each period. For a loop whose work per period is
fixed, that is a core ``1 / share`` times slower in throughput (the same instructions, fewer of
them per wall second). It is not the same in latency: the process runs at full speed until its
quota is spent, then waits for the next period, where a slow core would run smoothly; so the
emulation is pessimistic for a loop whose own period is close to the CFS period. This module
calibrates the share on the measure the issue gives for "a slower machine of the same kind", the
wall time of ``sum(range(10**7))`` in plain Python, run inside such a group.

Needs root and the cgroup CPU controller (v1 ``/sys/fs/cgroup/cpu``, or v2 with ``cpu`` in the
root's ``cgroup.subtree_control``). A benchmark helper: nothing in the package uses it.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path

V1_ROOT = Path("/sys/fs/cgroup/cpu")
V2_ROOT = Path("/sys/fs/cgroup")
PREFIX = "ffc_bench_slow_"
# The kernel hands out the quota in slices (sched_cfs_bandwidth_slice_us, 5 ms by default); a
# slice longer than the quota makes the accounting coarse (measured here: a 50 % quota let
# sum(range(10**7)) run at 70 % of full speed). The emulation lowers it while it runs.
SLICE_FILE = Path("/proc/sys/kernel/sched_cfs_bandwidth_slice_us")
CALIBRATION = "sum(range(10**7))"


class SlowCpuError(RuntimeError):
    """The emulation cannot run here; the message says what is missing."""


class SlowCpu:
    """CPU-bandwidth groups, one per process started through :meth:`popen`, each limited to
    ``share`` of one core (0 < share <= 1) over CFS periods of ``period_us`` microseconds; by
    default the shortest period the kernel allows (its quota must be >= 1000 us: 2000 us for half
    a core), the smoothest emulation. Use as a context manager: the groups are removed on exit."""

    def __init__(self, share: float, period_us: int | None = None):
        if not 0.0 < share <= 1.0:
            raise SlowCpuError(f"share must be in (0, 1], got {share}")
        shortest = max(1000, math.ceil(1000 / share))
        period_us = shortest if period_us is None else int(period_us)
        if period_us < shortest:
            raise SlowCpuError(f"share {share} of a {period_us} us period is below the kernel's minimum "
                               f"quota of 1000 us: give period_us >= {shortest}")
        if os.geteuid() != 0:
            raise SlowCpuError("emulating a slower CPU needs root (cgroup CPU bandwidth control)")
        self.share, self.period_us = share, period_us
        self.quota_us = int(round(share * period_us))
        v2_controllers = V2_ROOT / "cgroup.subtree_control"
        if (V1_ROOT / "cpu.cfs_quota_us").exists():
            self.root, self.v2 = V1_ROOT, False
        elif v2_controllers.exists() and "cpu" in v2_controllers.read_text().split():
            self.root, self.v2 = V2_ROOT, True
        else:
            raise SlowCpuError("no cgroup CPU controller: mount cgroup v1's cpu controller or enable "
                               "'cpu' in /sys/fs/cgroup/cgroup.subtree_control (v2)")
        self.groups: list[Path] = []
        self._slice = None

    def __enter__(self) -> "SlowCpu":
        if SLICE_FILE.exists():
            self._slice = SLICE_FILE.read_text().strip()
            SLICE_FILE.write_text(str(min(int(self._slice), max(100, self.quota_us // 4))))
        return self

    def __exit__(self, *exc) -> None:
        for group in self.groups:
            for _ in range(50):   # a group empties once its processes have exited
                try:
                    group.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
        if self._slice is not None:
            SLICE_FILE.write_text(self._slice)

    def group(self) -> Path:
        """A new group with this share; its ``cgroup.procs`` file takes a process."""
        path = self.root / f"{PREFIX}{os.getpid()}_{len(self.groups)}"
        path.mkdir()
        self.groups.append(path)
        if self.v2:
            (path / "cpu.max").write_text(f"{self.quota_us} {self.period_us}")
        else:
            (path / "cpu.cfs_period_us").write_text(str(self.period_us))
            (path / "cpu.cfs_quota_us").write_text(str(self.quota_us))
        return path

    def popen(self, cmd, **kwargs) -> subprocess.Popen:
        """subprocess.Popen of ``cmd`` inside a group of its own, joined before exec, so that the
        process and everything it starts share the group's quota."""
        procs = self.group() / "cgroup.procs"

        def join():
            procs.write_text(str(os.getpid()))

        return subprocess.Popen(cmd, preexec_fn=join, **kwargs)

    def calibrate(self, repeats: int = 3) -> float:
        """Median wall seconds of ``sum(range(10**7))`` in a process of a group of this share."""
        code = (f"import time\nts = []\nfor _ in range({repeats}):\n    t = time.perf_counter(); {CALIBRATION}; "
                "ts.append(time.perf_counter() - t)\nprint(sorted(ts)[len(ts) // 2])")
        out = self.popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True).communicate()[0]
        return float(out)


def share_for(target_s: float, shares=(0.7, 0.6, 0.55, 0.5, 0.45, 0.42, 0.4, 0.37, 0.35, 0.32, 0.3, 0.27, 0.25),
              repeats: int = 9) -> float:
    """The largest of ``shares`` whose ``sum(range(10**7))`` takes at least ``target_s`` seconds of wall time in a process of its group (the emulated machine at
    least as slow as asked: the emulation errs on the pessimistic side). The machine's own speed
    moves (this VM: 0.14-0.21 s at full speed within an hour), so calibrate just before measuring."""
    for share in sorted(shares, reverse=True):
        with SlowCpu(share) as slow:
            took = slow.calibrate(repeats)
        if took >= target_s:
            return share
    raise SlowCpuError(f"even a share of {share} runs {CALIBRATION} in {took:.3f} s, faster than "
                       f"{target_s} s: this machine is too fast to emulate that one with these shares")


def full_speed(repeats: int = 3) -> float:
    """Median wall seconds of ``sum(range(10**7))`` in this process, unlimited."""
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        sum(range(10**7))
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]


if __name__ == "__main__":   # python bench/slow_cpu.py [share ...]: the calibration table
    shares = [float(x) for x in sys.argv[1:]] or [1.0, 0.6, 0.5, 0.4]
    print(f"{CALIBRATION} at full speed: {full_speed():.3f} s wall")
    for share in shares:
        with SlowCpu(share) as slow:
            print(f"share {share:.2f} of a core (quota {slow.quota_us} us / {slow.period_us} us): "
                  f"{slow.calibrate(5):.3f} s wall")
