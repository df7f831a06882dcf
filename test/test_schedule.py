"""runtime.schedule.PeriodSchedule, the lockstep loop's schedule: late periods run at once, a lag
past the bound restarts the schedule.

Times are exact binary fractions of a second where a test compares counts, so no count hangs on
round-off.
"""

import pytest

from freeflyer_control.runtime.schedule import PeriodSchedule

PERIOD = 1 / 512   # s (exact in binary)


def test_an_early_loop_sleeps_until_the_period_starts():
    s = PeriodSchedule(PERIOD, t0=10.0)
    assert s.wait(10.0 - 0.25 * PERIOD) == (0.25 * PERIOD, 0)
    s.ran()
    assert s.wait(10.0 + 0.5 * PERIOD) == (0.5 * PERIOD, 0)


def test_late_periods_within_the_bound_all_run_at_once():
    """A 39 ms stall at 512 Hz: the 20 late periods run back to back, none dropped."""
    s = PeriodSchedule(PERIOD, t0=0.0)
    stall = 40 * 2 ** -10   # 39 ms, within MAX_LAG
    for _ in range(21):
        assert s.wait(stall) == (0.0, 0)
        s.ran()
    assert s.dropped == 0 and s.k == 21
    assert s.wait(stall)[0] > 0     # on time again: it sleeps


@pytest.mark.parametrize("lag_periods", [16.5, 17, 40.25, 512])
def test_a_lag_past_the_bound_restarts_the_schedule_dropping_the_lag(lag_periods):
    """Behind by L periods past the bound: the whole periods of the lag are dropped, the next
    period starts now, and the loop has its whole bound of slack again."""
    s = PeriodSchedule(PERIOD, t0=0.0, max_lag=16 * PERIOD)
    now = lag_periods * PERIOD
    assert s.wait(now) == (0.0, int(lag_periods))
    assert s.dropped == int(lag_periods) and s.drops == 1
    s.ran()
    assert s.wait(now) == (PERIOD, 0)   # the next one a period after the restart
    assert s.lag(now + PERIOD) == 0.0


def test_each_restart_adds_to_the_count():
    s = PeriodSchedule(PERIOD, t0=0.0)   # the bound: 50 ms, 25.6 periods
    s.wait(50 * PERIOD)                   # 50 periods late: dropped, restarted there
    s.ran()
    s.wait(81 * PERIOD)                   # the next one was due at 51: 30 periods late
    assert s.drops == 2 and s.dropped == 50 + 30


def test_it_refuses_a_period_or_bound_that_makes_no_schedule():
    with pytest.raises(ValueError, match="period must be > 0"):
        PeriodSchedule(0.0, t0=0.0)
    with pytest.raises(ValueError, match="max_lag must be >= 0"):
        PeriodSchedule(0.002, t0=0.0, max_lag=-1.0)
