"""sim_loop_node: plant_node and controller_node in one process, stepped in lockstep by one loop.

For pure simulation (sim.launch.py ``lockstep:=true``, the default). The process hosts the two
nodes of the distributed graph, /plant_node and /controller_node, with their parameters,
services, topics, TF and diagnostics, on one executor. One loop, at the plant's ``rate``, does a
whole period in order (runtime.lockstep.LockstepLoop's sequence): the plant publishes its state;
the controller ticks on that state, handed over in the process, and publishes its commands; the
plant steps under them to the next period's state, and measures it, before the loop sleeps (a
~/reset served in between is what the next period publishes). Where the period is plain
(runtime.compiled_period: the built-in computed torque or resolved rate in floating or
rotation-floating mode, no blend, a plant without object, noise or latency) the tick, the
commands and the step are one compiled call with the same results; plant_node's /diagnostics
count those periods (compiled_periods, python_periods). The controller never
waits for a state and the plant never steps without its answer, whatever the load: a late
period is late as a whole. rclpy's executor serves every other callback (parameters, services,
references, /estop, the diagnostics timers) as it becomes ready, in a thread of its own that
sleeps until then (nodes.loop.CallbackThread), never during a period. plant_node's /diagnostics
say where a period goes (``period_us.*``: measurement, state messages and their publication,
the hand-over to the controller, its tick with the commands and the plant's step, command
messages and their publication).

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
import threading
import time

from freeflyer_control.nodes.common import StartupError, now_s, spin_nodes
from freeflyer_control.nodes.controller_node import ControllerNode
from freeflyer_control.nodes.loop import CallbackThread
from freeflyer_control.nodes.plant_node import PlantNode
from freeflyer_control.runtime.lockstep import LockstepLoop
from freeflyer_control.runtime.period_costs import CALLBACK_THREAD, LOOP_THREAD, PeriodCosts
from freeflyer_control.runtime.schedule import PeriodSchedule


# The executor rebuilds its wait set (every subscription, service, timer and QoS event of both
# nodes) in Python at each wake-up: about as costly as a whole period's physics and control. So
# the periods are not executor timers: this loop schedules them itself, and the executor waits
# for the other callbacks (parameters, services, references, e-stop, diagnostics) in a thread of
# its own, each callback under the lock a period holds, so no callback races a period.

# One period's stages (runtime.period_costs), on plant_node's /diagnostics; "tick" is the
# controller's tick, its commands to the plant and the plant's step (one compiled call in a plain
# period: runtime.compiled_period), and the measurement of the next state comes last
# (LockstepDriver.period).
STAGES = ("measurement", "state_msgs", "state_publish", "handover", "tick", "command_msgs", "command_publish")


class LockstepDriver:
    """The lockstep loop: periods at the plant's rate on the monotonic clock (a late period run
    at once, a long stall restarting it: runtime.schedule.PeriodSchedule), the executor's ready
    callbacks between periods."""

    def __init__(self, plant: PlantNode, controller: ControllerNode):
        try:
            self.loop = LockstepLoop(plant.server, controller.server)
        except ValueError as exc:
            plant.get_logger().fatal(str(exc))
            raise StartupError(str(exc)) from None
        self.plant, self.controller = plant, controller
        # One period, one set of stages: the plant's diagnostics report it.
        plant.costs = controller.costs = self.costs = PeriodCosts(STAGES)
        controller.reports_costs = False
        plant.lockstep = self.loop   # its compiled and Python periods on the plant's /diagnostics
        self.schedule: PeriodSchedule | None = None   # made when the loop starts
        plant.get_logger().info("plant and controller in lockstep: one loop publishes the plant's state, "
                                "ticks the controller on it and steps the plant under its commands")
        refusal = self.loop.compiled.refusal
        plant.get_logger().info("lockstep periods: in Python (" + refusal + ")" if refusal else
                                "lockstep periods: tick and step in one compiled call where the period is plain "
                                "(computed torque or resolved rate, floating or rotation-floating mode, no blend)")

    def period(self) -> None:
        """One period, each stage marked: the plant's state published, the controller's tick on
        it with its commands handed to the plant and the plant's step under them to the next
        period's state (runtime.lockstep.LockstepLoop.tick_and_step: one compiled call in a plain
        period), the commands published, and the next state measured at once
        (LockstepLoop.opening, measure_ahead: the servers' sequence is LockstepLoop.period's;
        the sleep falls after the step and the measurement, which then find warm caches)."""
        start = time.perf_counter()
        costs, loop, plant = self.costs, self.loop, self.plant
        costs.begin()
        now = now_s(plant)
        diverged, fields = loop.opening(now)   # (a step only in the first period)
        plant.report_divergence(diverged)
        costs.mark("measurement")
        plant.publish_state(fields)   # state_msgs, state_publish
        loop.handover(fields, now)
        costs.mark("handover")
        out, diverged = loop.tick_and_step(now)
        costs.mark("tick")
        self.controller.ticked(out)   # command_msgs, command_publish
        plant.report_divergence(diverged)
        loop.measure_ahead()
        costs.mark("measurement")
        plant.end_period(start)
        costs.end_period()

    def spin(self, executor) -> None:
        """Run until ROS shuts down (Ctrl-C, SIGTERM): the periods in this thread, the
        executor's callbacks in a :class:`CallbackThread`."""
        lock = threading.Lock()
        callbacks = CallbackThread(executor, lock)
        callbacks.start()
        self.costs.watch_thread(LOOP_THREAD)
        self.costs.watch_thread(CALLBACK_THREAD, callbacks.thread.ident)
        try:
            self._run(lock, callbacks)
        finally:
            callbacks.stop()

    def _run(self, lock: threading.Lock, callbacks: CallbackThread) -> None:
        context = self.plant.context
        schedule = self.schedule = PeriodSchedule(self.plant.period, time.monotonic())
        while context.ok():
            delay, dropped = schedule.wait(time.monotonic())
            if delay > 0:
                time.sleep(delay)
            elif dropped:
                self.plant.dropped_periods = schedule.dropped   # on /diagnostics
                self.plant.get_logger().warning(
                    f"lockstep loop more than {schedule.max_lag} s behind schedule: restarted, {dropped} "
                    f"period(s) dropped ({schedule.dropped} in all); the simulation now runs "
                    f"{schedule.dropped * schedule.period:.3f} s behind wall-clock time",
                    throttle_duration_sec=5.0)
            with lock:
                self.period()
            schedule.ran()
            callbacks.check()


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
