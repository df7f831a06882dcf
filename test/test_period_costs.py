"""Where a node's period goes (runtime.period_costs): the per-period breakdown that plant_node,
controller_node and sim_loop_node publish on /diagnostics and bench/bench_ros_loop.py prints.

The stages are CPU time of the calling thread, so the tests burn CPU (a busy loop) rather than
sleep: a sleeping stage costs no CPU, and must show none.
"""

from __future__ import annotations

import threading
import time

import pytest

from freeflyer_control.runtime.period_costs import (
    CALLBACK_THREAD,
    LOOP_THREAD,
    OTHER_THREADS,
    UNSTAGED,
    PeriodCosts,
    diagnostic_values,
    thread_clock,
)

needs_thread_clocks = pytest.mark.skipif(thread_clock() is None,
                                         reason="no per-thread CPU clock on this platform (Linux has one)")


def _burn(seconds: float) -> None:
    """Busy for ``seconds`` of this thread's CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_each_stage_gets_the_cpu_time_spent_in_it_per_period():
    costs = PeriodCosts(("step", "tick"), sample_every=1)
    for _ in range(4):
        costs.begin()
        _burn(0.002)
        costs.mark("step")
        _burn(0.006)
        costs.mark("tick")
        costs.end_period()
    window = costs.window()
    assert window["periods"] == 4
    # Per period 2 ms and 6 ms of CPU; the tolerance covers the readings themselves and a
    # scheduler tick landing inside a busy loop (a busy loop overshoots by at most one reading).
    assert window["step"] == pytest.approx(2000.0, rel=0.2)
    assert window["tick"] == pytest.approx(6000.0, rel=0.2)


def test_a_sleeping_stage_costs_no_cpu():
    costs = PeriodCosts(("wait",))
    costs.begin()
    time.sleep(0.05)
    costs.mark("wait")
    costs.end_period()
    # 50 ms of wall time; the sleep itself costs microseconds of CPU.
    assert costs.window()["wait"] < 2000.0


def test_a_window_starts_the_next_one_and_is_empty_without_periods():
    costs = PeriodCosts(("step",), sample_every=1)
    costs.begin()
    _burn(0.003)
    costs.mark("step")
    costs.end_period()
    assert costs.window()["periods"] == 1
    assert costs.window() == {}   # nothing since: no period, no figures (not zeros that look measured)
    costs.begin()
    _burn(0.001)
    costs.mark("step")
    costs.end_period()
    assert costs.window()["step"] == pytest.approx(1000.0, rel=0.3)


@needs_thread_clocks
def test_the_loop_thread_outside_its_stages_and_the_other_threads_are_accounted_for():
    """The loop thread's CPU outside the stages (its waits and wake-ups) is what it burns between
    them; a second thread's CPU is its own row, and the rest of the process the middleware's."""
    costs = PeriodCosts(("step",), sample_every=1)
    costs.watch_thread(LOOP_THREAD)
    done, measured = threading.Event(), threading.Event()

    def callbacks():
        costs.watch_thread(CALLBACK_THREAD)
        _burn(0.008)
        done.set()
        measured.wait(10.0)   # alive until the window is read (a thread's clock ends with it)

    worker = threading.Thread(target=callbacks)
    worker.start()
    done.wait(10.0)
    for _ in range(2):
        costs.begin()
        _burn(0.004)
        costs.mark("step")
        _burn(0.002)   # outside the stages: the loop's own overhead
        costs.end_period()
    window = costs.window()
    measured.set()
    worker.join()
    # Per period (2 periods): step 4 ms, outside 2 ms, the callback thread 8 ms / 2.
    assert window["step"] == pytest.approx(4000.0, rel=0.2)
    assert window[UNSTAGED] == pytest.approx(2000.0, rel=0.3)
    assert window[LOOP_THREAD] == pytest.approx(6000.0, rel=0.2)
    assert window[CALLBACK_THREAD] == pytest.approx(4000.0, rel=0.2)
    # Nothing else ran in this process but the interpreter's bookkeeping.
    assert 0.0 <= window[OTHER_THREADS] < 1000.0


def test_stages_are_timed_on_one_period_in_sample_every_and_averaged_over_those():
    costs = PeriodCosts(("step",), sample_every=3)
    for k in range(6):
        costs.begin()
        _burn(0.001 if k % 3 == 0 else 0.005)   # the timed periods (0 and 3) are the cheap ones
        costs.mark("step")
        costs.end_period()
    window = costs.window()
    assert (window["periods"], window["timed_periods"]) == (6, 2)
    # Only the timed periods' 1 ms counts: the 5 ms of the others would pull the mean to 3.7 ms.
    assert window["step"] == pytest.approx(1000.0, rel=0.3)


def test_the_default_sample_visits_every_phase_of_the_nodes_periodic_work():
    """TF every 10 periods and markers every 50 (at 500 Hz) must not be always in, or always out
    of, the timed periods."""
    every = PeriodCosts(("step",)).sample_every
    for cycle in (2, 5, 10, 25, 50):
        assert {k % cycle for k in range(0, every * cycle, every)} == set(range(cycle))


@needs_thread_clocks
def test_a_window_without_a_timed_period_has_thread_figures_but_no_stages():
    costs = PeriodCosts(("step",), sample_every=5)
    costs.watch_thread(LOOP_THREAD)
    costs.begin()
    costs.mark("step")
    costs.end_period()   # period 0: timed
    costs.window()
    for _ in range(2):   # periods 1 and 2: not timed
        costs.begin()
        _burn(0.001)
        costs.mark("step")
        costs.end_period()
    window = costs.window()
    assert (window["periods"], window["timed_periods"]) == (2, 0)
    assert "step" not in window and UNSTAGED not in window   # no figure that looks measured
    assert window[LOOP_THREAD] == pytest.approx(1000.0, rel=0.3)


def test_a_sample_of_less_than_every_period_is_refused():
    with pytest.raises(ValueError, match="sample_every"):
        PeriodCosts(("step",), sample_every=0)


def test_diagnostic_values_name_each_figure_and_keep_the_period_counts_whole():
    values = diagnostic_values({"step": 123.456, "periods": 500, "timed_periods": 72})
    assert values == {"period_us.step": "123.5", "period_us.periods": "500", "period_us.timed_periods": "72"}
