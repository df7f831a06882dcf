"""``freeflyer testbed CONFIG``: check a testbed config and print what the bridge will do with it.

For a lab bringing up its own testbed: every number the bridge derives from the config, in the
units and frames it uses, to compare against the hardware before anything floats.
"""

from __future__ import annotations

import argparse

import numpy as np

from freeflyer_control.hil.config import load_testbed_config
from freeflyer_control.hil.frames import yaw_matrix
from freeflyer_control.hil.safety import MotionLimits, brake_acceleration


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("testbed", help="check a testbed (HIL) config and print what the bridge derives from it")
    p.add_argument("config", help="testbed config .yaml, or a bundled name (planar_4link)")
    p.set_defaults(run=run)


def _axis_names(A: np.ndarray) -> str:
    return ", ".join(f"world {w} = {'-' if A[i].sum() < 0 else '+'}capture {'xyz'[int(np.argmax(np.abs(A[i])))]}"
                     for i, w in enumerate("xyz"))


def run(args: argparse.Namespace) -> int:
    cfg = load_testbed_config(args.config)
    ff, cap, enc, act, lim = cfg.robot, cfg.capture, cfg.encoders, cfg.actuators, cfg.limits
    period = cfg.period
    print(f"testbed {cfg.source}: robot {ff.name} ({ff.base} base), bridge at {cfg.rate:g} Hz "
          f"({1e3 * period:.3g} ms), controller silent > {cfg.command_timeout:.3g} s trips")
    T = cap.transform
    print(f"capture  {cap.topic} (geometry_msgs/PoseStamped) at {cap.rate:g} Hz, stamps from the {cap.stamp}, "
          f"timeout {cap.timeout:.3g} s ({cap.timeout * cap.rate:.1f} samples)")
    print(f"  axes   {_axis_names(T.axes)}; unit {'mm' if T.unit == 1e-3 else 'm'}")
    print(f"  base_link in the marker body: {T.base_translation.tolist()} m, yaw {T.base_yaw:.4g} rad")
    # What a level base at the world origin, heading along world x, looks like to the capture system.
    p_c, q_c = T.from_world(np.zeros(3), yaw_matrix(0.0))
    print(f"  base_link at the world origin heading +x reads as position {np.round(p_c, 4).tolist()}, "
          f"quaternion (x y z w) {np.round(q_c, 4).tolist()}")
    print(f"  filter: noise {cap.position_noise} m / {cap.attitude_noise} rad, process noise "
          f"{cap.acceleration_noise} m/s^2/sqrt(Hz) / {cap.angular_acceleration_noise} rad/s^2/sqrt(Hz)")
    print(f"  gates: jump {cap.max_position_jump} m / {cap.max_attitude_jump} rad; level within "
          f"{np.degrees(cap.max_tilt):.1f} deg and {cap.max_height} m of the table plane")
    print(f"encoders {enc.topic} (sensor_msgs/JointState) at {enc.rate:g} Hz, velocities {enc.velocities}, "
          f"timeout {enc.timeout:.3g} s; filter noise {enc.position_noise:.3g} rad, process noise "
          f"{enc.acceleration_noise} rad/s^2/sqrt(Hz)")
    for c in enc.channels:
        zero = "reading" if c.offset == 0 else f"reading {'-' if c.offset > 0 else '+'} {abs(c.offset):.4g}"
        print(f"  {c.joint:<16} <- {c.name:<16} q = {'' if c.sign > 0 else '-'}({zero}) rad")
    arm = [c for c in enc.channels if c.joint in ff.arm_joint_names]
    print(f"efforts  {act.joint_efforts_topic} (std_msgs/Float64MultiArray): "
          + ", ".join(f"{'-' if c.effort_sign < 0 else ''}tau[{c.joint}]" for c in arm)
          + f"; limits {ff.arm_effort_limits.tolist()} N m")
    if ff.wheel_joint_names:
        print(f"wheels   {act.wheels_topic} ({act.wheel_command}), limits {ff.wheel_max_torques.tolist()} N m")
    thr = act.thrusters
    if thr is None:
        print("valves   none (floating and rotation-floating modes only)")
    else:
        print(f"valves   {thr.topic} ({thr.command}), PWM period {thr.pwm_period:g} s, minimum on-time "
              f"{thr.min_on_time:g} s")
        by_name = {t.name: t for t in ff.thrusters}
        for i, name in enumerate(thr.channels):
            t = by_name[name]
            print(f"  channel {i}: {name:<6} at {t.position.tolist()} m pushes the base along "
                  f"{t.direction.tolist()} with {t.max_force:g} N")
    limits = MotionLimits(lim, brake_acceleration(ff), 2 * period + (thr.pwm_period if thr else 0.0))
    x0, x1, y0, y1 = lim.table
    print(f"limits   table x [{x0}, {x1}] m, y [{y0}, {y1}] m; base footprint radius {lim.base_radius} m, "
          f"margin {lim.margin} m")
    if limits.brake_acceleration > 0:
        print(f"  braking {limits.brake_acceleration:.4g} m/s^2 (weakest direction): from the speed limit "
              f"{lim.base_speed} m/s the base needs {limits.stopping_distance(lim.base_speed):.3g} m to stop")
    else:
        print("  no thrusters: the geofence can only shut everything off, not brake")
    print(f"  base rate {lim.base_rate} rad/s; joints {np.round(lim.joint_lower, 3).tolist()} .. "
          f"{np.round(lim.joint_upper, 3).tolist()} rad, {lim.joint_speed.tolist()} rad/s")
    print("ok")
    return 0
