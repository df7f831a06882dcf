"""testbed_emulator: an emulated air-bearing testbed, speaking its testbed config's wire format.

A thin shell around :class:`freeflyer_control.hil.emulator.TestbedEmulator` (the simulated plant
behind the testbed's hardware interface), so that testbed_bridge and the controller can run end to
end without hardware (``hil_sim.launch.py``). Its clock starts at the node's start (emulated time
0); a timer at ``step_rate`` advances the plant to the node clock and publishes every sensor sample
due by then, stamped with its sample time (header.stamp = start + sample time), as the testbed's
drivers would: late by the config's ``emulator`` latencies, noisy, quantized, in the capture
system's axes and units and with the encoders' names, signs and offsets.

Publishes (topics from the testbed config):
  <capture.topic>              geometry_msgs/PoseStamped    marker-body pose, frame_id "mocap"
  <encoders.topic>             sensor_msgs/JointState       raw encoder readings, hardware names
  ~/truth                      nav_msgs/Odometry            the true base_link pose and twist (world),
                                                            every step (tests, rviz)
  /diagnostics
Subscribes (the testbed's actuators, topics from the testbed config):
  <actuators.joint_efforts.topic>  std_msgs/Float64MultiArray  efforts, encoder-channel order
  <actuators.wheels.topic>         std_msgs/Float64MultiArray  wheel torques or speed set-points
  <actuators.thrusters.topic>      std_msgs/Float64MultiArray duty cycles or std_msgs/UInt8MultiArray bits
A command of the wrong size or with out-of-range values is refused (counted, throttled warning).

Faults (parameter ``faults``): each ``kind:start:duration[:joint][:ox,oy,oz]``, times in s after the
node's start; kinds capture_dropout, capture_jump (offset m, world), encoder_nan (joint, URDF
name), encoder_freeze, push (offset = force N, world). E.g. ``capture_dropout:20:0.5``,
``encoder_nan:12:0.1:joint2``, ``push:5:2:0.5,0,0``.
"""

from __future__ import annotations

import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, UInt8MultiArray

from freeflyer_control.errors import ConfigError
from freeflyer_control.hil.emulator import FAULT_KINDS, TestbedEmulator, parse_fault
from freeflyer_control.hil.emulator_settings import EmulatorSettings
from freeflyer_control.nodes.common import (
    COMMAND_QOS,
    PLANT_STEP_PARAM,
    STATE_PUB_QOS,
    Param,
    StartupError,
    declare,
    diagnostics,
    load_testbed_for,
    plant_step_choice,
    refuse_plant_step,
    spin_node,
    state_messages,
)
from freeflyer_control.physics.state import make_state
from freeflyer_control.physics.kernels.arrays import NotCovered
from freeflyer_control.ros.conversions import fields_from_state
from freeflyer_control.runtime.recent_rises import RecentRises

PARAMS = (
    Param("testbed_config", "", "testbed config .yaml: a path, or a name or path relative to the package's "
          "config/testbeds/ (e.g. planar_4link)", read_only=True),
    Param("initial_joint_positions", [0.0], "initial joint angles, rad, in the robot's joint order "
          "([0.0], one value: the robot's ready pose)", read_only=True),
    Param("initial_base_position", [0.0, 0.0, 0.0], "initial base_link position in world, m", read_only=True),
    Param("initial_base_yaw", 0.0, "initial base heading, rad", range=(-3.1416, 3.1416), read_only=True),
    Param("faults", [""], "faults to inject, each kind:start:duration[:joint][:ox,oy,oz] (s after the node's "
          f"start; kinds {', '.join(FAULT_KINDS)})", read_only=True),
    Param("seed", 0, "noise and dropout seed", range=(0, 2**31 - 1), read_only=True),
    Param("step_rate", 0.0, "Hz of the stepping and publishing timer (0: the testbed config's rate)",
          range=(0.0, 5000.0), read_only=True),
    Param("diagnostics_rate", 2.0, "diagnostics publication rate, Hz", range=(0.1, 50.0), read_only=True),
    PLANT_STEP_PARAM,
)


class TestbedEmulatorNode(Node):
    __test__ = False

    def __init__(self):
        super().__init__("testbed_emulator")
        p = declare(self, PARAMS)
        try:
            self.config = load_testbed_for(self, p["testbed_config"])
            self.emulator = self._make_emulator(p)
        except StartupError:
            self.destroy_node()
            raise
        cfg, ff = self.config, self.config.robot
        self.ff = ff
        self.t0 = self.get_clock().now().nanoseconds   # emulated time 0, ns on the node clock
        self.period = 1.0 / (p["step_rate"] or cfg.rate)
        self.refused = 0
        self.rises = RecentRises()   # the diagnostics level: WARN while refusals rose lately
        self.last_refusal = ""
        self.overruns = 0
        self.told_divergence = False
        self.published = {"capture": 0, "encoders": 0}

        act = cfg.actuators
        self.pub_capture = self.create_publisher(PoseStamped, cfg.capture.topic, STATE_PUB_QOS)
        self.pub_encoders = self.create_publisher(JointState, cfg.encoders.topic, STATE_PUB_QOS)
        self.pub_truth = self.create_publisher(Odometry, "~/truth", STATE_PUB_QOS)
        self.pub_diag = self.create_publisher(DiagnosticArray, "diagnostics", 10)
        self.create_subscription(Float64MultiArray, act.joint_efforts_topic,
                                 lambda m: self._command(self.emulator.on_joint_efforts, m.data), COMMAND_QOS)
        if ff.wheel_joint_names:
            self.create_subscription(Float64MultiArray, act.wheels_topic,
                                     lambda m: self._command(self.emulator.on_wheel_command, m.data), COMMAND_QOS)
        if act.thrusters is not None:
            kind = Float64MultiArray if act.thrusters.command == "duty" else UInt8MultiArray
            self.create_subscription(kind, act.thrusters.topic,
                                     lambda m: self._command(self.emulator.on_thruster_command, list(m.data)),
                                     COMMAND_QOS)
        self.step_timer = self.create_timer(self.period, self._step)
        self.create_timer(1.0 / p["diagnostics_rate"], self._diagnose)
        faults = ", ".join(f"{f.kind} at {f.start:g} s for {f.duration:g} s" for f in self.faults)
        self.get_logger().info(f"emulating testbed {cfg.source} ({ff.name}), stepping at {1 / self.period:g} Hz"
                               + (f"; faults: {faults}" if faults else ""))

    def _make_emulator(self, p) -> TestbedEmulator:
        ff = self.config.robot
        try:
            q0 = list(p["initial_joint_positions"])
            joints = dict(ff.ready_pose) if len(q0) == 1 and q0[0] == 0.0 and len(ff.joint_names) != 1 else q0
            planar = ff.base == "planar"
            state = make_state(ff, base_position=p["initial_base_position"], joint_positions=joints,
                               **({"base_yaw": p["initial_base_yaw"]} if planar else {}))
        except ValueError as exc:
            self.get_logger().fatal(f"initial state refused: {exc} (initial_joint_positions: one angle per joint "
                                    f"of {list(ff.joint_names)}, or [0.0] for the ready pose)")
            raise StartupError(str(exc)) from None
        try:
            settings = EmulatorSettings.from_mapping(self.config.emulator)
            faults = [parse_fault(f) for f in p["faults"] if f.strip()]
            compiled = plant_step_choice(self, p["plant_step"])
            emulator = TestbedEmulator(self.config, state, settings=settings, seed=p["seed"], compiled=compiled)
            for fault in faults:
                emulator.add_fault(fault)
            self.faults = tuple(faults)
        except (NotCovered, ImportError) as exc:  # plant_step:=compiled that cannot run
            raise refuse_plant_step(self, exc) from None
        except (ConfigError, ValueError) as exc:
            what = "testbed config" if isinstance(exc, ConfigError) else "parameter faults"
            self.get_logger().fatal(f"{what} refused: {exc}")
            raise StartupError(str(exc)) from None
        self.get_logger().info(emulator.plant_note)
        return emulator

    def _stamp(self, t: float):
        return Time(nanoseconds=self.t0 + round(t * 1e9), clock_type=self.get_clock().clock_type).to_msg()

    def _command(self, handler, data) -> None:
        now = (self.get_clock().now().nanoseconds - self.t0) * 1e-9
        try:
            handler(data, now)
        except ValueError as exc:
            self.refused += 1
            self.last_refusal = str(exc)
            self.get_logger().warning(f"command refused: {exc}", throttle_duration_sec=1.0)

    def _step(self) -> None:
        start = time.perf_counter()
        t = (self.get_clock().now().nanoseconds - self.t0) * 1e-9
        emu = self.emulator
        emu.advance(t)
        if emu.diverged and not self.told_divergence:  # once: the emulated testbed is dead from now on
            self.told_divergence = True
            self.get_logger().error(f"{emu.diverged}; the emulated testbed publishes nothing more (restart the node)")
        for s in emu.capture_samples(t):
            msg = PoseStamped()
            msg.header.stamp = self._stamp(s.stamp)
            msg.header.frame_id = "mocap"
            pos, o = msg.pose.position, msg.pose.orientation
            pos.x, pos.y, pos.z = (float(x) for x in s.position)
            o.x, o.y, o.z, o.w = (float(x) for x in s.orientation_xyzw)
            self.pub_capture.publish(msg)
            self.published["capture"] += 1
        for s in emu.encoder_samples(t):
            msg = JointState()
            msg.header.stamp = self._stamp(s.stamp)
            msg.name = list(s.names)
            msg.position = s.positions.tolist()
            msg.velocity = s.velocities.tolist()
            self.pub_encoders.publish(msg)
            self.published["encoders"] += 1
        if not emu.diverged:  # a frozen truth with fresh stamps would look live
            _, odom, _ = state_messages(self, fields_from_state(self.ff, emu.state), self.ff.base_link)
            odom.header.stamp = self._stamp(emu.t)  # the true state's own time
            self.pub_truth.publish(odom)
        if time.perf_counter() - start > self.period:
            self.overruns += 1

    def _diagnose(self) -> None:
        emu = self.emulator
        wall = (self.get_clock().now().nanoseconds - self.t0) * 1e-9
        active = [f for f in self.faults if f.active(emu.t)]
        values = {"emulated_time": f"{emu.t:.3f}", "lag": f"{wall - emu.t:.4f}",
                  "capture_samples": self.published["capture"], "encoder_samples": self.published["encoders"],
                  "valves_open": "".join("1" if v else "0" for v in emu.valves_open()) or "-",
                  "faults": "; ".join(f"{f.kind}@{f.start:g}+{f.duration:g}" for f in self.faults) or "-",
                  "active_faults": ", ".join(f.kind for f in active) or "-",
                  "refused_commands": self.refused, "last_refusal": self.last_refusal or "-",
                  "step_overruns": self.overruns}
        rose = self.rises.update(time.monotonic(), {"refused_commands": self.refused})
        level = "warn" if active or rose else "ok"
        if active:
            message = f"fault: {values['active_faults']}"
        else:
            message = f"emulating; {self.rises.message(rose)}" if rose else "emulating"
        if emu.diverged:
            level, message = "error", emu.diverged
        self.pub_diag.publish(diagnostics(self, "freeflyer: testbed emulator", level, message, values))


def main(args=None) -> None:
    spin_node(TestbedEmulatorNode, args)


if __name__ == "__main__":
    main()
