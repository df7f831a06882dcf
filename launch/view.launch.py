"""Look at a free-flyer in rviz2: robot_state_publisher and rviz2, standing alone or watching.

    ros2 launch freeflyer_control view.launch.py robot:=spatial_6link
    ros2 launch freeflyer_control view.launch.py source:=external
    ros2 bag play my_run --clock & ros2 launch freeflyer_control view.launch.py source:=external use_sim_time:=true

What it needs depends on ``source``, the source of the robot's state (/joint_states and the
``world -> base_link`` TF):

- ``source:=static`` (default): nothing else. It stands alone: a static ``world -> base_link``
  TF at the origin (tf2_ros static_transform_publisher) and joint_state_publisher holding the
  robot's ready pose (its robot config's ``ready_pose``, other joints at 0), so rviz shows the
  robot at rest.
- ``source:=external``: another graph publishes /joint_states and the ``world -> base_link``
  TF (another machine's sim.launch.py or testbed.launch.py, a testbed bridge, a bag);
  robot_state_publisher turns /joint_states into the arm's TFs and publishes /robot_description;
  /freeflyer/markers and /freeflyer/targets come from that graph too.

Do not run it beside sim.launch.py or testbed.launch.py, which start their own
robot_state_publisher (use their rviz:=true instead).

rviz defaults to true here; rviz:=false leaves the other nodes (for a headless machine whose
description and TFs are shown by another viewer).
"""

import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.launch_description_sources.python_launch_file_utilities import (
    load_python_launch_file_as_module,
)
from launch_ros.actions import Node

# The shared pieces live in sim.launch.py, installed next to this file.
sim = load_python_launch_file_as_module(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), 'sim.launch.py'))

SOURCES = ('static', 'external')


def source_argument():
    return DeclareLaunchArgument(
        'source', default_value='static', choices=list(SOURCES),
        description='where /joint_states and the world -> base_link TF come from: static '
                    '(stand alone: a static world -> base_link at the origin and '
                    'joint_state_publisher holding the ready pose) or external (another graph '
                    'or a bag publishes them)')


def view_actions(context):
    resolved = sim.resolve_robot(context)
    actions = sim.freeflyer_actions(context, plant=False, control=False, resolved=resolved)
    if sim._arg(context, 'source', 'static') != 'static':
        return actions
    model = resolved[0]
    use_sim_time = sim._arg(context, 'use_sim_time', 'false').lower() in sim.TRUE
    ready = {joint: float(angle) for joint, angle in model.ready_pose.items()}
    return actions + [
        Node(package='tf2_ros', executable='static_transform_publisher',
             name='world_to_base_link', output='screen',
             arguments=['--frame-id', 'world', '--child-frame-id', model.base_link]),
        Node(package='joint_state_publisher', executable='joint_state_publisher',
             name='joint_state_publisher', output='screen',
             parameters=[{'robot_description': sim._text(model.urdf_xml),
                          'use_sim_time': use_sim_time,
                          **({'zeros': ready} if ready else {})}]),
    ]


def generate_launch_description():
    return LaunchDescription(
        sim.robot_arguments() + [
            source_argument(),
            sim.rviz_argument('true'),
            sim.use_sim_time_argument(),
            OpaqueFunction(function=view_actions),
        ])
