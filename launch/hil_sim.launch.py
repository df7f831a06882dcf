"""Hardware in the loop without hardware: an emulated testbed, its bridge, and the controller.

    ros2 launch freeflyer_control hil_sim.launch.py
    ros2 launch freeflyer_control hil_sim.launch.py testbed:=planar_4link mode:=flying rviz:=true
    ros2 launch freeflyer_control hil_sim.launch.py faults:='capture_dropout:30:0.5 push:40:2:0.5,0,0'
    ros2 launch freeflyer_control hil_sim.launch.py testbed:=/path/to/our_lab.yaml

Starts, in one namespace:

* ``testbed_emulator``: the simulated robot behind the testbed's hardware interface (motion
  capture in the capture system's axes and units, encoders with the drivers' names, signs and
  offsets, effort and valve commands in wire order; latencies, noise, quantization and valve
  delays from the config's ``emulator`` section), plus ``~/truth`` (the true base pose);
* ``testbed_bridge``: the same bridge a lab runs on its real testbed (testbed.launch.py
  testbed:=...), between those hardware topics and the controller's;
* ``controller_node`` (base_actuation ideal: the bridge allocates the thrusters and modulates
  the valves; at the testbed config's rate), ``gjm_node``, ``robot_state_publisher`` (and rviz2
  with rviz:=true), for the testbed config's robot, with its parameter file if it is a bundled one.

This is the ROS graph of ``freeflyer_control.hil.runner`` (``freeflyer sim --via-testbed``): a
bridge trip e-stops the controller (``controller_node/estop``), and ``testbed_bridge/reset``
resets both once the cause is gone::

    ros2 topic pub --once /estop std_msgs/msg/Bool "{data: true}"
    ros2 service call /testbed_bridge/reset std_srvs/srv/Trigger

Arguments: ``testbed`` (a testbed config .yaml, or the name of one in config/testbeds/; default
planar_4link), ``mode``, ``controller`` (as sim.launch.py), ``rviz``, ``faults`` (faults the
emulator injects, separated by spaces or ';', each ``kind:start:duration[:joint][:ox,oy,oz]``
with times in s after the emulator's start; see testbed_emulator_node), ``composed`` (default
true: the emulator, the bridge, the controller and gjm_node run in one process, the
``testbed_graph`` executable, with one executor; false: four processes). The emulator runs on
the system clock (no use_sim_time).

Why composed by default: the four nodes are Python, and in four processes each of their ~14
wake-ups per 4 ms period pays an executor pass and an inter-process middleware hop; the graph
then needed ~1.3 cores at 250 Hz on a 2-core VM and its bridge tripped on a stale controller
within a minute. In one process it needs about 0.8 core (0.6 of the four processes, measured
side by side; docs/hil.md, "CPU and timing").
Node names, topics, services and parameters are the same either way; robot_state_publisher
(C++) and rviz2 stay processes of their own. A real testbed runs testbed.launch.py, unchanged.
"""

import os
import re

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.launch_description_sources.python_launch_file_utilities import (
    load_python_launch_file_as_module,
)
from launch_ros.actions import Node

HERE = os.path.dirname(os.path.abspath(__file__))
sim = load_python_launch_file_as_module(os.path.join(HERE, 'sim.launch.py'))
testbed = load_python_launch_file_as_module(os.path.join(HERE, 'testbed.launch.py'))


def hil_actions(context):
    loaded = testbed.load_testbed(context)
    if loaded is None:
        raise RuntimeError('testbed:= is empty: give a testbed config (.yaml path, or the name of '
                           'one in config/testbeds/, e.g. planar_4link)')
    path, config, robot = loaded
    faults = [f for f in re.split(r'[\s;]+', sim._arg(context, 'faults')) if f]
    if faults:  # checked before anything starts, as the emulator will
        from freeflyer_control.hil.emulator import parse_fault
        for fault in faults:
            try:
                parse_fault(fault)
            except ValueError as exc:
                raise RuntimeError(f'faults:=: {exc}') from None
    overrides = testbed.controller_overrides(context, config, robot)
    if composed(context):
        return composed_actions(context, path, faults, robot, overrides)
    actions = sim.freeflyer_actions(
        context, plant=False, use_sim_time=False, robot=robot, controller_overrides=overrides)
    emulator = Node(
        package=sim.PACKAGE, executable='testbed_emulator', name='testbed_emulator',
        output='screen',
        parameters=[{'testbed_config': sim._text(path), 'faults': faults or [''],
                     'use_sim_time': False}])
    return [emulator, testbed.bridge_node(path, False)] + actions


def composed(context):
    value = sim._arg(context, 'composed', 'true')
    if value.lower() not in sim.TRUE + ('false', '0', 'no', 'off'):
        raise RuntimeError(f'composed:={value}: write true (one process for the emulator, bridge, '
                           'controller and gjm_node) or false (a process each)')
    return value.lower() in sim.TRUE


def composed_actions(context, path, faults, robot, controller_overrides):
    """robot_state_publisher (and rviz2), and one ``testbed_graph`` process holding the
    emulator, the bridge, gjm_node and controller_node, each with the parameters the separate
    nodes get (under its own key in the parameter files: the process is not renamed)."""
    resolved = sim.resolve_robot(context, robot)
    _, files, robot_params = resolved
    common = dict(robot_params, use_sim_time=False)
    controller = dict(common)
    for name in ('mode', 'controller'):
        if sim._arg(context, name):
            controller[name] = sim._arg(context, name)
    controller.update(controller_overrides)
    testbed_config = {'testbed_config': path, 'use_sim_time': False}
    per_node = {'testbed_emulator': dict(testbed_config, faults=faults or ['']),
                'testbed_bridge': testbed_config, 'gjm_node': common, 'controller_node': controller}
    parameters = list(files)
    for name, values in per_node.items():
        parameters += sim._node_parameters([], name, values)
    graph = Node(package=sim.PACKAGE, executable='testbed_graph', output='screen', parameters=parameters)
    others = sim.freeflyer_actions(context, plant=False, control=False, use_sim_time=False, robot=robot,
                                   resolved=resolved)
    return others + [graph]


def composed_argument(default='true'):
    return DeclareLaunchArgument(
        'composed', default_value=default,
        description='true: testbed_emulator, testbed_bridge, controller_node and gjm_node in one '
                    'process with one executor (about 40 % less CPU); false: a process each')


def generate_launch_description():
    control = [a for a in sim.control_arguments() if a.name in ('mode', 'controller')]
    return LaunchDescription(control + [
        testbed.testbed_argument('planar_4link'),
        sim.rviz_argument('false'),
        DeclareLaunchArgument(
            'faults', default_value='',
            description="faults the emulator injects, separated by spaces or ';': "
                        'kind:start:duration[:joint][:ox,oy,oz], s after its start (kinds '
                        'capture_dropout, capture_jump, encoder_nan, encoder_freeze, push)'),
        composed_argument(),
        OpaqueFunction(function=hil_actions),
    ])
