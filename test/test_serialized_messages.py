"""Messages kept serialized (ros.serialized) and the nodes' state and command messages built on
them (nodes/common.py: StateMessages, VectorMessage).

The markers' placement is checked on bytes without ROS; that what the nodes publish is the
message they mean is checked under rclpy, by deserializing the bytes with rclpy's own
``deserialize_message`` (skipped without ROS 2).
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from freeflyer_control.ros.serialized import LayoutError, SerializedMessage, markers, stamp_marker


def _buffer(head: bytes, *runs: np.ndarray) -> bytes:
    """A CDR-like buffer: an encapsulation header and stamp, then each run behind a count."""
    out = b"\x00\x01\x00\x00" + head
    for run in runs:
        out += struct.pack("<I", run.size) + b"\x00" * 4 + run.astype("<f8").tobytes()
    return out


def test_each_marker_run_becomes_a_view_that_rewrites_its_numbers_in_the_bytes():
    pos, vel = markers(3, 1.1e-300), markers(3, 2.2e-300)
    sec, nsec = stamp_marker()
    msg = SerializedMessage(_buffer(struct.pack("<II", sec, nsec), pos, vel), {"position": pos, "velocity": vel},
                            stamp=(sec, nsec))
    msg.fields["position"][:] = [0.5, -1.0, 2.0]
    msg.fields["velocity"][:] = [3.0, 4.0, -5.0]
    msg.set_stamp(1_700_000_000_123_456_789)
    out = msg.data()
    expected = _buffer(struct.pack("<II", 1_700_000_000, 123_456_789), np.array([0.5, -1.0, 2.0]),
                       np.array([3.0, 4.0, -5.0]))
    assert out == expected   # byte for byte: only the numbers changed
    msg.fields["position"][0] = 9.0
    assert out == expected   # what was handed out is a copy, not rewritten by the next period


def test_markers_are_distinct_and_no_clock_gives_the_stamp_marker():
    m = markers(64, 1.1e-300)
    assert len(set(m.tolist())) == 64 and np.all(np.isfinite(m)) and np.all(m > 2.3e-308)   # normal doubles
    sec, nsec = stamp_marker()
    assert nsec < 1_000_000_000   # a valid nanosecond field


def test_a_marker_missing_or_found_twice_is_refused():
    run = markers(2, 1.1e-300)
    with pytest.raises(LayoutError, match="not found"):
        SerializedMessage(_buffer(b"", np.zeros(2)), {"position": run})
    with pytest.raises(LayoutError, match="found twice"):
        SerializedMessage(_buffer(b"", run, run), {"position": run})
    big_endian = b"\x00\x00\x00\x00" + struct.pack(">I", 2) + b"\x00" * 4 + run.astype(">f8").tobytes()
    with pytest.raises(LayoutError):   # another encoding: no wrong numbers, a refusal
        SerializedMessage(big_endian, {"position": run})


# --- under rclpy -------------------------------------------------------------------------------
@pytest.fixture
def ros():
    pytest.importorskip("rclpy", reason="rclpy not available: needs a sourced ROS 2 (Jazzy) install")
    from rclpy.serialization import deserialize_message

    from freeflyer_control.nodes import common
    return common, deserialize_message


def _fields(names, seed: int):
    from freeflyer_control.ros.conversions import BaseReading, StateFields

    rng = np.random.default_rng(seed)
    quat = rng.normal(size=4)
    return StateFields(tuple(names), rng.normal(size=len(names)), rng.normal(size=len(names)),
                       BaseReading(rng.normal(size=3), quat / np.linalg.norm(quat), rng.normal(size=3),
                                   rng.normal(size=3)))


def test_the_plant_publishes_the_joint_state_and_odometry_it_means(ros):
    common, deserialize_message = ros
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState

    msgs = common.StateMessages("base_link")
    names = ("joint_1", "joint_2", "wheel")
    for k, stamp_ns in enumerate((1_700_000_000_000_000_001, 1_700_000_000_002_000_000)):
        fields = _fields(names, k)
        js_bytes, odom_bytes = msgs.fill(stamp_ns, fields)
        assert isinstance(js_bytes, bytes) and isinstance(odom_bytes, bytes)   # the serialized path
        js = deserialize_message(js_bytes, JointState)
        od = deserialize_message(odom_bytes, Odometry)
        for msg in (js, od):
            assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == divmod(stamp_ns, 1_000_000_000)
        assert list(js.name) == list(names) and len(js.effort) == 0
        # Exact: the bytes carry the float64 values themselves.
        assert np.array_equal(js.position, fields.joint_positions)
        assert np.array_equal(js.velocity, fields.joint_velocities)
        assert (od.header.frame_id, od.child_frame_id) == ("world", "base_link")
        p, o = od.pose.pose.position, od.pose.pose.orientation
        lin, ang = od.twist.twist.linear, od.twist.twist.angular
        b = fields.base
        assert [p.x, p.y, p.z] == b.position.tolist()
        assert [o.x, o.y, o.z, o.w] == b.orientation_xyzw.tolist()
        assert [lin.x, lin.y, lin.z] == b.linear_velocity.tolist()
        assert [ang.x, ang.y, ang.z] == b.angular_velocity.tolist()
        assert not np.any(od.pose.covariance) and not np.any(od.twist.covariance)
    tf = msgs.transform(1_700_000_000_000_000_001, fields)
    assert (tf.header.frame_id, tf.child_frame_id) == ("world", "base_link")
    assert tf.transform.translation.x == fields.base.position[0]


def test_a_command_vector_is_published_with_its_label_and_values(ros):
    common, deserialize_message = ros
    from std_msgs.msg import Float64MultiArray

    vec = common.VectorMessage("arm_joints")
    for values in (np.array([0.1, -0.2, 0.3, 0.0]), np.array([1.0, 2.0]), np.array([-1.5, 0.25])):
        msg = deserialize_message(vec.fill(values), Float64MultiArray)
        assert np.array_equal(msg.data, values)
        (dim,) = msg.layout.dim
        assert (dim.label, dim.size, dim.stride) == ("arm_joints", values.size, values.size)
