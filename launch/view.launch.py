"""Watch a free-flyer: robot_state_publisher and rviz2 only.

    ros2 launch freeflyer_control view.launch.py robot:=spatial_6link
    ros2 bag play my_run --clock & ros2 launch freeflyer_control view.launch.py use_sim_time:=true

For a graph started elsewhere (another machine's sim.launch.py or testbed.launch.py, or a bag):
robot_state_publisher turns /joint_states into the arm's TFs and publishes /robot_description;
the world -> base_link TF, /freeflyer/markers and /freeflyer/targets must come from that graph.
Do not run it beside sim.launch.py or testbed.launch.py, which start their own
robot_state_publisher (use their rviz:=true instead).

rviz defaults to true here; rviz:=false leaves robot_state_publisher alone (for a headless
machine whose description and TFs are shown by another viewer).
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
        sim.robot_arguments() + [
            sim.rviz_argument('true'),
            sim.use_sim_time_argument(),
            OpaqueFunction(function=sim.freeflyer_actions,
                           kwargs={'plant': False, 'control': False}),
        ])
