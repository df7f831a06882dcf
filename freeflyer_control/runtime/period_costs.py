"""Where a node's control period goes: the time of each stage, and the CPU of each thread.

A node marks the stages of its period (plant step, controller tick, message conversion in and
out, publication) and :meth:`PeriodCosts.window` gives, per period of the window since the last
call, the mean time of each stage and the CPU time of the node's threads: the loop thread (the
stages plus what is not a stage: waits, wake-ups, timers), the thread that serves the other
callbacks (parameters, services, references, diagnostics) and the rest of the process (the
middleware's own threads). Everything is CPU time, which the load of other processes distorts
far less than wall time (a stage preempted after a publish wakes its subscriber would otherwise
count the time it waited for a core): stages on the calling thread's CPU clock
(``time.thread_time_ns``), threads on the kernel's per-thread clocks (Linux; elsewhere the
thread figures are left out).

The stages are timed on one period in :data:`SAMPLE_EVERY`, and their figures are means over
those periods. Reading a thread's CPU clock is a system call. On this project's 2-core VM it
costs 0.6 us in a tight loop, and a py-spy profile of sim_loop_node put 9 % of the loop
thread's busy samples in the ~9 readings of every period. The thread figures are read once per
window, so they stay exact.

The node publishes the window on /diagnostics (``period_us.<stage>``); bench/bench_ros_loop.py
prints it beside the loop's rates.
"""

from __future__ import annotations

import threading
import time
from typing import Iterable

# The threads a node runs, as named in the window (see the module docstring).
LOOP_THREAD = "loop_thread_cpu"
CALLBACK_THREAD = "callback_thread_cpu"
OTHER_THREADS = "middleware_threads_cpu"
UNSTAGED = "loop_overhead"   # loop thread CPU not in any stage: waits, wake-ups, timers
# Periods per timed period. Prime, so that the sample never locks onto work the nodes do every
# k-th period (TF every 10 at 500 Hz, markers every 50): it visits every phase of those cycles.
# At 500 Hz and 2 Hz diagnostics, a window holds 250 periods and 35 timed ones.
SAMPLE_EVERY = 7


def thread_clock(thread_id: int | None = None) -> int | None:
    """The CPU-time clock of a thread (``threading.get_ident()``; default: the calling thread),
    for :func:`time.clock_gettime_ns`; None where the platform has none."""
    try:
        return time.pthread_getcpuclockid(threading.get_ident() if thread_id is None else thread_id)
    except (AttributeError, OSError):
        return None


class PeriodCosts:
    """Stage times and thread CPU of a node's periods, summed over a window.

    Args:
        stages: the stage names, in the order the node runs them.
        sample_every: time the stages on one period in this many (1: every period). The first
            period is timed; :meth:`begin` and :meth:`mark` do nothing in the others.
    """

    def __init__(self, stages: Iterable[str], sample_every: int = SAMPLE_EVERY):
        if sample_every < 1:
            raise ValueError(f"sample_every must be >= 1 period, got {sample_every}")
        self.stages = tuple(stages)
        self.sample_every = int(sample_every)
        self._ns = dict.fromkeys(self.stages, 0)
        self._periods = 0
        self._timed = 0          # timed periods in the window
        self._count = 0          # periods since the start, over all windows
        self._on = True          # this period is timed
        self._t = 0
        self._clocks: dict[str, int] = {}
        self._cpu0: dict[str, int] = {}
        self._process0 = time.process_time_ns()

    # --- marks, in the loop thread --------------------------------------------------------
    def begin(self) -> None:
        """Start timing: the next :meth:`mark` measures from here (in a timed period)."""
        if self._on:
            self._t = time.thread_time_ns()

    def mark(self, stage: str) -> None:
        """The thread's CPU time since the last mark (or :meth:`begin`) was spent in ``stage``
        (in a timed period)."""
        if self._on:
            t = time.thread_time_ns()
            self._ns[stage] += t - self._t
            self._t = t

    def end_period(self) -> None:
        """A period ended: count it, and choose whether the next one is timed."""
        self._periods += 1
        self._timed += self._on
        self._count += 1
        self._on = self._count % self.sample_every == 0

    # --- threads ---------------------------------------------------------------------------
    def watch_thread(self, name: str, thread_id: int | None = None) -> None:
        """Count the CPU time of a thread (``threading.get_ident()``; default: the calling one)
        as ``name`` (:data:`LOOP_THREAD` or :data:`CALLBACK_THREAD`) from now on."""
        clock = thread_clock(thread_id)
        if clock is not None:
            self._clocks[name] = clock
            self._cpu0[name] = time.clock_gettime_ns(clock)

    # --- the window --------------------------------------------------------------------------
    def window(self) -> dict[str, float]:
        """Per period of the window since the last call (or since the start): each stage's mean
        CPU time, us, over the window's timed periods (none when it had none: a window shorter
        than ``sample_every`` periods); the CPU time of each watched thread and of the process's
        other threads, us, over all its periods; :data:`UNSTAGED`, the loop thread's CPU outside
        the stages; ``periods``, how many; ``timed_periods``, how many were timed. Empty when no
        period ran. Starts the next window."""
        periods, timed = self._periods, self._timed
        process = time.process_time_ns()
        cpu = {}
        for name, clock in list(self._clocks.items()):
            try:
                now = time.clock_gettime_ns(clock)
            except OSError:   # the thread has ended (shutting down): no more figures from it
                del self._clocks[name]
                continue
            cpu[name], self._cpu0[name] = now - self._cpu0[name], now
        process_ns, self._process0 = process - self._process0, process
        stage_ns = self._ns
        self._ns = dict.fromkeys(self.stages, 0)
        self._periods = self._timed = 0
        if periods == 0:
            return {}
        out = {stage: ns * 1e-3 / timed for stage, ns in stage_ns.items()} if timed else {}
        out.update({name: ns * 1e-3 / periods for name, ns in cpu.items()})
        if cpu:
            out[OTHER_THREADS] = max(0, process_ns - sum(cpu.values())) * 1e-3 / periods
        if LOOP_THREAD in cpu and timed:
            out[UNSTAGED] = max(0.0, out[LOOP_THREAD] - sum(out[s] for s in self.stages))
        out["periods"] = periods
        out["timed_periods"] = timed
        return out


COUNTS = ("periods", "timed_periods")   # window entries that count periods (not us)


def diagnostic_values(window: dict[str, float]) -> dict[str, str]:
    """A :meth:`PeriodCosts.window` as /diagnostics key-values: ``period_us.<name>`` (us per
    period, 1 decimal), ``period_us.periods`` and ``period_us.timed_periods``."""
    return {f"period_us.{name}": (str(int(value)) if name in COUNTS else f"{value:.1f}")
            for name, value in window.items()}
