"""testbed_graph: testbed_emulator, testbed_bridge, controller_node and gjm_node in one process.

``hil_sim.launch.py`` starts this executable by default (``composed:=true``) instead of the four
node executables. The nodes are the same classes with the same names, parameters, topics and
services; only the process is shared: one single-threaded executor spins them all (no callback
of one runs during another's), and their messages to each other are delivered inside the
process by the middleware. Give each node its parameters in parameter files under its own key
(``/**/testbed_emulator``, ``/**/testbed_bridge``, ``/**/controller_node``, ``/**/gjm_node``),
and do NOT remap ``__node`` (that would rename all four):

    ros2 run freeflyer_control testbed_graph --ros-args --params-file hil_params.yaml

Why: every node of the graph is Python, and each of its ~14 wake-ups per 4 ms period costs an
rclpy executor pass and a middleware hop. In four processes the graph needed about 1.3 cores at
250 Hz on the development VM; in one, about 0.8 (docs/hil.md, "CPU and timing").

The three timed stages (emulator step, bridge tick, controller tick) are started a fraction of
a period apart in data-flow order (:mod:`freeflyer_control.hil.schedule`), so that each finds
this period's inputs waiting. The QoS event handlers (incompatible-QoS warnings) of the nodes'
publishers and subscriptions are left out of the executor's wait set (see
:func:`drop_qos_event_handlers`). A real testbed keeps the bridge in its own process
(testbed.launch.py); ``composed:=false`` runs this graph that way too.
"""

from __future__ import annotations

import time

from rclpy.event_handler import EventHandler
from rclpy.node import Node

from freeflyer_control.hil.schedule import stage_offsets, stage_rank
from freeflyer_control.nodes.common import spin_nodes
from freeflyer_control.nodes.controller_node import ControllerNode
from freeflyer_control.nodes.gjm_node import GjmNode
from freeflyer_control.nodes.testbed_bridge_node import TestbedBridgeNode
from freeflyer_control.nodes.testbed_emulator_node import TestbedEmulatorNode


def _control_timer(node: ControllerNode):
    return next(t for t in node.timers if t.callback == node._tick)


def phase_timers(nodes: list[Node]) -> None:
    """Restart the emulator's, the bridge's and the controller's timers in data-flow order,
    ``stage_offsets`` apart (see :mod:`freeflyer_control.hil.schedule`)."""
    emulator, bridge, controller = (next(n for n in nodes if isinstance(n, kind))
                                    for kind in (TestbedEmulatorNode, TestbedBridgeNode, ControllerNode))
    timers = (emulator.step_timer, bridge.tick_timer, _control_timer(controller))
    start = time.monotonic()
    for timer, offset in zip(timers, stage_offsets(bridge.period, len(timers))):
        time.sleep(max(0.0, start + offset - time.monotonic()))
        timer.reset()


_DROPPED: dict[Node, list[EventHandler]] = {}


def drop_qos_event_handlers(nodes: list[Node]) -> int:
    """Take the middleware's QoS event handlers (incompatible QoS or type: a warning in the log)
    of every publisher and subscription out of the executor's wait set; how many.

    rclpy gives each publisher and subscription two by default, 94 for these four nodes against
    59 subscriptions, services and timers, and rebuilds its wait set from all of them at every
    wake-up: without them a bridge tick cost 14 % less CPU (2.9 instead of 3.35 ms, measured
    alternately in one process). The graph's own topics are matched by construction (and
    tested); a tool with an incompatible QoS still gets the warning on its own side.
    """
    for node in nodes:
        _DROPPED[node] = [w for w in node.waitables if isinstance(w, EventHandler)]
        for handler in _DROPPED[node]:
            node.remove_waitable(handler)
    return sum(len(h) for h in _DROPPED.values())


def restore_qos_event_handlers(nodes: list[Node]) -> None:
    """Give the nodes their handlers back: destroying a publisher or subscription removes its
    handlers from its node, and fails on one that is not there."""
    for node in nodes:
        for handler in _DROPPED.pop(node, ()):
            node.add_waitable(handler)


def prepare(nodes: list[Node]) -> None:
    """Before the first callback: the QoS event handlers out of the wait set, then the timers
    phased (spin_nodes then freezes the start-up heap, as for every node)."""
    drop_qos_event_handlers(nodes)
    phase_timers(nodes)


def main(args=None) -> None:
    # The emulator last: its clock (emulated time 0) starts when it is made, after the others'
    # start-up, so that its first step has not a second of plant to catch up on.
    spin_nodes([TestbedBridgeNode, ControllerNode, GjmNode, TestbedEmulatorNode], args, prepare=prepare,
               finish=restore_qos_event_handlers, rank=stage_rank)


if __name__ == "__main__":
    main()
