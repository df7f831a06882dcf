"""Under rclpy: a node's period loop (nodes/loop.py) serves its timer and the inputs its period
reads on a wait set of its own, and rclpy's executor every other callback in a thread of its own,
never at the same time as the loop. Skipped without ROS 2.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

pytest.importorskip("rclpy", reason="rclpy not available: these tests need a sourced ROS 2 (Jazzy) install")
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))  # as launch_support.require_ros

import rclpy  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from freeflyer_control.nodes.loop import LoopGroup, PeriodLoop, spin_with_loop  # noqa: E402
from freeflyer_control.runtime.period_costs import LOOP_THREAD, PeriodCosts  # noqa: E402

PERIOD = 0.01   # s
# Reliable, and deep enough for every message of a test (20): none can be dropped, however long
# a loaded machine keeps the loop from taking them.
QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


class LoopNode(Node):
    """A period that records what its input delivered before it, an input, a service and a slow
    timer outside the loop, each recording which thread ran it and whether the other was busy."""

    def __init__(self, context, fail_service: bool = False):
        super().__init__("period_loop_test", context=context)
        self.events: list[tuple] = []
        self.busy = threading.Lock()   # held by whichever callback runs: they must never overlap
        self.overlaps = 0
        self.fail_service = fail_service
        self.costs = PeriodCosts(("messages_in",))
        group = LoopGroup()
        sub = self.create_subscription(Float64MultiArray, "loop_input", self._on_input, QOS, callback_group=group)
        self.period_loop = PeriodLoop(self.create_timer(PERIOD, self._period, callback_group=group),
                                      [(sub, self._on_input)], group, self.costs)
        self.create_service(Trigger, "~/poke", self._on_poke)
        self.create_timer(0.05, lambda: self._record("slow_timer"))

    def _record(self, what, value=None):
        if not self.busy.acquire(blocking=False):
            self.overlaps += 1
            return
        try:
            time.sleep(0.001)   # long enough for an overlap to show
            self.events.append((what, value, threading.current_thread().name))
        finally:
            self.busy.release()

    def _on_input(self, msg):
        self._record("input", msg.data[0])

    def _period(self):
        self._record("period")
        self.costs.end_period()

    def _on_poke(self, request, response):
        self._record("service")
        if self.fail_service:
            raise RuntimeError("a callback's own error")
        response.success = True
        return response


@pytest.fixture
def context(rclpy_context):
    return rclpy_context


def _spin_in_thread(node, context):
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    errors = []

    def run():
        try:
            spin_with_loop(executor, node.period_loop, [node.costs])
        except Exception as exc:  # noqa: BLE001  handed to the test
            errors.append(exc)

    thread = threading.Thread(target=run, name="loop")
    thread.start()
    return executor, thread, errors


def test_the_loop_serves_period_and_inputs_and_the_executor_the_rest_never_at_once(context):
    node = LoopNode(context)
    client_node = Node("period_loop_client", context=context)
    pub = client_node.create_publisher(Float64MultiArray, "loop_input", QOS)
    client = client_node.create_client(Trigger, "/period_loop_test/poke")
    executor, thread, errors = _spin_in_thread(node, context)
    try:
        deadline = time.monotonic() + 10.0
        while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        for k in range(20):
            pub.publish(Float64MultiArray(data=[float(k)]))
            time.sleep(0.003)
        assert client.wait_for_service(timeout_sec=10.0)
        future = client.call_async(Trigger.Request())
        helper = SingleThreadedExecutor(context=context)
        helper.add_node(client_node)
        helper.spin_until_future_complete(future, timeout_sec=10.0)
        assert future.result() is not None and future.result().success
        time.sleep(0.2)
        window = node.costs.window()   # while the loop thread is alive (its CPU clock ends with it)
    finally:
        rclpy.shutdown(context=context)
        thread.join(10.0)
    assert not thread.is_alive() and not errors, errors
    threads = {}
    for what, _, name in node.events:
        threads.setdefault(what, set()).add(name)
    # The period and its input in the loop's thread, the service and the slow timer in the
    # executor's: each exactly where it belongs.
    assert threads["period"] == {"loop"} and threads["input"] == {"loop"}
    assert threads["service"] == {"ros_callbacks"} and threads["slow_timer"] == {"ros_callbacks"}
    assert node.overlaps == 0
    # Every message, in order, once (reliable and deep enough: none may be lost).
    assert [v for what, v, _ in node.events if what == "input"] == [float(k) for k in range(20)]
    # The takes are counted (the period's own stages are the node's to mark), and the loop thread.
    assert window["messages_in"] > 0.0 and window[LOOP_THREAD] > 0.0
    client_node.destroy_node()
    node.destroy_node()


def test_an_error_in_a_callback_of_the_executor_thread_stops_the_loop_with_it(context):
    node = LoopNode(context, fail_service=True)
    client_node = Node("period_loop_client", context=context)
    client = client_node.create_client(Trigger, "/period_loop_test/poke")
    executor, thread, errors = _spin_in_thread(node, context)
    try:
        assert client.wait_for_service(timeout_sec=10.0)
        client.call_async(Trigger.Request())
        thread.join(10.0)
    finally:
        rclpy.shutdown(context=context)
        thread.join(10.0)
    # As executor.spin() would: the callback's exception ends the spin, in the loop's thread.
    assert len(errors) == 1 and "a callback's own error" in str(errors[0])
    client_node.destroy_node()
    node.destroy_node()
