"""Where a node's control period goes: the time of each stage, and the CPU of each thread.

A node marks the stages of its period (plant step, controller tick, message conversion in and
out, publication) and :meth:`PeriodCosts.window` gives, per period of the window since the last
call, the mean time of each stage and the CPU time of the node's threads: the loop thread (the
stages plus what is not a stage: waits, wake-ups, timers), the thread that serves the other
callbacks (parameters, services, references, diagnostics) and the rest of the process (the
middleware's own threads). Everything is CPU time, which the load of other processes distorts
far less than wall time (a stage preempted after a publish wakes its subscriber would otherwise
count the time it waited for a core): stages on the calling thread's CPU clock
(``time.thread_time_ns``, ~0.6 us a reading on a 2-core VM, ~8 readings a period: ~1 % of a
period's cost, cheap enough to stay on), threads on the kernel's per-thread clocks (Linux;
elsewhere the thread figures are left out).

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
    """

    def __init__(self, stages: Iterable[str]):
        self.stages = tuple(stages)
        self._ns = dict.fromkeys(self.stages, 0)
        self._periods = 0
        self._t = 0
        self._clocks: dict[str, int] = {}
        self._cpu0: dict[str, int] = {}
        self._process0 = time.process_time_ns()

    # --- marks, in the loop thread --------------------------------------------------------
    def begin(self) -> None:
        """Start timing: the next :meth:`mark` measures from here."""
        self._t = time.thread_time_ns()

    def mark(self, stage: str) -> None:
        """The thread's CPU time since the last mark (or :meth:`begin`) was spent in ``stage``."""
        t = time.thread_time_ns()
        self._ns[stage] += t - self._t
        self._t = t

    def end_period(self) -> None:
        self._periods += 1

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
        CPU time, us; the CPU time of each watched thread and of the process's other threads, us;
        :data:`UNSTAGED`, the loop thread's CPU outside the stages; ``periods``, how many. Empty
        when no period ran. Starts the next window."""
        periods = self._periods
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
        self._periods = 0
        if periods == 0:
            return {}
        out = {stage: ns * 1e-3 / periods for stage, ns in stage_ns.items()}
        out.update({name: ns * 1e-3 / periods for name, ns in cpu.items()})
        if cpu:
            out[OTHER_THREADS] = max(0, process_ns - sum(cpu.values())) * 1e-3 / periods
        if LOOP_THREAD in cpu:
            out[UNSTAGED] = max(0.0, out[LOOP_THREAD] - sum(out[s] for s in self.stages))
        out["periods"] = periods
        return out


def diagnostic_values(window: dict[str, float]) -> dict[str, str]:
    """A :meth:`PeriodCosts.window` as /diagnostics key-values: ``period_us.<name>`` (us per
    period, 1 decimal) and ``period_us.periods``."""
    return {f"period_us.{name}": (str(int(value)) if name == "periods" else f"{value:.1f}")
            for name, value in window.items()}
