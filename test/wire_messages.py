"""Message objects with the real field names of the ROS messages the readers take, as plain data
(``types.SimpleNamespace``; not a fake ROS): what ``read_odometry`` and ``JointStateReader.read_msg``
read from ``nav_msgs/Odometry`` and ``sensor_msgs/JointState``."""

from __future__ import annotations

from types import SimpleNamespace


def odometry(position=(0.1, 0.2, 0.3), quat_xyzw=(0.0, 0.0, 0.0, 1.0), linear=(0.0,) * 3, angular=(0.0,) * 3):
    """A nav_msgs/Odometry: pose (m, x-y-z-w quaternion) and twist (m/s, rad/s), all in world."""
    xyz = lambda v: SimpleNamespace(x=v[0], y=v[1], z=v[2])  # noqa: E731
    q = SimpleNamespace(x=quat_xyzw[0], y=quat_xyzw[1], z=quat_xyzw[2], w=quat_xyzw[3])
    return SimpleNamespace(
        header=SimpleNamespace(frame_id="world"), child_frame_id="base_link",
        pose=SimpleNamespace(pose=SimpleNamespace(position=xyz(position), orientation=q), covariance=[0.0] * 36),
        twist=SimpleNamespace(twist=SimpleNamespace(linear=xyz(linear), angular=xyz(angular)), covariance=[0.0] * 36),
    )
