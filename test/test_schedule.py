"""runtime.schedule.PeriodSchedule, the lockstep loop's schedule: late periods run at once, the
lag bounded by dropping the fewest periods.

Times are exact binary fractions of a second where a test compares counts, so no count hangs on
round-off; the schedule's own 1e-9 guard is tested where it matters.
"""

import pytest

from freeflyer_control.runtime.schedule import MAX_LAG, PeriodSchedule

PERIOD = 1 / 512   # s (exact in binary)


def run(schedule: PeriodSchedule, wakeups) -> list[tuple[float, int]]:
    """Each wake-up time in turn: what the schedule says, then the period runs."""
    out = []
    for now in wakeups:
        out.append(schedule.wait(now))
        schedule.ran()
    return out


def test_an_early_loop_sleeps_until_the_period_starts():
    s = PeriodSchedule(PERIOD, t0=10.0)
    assert s.wait(10.0 - 0.25 * PERIOD) == (0.25 * PERIOD, 0)
    s.ran()
    assert s.wait(10.0 + 0.5 * PERIOD) == (0.5 * PERIOD, 0)


def test_late_periods_within_the_bound_all_run_at_once():
    """A 40 ms stall at 512 Hz: the 20 late periods run back to back, none dropped."""
    s = PeriodSchedule(PERIOD, t0=0.0)
    stall = 40 * 2 ** -10   # 39 ms, within MAX_LAG
    result = run(s, [stall] * 21)
    assert all(delay == 0.0 and dropped == 0 for delay, dropped in result)
    assert s.dropped == 0 and s.k == 21


@pytest.mark.parametrize("excess_periods", [0.5, 1, 3.25, 40])
def test_a_lag_past_the_bound_drops_only_the_periods_beyond_it(excess_periods):
    """Behind by max_lag + x periods: ceil(x) periods dropped (the old restart dropped all the
    lag: 25 periods more at 500 Hz), and the lag is back within the bound."""
    s = PeriodSchedule(PERIOD, t0=0.0, max_lag=16 * PERIOD)
    now = 16 * PERIOD + excess_periods * PERIOD
    delay, dropped = s.wait(now)
    assert delay == 0.0
    assert dropped == -(-excess_periods // 1) == s.dropped   # ceil
    assert 0 <= s.lag(now) <= s.max_lag
    assert s.drops == 1


def test_a_lag_of_exactly_the_bound_up_to_round_off_drops_nothing():
    s = PeriodSchedule(0.002, t0=0.1)
    s.k = 7
    now = 0.1 + 7 * 0.002 + MAX_LAG   # behind by MAX_LAG, with the sum's round-off
    assert s.wait(now) == (0.0, 0)


def test_a_long_stall_keeps_the_loop_at_the_bound_and_it_catches_up():
    """A 1 s pause at 500 Hz: 475 periods dropped (not 500), the 26 due by then (50 ms behind
    to now, both ends) run at once, then the loop is on time and sleeps again."""
    period = 0.002
    s = PeriodSchedule(period, t0=0.0)
    _, dropped = s.wait(1.0)
    assert dropped == 475
    s.ran()
    for _ in range(25):     # the rest of the bound's periods, each at once
        assert s.wait(1.0 + 1e-4) == (0.0, 0)
        s.ran()
    delay, dropped = s.wait(1.0 + 1e-4)
    assert dropped == 0 and 0 < delay <= period
    assert s.dropped == 475 and s.drops == 1


def test_it_refuses_a_period_or_bound_that_makes_no_schedule():
    with pytest.raises(ValueError, match="period must be > 0"):
        PeriodSchedule(0.0, t0=0.0)
    with pytest.raises(ValueError, match="max_lag must be >= 0"):
        PeriodSchedule(0.002, t0=0.0, max_lag=-1.0)
