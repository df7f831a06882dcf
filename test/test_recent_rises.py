"""runtime.recent_rises.RecentRises: a node's diagnostics level is WARN while a counter rose
lately and OK again after, the counters staying cumulative.

Times are whole seconds (exact), so no comparison with the hold hangs on round-off.
"""

import pytest

from freeflyer_control.runtime.recent_rises import RISE_HOLD, RecentRises


def test_a_rise_is_recent_for_the_hold_and_then_clears():
    r = RecentRises(hold=10.0)
    assert r.update(0.0, {"step_overruns": 0}) == []
    assert r.update(1.0, {"step_overruns": 1}) == ["step_overruns"]
    assert r.update(10.0, {"step_overruns": 1}) == ["step_overruns"]   # 9 s after the rise
    assert r.update(11.0, {"step_overruns": 1}) == []                 # 10 s after: clear


def test_a_new_rise_restarts_the_hold():
    r = RecentRises(hold=10.0)
    r.update(0.0, {"dropped_periods": 25})
    assert r.update(8.0, {"dropped_periods": 50}) == ["dropped_periods"]
    assert r.update(17.0, {"dropped_periods": 50}) == ["dropped_periods"]   # 9 s after the second
    assert r.update(18.0, {"dropped_periods": 50}) == []


def test_a_count_above_zero_at_the_first_look_is_a_rise():
    """Overruns counted before the first diagnostics (start-up) are shown, not swallowed."""
    r = RecentRises()
    assert r.update(5.0, {"step_overruns": 3, "refused_commands": 0}) == ["step_overruns"]
    assert r.update(5.0 + RISE_HOLD, {"step_overruns": 3, "refused_commands": 0}) == []


def test_only_the_counters_that_rose_are_named_in_their_order():
    r = RecentRises()
    r.update(0.0, {"a": 0, "b": 0, "c": 0})
    assert r.update(1.0, {"a": 0, "b": 2, "c": 1}) == ["b", "c"]
    assert r.message(["b", "c"]) == f"b, c rose in the last {RISE_HOLD:g} s"
    assert r.message([]) == ""


def test_a_counter_that_went_down_was_reset_and_did_not_rise():
    r = RecentRises(hold=10.0)
    r.update(0.0, {"refused_commands": 4})
    assert r.update(20.0, {"refused_commands": 0}) == []
    assert r.update(21.0, {"refused_commands": 1}) == ["refused_commands"]


@pytest.mark.parametrize("hold", [0.0, -1.0, float("nan")])
def test_a_hold_that_is_not_positive_is_refused(hold):
    with pytest.raises(ValueError, match="hold must be > 0 s"):
        RecentRises(hold=hold)
