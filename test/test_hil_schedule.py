"""The phases of the timed stages of the composed HIL graph (hil/schedule.py)."""

import pytest

from collections import deque

from freeflyer_control.hil.schedule import MAX_PENDING, STAGES, deliver_pending, stage_offsets, stage_rank
from freeflyer_control.runtime.controller_server import ControllerServer
from freeflyer_control.model import load_robot


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


def queue_of(*messages):
    """A subscription's queue as deliver_pending sees it: take() gives the oldest, then None."""
    waiting = deque(messages)
    return lambda: waiting.popleft() if waiting else None


def test_messages_queued_before_the_tick_reach_their_callbacks_oldest_first_input_by_input():
    seen = []
    inputs = [(queue_of("js1", "js2"), lambda m: seen.append(("joint_states", m))),
              (queue_of("odom1"), lambda m: seen.append(("odom", m))),
              (queue_of(), lambda m: seen.append(("estop", m)))]
    assert deliver_pending(inputs) == 3
    assert seen == [("joint_states", "js1"), ("joint_states", "js2"), ("odom", "odom1")]
    assert deliver_pending(inputs) == 0       # taken once: the executor finds nothing left


def test_an_input_refilled_as_fast_as_it_is_taken_is_cut_at_the_limit():
    seen = []
    endless = (lambda: "sample", seen.append)
    assert deliver_pending([endless, (queue_of("odom1"), seen.append)]) == MAX_PENDING + 1
    assert seen[-1] == "odom1"                 # the next input is still served


def test_a_state_taken_at_the_tick_is_fresh_where_the_executors_order_left_it_a_period_old():
    """The controller at 250 Hz (watchdog 1.5 periods = 6 ms): the bridge published this period's
    state 3.5 ms before the tick, but the tick's timer fell due in the same wake-up as the
    state's message, and rclpy serves timers first. Read as the executor orders it, the tick sees
    the previous period's state (7.5 ms old: stale); taken first, this period's (age 0)."""
    ff = load_robot("planar_4link")
    period, now = 1.0 / 250.0, 10.0
    names = list(ff.joint_names)
    q, v = [0.0] * len(names), [0.0] * len(names)

    def server_with_previous_state():
        server = ControllerServer(ff, rate=1.0 / period, base_actuation="ideal")
        server.on_joint_state(names, q, v, now - period - 0.0035)
        return server

    late = server_with_previous_state()
    assert late.watchdog.stale(now) == ["joint_states stale for 0.008 s (timeout 0.006 s)",
                                        "base_odometry never received"]
    fresh = server_with_previous_state()
    deliver_pending([(queue_of("this period's state"), lambda _: fresh.on_joint_state(names, q, v, now))])
    assert fresh.watchdog.stale(now) == ["base_odometry never received"]


def test_the_stages_are_served_in_data_flow_order_and_every_other_node_after_them():
    names = ["gjm_node", "controller_node", "testbed_bridge", "testbed_emulator"]
    assert sorted(names, key=stage_rank) == ["testbed_emulator", "testbed_bridge", "controller_node", "gjm_node"]
