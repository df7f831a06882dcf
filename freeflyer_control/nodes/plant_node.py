"""plant_node: the simulated free-flyer, stepping at a fixed rate.

Subscribes (commands, held until replaced, zeroed after ``command_timeout``):
  /joint_effort_commands       std_msgs/Float64MultiArray  arm joint torques, arm joint order
  /reaction_wheels/command     std_msgs/Float64MultiArray  wheel torques, robot-config order
  /thrusters/command           std_msgs/Float64MultiArray  thruster forces, robot-config order
  /base/wrench_command         geometry_msgs/WrenchStamped ideal base wrench, world axes
Publishes: /joint_states, /base/odom (pose and twist in world) at ``rate``; TF world -> base_link
at ``tf_rate`` (rviz draws at tens of Hz; /base/odom carries the same pose every step);
/diagnostics, with where a period goes (``period_us.*``, runtime.period_costs). Service ~/reset
(std_srvs/Trigger) puts the plant back to its initial state.

The step timer and the command subscriptions run on a wait set of their own (nodes.loop): each
command is taken as it arrives and before a step that falls due with it, and rclpy's executor
serves the rest in a thread of its own.

With parameter ``object`` (bundled name or object .yaml; empty: none) the plant simulates it
(runtime.object_plant): held by the robot in closed chains (the arms start at the pose that holds
it), or with ``object_free`` floating free and tumbling near the first grasping end-effector until
the service ~/capture (std_srvs/Trigger) closes the grasp (answer: success, or the refusal with
its reason). At ``object_rate`` it publishes /object/odom (nav_msgs/Odometry, the object frame at
its CoM, world), /grasp_wrench/<end_effector> (geometry_msgs/WrenchStamped, the wrench the
end-effector applies to the object, in the end-effector frame, about its origin; while held),
TF world -> <object name>, and /object/marker (visualization_msgs/Marker, a box of the object's
size). /diagnostics adds the capture state (held, free, captured) and the last refusal.

If the integration diverges (see freeflyer_control.physics.plant), the node logs the reason once,
stops publishing the state (the controller's watchdog then stops the robot) and reports
"diverged" with the reason on /diagnostics (level ERROR) until ~/reset.
"""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from tf2_ros import TransformBroadcaster
from visualization_msgs.msg import Marker

from freeflyer_control.nodes.loop import LoopGroup, PeriodLoop
from freeflyer_control.nodes.common import (
    COMMAND_QOS,
    PLANT_STEP_PARAM,
    ROBOT_PARAMS,
    STATE_PUB_QOS,
    Param,
    StateMessages,
    declare,
    diagnostics,
    now_s,
    param_result,
    plant_step_choice,
    quiet_publisher,
    refuse_plant_step,
    robot_from_parameters,
    spin_node,
    state_messages,
)
from freeflyer_control.model.objects import load_object
from freeflyer_control.physics.state import make_state
from freeflyer_control.ros.conversions import BaseReading, MessageError, StateFields
from freeflyer_control.ros.serialized import multiarray_data
from freeflyer_control.runtime.object_plant import held_initial_state
from freeflyer_control.runtime.period_costs import PeriodCosts, diagnostic_values
from freeflyer_control.runtime.plant_server import PlantServer, SensorNoise
from freeflyer_control.runtime.recent_rises import RecentRises
from freeflyer_control.physics.kernels.arrays import NotCovered

PARAMS = ROBOT_PARAMS + (
    Param("rate", 500.0, "integration and publication rate, Hz", range=(1.0, 5000.0), read_only=True),
    Param("initial_joint_positions", [0.0], "initial joint angles, rad, in the robot's joint order "
          "([0.0]: all zero)", read_only=True),
    Param("initial_base_position", [0.0, 0.0, 0.0], "initial base_link position in world, m", read_only=True),
    Param("initial_base_yaw", 0.0, "initial base heading, rad", range=(-3.1416, 3.1416), read_only=True),
    Param("command_timeout", 0.1, "commands older than this are dropped to zero, s", range=(0.001, 10.0)),
    Param("latency", 0.0, "measurement latency, s", range=(0.0, 1.0), read_only=True),
    Param("noise_joint_position", 0.0, "joint angle noise std, rad", range=(0.0, 0.1), read_only=True),
    Param("noise_joint_velocity", 0.0, "joint rate noise std, rad/s", range=(0.0, 1.0), read_only=True),
    Param("noise_base_position", 0.0, "base position noise std, m", range=(0.0, 0.1), read_only=True),
    Param("noise_base_attitude", 0.0, "base attitude noise std, rad", range=(0.0, 0.1), read_only=True),
    Param("noise_base_velocity", 0.0, "base linear and angular rate noise std, m/s and rad/s",
          range=(0.0, 1.0), read_only=True),
    Param("seed", 0, "noise seed", range=(0, 2**31 - 1), read_only=True),
    Param("diagnostics_rate", 2.0, "diagnostics publication rate, Hz", range=(0.1, 50.0), read_only=True),
    Param("tf_rate", 50.0, "TF world -> base_link publication rate, Hz (at most the step rate)",
          range=(1.0, 5000.0), read_only=True),
    Param("object", "", "object to simulate: bundled name or object .yaml (empty: none)", read_only=True),
    Param("object_free", False, "the object floats free (to be captured with ~/capture) instead of "
          "being held", read_only=True),
    Param("object_rate", 50.0, "object odometry, grasp wrench, TF and marker rate, Hz", range=(1.0, 500.0),
          read_only=True),
    PLANT_STEP_PARAM,
)


class PlantNode(Node):
    """Args:
        lockstep: sim_loop_node drives this node (and a controller_node in the same process): no
            step timer and no command subscriptions, the commands come from the hosted controller.
    """

    def __init__(self, lockstep: bool = False):
        super().__init__("plant_node")
        p = declare(self, PARAMS)
        self.ff = robot_from_parameters(p)
        q0 = p["initial_joint_positions"]
        q0 = None if list(q0) == [0.0] else list(q0)
        self.obj = load_object(p["object"]) if p["object"] else None
        if self.obj is not None and not p["object_free"]:  # the arms start where they hold it
            state = held_initial_state(self.ff, self.obj, p["initial_base_position"], p["initial_base_yaw"])
        else:
            if self.obj is not None and q0 is None:
                q0 = self.ff.ready_pose  # the free object starts near where the ready arms would hold it
            state = make_state(self.ff, base_position=p["initial_base_position"],
                               joint_positions=q0,
                               **({"base_yaw": p["initial_base_yaw"]} if self.ff.base == "planar" else {}))
        noise = SensorNoise(p["noise_joint_position"], p["noise_joint_velocity"], p["noise_base_position"],
                            p["noise_base_attitude"], p["noise_base_velocity"], p["noise_base_velocity"])
        try:
            self.server = PlantServer(self.ff, state, rate=p["rate"], command_timeout=p["command_timeout"],
                                      noise=noise, latency=p["latency"], seed=p["seed"], obj=self.obj,
                                      object_free=p["object_free"],
                                      compiled=plant_step_choice(self, p["plant_step"]))
        except (NotCovered, ImportError) as exc:  # plant_step:=compiled that cannot run
            raise refuse_plant_step(self, exc) from None
        self.get_logger().info(self.server.plant_note)
        self.period = 1.0 / p["rate"]
        # TF at every tf_every-th step: the nearest whole divisor of the step rate.
        self.tf_every = max(1, round(p["rate"] / min(p["tf_rate"], p["rate"])))
        self.costs = PeriodCosts(("messages_in", "commands_in", "step", "measurement", "state_msgs", "state_publish"))
        self.errors = 0
        self.overruns = 0
        self.dropped_periods = 0   # lockstep: periods sim_loop_node's schedule dropped (runtime.schedule)
        self.lockstep = None       # sim_loop_node's LockstepLoop (runtime.lockstep), which steps this plant
        self.rises = RecentRises()   # the diagnostics level: WARN while one of those counters rose lately
        self.steps = 0
        self.wall0 = time.monotonic()

        self.pub_js = quiet_publisher(self, JointState, "joint_states", STATE_PUB_QOS)
        self.pub_odom = quiet_publisher(self, Odometry, "base/odom", STATE_PUB_QOS)
        self.pub_diag = quiet_publisher(self, DiagnosticArray, "diagnostics", 10)
        self.tf = TransformBroadcaster(self)
        self.state_msgs = StateMessages(self.ff.base_link)
        self.period_loop: PeriodLoop | None = None   # what spin_node runs (nodes.loop); None in lockstep
        if not lockstep:
            group = LoopGroup()
            # The vectors serialized (raw): read in place (ros.serialized.multiarray_data).
            inputs = [(self.create_subscription(kind, topic, callback, COMMAND_QOS, callback_group=group,
                                                raw=kind is Float64MultiArray), callback)
                      for kind, topic, callback in (
                          (Float64MultiArray, "joint_effort_commands",
                           lambda m: self._command(self.server.set_arm_torques, m)),
                          (Float64MultiArray, "reaction_wheels/command",
                           lambda m: self._command(self.server.set_wheel_torques, m)),
                          (Float64MultiArray, "thrusters/command",
                           lambda m: self._command(self.server.set_thruster_forces, m)),
                          (WrenchStamped, "base/wrench_command", self._on_wrench))]
        self.create_service(Trigger, "~/reset", self._on_reset)
        # Without an object too: the answer then says how to start the plant with one.
        self.create_service(Trigger, "~/capture", self._on_capture)
        self.add_on_set_parameters_callback(self._on_params)
        if not lockstep:
            self.period_loop = PeriodLoop(self.create_timer(self.period, self._step, callback_group=group),
                                          inputs, group, self.costs)
        self.create_timer(1.0 / p["diagnostics_rate"], self._diagnose)
        if self.obj is not None:
            self.pub_object = quiet_publisher(self, Odometry, "object/odom", STATE_PUB_QOS)
            self.pub_marker = quiet_publisher(self, Marker, "object/marker", 10)
            self.pub_grasp = {g.end_effector: quiet_publisher(self, WrenchStamped, f"grasp_wrench/{g.end_effector}", 10)
                              for g in self.obj.grasps}
            self.create_timer(1.0 / p["object_rate"], self._publish_object)
        self.costs.begin()
        self._publish()
        self.get_logger().info(f"simulating {self.ff.name} ({self.ff.base} base) at {p['rate']:g} Hz")

    def _command(self, setter, data) -> None:
        """A command vector: serialized bytes (the subscriptions), or the values."""
        self.costs.begin()
        try:
            setter(multiarray_data(data) if isinstance(data, bytes) else data, now_s(self))
        except MessageError as exc:
            self.errors += 1
            self.get_logger().warning(f"command refused: {exc}", throttle_duration_sec=1.0)
        self.costs.mark("commands_in")

    def _on_wrench(self, msg: WrenchStamped) -> None:
        if msg.header.frame_id not in ("", "world"):
            self.errors += 1
            self.get_logger().warning(f"base wrench in frame '{msg.header.frame_id}' refused: give it in world",
                                      throttle_duration_sec=1.0)
            return
        f, t = msg.wrench.force, msg.wrench.torque
        self._command(self.server.set_base_wrench_world, [f.x, f.y, f.z, t.x, t.y, t.z])

    def _step(self) -> None:
        start = time.perf_counter()
        costs = self.costs
        costs.begin()
        diverged = self.server.step(now_s(self))
        costs.mark("step")
        measurement = self.server.measurement()   # (one draw of the noise)
        costs.mark("measurement")
        # sim_loop_node calls these three at their own places in its period.
        self.report_divergence(diverged)
        self.publish_state(measurement)
        self.end_period(start)
        costs.end_period()

    def report_divergence(self, diverged: str | None) -> None:
        """Log the reason of the step that diverged (given once, by that step), and say so on
        /diagnostics at once."""
        if diverged is not None:
            self.get_logger().error(f"{diverged}; publishing nothing until ~/reset")
            self._diagnose()

    def publish_state(self, measurement: StateFields | None) -> None:
        """A period's /joint_states and /base/odom (and TF at tf_rate); nothing once diverged.
        Marks the costs' stages ``state_msgs`` and ``state_publish``."""
        self.steps += 1
        self._publish(measurement, tf=self.steps % self.tf_every == 0)

    def end_period(self, start: float) -> None:
        """Count an overrun of the period begun at ``start`` (time.perf_counter(), s)."""
        if time.perf_counter() - start > self.period:
            self.overruns += 1

    def _publish(self, measurement: StateFields | None = None, tf: bool = True) -> None:
        if measurement is None:
            measurement = self.server.measurement()
        if measurement is None:  # diverged: a frozen state must not look live
            return
        stamp_ns = self.get_clock().now().nanoseconds
        js, odom = self.state_msgs.fill(stamp_ns, measurement)
        self.costs.mark("state_msgs")
        self.pub_js.publish(js)
        self.pub_odom.publish(odom)
        if tf:
            self.tf.sendTransform(self.state_msgs.transform(stamp_ns, measurement))
        self.costs.mark("state_publish")

    def _publish_object(self) -> None:
        reading = self.server.object_reading(now_s(self))
        if reading is None:
            return
        stamp = self.get_clock().now().to_msg()
        pose = reading.pose
        quat = pin.Quaternion(pose.rotation).coeffs()  # x, y, z, w
        base = BaseReading(pose.translation, quat, reading.twist[:3], reading.twist[3:])
        _, odom, tf = state_messages(self, StateFields((), np.zeros(0), np.zeros(0), base), self.obj.name)
        self.pub_object.publish(odom)
        self.tf.sendTransform(tf)
        for ee, w in reading.wrenches.items():
            R = reading.ee_rotations[ee]
            msg = WrenchStamped()
            msg.header.stamp, msg.header.frame_id = stamp, ee
            f, m = R.T @ w[:3], R.T @ w[3:]
            msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = f.tolist()
            msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = m.tolist()
            self.pub_grasp[ee].publish(msg)
        marker = Marker()
        marker.header.stamp, marker.header.frame_id = stamp, self.obj.name
        marker.ns, marker.id, marker.type, marker.action = "object", 0, Marker.CUBE, Marker.ADD
        marker.pose.orientation.w = 1.0
        marker.scale.x, marker.scale.y, marker.scale.z = (float(v) for v in self.obj.size)
        marker.color.r, marker.color.g, marker.color.b, marker.color.a = 0.9, 0.6, 0.1, 0.8
        self.pub_marker.publish(marker)

    def _on_capture(self, request, response):
        response.success, response.message = self.server.request_capture()
        # Two call sites: rclpy fixes a call site's severity at its first call and raises if the
        # same line logs at another (a refused second grasp after a closed first one killed the node).
        if response.success:
            self.get_logger().info(response.message)
        else:
            self.get_logger().warning(response.message)
        self._diagnose()
        return response

    def _diagnose(self) -> None:
        d = self.server.diagnostics()
        wall = time.monotonic() - self.wall0
        values = {**d, "real_time_factor": f"{self.steps * self.period / wall:.3f}" if wall > 0 else "-",
                  "step_overruns": self.overruns, "dropped_periods": self.dropped_periods,
                  "refused_commands": self.errors, **self._lockstep_values(),
                  **diagnostic_values(self.costs.window())}
        if self.server.status != "ok":
            level, message = "error", self.server.reason
        else:
            rose = self.rises.update(time.monotonic(), {"step_overruns": self.overruns, "refused_commands": self.errors,
                                                         "dropped_periods": self.dropped_periods})
            level, message = ("warn", f"simulating; {self.rises.message(rose)}") if rose else ("ok", "simulating")
        self.pub_diag.publish(diagnostics(self, "freeflyer: plant", level, message, values))

    def _lockstep_values(self) -> dict[str, int]:
        """In sim_loop_node: how many periods took one compiled call, and how many Python."""
        compiled = self.lockstep.compiled if self.lockstep is not None else None
        return {} if compiled is None else {"compiled_periods": compiled.compiled, "python_periods": compiled.python}

    def _on_params(self, params):
        """command_timeout is settable at run time (rclpy has checked its range)."""
        for prm in params:
            if prm.name == "command_timeout":
                self.server.command_timeout = float(prm.value)
        return param_result(None)

    def _on_reset(self, request, response):
        was = self.server.reason
        self.server.reset()
        self.costs.begin()
        self._publish()
        response.success, response.message = True, "plant reset to its initial state"
        if was:
            self.get_logger().info(f"plant reset after: {was}")
        return response


def main(args=None) -> None:
    spin_node(PlantNode, args)


if __name__ == "__main__":
    main()
