"""The period loop of a node: its period and the inputs the period reads, served without rclpy's
executor; everything else served by the executor in a thread of its own.

rclpy's executor (Jazzy, rclpy 7.1) rebuilds its wait set in Python at every wake-up: every
subscription, timer, service, client, guard condition and QoS event handler of its nodes is
filtered, entered, counted and added again, and each ready entity becomes a Task. For
controller_node that is 300-470 us of CPU per wake-up on the 2-core development VM under load
(bench/bench_ros_wakeup.py; ~150 us with warm caches), and the
distributed graph wakes each node two to four times per period (its timer, then each state or
command message). rclpy's C++ ``EventsExecutor`` (``rclpy.experimental``, backported to Jazzy in
rclpy 7.1.4) does not rebuild anything, but this ROS build (rclpy 7.1.3) has none.

So a node's hot path waits on a small wait set of its own (:class:`PeriodLoop`): the period's
timer (on the node's clock, so ``use_sim_time`` still drives it) and the subscriptions the period
reads (states, commands, the e-stop), built once and refilled with a handful of C calls; a
wake-up costs 60-100 us there, the message's take and callback included. Their callbacks are those the executor would call: messages are taken in
arrival order, as they come (so arrival times, which the watchdogs measure, are unchanged), and
before the period, whose timer is served last in a wake-up that finds both. Everything else
(parameters, services, references, diagnostics, clients) stays with rclpy's executor, in a thread
of its own (:class:`CallbackThread`) that sleeps in ``rcl_wait`` (without the GIL) until one of
them is ready. One lock keeps the two threads' callbacks from running at once, as a
single-threaded executor did.

The hot timer and subscriptions are created in a :class:`LoopGroup`: under a plain executor
(testbed_graph, sim_loop_node --composed) they run as any others; once a :class:`PeriodLoop`
claims them the executor leaves them alone.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack
from typing import Callable, Sequence

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.exceptions import InvalidHandle
from rclpy.executors import ExternalShutdownException, ShutdownException, SingleThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.signals import SignalHandlerGuardCondition

from freeflyer_control.runtime.period_costs import CALLBACK_THREAD, LOOP_THREAD, PeriodCosts

# A queue holds at most its QoS depth (5 for states, 10 for commands); a take loop bounded above
# that cannot spin on a publisher in another process that outpaces it.
MAX_TAKES = 16


class LoopGroup(MutuallyExclusiveCallbackGroup):
    """The callback group of a node's period timer and the subscriptions its period reads. Under
    a plain executor it behaves as rclpy's default group; once :attr:`claimed` (a
    :class:`PeriodLoop` serves them), the executor neither waits on nor runs its entities."""

    def __init__(self):
        super().__init__()
        self.claimed = False

    def can_execute(self, entity) -> bool:
        return not self.claimed and super().can_execute(entity)

    def beginning_execution(self, entity) -> bool:
        return not self.claimed and super().beginning_execution(entity)


class CallbackThread:
    """rclpy's executor in a thread of its own, each callback under ``lock``.

    It sleeps in ``rcl_wait`` (the GIL released) until a callback is ready, so it costs nothing
    while nothing happens. An exception raised by a callback stops the thread and is raised again
    by :meth:`check` (the loop thread calls it every period), as ``executor.spin()`` would raise it.
    """

    def __init__(self, executor: SingleThreadedExecutor, lock: threading.Lock):
        self.executor, self.lock = executor, lock
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="ros_callbacks", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        executor = self.executor
        try:
            while executor.context.ok():
                handler, _, _ = executor.wait_for_ready_callbacks()
                with self.lock:
                    handler()
                if handler.exception() is not None:
                    raise handler.exception()
        except (ShutdownException, ExternalShutdownException):
            pass
        except BaseException as exc:  # noqa: BLE001  handed to the loop thread, which raises it
            if executor.context.ok():
                self.error = exc

    def check(self) -> None:
        """Raise the exception a callback raised, if one did."""
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def stop(self, timeout: float = 5.0) -> None:
        """Shut the executor down (ending the thread's wait) and wait for the thread."""
        self.executor.shutdown(timeout_sec=timeout)
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(timeout)


class PeriodLoop:
    """A node's period (a timer) and the subscriptions it reads, on a wait set of their own.

    Args:
        timer: the period's timer (in a :class:`LoopGroup`); its callback is the period.
        inputs: ``(subscription, callback)`` pairs (subscriptions in a :class:`LoopGroup`, message-only
            callbacks), served in this order, each message as it comes and all before the period
            when a wake-up finds both.
        group: the LoopGroup of the timer and the inputs, claimed while the loop runs.
        costs: the node's PeriodCosts, whose stage ``messages_in`` gets the takes (the messages'
            deserialization; the callbacks mark their own stages).
    """

    def __init__(self, timer, inputs: Sequence[tuple[object, Callable]], group: LoopGroup,
                 costs: PeriodCosts | None = None):
        self.timer = timer
        self.inputs = tuple(inputs)
        self.group = group
        self.costs = costs if costs is not None else PeriodCosts(("messages_in",))

    def spin(self, context, lock: threading.Lock, callbacks: CallbackThread | None = None) -> None:
        """Serve the period and its inputs until ROS shuts down, each wake-up under ``lock``;
        :meth:`CallbackThread.check` once a wake-up."""
        subs = [sub for sub, _ in self.inputs]
        sigint = SignalHandlerGuardCondition(context)
        self.group.claimed = True   # (spin_with_loop claims it before the executor's thread starts)
        try:
            with ExitStack() as held:
                # Held for the loop's lifetime: no handle can be destroyed under the wait set.
                for entity in subs + [self.timer, sigint]:
                    held.enter_context(entity.handle)
                wait_set = _rclpy.WaitSet(len(subs), 1, 1, 0, 0, 0, context.handle)
                served = [(sub.handle, sub.handle.pointer, sub.msg_type, sub.raw, callback)
                          for sub, callback in self.inputs]
                timer_handle = self.timer.handle
                timer_pointer = timer_handle.pointer
                on_period = self.timer.callback
                costs = self.costs
                while context.ok():
                    wait_set.clear_entities()
                    for handle, *_ in served:
                        wait_set.add_subscription(handle)
                    wait_set.add_timer(timer_handle)
                    wait_set.add_guard_condition(sigint.handle)
                    wait_set.wait(-1)
                    if not context.ok():
                        break
                    ready = wait_set.get_ready_entities("subscription")
                    timer_ready = timer_pointer in wait_set.get_ready_entities("timer")
                    with lock:
                        for handle, pointer, msg_type, raw, callback in served:
                            if pointer in ready:
                                for _ in range(MAX_TAKES):
                                    costs.begin()
                                    taken = handle.take_message(msg_type, raw)
                                    costs.mark("messages_in")
                                    if taken is None:
                                        break
                                    callback(taken[0])
                        # is_timer_ready: rcl may report a timer that was cancelled meanwhile.
                        if timer_ready and timer_handle.is_timer_ready():
                            timer_handle.call_timer()
                            on_period()
                    if callbacks is not None:
                        callbacks.check()
        finally:
            try:
                sigint.destroy()
            except InvalidHandle:   # the context is gone already (shut down by a signal)
                pass


def spin_with_loop(executor: SingleThreadedExecutor, loop: PeriodLoop | None,
                   costs: Sequence[PeriodCosts] = ()) -> None:
    """Spin ``executor``'s nodes: with a :class:`PeriodLoop`, the loop in this thread and the
    executor (every other callback) in a :class:`CallbackThread`; without, ``executor.spin()``.
    ``costs`` get the CPU clocks of the threads (PeriodCosts.watch_thread)."""
    for c in costs:
        c.watch_thread(LOOP_THREAD)
    if loop is None:
        executor.spin()
        return
    lock = threading.Lock()
    callbacks = CallbackThread(executor, lock)
    loop.group.claimed = True
    callbacks.start()
    for c in costs:
        c.watch_thread(CALLBACK_THREAD, callbacks.thread.ident)
    try:
        loop.spin(executor.context, lock, callbacks)
    finally:
        callbacks.stop()
