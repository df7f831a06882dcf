"""What every freeflyer node shares: declarative parameters, QoS profiles, message builders.

rclpy and the message packages are imported here and in the node modules only (DESIGN.md §2).
"""

from __future__ import annotations

import array
import gc
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import TransformStamped
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor, SetParametersResult
from rclpy.event_handler import PublisherEventCallbacks, SubscriptionEventCallbacks
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from rclpy.serialization import serialize_message
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from freeflyer_control.model import FreeFlyerModel, load_robot
from freeflyer_control.nodes.loop import spin_with_loop
from freeflyer_control.ros.conversions import MultiArrayFields, StateFields
from freeflyer_control.ros.serialized import LayoutError, SerializedMessage, markers, stamp_marker

# States are streamed: a subscriber wants the newest sample, and a lost one is replaced 2 ms later.
# Publishers are reliable so that reliable subscribers (robot_state_publisher) can connect too.
STATE_PUB_QOS = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
STATE_SUB_QOS = qos_profile_sensor_data
# Commands are few and each matters; the controller's watchdog covers a link that dies.
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
# The mode and the GJM column names: one owner, late joiners get the last value.
LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL, history=HistoryPolicy.KEEP_LAST)


# Every QoS event handler is one more entity the executor walks at each wake-up, in Python: a
# plant_node or controller_node wake-up costs 160-190 us with the default handlers and 110-120 us
# without (bench/bench_ros_loop.py's machine), several wake-ups per period at 1 kHz. The handlers
# these nodes drop report nothing anyone would miss: an incompatible pair is reported by the
# subscription's own default handler (rclpy and rclcpp log it), and a best-effort volatile
# subscription is compatible with every publisher. Reliable subscriptions (commands, references,
# e-stop) keep theirs: a best-effort `ros2 topic pub` is incompatible and must be told.
def quiet_publisher(node: Node, kind, topic: str, qos):
    """``node.create_publisher`` without the publisher-side QoS event handler."""
    return node.create_publisher(kind, topic, qos, event_callbacks=PublisherEventCallbacks(use_default_callbacks=False))


def state_subscription(node: Node, kind, topic: str, callback, callback_group=None, raw: bool = False):
    """A best-effort (STATE_SUB_QOS) subscription, without a QoS event handler (``raw``: the
    callback gets the serialized bytes, ros.serialized reads them)."""
    return node.create_subscription(kind, topic, callback, STATE_SUB_QOS, callback_group=callback_group, raw=raw,
                                    event_callbacks=SubscriptionEventCallbacks(use_default_callbacks=False))


def queued_inputs(*subscriptions) -> tuple[tuple[Callable[[], Any], Callable[[Any], None]], ...]:
    """``(take, callback)`` pairs of message-only ``subscriptions``, for
    :func:`freeflyer_control.hil.schedule.deliver_pending`: ``take()`` is the executor's own take
    (``Subscription.handle.take_message``), the oldest queued message or None."""
    def taker(sub):
        def take():
            with sub.handle:
                taken = sub.handle.take_message(sub.msg_type, sub.raw)
            return None if taken is None else taken[0]
        return take
    return tuple((taker(sub), sub.callback) for sub in subscriptions)


@dataclass(frozen=True)
class Param:
    """A parameter declaration: default, description, and range or choices."""

    name: str
    default: Any
    description: str
    range: tuple[float, float] | None = None
    choices: Sequence[str] | None = None
    read_only: bool = False


def declare(node: Node, params: Sequence[Param]) -> dict[str, Any]:
    """Declare ``params`` with descriptors (ranges for numbers, choices in the description) and
    return their values."""
    values = {}
    for p in params:
        desc = ParameterDescriptor(description=p.description, read_only=p.read_only)
        if p.choices:
            desc.additional_constraints = "one of: " + ", ".join(p.choices)
        if p.range is not None:
            if isinstance(p.default, int) and not isinstance(p.default, bool):
                desc.integer_range = [IntegerRange(from_value=int(p.range[0]), to_value=int(p.range[1]), step=1)]
            else:
                desc.floating_point_range = [FloatingPointRange(from_value=float(p.range[0]),
                                                                to_value=float(p.range[1]), step=0.0)]
        values[p.name] = node.declare_parameter(p.name, p.default, desc).value
        if p.choices and values[p.name] not in p.choices:
            raise ValueError(f"parameter {p.name}='{values[p.name]}' must be one of {list(p.choices)}")
    return values


def robot_from_parameters(values: dict[str, Any]) -> FreeFlyerModel:
    """The robot named by the ``robot`` parameter (bundled name, .yaml config or .urdf path),
    with ``base`` / ``end_effectors`` completing a bare URDF."""
    ees = [e for e in values.get("end_effectors", []) if e] or None
    return load_robot(values["robot"], base=values.get("base") or None, end_effectors=ees)


ROBOT_PARAMS = (
    Param("robot", "planar_4link", "bundled robot name, robot config .yaml or .urdf path", read_only=True),
    Param("base", "", "floating base for a bare URDF: planar or spatial (empty: from the config)",
          choices=("", "planar", "spatial"), read_only=True),
    Param("end_effectors", [""], "end-effector frames for a bare URDF", read_only=True),
)


def now_s(node: Node) -> float:
    return node.get_clock().now().nanoseconds * 1e-9


def multiarray(fields: MultiArrayFields) -> Float64MultiArray:
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=label, size=size, stride=stride)
                      for label, size, stride in fields.dims]
    msg.data = fields.data
    return msg


def vector_msg(values: Sequence[float], label: str) -> Float64MultiArray:
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=label, size=len(values), stride=len(values))]
    msg.data = [float(x) for x in values]
    return msg


def state_messages(node: Node, fields: StateFields, base_link: str) -> tuple[JointState, Odometry, TransformStamped]:
    """JointState, Odometry (pose and twist in world, DESIGN.md §5) and the world->base TF."""
    stamp = node.get_clock().now().to_msg()
    js = JointState()
    js.header.stamp = stamp
    js.name = list(fields.joint_names)
    js.position = fields.joint_positions.tolist()
    js.velocity = fields.joint_velocities.tolist()
    b = fields.base
    odom = Odometry()
    odom.header.stamp = stamp
    odom.header.frame_id = "world"
    odom.child_frame_id = base_link
    pose = odom.pose.pose
    pose.position.x, pose.position.y, pose.position.z = b.position.tolist()
    o = pose.orientation
    o.x, o.y, o.z, o.w = b.orientation_xyzw.tolist()
    tw = odom.twist.twist
    tw.linear.x, tw.linear.y, tw.linear.z = b.linear_velocity.tolist()
    tw.angular.x, tw.angular.y, tw.angular.z = b.angular_velocity.tolist()
    tf = TransformStamped()
    tf.header.stamp = stamp
    tf.header.frame_id = "world"
    tf.child_frame_id = base_link
    t = tf.transform.translation
    t.x, t.y, t.z = b.position.tolist()
    tf.transform.rotation = pose.orientation
    return js, odom, tf


class StateMessages:
    """The plant's JointState and Odometry, kept serialized and rewritten per step, and its
    world->base TF message, allocated once and refilled.

    Publishing a message object converts it to C and serializes it every time; the numbers are
    all that change from one step to the next, so each message is serialized once with markers
    (ros.serialized) and its bytes rewritten in place: ``publish(bytes)`` skips both (the
    plant's state publication ~3x cheaper per step). Where the markers cannot be found (a
    middleware's other encoding), the message objects are refilled and published instead.
    """

    def __init__(self, base_link: str):
        self.js = JointState()
        self.odom = Odometry()
        self.odom.header.frame_id = "world"
        self.odom.child_frame_id = base_link
        self.tf = TransformStamped()
        self.tf.header.frame_id = "world"
        self.tf.child_frame_id = base_link
        self._names: tuple = ()
        self._q = self._v = np.zeros(0)
        self._raw: tuple[SerializedMessage, SerializedMessage] | None = None

    def _layout(self, names: tuple[str, ...]) -> None:
        """Messages for the joint ``names`` (first call, or another joint set)."""
        js, n = self.js, len(names)
        self._names = names
        js.name = list(names)
        js.position = array.array("d", markers(n, 1.1e-300))
        js.velocity = array.array("d", markers(n, 2.2e-300))
        self._q = np.frombuffer(js.position, dtype=float)
        self._v = np.frombuffer(js.velocity, dtype=float)
        pose, twist = markers(7, 3.3e-300), markers(6, 4.4e-300)
        p, o = self.odom.pose.pose.position, self.odom.pose.pose.orientation
        p.x, p.y, p.z, o.x, o.y, o.z, o.w = pose.tolist()
        lin, ang = self.odom.twist.twist.linear, self.odom.twist.twist.angular
        lin.x, lin.y, lin.z, ang.x, ang.y, ang.z = twist.tolist()
        for msg in (js, self.odom):
            msg.header.stamp.sec, msg.header.stamp.nanosec = stamp_marker()
        try:
            self._raw = (SerializedMessage(serialize_message(js), {"position": js.position, "velocity": js.velocity},
                                           stamp_marker()),
                         SerializedMessage(serialize_message(self.odom), {"pose": pose, "twist": twist}, stamp_marker()))
        except LayoutError:
            self._raw = None

    def fill(self, stamp_ns: int, fields: StateFields) -> tuple[JointState | bytes, Odometry | bytes]:
        """/joint_states and /base/odom at ``stamp_ns`` (ns on the node's clock) for ``fields``
        (joints in rad, rad/s; base pose and twist in world, m, m/s, rad/s): serialized bytes,
        or the message objects (see the class docstring)."""
        if fields.joint_names != self._names:
            self._layout(tuple(fields.joint_names))
        b = fields.base
        if self._raw is not None:
            js, odom = self._raw
            js.set_stamp(stamp_ns)
            js.fields["position"][:] = fields.joint_positions
            js.fields["velocity"][:] = fields.joint_velocities
            odom.set_stamp(stamp_ns)
            pose, twist = odom.fields["pose"], odom.fields["twist"]
            pose[:3], pose[3:] = b.position, b.orientation_xyzw
            twist[:3], twist[3:] = b.linear_velocity, b.angular_velocity
            return js.data(), odom.data()
        stamp = Time(nanoseconds=stamp_ns).to_msg()
        self._q[:] = fields.joint_positions
        self._v[:] = fields.joint_velocities
        self.js.header.stamp = stamp
        self.odom.header.stamp = stamp
        pose = self.odom.pose.pose
        pose.position.x, pose.position.y, pose.position.z = b.position.tolist()
        o = pose.orientation
        o.x, o.y, o.z, o.w = b.orientation_xyzw.tolist()
        tw = self.odom.twist.twist
        tw.linear.x, tw.linear.y, tw.linear.z = b.linear_velocity.tolist()
        tw.angular.x, tw.angular.y, tw.angular.z = b.angular_velocity.tolist()
        return self.js, self.odom

    def transform(self, stamp_ns: int, fields: StateFields) -> TransformStamped:
        """The TF world -> base_link at ``stamp_ns`` (ns) for ``fields``."""
        b = fields.base
        self.tf.header.stamp = Time(nanoseconds=stamp_ns).to_msg()
        t = self.tf.transform.translation
        t.x, t.y, t.z = b.position.tolist()
        r = self.tf.transform.rotation
        r.x, r.y, r.z, r.w = b.orientation_xyzw.tolist()
        return self.tf


class VectorMessage:
    """A Float64MultiArray with one labelled dimension, kept serialized and rewritten (see
    StateMessages; the message object refilled where that cannot be done). ``fill`` takes any
    float vector; a size change (it does not happen within a run) lays it out again."""

    def __init__(self, label: str):
        self.label = label
        self.msg = vector_msg((), label)
        self._data = np.zeros(0)
        self._raw: SerializedMessage | None = None

    def fill(self, values: np.ndarray) -> Float64MultiArray | bytes:
        if len(values) != len(self._data):
            self.msg = vector_msg(values, self.label)
            self.msg.data = array.array("d", markers(len(values), 5.5e-300))
            self._data = np.frombuffer(self.msg.data, dtype=float)
            try:
                self._raw = SerializedMessage(serialize_message(self.msg), {"data": self.msg.data})
            except LayoutError:
                self._raw = None
        if self._raw is not None:
            self._raw.fields["data"][:] = values
            return self._raw.data()
        self._data[:] = values
        return self.msg


LEVELS = {"ok": DiagnosticStatus.OK, "warn": DiagnosticStatus.WARN, "error": DiagnosticStatus.ERROR,
          "stale": DiagnosticStatus.STALE}


def diagnostics(node: Node, name: str, level: str, message: str, values: dict[str, Any]) -> DiagnosticArray:
    status = DiagnosticStatus(level=LEVELS[level], name=name, message=message, hardware_id=node.get_name())
    status.values = [KeyValue(key=str(k), value=str(v)) for k, v in values.items()]
    arr = DiagnosticArray()
    arr.header.stamp = node.get_clock().now().to_msg()
    arr.status = [status]
    return arr


def param_result(reason: str | None) -> SetParametersResult:
    return SetParametersResult(successful=reason is None, reason=reason or "")


class StartupError(Exception):
    """A node cannot start; it has logged why (what to fix). spin_node exits with code 1."""


# plant_node's and testbed_emulator's integration step (physics.kernels.plant.make_plant's ``compiled``).
PLANT_STEPS = {"auto": None, "compiled": True, "python": False}
PLANT_STEP_PARAM = Param(
    "plant_step", "auto", "the plant's integration step: compiled (numba; the first use compiles it, "
    "then it loads from numba's cache), python, or auto (compiled when numba is installed)",
    choices=tuple(PLANT_STEPS), read_only=True)


def plant_step_choice(node: Node, value: str) -> bool | None:
    """``compiled`` for make_plant / PlantServer from the ``plant_step`` parameter; says in the log
    that the compiled step is being prepared, as the first use after an install takes minutes."""
    from freeflyer_control.physics.kernels import available

    compiled = PLANT_STEPS[value]
    if compiled is not False and available():
        node.get_logger().info("preparing the compiled plant step (numba: about a second from its cache; "
                               "the first use after an install compiles it, which takes a minute or two)")
    return compiled


def refuse_plant_step(node: Node, exc: Exception) -> StartupError:
    """Log why ``plant_step:=compiled`` cannot run (numba missing: ImportError; a joint the
    kernels lack: NotCovered) and return the StartupError to raise."""
    fix = " (install the extra 'fast', or set plant_step:=auto)" if isinstance(exc, ImportError) else ""
    node.get_logger().fatal(f"parameter plant_step:=compiled refused: {exc}{fix}")
    return StartupError(str(exc))


def load_testbed_for(node: Node, value: str):
    """The testbed config the parameter ``value`` names (a path or a bundled name), or log the
    reason (which key, what to write) and raise StartupError."""
    from freeflyer_control.errors import ConfigError
    from freeflyer_control.hil.config import load_testbed_config

    try:
        return load_testbed_config(value)
    except ConfigError as exc:
        node.get_logger().fatal(str(exc))
        raise StartupError(str(exc)) from None


class OrderedExecutor(SingleThreadedExecutor):
    """A single-threaded executor that serves its nodes' ready callbacks node by node in the order
    ``rank(node name)`` gives (lowest first), where SingleThreadedExecutor's order is that of a
    set: it changes from one run to the next (``Executor.get_nodes``, rclpy Jazzy)."""

    def __init__(self, rank: Callable[[str], Any], **kwargs):
        super().__init__(**kwargs)
        self._rank = rank

    def get_nodes(self) -> list[Node]:
        return sorted(super().get_nodes(), key=lambda node: self._rank(node.get_name()))


def freeze_startup_heap() -> None:
    """Move the objects start-up made (modules, models, message types, loaded kernels: ~160 000
    in a lockstep node) out of the garbage collector's sight, so no collection in the loop walks
    them. A full collection of that heap took 50 ms here (40-280 ms measured in sim_loop_node on
    issue 22's emulated slower machine, 30-100 ms in testbed_graph), longer than a period and
    than a bridge's command timeout; frozen, it walks only what the loop made since."""
    gc.collect()
    gc.freeze()


def spin_node(factory: Callable[[], Node], args=None) -> None:
    """Create the node, spin it, and shut down cleanly on Ctrl-C or an external shutdown. A
    StartupError (already logged) ends the process with exit code 1 and no traceback."""
    spin_nodes([factory], args)


def spin_nodes(factories: Sequence[Callable[[], Node]], args=None,
               prepare: Callable[[list[Node]], None] | None = None,
               finish: Callable[[list[Node]], None] | None = None,
               spin: Callable[[SingleThreadedExecutor], None] | None = None,
               rank: Callable[[str], Any] | None = None) -> None:
    """:func:`spin_node` for several nodes in one process, created in order and spun by one
    single-threaded executor (their callbacks never run concurrently). ``prepare(nodes)`` runs
    once they all exist, before the first callback; ``finish(nodes)`` after the last, before
    they are destroyed (if ``prepare`` was called); ``spin(executor)`` replaces
    ``executor.spin()`` (sim_loop_node drives its own periods), after the start-up heap is
    frozen (:func:`freeze_startup_heap`); ``rank`` orders the nodes whose
    callbacks are ready in one wake-up (:class:`OrderedExecutor`). Without ``spin``, a process of
    one node that has a ``period_loop`` (nodes.loop.PeriodLoop) runs it, the executor serving the
    node's other callbacks in a thread of its own. A StartupError of any of them (already logged)
    destroys those already created and ends the process with exit code 1."""
    rclpy.init(args=args)
    nodes: list[Node] = []
    executor = None
    failed = prepared = False
    try:
        for factory in factories:
            nodes.append(factory())
        executor = SingleThreadedExecutor() if rank is None else OrderedExecutor(rank)
        for node in nodes:
            executor.add_node(node)
        prepared = True   # finish undoes what prepare did, even if it was interrupted
        if prepare is not None:
            prepare(nodes)
        freeze_startup_heap()
        if spin is None:
            loop = getattr(nodes[0], "period_loop", None) if len(nodes) == 1 else None
            costs = [node.costs for node in nodes if hasattr(node, "costs")]
            spin_with_loop(executor, loop, costs)
        else:
            spin(executor)
    except StartupError:
        failed = True
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        # SIGINT / SIGTERM shut the context down from rclpy's signal handler; a timer callback
        # already taken by the executor then fails to publish ("publisher's context is
        # invalid"). That is the requested stop, not a fault: only re-raise while ROS is up.
        if rclpy.ok():
            raise
    finally:
        if executor is not None:
            executor.shutdown()
        if prepared and finish is not None:
            finish(nodes)
        for node in reversed(nodes):
            node.destroy_node()
        rclpy.try_shutdown()
    if failed:
        sys.exit(1)
