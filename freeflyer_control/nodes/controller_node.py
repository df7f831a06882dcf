"""controller_node: computed-torque / resolved-rate / impedance control of a free-flyer, the mode's owner.

Subscribes:
  /joint_states                sensor_msgs/JointState       measured joints (plant or testbed)
  /base/odom                   nav_msgs/Odometry            base pose and twist in world
  /ee_target/<frame>           geometry_msgs/PoseStamped    end-effector target (world)
  /ee_twist_command/<frame>    geometry_msgs/TwistStamped   end-effector velocity command (world)
  /joint_trajectory            trajectory_msgs/JointTrajectory  arm joint trajectory
  /estop                       std_msgs/Bool                True latches a stop
  /object_target               geometry_msgs/PoseStamped    held object's target pose (world), with ``object``
Publishes at ``rate``:
  /joint_effort_commands       std_msgs/Float64MultiArray   arm torques, arm joint order
  /reaction_wheels/command     std_msgs/Float64MultiArray   wheel torques
  /thrusters/command           std_msgs/Float64MultiArray   thruster forces (base_actuation=thrusters)
  /base/wrench_command         geometry_msgs/WrenchStamped  base wrench, world (base_actuation=ideal)
  /mode                        std_msgs/String, transient local: the mode in force
  /diagnostics, /freeflyer/targets (visualization_msgs/MarkerArray, 10 Hz while a target is set)
  /freeflyer/actuation         visualization_msgs/MarkerArray, 10 Hz: the plume of each firing
                               thruster (arrow in base_link from the nozzle, opposite to its force
                               on the base, THRUSTER_ARROW_M at full force) and the base attitude error (arrow along its rotation vector
                               at the base, ATTITUDE_ARROW_M_PER_RAD, with its angle in degrees)
Parameters ``mode`` and ``controller`` can be set at run time; an impossible mode is refused with
the reason. ``controller`` chooses among the laws the read-only ``controllers`` parameter loaded
at launch (names: the built-in computed_torque, resolved_rate, impedance or one an installed
package registers; or import paths ``my_lab.laws:SlidingMode``; the launch-time ``controller`` is
added to them): a parameter set over the ROS graph never imports code. Each loaded law's declared
parameters are read-only parameters ``controller_params.<law>.<name>`` (typed, with their ranges).
A law that fails (raises, non-finite or wildly over-limit commands, slower than its period)
gives zero commands (status ``fault``, its name and the reason logged and on /diagnostics) and
latches the e-stop, published on /estop so that a testbed bridge trips too; ~/reset_estop
resumes. The control laws' one-time warnings (resolved rate's "task
rows > joints", the impedance law's singular Lambda*) are logged once and listed on
/diagnostics (``controller_warnings``, ``controller_warning_<n>``). ``max_base_speed`` / ``max_base_rate`` bound a plausible base odometry (beyond
them the commands are zero, status ``implausible``). A step of the node's clock (status
``clock_step``) and a failing control law (status ``fault``) are logged once each, with the reason. With parameter ``object`` (bundled name or .yaml; empty: none) the robot holds that object and
the cooperative law (runtime.object_control) replaces ``controller``: it moves the object to
/object_target (held where it is until one arrives) and squeezes it to ``internal_force`` (N,
settable at run time); in every mode the robot's actuators allow.
With parameter ``capture_object`` (a free object, as the plant's ``object`` with ``object_free``)
the controller captures it (runtime.capture_control): it reads /object/odom, drives the object's
first grasping end-effector onto its grasp frame, calls the plant's capture service
(``capture_service``, std_srvs/Trigger) once its own check says the grasp is within tolerance,
and after a successful answer stows the target, closes the second grasp the same way and brings
the stack to rest (control.capture_mission; ``capture_approach``, ``capture_bias_momentum``,
``capture_one_arm``); /diagnostics shows ``capture_state`` (approach, stow, reach, hold, rest,
at_rest), approaching a grasp why it would be refused, and approaching the target
``object_odometry`` (ok, or why it is unusable); /capture/markers (visualization_msgs/MarkerArray,
10 Hz) the target's predicted grasp-frame path and the base's attitude change. Approaching, the
target's /object/odom is guarded like the robot's own inputs: implausible for the object's model
(speed over ``max_base_speed``, a rate its grasp frames could not have), older than
``object_odometry_timeout``, or not received since a clock step, it zeroes the commands (status
``implausible``, ``stale``, ``waiting``) and no capture is requested.
Services (std_srvs/Trigger): ~/estop latches the e-stop as a True on /estop
does (testbed_bridge calls it when it trips); ~/reset_estop releases it.

The tick timer and the subscriptions the tick reads (/joint_states, /base/odom, /estop) run on a
wait set of their own (nodes.loop): each message is taken as it arrives (its arrival time is what
the watchdog measures) and before a tick that falls due with it; rclpy's executor serves the rest
in a thread of its own. /diagnostics says where a period goes (``period_us.*``,
runtime.period_costs).
"""

from __future__ import annotations

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Point, PoseStamped, TwistStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import Marker, MarkerArray

from freeflyer_control.control.effort import BASE_ACTUATION
from freeflyer_control.control.loop import CONTROLLERS
from freeflyer_control.runtime.law_set import LawSet
from freeflyer_control.hil.schedule import deliver_pending
from freeflyer_control.nodes.loop import LoopGroup, PeriodLoop
from freeflyer_control.nodes.common import (
    COMMAND_QOS,
    LATCHED_QOS,
    ROBOT_PARAMS,
    Param,
    VectorMessage,
    declare,
    diagnostics,
    now_s,
    param_result,
    queued_inputs,
    quiet_publisher,
    robot_from_parameters,
    StartupError,
    spin_node,
    state_subscription,
)
from freeflyer_control.model.objects import load_object
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import base_position
from freeflyer_control.ros.conversions import MessageError, base_reading, finite_array, read_odometry
from freeflyer_control.ros.serialized import JointStateBytes, odometry_fields
from freeflyer_control.runtime.actuation_view import base_attitude_error, thruster_arrows
from freeflyer_control.runtime.controller_server import (
    CLOCK_SETTLE_TIME,
    DEFAULT_OBJECT_TIMEOUT,
    ControllerOutput,
    ControllerServer,
)
from freeflyer_control.runtime.lockstep import base_wrench6
from freeflyer_control.runtime.period_costs import PeriodCosts, diagnostic_values
from freeflyer_control.runtime.plausibility import DEFAULT_MAX_BASE_RATE, DEFAULT_MAX_BASE_SPEED

# rviz arrows of /freeflyer/actuation: a thruster at its maximum force, m; the base attitude
# error, m per rad (0.1 rad, 5.7 deg, is 20 cm: visible beside a base of tens of centimetres).
THRUSTER_ARROW_M = 0.25
ATTITUDE_ARROW_M_PER_RAD = 2.0

PARAMS = ROBOT_PARAMS + (
    Param("rate", 500.0, "control rate, Hz", range=(1.0, 2000.0), read_only=True),
    Param("controller", "computed_torque", "control law (settable at run time, among controllers)"),
    Param("controllers", list(CONTROLLERS), "the laws controller may name, loaded at launch: names or import "
          "paths module:Class (their parameters: controller_params.<law>.<name>)", read_only=True),
    Param("mode", "floating", "maneuvering mode (settable at run time; refused if the robot lacks the "
          "actuators)", choices=tuple(m.value for m in Mode)),
    Param("base_actuation", "thrusters", "how base wrenches are produced", choices=BASE_ACTUATION,
          read_only=True),
    Param("watchdog_timeout", 0.0, "input age that stops the robot, s (0: 1.5 control periods)",
          range=(0.0, 1.0), read_only=True),
    Param("max_base_speed", DEFAULT_MAX_BASE_SPEED, "base odometry faster than this is implausible: refused, "
          "commands zero, m/s", range=(0.01, 1000.0), read_only=True),
    Param("max_base_rate", DEFAULT_MAX_BASE_RATE, "base odometry turning faster than this is implausible: "
          "refused, commands zero, rad/s", range=(0.01, 1000.0), read_only=True),
    Param("diagnostics_rate", 2.0, "diagnostics publication rate, Hz", range=(0.1, 50.0), read_only=True),
    Param("object", "", "the object the robot holds: bundled name or object .yaml (empty: none); the "
          "cooperative law then replaces controller", read_only=True),
    Param("capture_object", "", "a free object to capture: bundled name or object .yaml (empty: none); "
          "the plant must simulate it with object_free", read_only=True),
    Param("capture_service", "/plant_node/capture", "the plant's capture service (std_srvs/Trigger)",
          read_only=True),
    Param("object_odometry_timeout", DEFAULT_OBJECT_TIMEOUT, "with capture_object: approaching, object odometry "
          "older than this zeroes the commands and no capture is requested, s", range=(0.001, 1.0), read_only=True),
    Param("capture_approach", "naive", "with capture_object: the hand through the mode's GJM (naive) or inside "
          "the reaction null space, the base undisturbed (reactionless)", choices=("naive", "reactionless"),
          read_only=True),
    Param("capture_bias_momentum", False, "with capture_object, mode rotation-floating: load the wheels with the "
          "momentum that cancels the target's during the approach (thrusters)", read_only=True),
    Param("capture_one_arm", False, "with capture_object: the first hand only (no second grasp)", read_only=True),
    Param("internal_force", 3.5, "squeeze setpoint on the held object: the force each hand presses it with, N "
          "(settable at run time)",
          range=(-100.0, 100.0)),
)


class ControllerNode(Node):
    """Args:
        lockstep: sim_loop_node drives this node (and a plant_node in the same process): no tick
            timer and no /joint_states, /base/odom subscriptions, the state comes from the plant.
    """

    def __init__(self, lockstep: bool = False):
        super().__init__("controller_node")
        p = declare(self, PARAMS)
        self.ff = robot_from_parameters(p)
        laws = self._load_laws(p)
        self.server = ControllerServer(self.ff, rate=p["rate"], controller=p["controller"], laws=laws, mode=p["mode"],
                                       watchdog_timeout=p["watchdog_timeout"] or None,
                                       base_actuation=p["base_actuation"], max_base_speed=p["max_base_speed"],
                                       max_base_rate=p["max_base_rate"],
                                       obj=load_object(p["object"]) if p["object"] else None,
                                       internal_force=p["internal_force"],
                                       capture_obj=load_object(p["capture_object"]) if p["capture_object"] else None,
                                       capture_options={"approach": p["capture_approach"],
                                                        "bias": p["capture_bias_momentum"],
                                                        "both_arms": not p["capture_one_arm"]},
                                       object_timeout=p["object_odometry_timeout"])
        self.ideal_base = p["base_actuation"] == "ideal"
        self.pub_arm = quiet_publisher(self, Float64MultiArray, "joint_effort_commands", COMMAND_QOS)
        self.pub_wheels = quiet_publisher(self, Float64MultiArray, "reaction_wheels/command", COMMAND_QOS)
        self.pub_thrust = quiet_publisher(self, Float64MultiArray, "thrusters/command", COMMAND_QOS)
        self.pub_wrench = quiet_publisher(self, WrenchStamped, "base/wrench_command", COMMAND_QOS)
        self.pub_mode = quiet_publisher(self, String, "mode", LATCHED_QOS)
        self.pub_diag = quiet_publisher(self, DiagnosticArray, "diagnostics", 10)
        self.pub_targets = quiet_publisher(self, MarkerArray, "freeflyer/targets", COMMAND_QOS)
        self.pub_actuation = quiet_publisher(self, MarkerArray, "freeflyer/actuation", COMMAND_QOS)
        self.pub_capture = quiet_publisher(self, MarkerArray, "capture/markers", COMMAND_QOS) \
            if p["capture_object"] else None
        self.msg_arm, self.msg_wheels, self.msg_thrust = (VectorMessage(label)
                                                          for label in ("arm_joints", "wheels", "thrusters"))
        self.pub_estop = quiet_publisher(self, Bool, "estop", COMMAND_QOS)
        self.costs = PeriodCosts(("messages_in", "states_in", "tick", "command_msgs", "command_publish"))
        self.reports_costs = True
        self.create_subscription(JointTrajectory, "joint_trajectory", self._on_trajectory, COMMAND_QOS)
        group = None if lockstep else LoopGroup()   # the tick and what it reads (nodes.loop)
        # Reliable and volatile: matches every reliable publisher, volatile ones (`ros2 topic
        # pub`, joystick nodes) as well as transient-local ones. A transient-local subscription
        # would be QoS-incompatible with a volatile publisher, and the e-stop would never arrive.
        estop = self.create_subscription(Bool, "estop", self._on_estop, COMMAND_QOS, callback_group=group)
        # What the tick's watchdog reads, taken before each tick (hil.schedule.deliver_pending).
        # The target's odometry, with capture_object: an input the tick acts on, as the robot's.
        object_odom = state_subscription(self, Odometry, "object/odom", self._on_object_odom, group) \
            if p["capture_object"] else None
        inputs = () if lockstep else (
            state_subscription(self, JointState, "joint_states", self._on_joints, group, raw=True),
            state_subscription(self, Odometry, "base/odom", self._on_odom, group, raw=True), estop,
            *([object_odom] if object_odom is not None else []))
        self.joint_state_bytes = JointStateBytes()
        self.tick_inputs = queued_inputs(*inputs)
        if p["object"]:
            self.create_subscription(PoseStamped, "object_target", self._on_object_target, COMMAND_QOS)
        self.capture_client = None
        self.capture_future = None  # the capture request in flight: one at a time
        if p["capture_object"]:
            self.capture_client = self.create_client(Trigger, p["capture_service"])
        for frame in self.ff.end_effectors:
            self.create_subscription(PoseStamped, f"ee_target/{frame}",
                                     lambda m, f=frame: self._on_target(f, m), COMMAND_QOS)
            self.create_subscription(TwistStamped, f"ee_twist_command/{frame}",
                                     lambda m, f=frame: self._on_twist(f, m), COMMAND_QOS)
        self.create_service(Trigger, "~/estop", self._on_estop_service)
        self.create_service(Trigger, "~/reset_estop", self._on_reset_estop)
        self.add_on_set_parameters_callback(self._on_params)
        self.period_loop: PeriodLoop | None = None   # what spin_node runs (nodes.loop); None in lockstep
        if not lockstep:
            self.period_loop = PeriodLoop(self.create_timer(1.0 / p["rate"], self._tick, callback_group=group),
                                          [(sub, sub.callback) for sub in inputs], group, self.costs)
        self.create_timer(1.0 / p["diagnostics_rate"], self._diagnose)
        self.last = None
        self.logged_steps = self.logged_faults = 0   # server counters already logged
        self.markers_every = max(1, round(p["rate"] / 10.0))   # ticks between target markers
        self.next_markers_tick = 0
        self.pub_mode.publish(String(data=self.server.mode.value))
        law = f"cooperative law holding '{p['object']}'" if p["object"] else p["controller"]
        if p["capture_object"]:
            law = f"capture of '{p['capture_object']}' (approach, then rest)"
        self.get_logger().info(f"controlling {self.ff.name}: {law}, mode {p['mode']}, "
                               f"{p['rate']:g} Hz")

    def _load_laws(self, p) -> dict:
        """The laws of ``controllers`` (and ``controller``), each with its declared parameters
        under controller_params.<law>.<name>; a law that cannot be loaded or a parameter it
        refuses ends the node (exit code 1) with the message."""
        try:
            self.law_set = law_set = LawSet.load(p["controllers"], p["controller"])
            p["controller"] = law_set.name_of(p["controller"])
            values = declare(self, [Param(name, decl.default, f"{decl.description} ({decl.accepted()})",
                                          range=decl.range, choices=decl.choices, read_only=True)
                                    for name, decl in law_set.declarations()])
            return law_set.build(values)
        except ValueError as exc:
            self.get_logger().fatal(" ".join(str(exc).split()))
            raise StartupError(str(exc)) from None

    # --- inputs -------------------------------------------------------------------------------
    def _on_joints(self, data: bytes) -> None:
        """/joint_states, serialized (read in place: ros.serialized)."""
        self.costs.begin()
        try:
            names, positions, velocities = self.joint_state_bytes.read(data)
        except MessageError as exc:
            self.server.record_error(exc)
        else:
            self.server.on_joint_state(names, positions, velocities, now_s(self))
        self.costs.mark("states_in")

    def _on_odom(self, data: bytes) -> None:
        """/base/odom, serialized (read in place: ros.serialized)."""
        self.costs.begin()
        try:
            reading = base_reading(*odometry_fields(data))
        except MessageError as exc:
            reading = exc
        self.server.on_base_odometry(reading, now_s(self))
        self.costs.mark("states_in")

    def _on_object_odom(self, msg: Odometry) -> None:
        try:
            reading = read_odometry(msg)
        except MessageError as exc:
            reading = exc
        self.server.on_object_odometry(reading, now_s(self))

    def _request_capture(self) -> None:
        """Ask the plant to close the grasp (asynchronously: the control timer must not block)."""
        if self.capture_future is not None or not self.capture_client.service_is_ready():
            return
        self.capture_future = self.capture_client.call_async(Trigger.Request())
        self.capture_future.add_done_callback(self._on_capture_answer)

    def _on_capture_answer(self, future) -> None:
        self.capture_future = None
        answer = future.result()
        if answer is None:
            self.get_logger().warning("capture service gave no answer; retrying", throttle_duration_sec=1.0)
        elif answer.success:
            self.server.captured()
            self.get_logger().info(f"{answer.message}; bringing the combined system to rest")
        else:  # e.g. the relative motion changed between our check and the plant's: approach on
            self.get_logger().warning(answer.message, throttle_duration_sec=1.0)

    def _refuse(self, what: str, exc: Exception) -> None:
        self.server.record_error(exc if isinstance(exc, MessageError) else MessageError("reference", str(exc)))
        self.get_logger().warning(f"{what} refused: {exc}", throttle_duration_sec=1.0)

    def _on_target(self, frame: str, msg: PoseStamped) -> None:
        try:
            self._require_world(msg.header.frame_id)
            p, o = msg.pose.position, msg.pose.orientation
            quat = finite_array([o.x, o.y, o.z, o.w], "target orientation", 4)
            orientation = None if not np.any(quat) else quat / np.linalg.norm(quat)  # all-zero: position only
            self.server.set_ee_target(frame, finite_array([p.x, p.y, p.z], "target position", 3), orientation)
        except (MessageError, ValueError) as exc:
            self._refuse(f"ee_target/{frame}", exc)

    def _on_object_target(self, msg: PoseStamped) -> None:
        try:
            self._require_world(msg.header.frame_id)
            p, o = msg.pose.position, msg.pose.orientation
            self.server.set_object_target([p.x, p.y, p.z], [o.x, o.y, o.z, o.w])
        except (MessageError, ValueError) as exc:
            self._refuse("object_target", exc)

    def _on_twist(self, frame: str, msg: TwistStamped) -> None:
        try:
            self._require_world(msg.header.frame_id)
            lin, ang = msg.twist.linear, msg.twist.angular
            self.server.set_ee_twist(frame, now_s(self), finite_array([lin.x, lin.y, lin.z], "twist", 3),
                                     finite_array([ang.x, ang.y, ang.z], "twist", 3))
        except (MessageError, ValueError) as exc:
            self._refuse(f"ee_twist_command/{frame}", exc)

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        try:
            points = [(pt.time_from_start.sec + 1e-9 * pt.time_from_start.nanosec,
                       finite_array(pt.positions, "trajectory positions", len(msg.joint_names)),
                       finite_array(pt.velocities, "trajectory velocities") if len(pt.velocities) else [])
                      for pt in msg.points]
            self.server.set_joint_trajectory(msg.joint_names, points, now_s(self))
        except (MessageError, ValueError) as exc:
            self._refuse("joint_trajectory", exc)

    @staticmethod
    def _require_world(frame_id: str) -> None:
        if frame_id not in ("", "world"):
            raise ValueError(f"frame '{frame_id}' not supported: give references in world")

    def _on_estop(self, msg: Bool) -> None:
        if msg.data:
            self.server.estop(now_s(self), "e-stop requested on /estop")
            self.get_logger().error("E-STOP: zero torques, thrusters off (call ~/reset_estop to resume)")

    def _on_estop_service(self, request, response):
        response.success = True
        if self.server.estopped:  # keep the first reason (diagnostics show what stopped it)
            response.message = f"already e-stopped ({self.server.estop_reason})"
            return response
        self.server.estop(now_s(self), "e-stop requested through ~/estop")
        self.get_logger().error("E-STOP (service ~/estop): zero torques, thrusters off "
                                "(call ~/reset_estop to resume)")
        response.message = "e-stop latched: zero torques, thrusters off until ~/reset_estop"
        return response

    def _on_reset_estop(self, request, response):
        response.success, response.message = self.server.reset_estop()
        self.get_logger().info(response.message)
        return response

    def _on_params(self, params: list[Parameter]):
        for prm in params:
            if prm.name == "mode":
                reason = self.server.validate_mode(prm.value)
                if reason:
                    self.get_logger().warning(f"mode '{prm.value}' refused: {reason}")
                    return param_result(reason)
            elif prm.name == "internal_force":  # rclpy has checked the range
                self.server.set_internal_force(float(prm.value))
            elif prm.name == "controller":
                try:
                    self.server.set_controller(self.law_set.name_of(prm.value))
                except ValueError as exc:
                    return param_result(str(exc))
        for prm in params:
            if prm.name == "mode" and Mode.parse(prm.value) is not self.server.mode:
                switch = self.server.request_mode(prm.value, now_s(self), "parameter")
                if switch.accepted:
                    self.pub_mode.publish(String(data=self.server.mode.value))
                    self.get_logger().info(f"mode {switch.from_mode.value} -> {switch.to_mode.value}")
        return param_result(None)

    # --- the tick -----------------------------------------------------------------------------
    def _tick(self) -> None:
        deliver_pending(self.tick_inputs)   # the newest state, even if it arrived with this tick's timer
        costs = self.costs
        costs.begin()
        out = self.server.tick(now_s(self))
        costs.mark("tick")
        self.ticked(out)
        costs.end_period()

    def ticked(self, out: ControllerOutput) -> None:
        """Publish a tick's commands (here or in sim_loop_node), log what changed, keep ``out``
        for the diagnostics. Marks the costs' stages ``command_msgs`` and ``command_publish``."""
        act = out.actuation
        arm = self.msg_arm.fill(act.arm_torques)
        wheels = self.msg_wheels.fill(act.wheel_torques) if act.wheel_torques.size else None
        thrust = self.msg_thrust.fill(act.thruster_forces) if act.thruster_forces.size else None
        wrench = self._wrench(act.base_wrench_world) if self.ideal_base else None
        self.costs.mark("command_msgs")
        self.pub_arm.publish(arm)
        if wheels is not None:
            self.pub_wheels.publish(wheels)
        if thrust is not None:
            self.pub_thrust.publish(thrust)
        if wrench is not None:
            self.pub_wrench.publish(wrench)
        if self.capture_client is not None and self.server.capture_ready:
            self._request_capture()
        self._log_events()
        for warning in self.server.new_warnings():
            self.get_logger().warning(warning)
        if out.status != "ok" and (self.last is None or self.last.status != out.status):
            # Throttled: inputs that flap around the watchdog timeout would flood the log at the
            # control rate; /diagnostics counts every zeroed tick.
            self.get_logger().warning(f"commands zeroed ({out.status}): {out.reason}",
                                      throttle_duration_sec=1.0)
        if self.server.stats.ticks >= self.next_markers_tick:
            # For rviz: 10 Hz is plenty, and a MarkerArray per tick costs the loop at 500 Hz.
            self.next_markers_tick = self.server.stats.ticks + self.markers_every
            if out.info is not None and out.info.tasks:
                self.pub_targets.publish(self._target_markers(out.info.tasks))
            self.pub_actuation.publish(self._actuation_markers(out))
            if self.pub_capture is not None and self.server.state is not None:
                self.pub_capture.publish(self._capture_markers())
        self.last = out
        self.costs.mark("command_publish")   # with the logging and the 10 Hz markers

    def _log_events(self) -> None:
        """Every clock step, and the first fault of a run of them, once and unthrottled: the
        status-change warning below is throttled and would hide one that follows a stale spell."""
        stats = self.server.stats
        if stats.clock_steps != self.logged_steps:
            self.get_logger().error(f"{stats.last_clock_step}: commands zero until the inputs have been fresh "
                                    f"for {CLOCK_SETTLE_TIME} s on the new clock, then holding the current pose")
            self.logged_steps = stats.clock_steps
        if stats.faults != self.logged_faults:
            if self.last is None or self.last.status != "fault":
                self.get_logger().error(f"commands zeroed (fault): {stats.last_fault}; e-stop latched and "
                                        "published on /estop (call ~/reset_estop to resume)")
            self.logged_faults = stats.faults
            if not self.server.estopped:  # a failed law is not trusted again until someone resets
                self.server.estop(now_s(self), f"fault: {stats.last_fault}")
                self.pub_estop.publish(Bool(data=True))

    def _wrench(self, w: np.ndarray) -> WrenchStamped:
        msg = WrenchStamped()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = "world"
        f, t = msg.wrench.force, msg.wrench.torque
        f.x, f.y, f.z, t.x, t.y, t.z = base_wrench6(w).tolist()
        return msg

    def _target_markers(self, tasks) -> MarkerArray:
        markers = []
        for i, task in enumerate(tasks):
            mk = Marker()
            mk.header.frame_id, mk.header.stamp = "world", self.get_clock().now().to_msg()
            mk.ns, mk.id, mk.type, mk.action = "ee_targets", i, Marker.SPHERE, Marker.ADD
            mk.scale.x = mk.scale.y = mk.scale.z = 0.04
            mk.color.g, mk.color.a = 1.0, 0.8
            mk.pose.orientation.w = 1.0
            mk.pose.position = Point(x=float(task.position[0]), y=float(task.position[1]), z=float(task.position[2]))
            markers.append(mk)
        return MarkerArray(markers=markers)

    def _actuation_markers(self, out: ControllerOutput) -> MarkerArray:
        """The thrusters firing now and the base attitude error (runtime.actuation_view)."""
        stamp = self.get_clock().now().to_msg()
        clear = Marker()
        clear.header.stamp, clear.action = stamp, Marker.DELETEALL  # thrusters that stopped
        markers = [clear]

        def arrow(ns, ident, frame, start, end, rgba, shaft):
            mk = Marker()
            mk.header.frame_id, mk.header.stamp = frame, stamp
            mk.ns, mk.id, mk.type, mk.action = ns, ident, Marker.ARROW, Marker.ADD
            mk.pose.orientation.w = 1.0
            mk.points = [Point(x=float(start[0]), y=float(start[1]), z=float(start[2])),
                         Point(x=float(end[0]), y=float(end[1]), z=float(end[2]))]
            mk.scale.x, mk.scale.y, mk.scale.z = shaft, 2.0 * shaft, 3.0 * shaft
            mk.color.r, mk.color.g, mk.color.b, mk.color.a = rgba
            return mk

        for i, a in enumerate(thruster_arrows(self.ff, out.actuation.thruster_forces, THRUSTER_ARROW_M)):
            markers.append(arrow("thrusters", i, self.ff.base_link, a.start, a.end, (1.0, 0.25, 0.0, 1.0), 0.012))
        state, info = self.server.state, out.info
        if state is not None and info is not None and info.base_reference is not None:
            error = base_attitude_error(self.ff, state.q, info.base_reference)
            origin = base_position(self.ff, state.q)
            markers.append(arrow("attitude_error", 0, "world", origin, origin + ATTITUDE_ARROW_M_PER_RAD * error,
                                 (0.9, 0.1, 0.6, 1.0), 0.015))
            text = Marker()
            text.header.frame_id, text.header.stamp = "world", stamp
            text.ns, text.id, text.type, text.action = "attitude_error", 1, Marker.TEXT_VIEW_FACING, Marker.ADD
            text.pose.position = Point(x=float(origin[0]), y=float(origin[1]), z=float(origin[2]) + 0.5)
            text.pose.orientation.w = 1.0
            text.scale.z = 0.08
            # A space's width (rviz >= Jazzy, ros2/rviz#1261): left at 0, rviz makes it as wide as
            # a 1 m tall letter, and the words land half a metre apart around the base.
            text.scale.x = 0.4 * text.scale.z
            text.color.r, text.color.g, text.color.b, text.color.a = 0.9, 0.1, 0.6, 1.0
            text.text = f"attitude error {np.degrees(np.linalg.norm(error)):.2f} deg"
            markers.append(text)
        return MarkerArray(markers=markers)

    def _capture_markers(self) -> MarkerArray:
        """The target's predicted grasp-frame path (a line, while approaching; deleted after) and the
        base's attitude change since the start (an arrow along its rotation vector, 1 m per rad,
        and its size in degrees as text), world frame."""
        capture, state = self.server.capture, self.server.state
        stamp = self.get_clock().now().to_msg()

        def marker(ns, kind, rgba):
            mk = Marker()
            mk.header.frame_id, mk.header.stamp = "world", stamp
            mk.ns, mk.id, mk.type, mk.action = ns, 0, kind, Marker.ADD
            mk.pose.orientation.w = 1.0
            mk.color.r, mk.color.g, mk.color.b, mk.color.a = rgba
            return mk

        path = capture.predicted_grasp_path()
        line = marker("predicted_grasp_path", Marker.LINE_STRIP, (0.2, 0.9, 0.9, 0.9))
        line.scale.x = 0.01
        line.points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])) for p in path]
        if not len(path):
            line.action = Marker.DELETE
        error = capture.base_attitude_error(state)
        base = state.q[:3] if self.ff.base == "spatial" else np.array([state.q[0], state.q[1], 0.0])
        arrow = marker("base_attitude_error", Marker.ARROW, (0.9, 0.2, 0.9, 0.9))
        arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.02, 0.04, 0.06
        arrow.points = [Point(x=float(base[0]), y=float(base[1]), z=float(base[2]) + 0.5),
                        Point(x=float(base[0] + error[0]), y=float(base[1] + error[1]),
                              z=float(base[2] + 0.5 + error[2]))]
        text = marker("base_attitude_error", Marker.TEXT_VIEW_FACING, (1.0, 1.0, 1.0, 0.9))
        text.id = 1
        text.scale.z = 0.08
        text.scale.x = 0.4 * text.scale.z  # a space's width, as the attitude error's text
        text.pose.position = Point(x=float(base[0]), y=float(base[1]), z=float(base[2]) + 0.65)
        text.text = f"base attitude change {np.degrees(np.linalg.norm(error)):.3g} deg ({capture.phase})"
        return MarkerArray(markers=[line, arrow, text])

    def _diagnose(self) -> None:
        s = self.server
        status = self.last.status if self.last else "waiting"
        timing = s.loop.guard.timing
        values = {"mode": s.mode.value, "controller": s.loop.controller, "status": status,
                  "law_overruns": timing.overruns, "law_longest_tick_ms": f"{timing.longest_s * 1e3:.3g}",
                  "ticks": s.stats.ticks, "zero_command_ticks": s.stats.zero_ticks,
                  "refused_messages": s.stats.errors.total, "last_refusal": s.stats.errors.last,
                  "trips": len(s.stats.trips), "clock_steps": s.stats.clock_steps,
                  "last_clock_step": s.stats.last_clock_step or "-", "faults": s.stats.faults,
                  "last_fault": s.stats.last_fault or "-"}
        for kind, count in sorted(s.stats.errors.counts.items()):
            values[f"refused_{kind}"] = count
        values["controller_warnings"] = len(s.warnings)
        for i, warning in enumerate(s.warnings, 1):
            values[f"controller_warning_{i}"] = warning
        if self.last is not None and self.last.info is not None and self.last.info.resolved_rate is not None:
            values["sigma_min"] = f"{self.last.info.resolved_rate.sigma_min:.4g}"
        values.update(s.capture_diagnostics())
        if self.reports_costs:   # (in lockstep the plant reports the whole period)
            values.update(diagnostic_values(self.costs.window()))
        level = "ok" if status == "ok" else ("warn" if status == "waiting" else "error")
        message = status if status == "ok" else f"{status}: {self.last.reason if self.last else ''}"
        self.pub_diag.publish(diagnostics(self, "freeflyer: controller", level, message, values))


def main(args=None) -> None:
    spin_node(ControllerNode, args)


if __name__ == "__main__":
    main()
