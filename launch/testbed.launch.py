"""A free-flyer testbed (hardware in the loop): everything of sim.launch.py but the plant.

    ros2 launch freeflyer_control testbed.launch.py robot:=planar_4link rviz:=true
    ros2 launch freeflyer_control testbed.launch.py robot:=spatial_6link use_sim_time:=true
    ros2 launch freeflyer_control testbed.launch.py testbed:=planar_4link
    ros2 launch freeflyer_control testbed.launch.py testbed:=/path/to/our_lab.yaml rviz:=true

Starts gjm_node, controller_node and robot_state_publisher (and rviz2 with rviz:=true). The
hardware bridge (or an external simulator) must provide, in the same namespace:

* ``/joint_states`` (sensor_msgs/JointState, every arm and wheel joint, with velocities),
* ``/base/odom`` (nav_msgs/Odometry, pose and twist of base_link in ``world``, twist in world axes),
* the TF ``world -> base_link`` (robot_state_publisher ignores the floating base),

and act on ``/joint_effort_commands``, ``/reaction_wheels/command``, ``/thrusters/command`` (or
``/base/wrench_command`` with base_actuation:=ideal). The controller's watchdog zeroes every
command within two control periods when either input stops, and ``/estop`` latches a stop.

With ``testbed:=<config>`` (a testbed config .yaml, or the name of one in config/testbeds/) this
file also starts that bridge: ``testbed_bridge`` (freeflyer_control.nodes.testbed_bridge_node),
which speaks the testbed's own topics (motion capture, encoders, effort, wheel and valve
commands, as the config says) and provides the topics above. The robot and the control rate are
then the config's, and the controller runs with base_actuation ideal (the bridge allocates the
thrusters and modulates the valves); a ``robot``, ``rate`` or ``base_actuation`` argument that
contradicts that is refused. The config is checked before anything starts: an error says which
key to fix. Without ``testbed``, nothing changes. Arguments, parameters and topics: docs/ros.md.

hil_sim.launch.py reuses :func:`load_testbed` and :func:`bridge_node` from this file.
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


def testbed_argument(default=''):
    return DeclareLaunchArgument(
        'testbed', default_value=default,
        description='testbed config: a .yaml path, or the name of one in config/testbeds/ '
                    '(e.g. planar_4link); starts testbed_bridge with it (empty: no bridge)')


def load_testbed(context):
    """``(config_path, config, robot)`` of the ``testbed`` launch argument (``robot``: the robot
    parameter of the other nodes), or None when the argument is empty.

    Raises:
        RuntimeError: the config's error (which key, what to write), before any node starts.
    """
    value = sim._arg(context, 'testbed')
    if not value:
        return None
    from freeflyer_control.errors import ConfigError
    from freeflyer_control.hil.config import load_testbed_config, resolve_testbed_config
    try:
        path = resolve_testbed_config(value)
        config = load_testbed_config(path)
    except ConfigError as exc:
        raise RuntimeError(f'testbed:={value}: {exc}') from None
    return str(path), config, config.robot_source


def controller_overrides(context, config, robot):
    """controller_node parameters a testbed bridge needs (base_actuation ideal, the config's
    rate); refuses launch arguments that contradict the testbed config."""
    given = sim._arg(context, 'robot')
    if given and given not in ('planar_4link', robot):   # planar_4link: the argument's default
        raise RuntimeError(f"robot:={given}, but the testbed config {config.source} is for robot "
                           f"'{robot}': leave robot out (the testbed config names it)")
    rate = sim._arg(context, 'rate')
    if rate:
        try:
            same = abs(float(rate) - config.rate) < 1e-9
        except ValueError:
            same = False
        if not same:
            raise RuntimeError(f'rate:={rate}, but the testbed config {config.source} runs at '
                               f'{config.rate:g} Hz: leave rate out (the controller runs at the '
                               'bridge\'s rate)')
    if sim._arg(context, 'base_actuation') not in ('', 'ideal'):
        raise RuntimeError('base_actuation:=thrusters cannot be used with a testbed bridge: the '
                           'bridge allocates the thrusters from the ideal base wrench (leave '
                           'base_actuation out)')
    return {'base_actuation': 'ideal', 'rate': float(config.rate)}


def bridge_node(config_path, use_sim_time=False, **parameters):
    return Node(package=sim.PACKAGE, executable='testbed_bridge', name='testbed_bridge',
                output='screen',
                parameters=[dict({'testbed_config': sim._text(config_path),
                                  'use_sim_time': use_sim_time}, **parameters)])


def testbed_actions(context):
    testbed = load_testbed(context)
    if testbed is None:
        return sim.freeflyer_actions(context, plant=False)
    path, config, robot = testbed
    use_sim_time = sim._arg(context, 'use_sim_time', 'false').lower() in sim.TRUE
    actions = sim.freeflyer_actions(context, plant=False, robot=robot,
                                    controller_overrides=controller_overrides(context, config, robot))
    return [bridge_node(path, use_sim_time)] + actions


def generate_launch_description():
    return LaunchDescription(
        sim.robot_arguments() + sim.control_arguments() + [
            sim.rviz_argument('false'),
            sim.use_sim_time_argument(),
            testbed_argument(''),
            OpaqueFunction(function=testbed_actions),
        ])
