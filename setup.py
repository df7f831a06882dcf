"""Build script for the freeflyer_control ROS 2 package (build type ament_python).

``colcon build`` (colcon-ros' ament_python task) and ``pip install`` both run this
file with the package root as the working directory, so every path below is
relative to it (colcon and setuptools refuse absolute ``data_files`` sources).
"""
import os

from setuptools import find_packages, setup

package_name = 'freeflyer_control'

# Folders whose files are installed under share/<package>/, keeping the
# sub-folder structure (config/robots/x.yaml -> share/<package>/config/robots/x.yaml).
# Every file is installed, not only *.py / *.yaml / *.urdf / *.xacro / *.rviz, so a
# mesh, an included xacro or a sub-folder added later cannot be silently left out;
# folders that are empty or missing are fine.
SHARE_DIRS = ('launch', 'config', 'urdf', 'rviz')


def _is_installable(name):
    """Skip hidden files, byte code and editor back-ups."""
    return not (name.startswith('.') or name.endswith(('.pyc', '.pyo', '~')))


def share_data_files(top):
    """data_files entries for every file under ``top``, one per folder."""
    entries = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = sorted(
            d for d in dirnames if d != '__pycache__' and not d.startswith('.'))
        files = sorted(
            os.path.join(dirpath, f) for f in filenames if _is_installable(f))
        if files:
            entries.append((os.path.join('share', package_name, dirpath), files))
    return entries


data_files = [
    ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
    ('share/' + package_name, ['package.xml']),
]
for _top in SHARE_DIRS:
    data_files += share_data_files(_top)

setup(
    name=package_name,
    version='0.1.0',  # keep equal to package.xml and freeflyer_control.__version__
    packages=find_packages(exclude=['test', 'test.*']),
    # The replay page's player script, read at write time (freeflyer_control/sim/replay/page.py).
    package_data={'freeflyer_control.sim.replay': ['*.js']},
    data_files=data_files,
    # Only what ROS and PyPI both provide under these names. Not 'pin': ROS'
    # pinocchio is no pip distribution called 'pin', and the console-script
    # wrappers of older setuptools check install_requires at start-up, so it
    # would break `ros2 run` under colcon. Get Pinocchio from ROS, or from PyPI
    # with the 'pypi' extra.
    install_requires=['setuptools', 'numpy', 'scipy', 'pyyaml'],
    extras_require={
        # PyPI builds of what a ROS install provides.
        # numba: the compiled engine (freeflyer sim, campaigns, plant_node), fast from the first
        # run (it compiles only what a run flies, then loads numba's cache).
        'pypi': ['pin>=3', 'matplotlib', 'numba>=0.60'],
        # Optional: `freeflyer sim` also writes replay.html, a 3-D replay that opens in any browser
        # (the page inlines meshcat's three.js viewer bundle; docs/replay.md).
        'replay': ['meshcat>=0.3.2'],
        # Optional: `freeflyer sim` also writes run.mcap with standard ROS 2 messages.
        'mcap': ['mcap>=1.1', 'mcap-ros2-support>=0.5'],
        # The compiled kernels alone (numba; 'pypi' includes them), e.g. beside a ROS install:
        # `freeflyer sim`'s compiled engine, the plant step of plant_node and the testbed
        # emulator, GJM and H*/C* post-processing, thruster allocation.
        'fast': ['numba>=0.60'],
        # Optional: `freeflyer campaign` (Monte-Carlo campaigns on a local pool or a Dask cluster).
        'campaign': ['dask[distributed]>=2024.1', 'pyarrow>=14'],
        # Optional: the Gymnasium environments (freeflyer_control.gym).
        'gym': ['gymnasium>=1.0'],
        # Optional benchmark peers (bench/bench_spart.py, bench/bench_mujoco.py, bench/bench_gym.py):
        # never imported by the package.
        'bench': ['spartpy', 'mujoco>=3.2'],
        'test': [
            # Jazzy's launch_pytest breaks with pytest >= 8.4 (ros2/launch#947).
            'pytest>=7,<8.4',
            'sympy',
            'catkin_pkg',
            'colcon-common-extensions',
            'matplotlib',
            'mcap>=1.1',
            'mcap-ros2-support>=0.5',
            'meshcat>=0.3.2',
            'numba>=0.60',
            'dask[distributed]>=2024.1',
            'pyarrow>=14',
            'gymnasium>=1.0',
        ],
    },
    zip_safe=True,
    python_requires='>=3.10',
    maintainer='freeflyer_control maintainers',
    maintainer_email='maintainers@freeflyer-control.dev',
    description='Modelling, Generalized Jacobian and control of free-flying space robots in ROS 2',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'freeflyer = freeflyer_control.cli.entry:main',
            'plant_node = freeflyer_control.nodes.plant_node:main',
            'gjm_node = freeflyer_control.nodes.gjm_node:main',
            'controller_node = freeflyer_control.nodes.controller_node:main',
            'sim_loop_node = freeflyer_control.nodes.sim_loop_node:main',
            'testbed_bridge = freeflyer_control.nodes.testbed_bridge_node:main',
            'testbed_emulator = freeflyer_control.nodes.testbed_emulator_node:main',
            'testbed_graph = freeflyer_control.nodes.testbed_graph:main',
        ],
        # Control laws by name (freeflyer_control.laws): the package's own register here the
        # way a lab's package registers its laws (`--controller NAME` finds them).
        'freeflyer_control.controllers': [
            'computed_torque = freeflyer_control.control.builtin:ComputedTorqueLaw',
            'resolved_rate = freeflyer_control.control.builtin:ResolvedRateLaw',
            'impedance = freeflyer_control.control.builtin:ImpedanceLaw',
        ],
    },
)
