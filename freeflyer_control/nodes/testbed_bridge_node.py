"""testbed_bridge: the controller's topics on one side, an air-bearing testbed's hardware on the other.

A thin shell around :class:`freeflyer_control.hil.bridge.TestbedBridge`, wired the way
``freeflyer_control.hil.runner`` wires it. The testbed config (parameter ``testbed_config``, e.g.
``config/testbeds/planar_4link.yaml``) names the hardware topics and says how to read and command
them; it is checked at start-up, and a config error stops the node with the message saying what to
fix (exit code 1).

Subscribes, hardware (topics from the testbed config, sensor-data QoS):
  <capture.topic>              geometry_msgs/PoseStamped    marker-body pose, capture frame and units
  <encoders.topic>             sensor_msgs/JointState       encoder readings, hardware names
controller (as plant_node does):
  /joint_effort_commands       std_msgs/Float64MultiArray   arm torques, arm joint order
  /reaction_wheels/command     std_msgs/Float64MultiArray   wheel torques
  /base/wrench_command         geometry_msgs/WrenchStamped  base wrench, world (planar: fx, fy, mz)
  /estop                       std_msgs/Bool                True trips the bridge (latched)
Publishes at the config's ``rate`` (the bridge arms once capture and encoders have been valid for
0.25 s; until the controller's first command it forwards zero commands, and from then on a
silent controller trips it):
  /joint_states, /base/odom, TF world -> base_link   the estimates, URDF names, world axes
  <actuators.joint_efforts.topic>  std_msgs/Float64MultiArray  efforts, encoder-channel order, hardware signs
  <actuators.wheels.topic>         std_msgs/Float64MultiArray  wheel torques or speed set-points
  <actuators.thrusters.topic>      std_msgs/Float64MultiArray (duty) or std_msgs/UInt8MultiArray (bits),
                                   valve channel order; once per PWM period, and at once on a trip
  /diagnostics                     ok active, warn waiting, error tripped (message: the trip reason)
Service ~/reset (std_srvs/Trigger): clears a trip if its cause is gone (else says what is still
wrong). Every trip calls ``<controller_node>/estop`` and a successful reset
``<controller_node>/reset_estop`` (std_srvs/Trigger, asynchronously).
"""

from __future__ import annotations

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray, MultiArrayDimension, UInt8MultiArray
from std_srvs.srv import Trigger
from tf2_ros import TransformBroadcaster

from freeflyer_control.hil.bridge import TestbedBridge
from freeflyer_control.hil.schedule import deliver_pending
from freeflyer_control.nodes.common import (
    COMMAND_QOS,
    STATE_PUB_QOS,
    STATE_SUB_QOS,
    Param,
    StartupError,
    declare,
    diagnostics,
    load_testbed_for,
    now_s,
    queued_inputs,
    spin_node,
    state_messages,
    vector_msg,
)
from freeflyer_control.physics.actuators import Actuation
from freeflyer_control.ros.conversions import (
    ErrorCounter,
    MessageError,
    StateFields,
    finite_array,
)

PARAMS = (
    Param("testbed_config", "", "testbed config .yaml: a path, or a name or path relative to the package's "
          "config/testbeds/ (e.g. planar_4link)", read_only=True),
    Param("controller_node", "controller_node", "controller node whose ~/estop and ~/reset_estop services "
          "the bridge calls (relative names resolve in this node's namespace; empty: none)", read_only=True),
    Param("diagnostics_rate", 2.0, "diagnostics publication rate, Hz", range=(0.1, 50.0), read_only=True),
)


def stamp_seconds(stamp) -> float:
    return stamp.sec + 1e-9 * stamp.nanosec


# --- the node ------------------------------------------------------------------------------------
class TestbedBridgeNode(Node):
    __test__ = False

    def __init__(self):
        super().__init__("testbed_bridge")
        p = declare(self, PARAMS)
        try:
            self.config = load_testbed_for(self, p["testbed_config"])
        except StartupError:
            self.destroy_node()
            raise
        cfg = self.config
        self.ff = ff = cfg.robot
        self.bridge = TestbedBridge(cfg)
        self.period = cfg.period
        n_arm, n_wheels = len(ff.arm_joint_names), len(ff.wheel_joint_names)
        self._arm = np.zeros(n_arm)
        self._wheels = np.zeros(n_wheels)
        self._wrench = np.zeros(ff.nb)
        self._command_arrival = None   # node clock, s, of the newest command not yet forwarded
        self._estopped_for = None      # the trip the controller was e-stopped for
        self._logged_trips = 0         # bridge.latch.history entries logged so far
        self._logged_steps = 0         # bridge.stats.clock_steps logged so far
        self._last = None
        self.overruns = 0
        self.refused_commands = ErrorCounter()   # controller messages refused (sensor samples: bridge.stats)

        act = cfg.actuators
        self.pub_js = self.create_publisher(JointState, "joint_states", STATE_PUB_QOS)
        self.pub_odom = self.create_publisher(Odometry, "base/odom", STATE_PUB_QOS)
        self.pub_diag = self.create_publisher(DiagnosticArray, "diagnostics", 10)
        self.tf = TransformBroadcaster(self)
        self.pub_efforts = self.create_publisher(Float64MultiArray, act.joint_efforts_topic, COMMAND_QOS)
        self.pub_wheels = (self.create_publisher(Float64MultiArray, act.wheels_topic, COMMAND_QOS)
                           if n_wheels else None)
        self.pub_valves = None
        if act.thrusters is not None:
            kind = Float64MultiArray if act.thrusters.command == "duty" else UInt8MultiArray
            self.pub_valves = self.create_publisher(kind, act.thrusters.topic, COMMAND_QOS)

        # Every input the tick's watchdogs read, taken before each tick (hil.schedule.deliver_pending).
        self.tick_inputs = queued_inputs(
            self.create_subscription(PoseStamped, cfg.capture.topic, self._on_capture, STATE_SUB_QOS),
            self.create_subscription(JointState, cfg.encoders.topic, self._on_encoders, STATE_SUB_QOS),
            self.create_subscription(Float64MultiArray, "joint_effort_commands",
                                     lambda m: self._on_command("arm", m.data), COMMAND_QOS),
            self.create_subscription(Float64MultiArray, "reaction_wheels/command",
                                     lambda m: self._on_command("wheels", m.data), COMMAND_QOS),
            self.create_subscription(WrenchStamped, "base/wrench_command", self._on_wrench, COMMAND_QOS),
            # Reliable and volatile, as controller_node's: matches `ros2 topic pub` and latched publishers.
            self.create_subscription(Bool, "estop", self._on_estop, COMMAND_QOS))
        self.create_service(Trigger, "~/reset", self._on_reset)
        controller = p["controller_node"].strip().rstrip("/")
        self.controller = controller
        self.cli_estop = self.create_client(Trigger, f"{controller}/estop") if controller else None
        self.cli_reset = self.create_client(Trigger, f"{controller}/reset_estop") if controller else None
        self.tick_timer = self.create_timer(self.period, self._tick)
        self.create_timer(1.0 / p["diagnostics_rate"], self._diagnose)
        self.get_logger().info(
            f"bridging {ff.name} on testbed config {cfg.source} at {cfg.rate:g} Hz: capture "
            f"'{cfg.capture.topic}', encoders '{cfg.encoders.topic}', efforts '{act.joint_efforts_topic}'"
            + (f", wheels '{act.wheels_topic}'" if n_wheels else "")
            + (f", valves '{act.thrusters.topic}' ({act.thrusters.command})" if act.thrusters else ""))

    # --- hardware inputs -------------------------------------------------------------------------
    def _on_capture(self, msg: PoseStamped) -> None:
        p, o = msg.pose.position, msg.pose.orientation
        self.bridge.on_capture(stamp_seconds(msg.header.stamp), (p.x, p.y, p.z), (o.x, o.y, o.z, o.w), now_s(self))

    def _on_encoders(self, msg: JointState) -> None:
        self.bridge.on_encoders(stamp_seconds(msg.header.stamp), msg.name, msg.position, msg.velocity,
                                now_s(self))

    # --- controller inputs -----------------------------------------------------------------------
    def _refuse(self, exc: MessageError) -> None:
        self.refused_commands.record(exc)
        self.get_logger().warning(f"controller command refused: {exc}", throttle_duration_sec=1.0)

    def _on_command(self, which: str, data) -> None:
        try:
            if which == "arm":
                self._arm = finite_array(data, "joint_effort_commands", self._arm.size)
            else:
                self._wheels = finite_array(data, "reaction_wheels/command", self._wheels.size)
        except MessageError as exc:
            self._refuse(exc)
            return
        self._forward()

    def _on_wrench(self, msg: WrenchStamped) -> None:
        if msg.header.frame_id not in ("", "world"):
            self._refuse(MessageError("frame", f"base wrench in frame '{msg.header.frame_id}': give it in world"))
            return
        f, t = msg.wrench.force, msg.wrench.torque
        full = (f.x, f.y, f.z, t.x, t.y, t.z)
        try:
            self._wrench = finite_array((full[0], full[1], full[5]) if self.ff.base == "planar" else full,
                                        "base/wrench_command", self.ff.nb)
        except MessageError as exc:
            self._refuse(exc)
            return
        self._forward()

    def _forward(self) -> None:
        """Note the controller's newest commands; the next tick hands them to the bridge whole.

        The three topics of one controller tick arrive one after the other, well before the
        bridge's next tick: one ``on_controller`` per tick with the newest of each (and the newest
        arrival time for its watchdog) is what the in-process runner does, at a third of the cost.
        """
        self._command_arrival = now_s(self)

    def _on_estop(self, msg: Bool) -> None:
        if msg.data:
            self.bridge.estop(now_s(self), "e-stop requested on /estop")

    # --- the tick --------------------------------------------------------------------------------
    def _tick(self) -> None:
        deliver_pending(self.tick_inputs)   # inputs that arrived with this tick's timer count as arrived
        stamp = self.get_clock().now()
        now = stamp.nanoseconds * 1e-9
        start = time.perf_counter()
        if self._command_arrival is not None:
            self.bridge.on_controller(Actuation(self._arm, self._wheels, np.zeros(0), self._wrench),
                                      self._command_arrival)
            self._command_arrival = None
        out = self.bridge.tick(now)
        self._publish_command(out.command)
        self._report_clock_steps()
        self._report_trips(out)
        if out.joints is not None and out.base is not None:
            fields = StateFields(tuple(self.ff.joint_names), out.joints.positions, out.joints.velocities, out.base)
            js, odom, tf = state_messages(self, fields, self.ff.base_link)
            js.header.stamp = odom.header.stamp = tf.header.stamp = stamp.to_msg()  # the estimates' time
            self.pub_js.publish(js)
            self.pub_odom.publish(odom)
            self.tf.sendTransform(tf)
        if self._last is not None and out.status == "active" and self._last.status != "active":
            self.get_logger().info("testbed active: forwarding the controller's commands")
        self._last = out
        if time.perf_counter() - start > self.period:
            self.overruns += 1

    def _publish_command(self, cmd) -> None:
        self.pub_efforts.publish(vector_msg(cmd.joint_efforts, "joint_efforts"))
        if self.pub_wheels is not None:
            self.pub_wheels.publish(vector_msg(cmd.wheels, "wheels"))
        if cmd.thrusters is not None and self.pub_valves is not None:
            if self.config.actuators.thrusters.command == "duty":
                self.pub_valves.publish(vector_msg(cmd.thrusters, "valves"))
            else:
                msg = UInt8MultiArray()
                n = len(cmd.thrusters)
                msg.layout.dim = [MultiArrayDimension(label="valves", size=n, stride=n)]
                msg.data = [round(b) for b in cmd.thrusters]
                self.pub_valves.publish(msg)

    def _report_clock_steps(self) -> None:
        """A clock step restarts the bridge from scratch; armed, it also trips (logged below)."""
        stats = self.bridge.stats
        if stats.clock_steps != self._logged_steps:
            self._logged_steps = stats.clock_steps
            self.get_logger().warning(f"{stats.last_clock_step}: watchdogs, estimators and valve timing restarted "
                                      "on the new clock")

    def _report_trips(self, out) -> None:
        """Log every trip once (the latch records each kind once until it is cleared): the one
        that latched, and any other recorded while tripped."""
        history = self.bridge.latch.history
        for trip in history[self._logged_trips:]:
            if trip is out.trip or trip is self.bridge.latch.active:
                self.get_logger().error(f"TRIP {trip.kind} ({trip.reaction}): {trip.reason}. "
                                        "Call ~/reset once the cause is gone")
            else:
                self.get_logger().error(f"also tripped while tripped: {trip.kind}: {trip.reason}")
        self._logged_trips = len(history)
        if out.trip is not None and out.trip is not self._estopped_for:
            if self.cli_estop is None:
                self._estopped_for = out.trip
            elif self.cli_estop.service_is_ready():
                self.cli_estop.call_async(Trigger.Request()).add_done_callback(
                    lambda f: self._service_done(f, "estop"))
                self._estopped_for = out.trip
            else:  # retried every tick until the controller is there
                self.get_logger().error(
                    f"cannot e-stop the controller: service {self.cli_estop.srv_name} not available "
                    "(the bridge's own commands are safe; without a controller, set controller_node:=''"
                    ")", throttle_duration_sec=5.0)

    def _service_done(self, future, what: str) -> None:
        try:
            result = future.result()
        except Exception as exc:  # noqa: BLE001  the call failed (controller gone): say so
            self.get_logger().error(f"{self.controller}/{what} failed: {exc}")
            return
        if result is None or not result.success:
            self.get_logger().error(f"{self.controller}/{what} refused: {result.message if result else ''}")
        else:
            self.get_logger().info(f"{self.controller}/{what}: {result.message}")

    # --- reset and diagnostics -------------------------------------------------------------------
    def _on_reset(self, request, response):
        ok, message = self.bridge.reset(now_s(self))
        if ok:
            self._estopped_for = None
            if self.cli_reset is not None:
                if self.cli_reset.service_is_ready():
                    self.cli_reset.call_async(Trigger.Request()).add_done_callback(
                        lambda f: self._service_done(f, "reset_estop"))
                else:
                    message += (f"; {self.cli_reset.srv_name} not available: reset the controller's e-stop "
                                "yourself")
            self.get_logger().info(message)
        else:
            self.get_logger().warning(message)
        response.success, response.message = ok, message
        return response

    def _diagnose(self) -> None:
        b = self.bridge
        out = self._last
        now = now_s(self)
        if out is None or out.status == "waiting":
            status = "waiting"
            missing = b.watchdogs["capture"].stale(now) + b.watchdogs["encoders"].stale(now)
            message = "waiting: " + ("; ".join(missing) if missing else "inputs arriving")
        elif out.status == "tripped":
            status, message = "tripped", out.trip.reason
        else:
            status, message = "active", "active"
        trip = b.latch.active
        values = {"status": status, "trip_kind": trip.kind if trip else "-",
                  "trip_reaction": trip.reaction if trip else "-", "trips": len(b.latch.history),
                  "rejected_samples": b.stats.rejected.total}
        for kind, count in sorted(b.stats.rejected.counts.items()):
            values[f"rejected_{kind}"] = count
        values.update({"last_rejection": b.stats.rejected.last or "-",
                       "refused_commands": self.refused_commands.total,
                       "last_refused_command": self.refused_commands.last or "-", "ticks": b.stats.ticks,
                       "safe_ticks": b.stats.safe_ticks, "clock_steps": b.stats.clock_steps,
                       "last_clock_step": b.stats.last_clock_step or "-", "faults": b.stats.faults,
                       "last_fault": b.stats.last_fault or "-",
                       "allocation_residual": f"{b.stats.allocation_residual:.4g}",
                       "tick_overruns": self.overruns})
        level = {"active": "ok", "waiting": "warn", "tripped": "error"}[status]
        self.pub_diag.publish(diagnostics(self, "freeflyer: testbed bridge", level, message, values))


def main(args=None) -> None:
    spin_node(TestbedBridgeNode, args)


if __name__ == "__main__":
    main()
