"""A simulated free-flyer: plant_node, gjm_node, controller_node, robot_state_publisher (+ rviz2).

    ros2 launch freeflyer_control sim.launch.py
    ros2 launch freeflyer_control sim.launch.py robot:=spatial_6link rviz:=true
    ros2 launch freeflyer_control sim.launch.py mode:=flying controller:=resolved_rate rate:=250.0
    ros2 launch freeflyer_control sim.launch.py robot:=/path/arm.urdf base:=planar end_effectors:=tool0
    ros2 launch freeflyer_control sim.launch.py robot:=dual_arm_planar object:=planar_box
    ros2 launch freeflyer_control sim.launch.py robot:=dual_arm_planar object:=planar_box object_free:=true
    ros2 launch freeflyer_control sim.launch.py rate:=1000.0 lockstep:=false

``robot`` is a bundled robot name (planar_4link, spatial_6link, dual_arm_planar, spatial_7dof) or
the path of a robot config ``.yaml`` or a ``.urdf``. A bundled robot runs with its ROS parameter
file ``config/<robot>.yaml`` (rates, initial pose, controller, mode, GJM frames); a robot given as
a path runs without one (node defaults, plus the launch arguments). Launch arguments left empty
keep the parameter file's value (or the node's default); given ones override it.

robot_state_publisher gets ``robot_description`` = the URDF text the nodes load (checked by
``freeflyer_control.model.load_robot``). It ignores the floating base: the plant publishes the
``world -> base_link`` TF itself.

``lockstep:=true`` (the default) runs plant_node and controller_node in one process,
sim_loop_node, whose one timer steps the plant and then ticks the controller on the new state:
same node names, topics, parameters and services, and it holds 1 kHz on two busy cores. With
``lockstep:=false`` they are two processes with their own timers, as plant and controller are
on hardware (testbed.launch.py, hil_sim.launch.py always run that way). See docs/ros.md.

All topic names are relative, so the whole graph can be put in a namespace (include this file
inside a ``GroupAction`` with ``PushROSNamespace``) or remapped. See docs/ros.md.

testbed.launch.py, hil_sim.launch.py and view.launch.py reuse :func:`freeflyer_actions` from this
file.
"""

import os
import tempfile

import yaml
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

PACKAGE = 'freeflyer_control'
LAUNCH_DIR = os.path.dirname(os.path.abspath(__file__))
# share/freeflyer_control when installed, the package root in a source checkout.
SHARE_DIR = os.path.dirname(LAUNCH_DIR)

# Kept in step with the nodes' parameter choices (freeflyer_control.physics.modes.Mode,
# control.loop.CONTROLLERS, control.effort.BASE_ACTUATION); the nodes validate them again.
MODES = ('floating', 'rotation-floating', 'rotation-flying', 'translation-flying', 'flying')
CONTROLLERS = ('computed_torque', 'resolved_rate', 'impedance')
BASE_ACTUATIONS = ('thrusters', 'ideal')
TRUE = ('true', '1', 'yes', 'on')


def robot_arguments():
    """Which robot: a bundled name or a path, and what completes a bare URDF."""
    return [
        DeclareLaunchArgument(
            'robot', default_value='planar_4link',
            description='bundled robot (planar_4link, spatial_6link, dual_arm_planar, '
                        'spatial_7dof: runs with config/<robot>.yaml) or the path of a robot '
                        'config .yaml or a .urdf (runs without a parameter file)'),
        DeclareLaunchArgument(
            'base', default_value='', choices=['', 'planar', 'spatial'],
            description='floating base of a bare .urdf: planar (x, y, yaw) or spatial '
                        '(empty: from the robot config)'),
        DeclareLaunchArgument(
            'end_effectors', default_value='',
            description='comma-separated end-effector frames of a bare .urdf '
                        '(empty: from the robot config)'),
    ]


def control_arguments():
    """How to control it (empty: the parameter file's value, else the node's default)."""
    return [
        DeclareLaunchArgument(
            'mode', default_value='', choices=[''] + list(MODES),
            description='initial maneuvering mode (empty: parameter file, else floating); '
                        'change it at run time with `ros2 param set /controller_node mode ...`'),
        DeclareLaunchArgument(
            'controller', default_value='',
            description='control law: ' + ', '.join(CONTROLLERS) + ', a name an installed package '
                        'registers, or an import path module:Class of your own (empty: parameter '
                        'file, else computed_torque)'),
        DeclareLaunchArgument(
            'controllers', default_value='',
            description='comma-separated laws controller_node may switch to at run time (names or '
                        'import paths; empty: the parameter file, else the built-in three); '
                        'controller is always among them'),
        DeclareLaunchArgument(
            'base_actuation', default_value='', choices=[''] + list(BASE_ACTUATIONS),
            description='base wrenches through the thrusters (/thrusters/command) or as an '
                        'ideal wrench (/base/wrench_command) (empty: parameter file, else '
                        'thrusters)'),
        DeclareLaunchArgument(
            'rate', default_value='',
            description='control rate, Hz, and (sim) the plant rate (empty: parameter file, '
                        'else 500)'),
    ]


def object_arguments():
    """A held (or, object_free, a free-floating) object: passed to plant_node and controller_node."""
    return [
        DeclareLaunchArgument(
            'object', default_value='',
            description='object the robot holds: bundled name (planar_box, spatial_box) or object '
                        '.yaml (empty: none); the controller then flies the cooperative law '
                        '(/object_target)'),
        DeclareLaunchArgument(
            'object_free', default_value='false', choices=['true', 'false'],
            description='the object floats free and tumbles near the robot until '
                        '`ros2 service call /plant_node/capture std_srvs/srv/Trigger` closes the grasp; '
                        'the controller then runs its usual law'),
        DeclareLaunchArgument(
            'internal_force', default_value='',
            description='squeeze setpoint on the held object, N (empty: the node default, 5)'),
    ]


def rviz_argument(default='false'):
    return DeclareLaunchArgument(
        'rviz', default_value=default, choices=['true', 'false'],
        description='start rviz2 with rviz/freeflyer.rviz')


def use_sim_time_argument():
    return DeclareLaunchArgument(
        'use_sim_time', default_value='false', choices=['true', 'false'],
        description='take time from /clock (a simulator or a bag) instead of the system clock')


def _arg(context, name, default=''):
    """A launch configuration's value as text ('' when not declared)."""
    return LaunchConfiguration(name, default=default).perform(context).strip()


def _text(value):
    """A string parameter that launch must not read as YAML (a URDF, a path, 'true')."""
    return ParameterValue(value, value_type=str)


def _node_parameters(files, node_name, overrides):
    """A node's parameters: the robot's parameter file, then a file with the overrides.

    The overrides are written under the key ``/**/<node_name>``, the key of the node's section
    in config/<robot>.yaml. rcl merges all parameter files into one list of node keys, in the
    order the keys first appear, and applies the matching keys in that order. A dict given to
    launch_ros goes under ``/**``, which the robot file already opened first: the file's
    ``/**/<node>`` section would then override the launch arguments. Under the same key, the
    later file wins.
    """
    if not overrides:
        return list(files)
    with tempfile.NamedTemporaryFile('w', prefix=f'freeflyer_{node_name}_', suffix='.yaml',
                                     delete=False) as f:
        yaml.safe_dump({f'/**/{node_name}': {'ros__parameters': overrides}}, f)
    return list(files) + [f.name]


def resolve_robot(context, robot=None):
    """The robot named by the launch arguments (or by ``robot``, e.g. a testbed config's).

    Returns ``(model, parameter_files, robot_parameters)``: the checked model (its ``urdf_xml``
    goes to robot_state_publisher), ``[config/<robot>.yaml]`` for a bundled robot (``[]`` for a
    path), and the ``robot`` / ``base`` / ``end_effectors`` parameters every node gets.
    """
    from freeflyer_control.model.robots import load_robot, robot_names

    robot = robot or _arg(context, 'robot') or 'planar_4link'
    base = _arg(context, 'base')
    end_effectors = [e.strip() for e in _arg(context, 'end_effectors').split(',') if e.strip()]
    files = []
    if robot in robot_names():
        param_file = os.path.join(SHARE_DIR, 'config', robot + '.yaml')
        if os.path.isfile(param_file):
            files.append(param_file)
    elif os.sep in robot or os.path.splitext(robot)[1] or os.path.exists(robot):
        # A path: made absolute, the nodes may run in another working directory. (A bare word
        # that is no bundled name stays as it is, for load_robot's error listing the names.)
        robot = os.path.abspath(os.path.expanduser(robot))
    model = load_robot(robot, base=base or None, end_effectors=end_effectors or None)
    params = {'robot': robot}
    if base:
        params['base'] = base
    if end_effectors:
        params['end_effectors'] = list(end_effectors)
    return model, files, params


def lockstep_argument():
    return DeclareLaunchArgument(
        'lockstep', default_value='true', choices=['true', 'false'],
        description='true: plant_node and controller_node in one process (sim_loop_node), one '
                    'timer steps the plant then ticks the controller on the new state (holds '
                    '1 kHz); false: two processes with their own timers, as on hardware')


def freeflyer_actions(context, *, plant=True, control=True, use_sim_time=None, robot=None,
                      controller_overrides=None, resolved=None):
    """The nodes, after the launch arguments are known (an OpaqueFunction's body).

    Args:
        plant: start plant_node (sim) or not (testbed, view: the hardware bridge, a simulator
            or a bag publishes /joint_states, /base/odom and the world -> base_link TF).
        control: start gjm_node and controller_node.
        use_sim_time: True / False, or None to read the ``use_sim_time`` launch argument.
            sim.launch.py passes False: its plant steps on the system clock and publishes no
            /clock, so no node of the simulated graph may wait for one.
        robot: the robot (bundled name or path) instead of the ``robot`` launch argument
            (testbed configs name their robot).
            With both ``plant`` and ``control``, the ``lockstep`` launch argument (default false
            where it is not declared) puts plant_node and controller_node in one sim_loop_node.
        controller_overrides: controller_node parameters that override the parameter file and
            the launch arguments (a testbed bridge needs ``base_actuation: ideal`` and its rate).
        resolved: what :func:`resolve_robot` returned, when the caller needs the model too (the
            robot is then loaded, and its warnings logged, once).
    """
    model, files, robot_params = resolved or resolve_robot(context, robot)
    rviz = _arg(context, 'rviz', 'false').lower() in TRUE
    if rviz:  # before any node starts: a failing action would leave the others orphaned
        from ament_index_python.packages import PackageNotFoundError, get_package_prefix
        try:
            get_package_prefix('rviz2')
        except PackageNotFoundError:
            raise RuntimeError('rviz:=true, but the rviz2 package is not installed here '
                               '(install it, or run with rviz:=false)') from None
    if use_sim_time is None:
        use_sim_time = _arg(context, 'use_sim_time', 'false').lower() in TRUE
    rate = _arg(context, 'rate')
    if rate:
        try:
            rate = float(rate)
        except ValueError:
            raise RuntimeError(f"launch argument rate:='{rate}' is not a number (Hz)") from None
        if not rate > 0:
            raise RuntimeError(f'launch argument rate:={rate} must be > 0 Hz')
    common = dict(robot_params, use_sim_time=use_sim_time)
    obj = _arg(context, 'object')
    object_free = _arg(context, 'object_free', 'false').lower() in TRUE

    lockstep = plant and control and _arg(context, 'lockstep', 'false').lower() in TRUE
    actions = [
        Node(package='robot_state_publisher', executable='robot_state_publisher',
             name='robot_state_publisher', output='screen',
             parameters=[{'robot_description': _text(model.urdf_xml),
                          'use_sim_time': use_sim_time}]),
    ]
    if plant:
        plant_params = dict(common, **({'rate': rate} if rate else {}))
        if obj:
            plant_params.update(object=obj, object_free=object_free)
        plant_files = _node_parameters(files, 'plant_node', plant_params)
        if not lockstep:
            actions.append(Node(
                package=PACKAGE, executable='plant_node', name='plant_node', output='screen',
                parameters=plant_files))
    if control:
        controller_params = dict(common, **({'rate': rate} if rate else {}))
        for name in ('mode', 'controller', 'base_actuation'):
            value = _arg(context, name)
            if value:
                controller_params[name] = value
        laws = [law.strip() for law in _arg(context, 'controllers').split(',') if law.strip()]
        if laws:
            controller_params['controllers'] = laws
        if obj and not object_free:
            controller_params['object'] = obj
        elif obj:  # the controller approaches the free object and asks the plant to capture it
            controller_params['capture_object'] = obj
        internal_force = _arg(context, 'internal_force')
        if internal_force:
            try:
                controller_params['internal_force'] = float(internal_force)
            except ValueError:
                raise RuntimeError(f"launch argument internal_force:='{internal_force}' is not a number (N)") from None
        controller_params.update(controller_overrides or {})
        actions.append(Node(package=PACKAGE, executable='gjm_node', name='gjm_node', output='screen',
                            parameters=_node_parameters(files, 'gjm_node', common)))
        if lockstep:
            # No name=: launch would rename both hosted nodes to it. Each finds its own section
            # (/**/plant_node, /**/controller_node) in the files.
            actions.append(Node(
                package=PACKAGE, executable='sim_loop_node', output='screen',
                parameters=plant_files + _node_parameters([], 'controller_node', controller_params)))
        else:
            actions.append(Node(
                package=PACKAGE, executable='controller_node', name='controller_node',
                output='screen',
                parameters=_node_parameters(files, 'controller_node', controller_params)))
    if rviz:
        actions.append(Node(
            package='rviz2', executable='rviz2', name='rviz2', output='screen',
            arguments=['-d', os.path.join(SHARE_DIR, 'rviz', 'freeflyer.rviz')],
            parameters=[{'use_sim_time': use_sim_time}]))
    return actions


def generate_launch_description():
    return LaunchDescription(
        robot_arguments() + control_arguments() + object_arguments() + [
            rviz_argument('false'), lockstep_argument(),
            # The simulated plant is the clock: no use_sim_time here (see freeflyer_actions).
            OpaqueFunction(function=freeflyer_actions, kwargs={'use_sim_time': False}),
        ])
