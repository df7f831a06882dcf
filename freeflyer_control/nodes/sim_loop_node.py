"""sim_loop_node: plant_node and controller_node in one process, stepped in lockstep by one loop.

For pure simulation (sim.launch.py ``lockstep:=true``, the default). The process hosts the two
nodes of the distributed graph, /plant_node and /controller_node, with their parameters,
services, topics, TF and diagnostics, on one executor. One loop, at the plant's ``rate``, does a
whole period in order (runtime.lockstep.LockstepLoop): the plant steps under the commands it
holds and publishes the state; the controller ticks on that state, handed over in the process,
and publishes its commands; the plant holds them for the next step. The controller never waits
for a state and the plant never steps without its answer, whatever the load: a late period is
late as a whole. Between periods, at 100 Hz, the executor runs the callbacks that are ready
(parameters, services, references, /estop, the diagnostics timers).

What differs from the distributed graph: the plant takes its commands from the hosted controller
only (it does not subscribe to /joint_effort_commands and the other command topics; the hosted
controller publishes them as before), and the controller takes the state from the plant only (it
does not subscribe to /joint_states, /base/odom). plant_node's and controller_node's ``rate``
must be equal (sim.launch.py gives both its ``rate``).

With ``--composed`` the two nodes keep their own timers and subscriptions (the distributed graph
in one process and one executor): a comparison for bench/bench_ros_loop.py.

Parameters go to each node by its name (``--params-file`` sections ``/**/plant_node`` and
``/**/controller_node``); do not rename the nodes with ``__node:=``.
"""

from __future__ import annotations

import sys
import time

from rclpy.executors import ShutdownException, TimeoutException

from freeflyer_control.nodes.common import StartupError, now_s, spin_nodes
from freeflyer_control.nodes.controller_node import ControllerNode
from freeflyer_control.nodes.plant_node import PlantNode
from freeflyer_control.runtime.lockstep import LockstepLoop


# The executor rebuilds its wait set (every subscription, service, timer and QoS event of both
# nodes) at each wake-up: about as costly as a whole period's physics and control in Python. So
# the periods are not executor timers: this loop schedules them itself and lets the executor
# run the ready callbacks (parameters, services, references, e-stop, diagnostics) between
# periods at SERVE_RATE, in this one thread, so no callback races a period.
SERVE_RATE = 100.0   # Hz: parameters, services, references within 10 ms
MAX_LAG = 0.05       # s behind schedule that is caught up; a longer stall restarts the schedule


class LockstepDriver:
    """The lockstep loop's schedule: periods at the plant's rate on the monotonic clock, a
    late period run at once (the simulation keeps wall-clock time through short stalls), the
    executor's ready callbacks between periods."""

    def __init__(self, plant: PlantNode, controller: ControllerNode):
        try:
            self.loop = LockstepLoop(plant.server, controller.server)
        except ValueError as exc:
            plant.get_logger().fatal(str(exc))
            raise StartupError(str(exc)) from None
        self.plant, self.controller = plant, controller
        self.serve_every = max(1, round(1.0 / (plant.period * SERVE_RATE)))
        self.restarts = 0   # stalls longer than MAX_LAG: periods dropped
        plant.get_logger().info("plant and controller in lockstep: one loop steps the plant, then "
                                "ticks the controller on the new state")

    def period(self) -> None:
        start = time.perf_counter()
        now = now_s(self.plant)
        diverged, fields = self.loop.step(now)
        self.plant.stepped(diverged, fields, start)
        self.controller.ticked(self.loop.tick(fields, now))

    def spin(self, executor) -> None:
        """Run until ROS shuts down (Ctrl-C, SIGTERM)."""
        period = self.plant.period
        context = self.plant.context
        k = 0
        t0 = time.monotonic()
        while context.ok():
            delay = t0 + k * period - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -MAX_LAG:
                self.restarts += 1
                self.plant.get_logger().warning(
                    f"lockstep loop {-delay:.3f} s behind schedule (more than {MAX_LAG} s): "
                    "periods dropped, the simulation now runs behind wall-clock time",
                    throttle_duration_sec=5.0)
                t0, k = time.monotonic(), 0
            self.period()
            k += 1
            if k % self.serve_every == 0:
                serve(executor)


def serve(executor, limit: int = 100) -> None:
    """Run the callbacks ready now (at most ``limit``), without waiting."""
    for _ in range(limit):
        try:
            handler, _, _ = executor.wait_for_ready_callbacks(timeout_sec=0.0)
        except (TimeoutException, ShutdownException):
            return
        handler()
        if handler.exception() is not None:
            raise handler.exception()


def main(args=None) -> None:
    argv = list(sys.argv if args is None else args)
    composed = "--composed" in argv
    argv = [a for a in argv if a != "--composed"]
    driver = None

    def drive(nodes) -> None:
        nonlocal driver
        if not composed:
            driver = LockstepDriver(*nodes)

    spin_nodes([lambda: PlantNode(lockstep=not composed), lambda: ControllerNode(lockstep=not composed)],
               argv, prepare=drive, spin=lambda executor: driver.spin(executor) if driver else executor.spin())


if __name__ == "__main__":
    main()
