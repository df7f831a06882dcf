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
with times in s after the emulator's start; see testbed_emulator_node). The emulator runs on the
system clock (no use_sim_time).
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
    actions = sim.freeflyer_actions(
        context, plant=False, use_sim_time=False, robot=robot,
        controller_overrides=testbed.controller_overrides(context, config, robot))
    emulator = Node(
        package=sim.PACKAGE, executable='testbed_emulator', name='testbed_emulator',
        output='screen',
        parameters=[{'testbed_config': sim._text(path), 'faults': faults or [''],
                     'use_sim_time': False}])
    return [emulator, testbed.bridge_node(path, False)] + actions


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
        OpaqueFunction(function=hil_actions),
    ])
