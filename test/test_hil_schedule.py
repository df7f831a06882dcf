"""The phases of the timed stages of the composed HIL graph (hil/schedule.py)."""

import pytest

from freeflyer_control.hil.schedule import STAGES, stage_offsets


def test_stages_start_a_quarter_period_apart_in_data_flow_order():
    period = 1.0 / 250.0                       # the example testbed's rate
    assert STAGES == ("testbed_emulator", "testbed_bridge", "controller_node")
    assert stage_offsets(period) == pytest.approx([0.0, 0.001, 0.002], abs=1e-15)


@pytest.mark.parametrize("stages", [1, 2, 3, 5])
def test_each_stage_gets_an_equal_share_and_the_last_ends_before_the_next_period(stages):
    period = 0.004
    offsets = stage_offsets(period, stages)
    shares = [b - a for a, b in zip(offsets, offsets[1:] + [period])]
    assert offsets[0] == 0.0 and len(offsets) == stages
    assert shares == pytest.approx([period / (stages + 1)] * (stages - 1) + [2 * period / (stages + 1)])


@pytest.mark.parametrize("period", [0.0, -0.004, float("inf"), float("nan")])
def test_a_period_that_is_not_a_positive_number_is_refused(period):
    with pytest.raises(ValueError, match="period must be a positive number of seconds"):
        stage_offsets(period)


def test_no_stages_is_refused():
    with pytest.raises(ValueError, match="need at least one stage, got 0"):
        stage_offsets(0.004, 0)
