"""What the launch_pytest tests share: skipping where ROS 2 is absent, and a recording probe.

``require_ros`` is called at the top of a launch test module, before any ROS import: it skips
the module with the reason where rclpy, launch_pytest, launch_ros or the built package are
missing, and isolates the test's graph in its own ROS domain. ``RecordingProbe`` (in
``probe_node.py``, which imports rclpy) is imported after it.
"""

from __future__ import annotations

import os

import pytest

NEEDS_ROS = "the launch tests need a sourced ROS 2 (Jazzy) install"


def require_ros(*launch_files: str) -> str:
    """The package's installed share folder, or skip the calling module saying what is missing.

    Args:
        launch_files: launch files (relative to share/) the module needs, e.g. ``launch/sim.launch.py``.
    """
    for module in ("rclpy", "launch_pytest", "launch_ros"):
        pytest.importorskip(module, reason=f"{module} not available: {NEEDS_ROS}")
    ament_index = pytest.importorskip("ament_index_python.packages",
                                      reason=f"ament_index_python not available: {NEEDS_ROS}")
    try:
        share = ament_index.get_package_share_directory("freeflyer_control")
        ament_index.get_package_share_directory("robot_state_publisher")
    except ament_index.PackageNotFoundError as exc:
        pytest.skip(f"{exc}: build the workspace (colcon build) and source its install/setup.bash "
                    "to run the launch tests", allow_module_level=True)
    for rel in launch_files:
        if not os.path.isfile(os.path.join(share, rel)):
            pytest.skip(f"{share} has no {rel}: rebuild the workspace (colcon build)", allow_module_level=True)
    # Isolate this graph from others on the machine (inherited by the launched processes).
    os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))
    return share
