"""When the timed stages of the HIL graph tick, when they share one thread (``testbed_graph``).

In one process, one single-threaded executor runs the emulator's step, the bridge's tick and the
controller's tick. Timers created one after the other start at arbitrary phases of the period,
and keep them (rcl timers advance by whole periods): with the controller's timer just before the
bridge's, every state the controller reads is almost a period old, and its watchdog (1.5 control
periods) is left half a period of margin for all the jitter of the thread. Started a fraction of
a period apart in data-flow order (emulator, bridge, controller; the order of one tick of
:func:`freeflyer_control.hil.runner.run_hil`), each stage finds its inputs of this period
waiting: the bridge the samples the emulator just published, the controller the estimate the
bridge just published.

Phases alone do not make a stage read them. rclpy serves a node's ready timers before its ready
subscriptions, and a wake-up's several nodes in the order of a set (it changes from run to run):
measured in the composed graph, two thirds of the controller's ticks ran before their own
/joint_states callback and read the previous period's state. So each stage first takes the
inputs already queued for it (:func:`deliver_pending`), and the executor serves the stages in
data-flow order (:func:`stage_rank`). The watchdogs are not touched; only the order is chosen.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

STAGES = ("testbed_emulator", "testbed_bridge", "controller_node")


def stage_rank(node_name: str) -> int:
    """Where a node of the composed graph is served when several nodes' callbacks are ready in one
    wake-up of the executor (after a stall, all three timers at once): the timed stages in
    data-flow order (:data:`STAGES`), every other node after them. Served that way, a late
    period runs as one tick of ``run_hil`` does, each stage on the inputs the one before it has
    just published."""
    return STAGES.index(node_name) if node_name in STAGES else len(STAGES)


def stage_offsets(period: float, stages: int = len(STAGES)) -> list[float]:
    """Start offsets, s after the first stage, of ``stages`` timers of one ``period`` (s) in
    data-flow order: ``k * period / (stages + 1)``. Each stage gets the same share of the
    period to run before the next starts, and the last leaves that share before the first
    one's next tick.

    Raises:
        ValueError: a period that is not a positive finite number, or fewer than one stage.
    """
    if not (period > 0 and period < float("inf")):
        raise ValueError(f"stage_offsets: period must be a positive number of seconds, got {period!r}")
    if stages < 1:
        raise ValueError(f"stage_offsets: need at least one stage, got {stages}")
    return [k * period / (stages + 1) for k in range(stages)]


# A subscription's queue holds at most its QoS depth (5 for states, 10 for commands); a take
# loop bounded above that cannot spin on a publisher in another process that outpaces it.
MAX_PENDING = 16


def deliver_pending(inputs: Sequence[tuple[Callable[[], Any], Callable[[Any], None]]],
                    limit: int = MAX_PENDING) -> int:
    """Deliver, oldest first, every message already waiting for a stage's inputs, before the
    stage computes; how many.

    rclpy's executor serves a node's ready timers before its ready subscriptions, so a tick whose
    timer falls due in the same wake-up as its input's message (the bridge's /joint_states for
    the controller, the controller's commands for the bridge) would read the previous period's
    input: one period older than it is, which eats the watchdog's margin (a 6 ms controller
    watchdog at 250 Hz keeps ~2 ms instead of ~5). Taken here, the message reaches the same
    callback the executor would have called a moment later, so arrival times (what the watchdogs
    measure) are those of the take, never earlier than the message's real arrival.

    Args:
        inputs: ``(take, deliver)`` pairs in the order the executor would serve them: ``take()``
            returns the oldest queued message or None when the queue is empty; ``deliver(msg)``
            is the input's callback.
        limit: at most this many messages per input (a queue refilled from another process as
            fast as it is drained must not hold the stage back).
    """
    delivered = 0
    for take, deliver in inputs:
        for _ in range(limit):
            msg = take()
            if msg is None:
                break
            deliver(msg)
            delivered += 1
    return delivered
