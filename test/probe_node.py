"""The launch tests' probe: a node in the test process that records what the graph publishes.

Imported by the launch test modules after ``launch_support.require_ros`` (it needs rclpy).
"""

from __future__ import annotations

import functools
import threading
import time
from collections import deque

import pytest
import rclpy
from launch_support import timing_claim
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_srvs.srv import Trigger

RELIABLE = QoSProfile(depth=500, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class RecordingProbe(Node):
    """Records every message on the topics it watches: (receive time s, monotonic; message; DDS
    source timestamp ns, system clock), so that timing checks use the publish times and the
    probe's own delays do not count. Spins in a thread of its own."""

    def __init__(self, name: str):
        super().__init__(name)
        self.lock = threading.Lock()
        self.log: dict[str, deque] = {}
        self.subs = {}
        self.spinner = SingleThreadedExecutor()
        self.spinner.add_node(self)
        self.thread = threading.Thread(target=self.spinner.spin, daemon=True)
        self.thread.start()

    def watch(self, topic: str, kind, qos: QoSProfile = RELIABLE, depth: int = 20000) -> None:
        if topic not in self.subs:
            self.log[topic] = deque(maxlen=depth)
            # Two parameters: rclpy then passes the message info (source and receive timestamps).
            self.subs[topic] = self.create_subscription(kind, topic, functools.partial(self._record, topic), qos)

    def unwatch(self, *topics: str) -> None:
        for topic in topics:
            sub = self.subs.pop(topic, None)
            if sub is not None:
                self.destroy_subscription(sub)

    def _record(self, topic, msg, info) -> None:
        with self.lock:
            self.log[topic].append((time.monotonic(), msg, info["source_timestamp"]))

    def messages(self, topic: str) -> list:
        """(receive time s, message) of every message received on ``topic``."""
        with self.lock:
            return [(t, m) for t, m, _ in self.log.get(topic, ())]

    def published(self, topic: str) -> list:
        """(publish time s on the system clock, message), from the DDS source timestamps."""
        with self.lock:
            return [(src * 1e-9, m) for _, m, src in self.log.get(topic, ())]

    def assert_zero_after(self, t_stop: float, topics=("joint_effort_commands", "thrusters/command"),
                          within: float = 0.05, settled: float = 0.4) -> None:
        """Every message of ``topics`` published more than ``settled`` s after ``t_stop`` (system
        clock s, a publish time) is all zeros, whatever the load; and, a latency claim
        (launch_support.timing_claim), every one published more than ``within`` s after it."""
        def zero_after(delay: float, what: str) -> None:
            for topic in topics:
                late = [m for t, m in self.published(topic) if t > t_stop + delay]
                assert late and not any(any(x != 0.0 for x in m.data) for m in late), f"/{topic} not zero {what}"

        zero_after(settled, "under the e-stop")
        with timing_claim(f"every command zero from {within * 1e3:.0f} ms after the e-stop was published"):
            zero_after(within, f"{within * 1e3:.0f} ms after the e-stop")

    def diagnostic_status(self, name: str, after: float = 0.0, topic: str = "diagnostics"):
        """The newest DiagnosticStatus called ``name`` received on ``topic`` (a watched
        diagnostic_msgs/DiagnosticArray topic) after ``after`` (monotonic s), or None."""
        for t, arr in reversed(self.messages(topic)):
            if t <= after:
                return None
            for status in arr.status:
                if status.name == name:
                    return status
        return None

    def wait_for(self, what, timeout: float, message):
        """Poll ``what()`` until it returns something truthy; fail with ``message`` (or its call)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = what()
            if value:
                return value
            time.sleep(0.02)
        pytest.fail(f"{message() if callable(message) else message} (waited {timeout:g} s)")

    def call(self, service: str, timeout: float = 10.0):
        """Call a std_srvs/Trigger service; its response."""
        client = self.create_client(Trigger, service)
        try:
            assert client.wait_for_service(timeout_sec=timeout), f"no service {service}"
            future = client.call_async(Trigger.Request())
            done = threading.Event()
            future.add_done_callback(lambda _: done.set())
            assert done.wait(timeout), f"{service} did not answer"
            return future.result()
        finally:
            self.destroy_client(client)

    def _parameter_call(self, node: str, timeout: float, request):
        client = AsyncParameterClient(self, node)
        assert client.wait_for_services(timeout_sec=timeout), f"no parameter services on {node}"
        future = request(client)
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        assert done.wait(timeout), f"parameter call on {node} timed out"
        return future.result()

    def set_remote_parameter(self, node: str, name: str, value: str, timeout: float = 10.0):
        """``ros2 param set <node> <name> <value>``: the SetParameters service's result."""
        return self._parameter_call(
            node, timeout, lambda c: c.set_parameters([Parameter(name, Parameter.Type.STRING, value)])).results[0]

    def get_remote_parameter(self, node: str, name: str, timeout: float = 10.0) -> str:
        return self._parameter_call(node, timeout, lambda c: c.get_parameters([name])).values[0].string_value

    def close(self) -> None:
        self.spinner.shutdown()
        self.destroy_node()


def running(probe_class):
    """The body of a module-scoped probe fixture (``yield from running(Probe)``): rclpy up and
    the probe spinning for the module's tests, both torn down after."""
    rclpy.init()
    node = probe_class()
    try:
        yield node
    finally:
        node.close()
        rclpy.shutdown()
