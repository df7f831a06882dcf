"""A free-flyer testbed (hardware in the loop): everything of sim.launch.py but the plant.

    ros2 launch freeflyer_control testbed.launch.py robot:=planar_4link rviz:=true
    ros2 launch freeflyer_control testbed.launch.py robot:=spatial_6link use_sim_time:=true

Starts gjm_node, controller_node and robot_state_publisher (and rviz2 with rviz:=true). The
hardware bridge (or an external simulator) must provide, in the same namespace:

* ``/joint_states`` (sensor_msgs/JointState, every arm and wheel joint, with velocities),
* ``/base/odom`` (nav_msgs/Odometry, pose and twist of base_link in ``world``, twist in world axes),
* the TF ``world -> base_link`` (robot_state_publisher ignores the floating base),

and act on ``/joint_effort_commands``, ``/reaction_wheels/command``, ``/thrusters/command`` (or
``/base/wrench_command`` with base_actuation:=ideal). The controller's watchdog zeroes every
command within two control periods when either input stops, and ``/estop`` latches a stop.
Arguments, parameters and topics: docs/ros.md.
"""

import os

from launch import LaunchDescription
from launch.actions import OpaqueFunction
from launch.launch_description_sources.python_launch_file_utilities import (
    load_python_launch_file_as_module,
)

# The shared pieces live in sim.launch.py, installed next to this file.
sim = load_python_launch_file_as_module(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), 'sim.launch.py'))


def generate_launch_description():
    return LaunchDescription(
        sim.robot_arguments() + sim.control_arguments() + [
            sim.rviz_argument('false'),
            sim.use_sim_time_argument(),
            OpaqueFunction(function=sim.freeflyer_actions, kwargs={'plant': False}),
        ])
