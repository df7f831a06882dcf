"""Under rclpy: a tick reads the inputs that arrived before it, and the composed HIL graph serves
its stages in data-flow order (nodes/common.py: queued_inputs, OrderedExecutor).

rclpy's executor serves a node's ready timers before its ready subscriptions, and keeps its nodes
in a set; these tests hold the two remedies to the real rclpy API. Skipped without ROS 2.
"""

from __future__ import annotations

import os
import time

import pytest

pytest.importorskip("rclpy", reason="rclpy not available: these tests need a sourced ROS 2 (Jazzy) install")
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))  # as launch_support.require_ros

from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from freeflyer_control.hil.schedule import STAGES, deliver_pending, stage_rank  # noqa: E402
from freeflyer_control.nodes.common import (  # noqa: E402
    COMMAND_QOS,
    OrderedExecutor,
    queued_inputs,
)


@pytest.fixture
def context(rclpy_context):
    return rclpy_context


def test_the_composed_graph_serves_its_stages_in_data_flow_order_whatever_order_they_were_added(context):
    names = ["gjm_node", "controller_node", "testbed_bridge", "testbed_emulator"]  # any order but data flow
    nodes = [Node(name, context=context) for name in names]
    executor = OrderedExecutor(stage_rank, context=context)
    for node in nodes:
        executor.add_node(node)
    assert [n.get_name() for n in executor.get_nodes()] == [*STAGES, "gjm_node"]
    executor.shutdown()
    for node in nodes:
        node.destroy_node()


def test_a_tick_due_in_the_same_wake_up_as_its_input_reads_that_input(context):
    """The timer falls due while the message waits; rclpy then runs the timer first. The tick
    that takes its queued inputs sees the message; one that does not sees nothing yet."""
    node = Node("tick_inputs_test", context=context)
    received = []
    sub = node.create_subscription(Float64MultiArray, "tick_inputs_test", lambda m: received.append(m.data[0]),
                                   COMMAND_QOS)
    pub = node.create_publisher(Float64MultiArray, "tick_inputs_test", COMMAND_QOS)
    inputs = queued_inputs(sub)
    seen_by_tick = {}

    def tick(name, take_first):
        def callback():
            if take_first:
                deliver_pending(inputs)
            seen_by_tick.setdefault(name, list(received))
        return callback

    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    deadline = time.monotonic() + 10.0   # discovery of the node's own reader, generous on a busy machine
    while pub.get_subscription_count() < 1 and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.01)
    for name, take_first in (("plain", False), ("taking", True)):
        received.clear()
        timer = node.create_timer(0.05, tick(name, take_first))
        pub.publish(Float64MultiArray(data=[1.0]))
        time.sleep(0.1)             # the timer is due and the message queued: one wake-up serves both
        executor.spin_once(timeout_sec=1.0)
        node.destroy_timer(timer)
        while not received:         # the message itself is still delivered, once
            executor.spin_once(timeout_sec=1.0)
        assert received == [1.0]
    assert seen_by_tick == {"plain": [], "taking": [1.0]}
    executor.shutdown()
    node.destroy_node()
