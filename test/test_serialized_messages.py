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


# --- reading: /joint_states and /base/odom from their bytes --------------------------------------
def _cdr_string(out: bytearray, text: str) -> None:
    """Append a CDR string (4-aligned length with the NUL, then the bytes), aligned as CDR does:
    relative to the payload after the 4-byte encapsulation header."""
    while (len(out) - 4) % 4:
        out += b"\x00"
    data = text.encode() + b"\x00"
    out += struct.pack("<I", len(data)) + data


def _cdr_doubles(out: bytearray, values, sequence: bool = True) -> None:
    if sequence:
        while (len(out) - 4) % 4:
            out += b"\x00"
        out += struct.pack("<I", len(values))
    while (len(out) - 4) % 8:
        out += b"\x00"
    out += np.asarray(values, dtype="<f8").tobytes()


def joint_state_cdr(names, positions, velocities, frame_id: str = "") -> bytes:
    """A sensor_msgs/JointState in CDR, written from the message definition (not by rclpy)."""
    out = bytearray(b"\x00\x01\x00\x00") + struct.pack("<iI", 12, 34)
    _cdr_string(out, frame_id)
    while (len(out) - 4) % 4:
        out += b"\x00"
    out += struct.pack("<I", len(names))
    for name in names:
        _cdr_string(out, name)
    for run in (positions, velocities, []):
        _cdr_doubles(out, run)
    return bytes(out)


def odometry_cdr(position, quat, linear, angular, frame_id="world", child="base_link") -> bytes:
    out = bytearray(b"\x00\x01\x00\x00") + struct.pack("<iI", 12, 34)
    _cdr_string(out, frame_id)
    _cdr_string(out, child)
    _cdr_doubles(out, list(position) + list(quat) + [0.5] * 36, sequence=False)
    _cdr_doubles(out, list(linear) + list(angular) + [0.25] * 36, sequence=False)
    return bytes(out)


def test_joint_states_are_read_from_their_bytes_whatever_the_names_and_frame():
    from freeflyer_control.ros.serialized import JointStateBytes

    reader = JointStateBytes()
    cases = [(("a", "bb", "ccc"), [0.1, 0.2, 0.3], [1.0, 2.0, 3.0], ""),
             (("a", "bb", "ccc"), [-0.1, 0.5, 9.0], [4.0, 5.0, 6.0], ""),         # same layout: reused
             (("joint_1", "wheel"), [1.5, -2.5], [], "base_link"),                # another layout, no velocities
             (("a", "bb", "ccc"), [0.0, 0.0, 1e-300], [7.0, 8.0, 9.0], "")]
    for names, pos, vel, frame in cases:
        got_names, got_pos, got_vel = reader.read(joint_state_cdr(names, pos, vel, frame))
        assert got_names == names
        assert got_pos.tolist() == pos and got_vel.tolist() == vel   # exact: the bytes' own float64s


def test_odometry_is_read_from_its_bytes():
    from freeflyer_control.ros.serialized import odometry_fields

    for frames in (("world", "base_link"), ("", "b")):   # string lengths change the alignment
        p, q, v, w = odometry_fields(odometry_cdr([1.0, 2.0, 3.0], [0.0, 0.0, 0.6, 0.8], [0.1, 0.2, 0.3],
                                                  [0.4, 0.5, 0.6], *frames))
        assert p.tolist() == [1.0, 2.0, 3.0] and q.tolist() == [0.0, 0.0, 0.6, 0.8]
        assert v.tolist() == [0.1, 0.2, 0.3] and w.tolist() == [0.4, 0.5, 0.6]


def test_bytes_that_are_not_such_a_message_are_refused_as_malformed_never_raising_otherwise():
    """Truncated, corrupted or foreign bytes: a reading or MessageError, nothing else (a node's
    callback must never raise on what arrives). 3000 cases from valid messages, each cut or with
    bytes overwritten at random (joint states, odometry, command vectors)."""
    from freeflyer_control.ros.conversions import MessageError
    from freeflyer_control.ros.serialized import JointStateBytes, multiarray_data, odometry_fields

    rng = np.random.default_rng(7)
    readers = [JointStateBytes().read, odometry_fields, multiarray_data]
    valid = [joint_state_cdr(("joint_1", "joint_2"), [0.1, 0.2], [0.3, 0.4]),
             odometry_cdr([1.0, 2.0, 3.0], [0.0, 0.0, 0.0, 1.0], [0.0] * 3, [0.0] * 3),
             multiarray_cdr(("arm_joints",), [1.0, 2.0, 3.0, 4.0])]
    refused = read = 0
    for k in range(3000):
        data = bytearray(valid[k % 3])
        if rng.random() < 0.5:
            data = data[:rng.integers(0, len(data))]
        else:
            for _ in range(rng.integers(1, 4)):
                data[rng.integers(len(data))] = int(rng.integers(256))
        try:
            readers[k % 3](bytes(data))
            read += 1
        except MessageError as exc:
            assert exc.kind == "malformed", exc
            refused += 1
    assert refused > 300 and read > 300   # both outcomes reached: the fuzz tests something
    with pytest.raises(MessageError, match="little-endian CDR"):
        JointStateBytes().read(b"\x00\x00\x00\x00" + bytes(40))   # big-endian


def test_what_rclpy_serializes_is_read_back_exactly(ros):
    """The readers against rclpy's own serialization of real messages."""
    common, _ = ros
    from nav_msgs.msg import Odometry
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState

    from freeflyer_control.ros.serialized import JointStateBytes, odometry_fields

    js = JointState(name=["joint_1", "joint_22", "w"], position=[0.1, -0.2, 3.0], velocity=[1.0, 2.0, 3.0])
    js.header.frame_id = "odd"
    names, pos, vel = JointStateBytes().read(serialize_message(js))
    assert names == ("joint_1", "joint_22", "w") and pos.tolist() == [0.1, -0.2, 3.0] and vel.tolist() == [1.0, 2.0, 3.0]
    od = Odometry()
    od.header.frame_id, od.child_frame_id = "world", "base_link"
    od.pose.pose.position.x, od.pose.pose.orientation.w = 1.25, 1.0
    od.twist.twist.angular.z = -0.5
    od.pose.covariance[0] = 9.0
    p, q, v, w = odometry_fields(serialize_message(od))
    assert p.tolist() == [1.25, 0.0, 0.0] and q.tolist() == [0.0, 0.0, 0.0, 1.0]
    assert v.tolist() == [0.0, 0.0, 0.0] and w.tolist() == [0.0, 0.0, -0.5]
    # And what the plant publishes, the controller reads.
    fields = _fields(("a", "b"), 3)
    js_bytes, odom_bytes = common.StateMessages("base_link").fill(5, fields)
    assert np.array_equal(JointStateBytes().read(js_bytes)[1], fields.joint_positions)
    assert np.array_equal(odometry_fields(odom_bytes)[0], fields.base.position)


def multiarray_cdr(labels, values) -> bytes:
    out = bytearray(b"\x00\x01\x00\x00") + struct.pack("<I", len(labels))
    for label in labels:
        _cdr_string(out, label)
        while (len(out) - 4) % 4:
            out += b"\x00"
        out += struct.pack("<II", len(values), len(values))
    while (len(out) - 4) % 4:
        out += b"\x00"
    out += struct.pack("<I", 0)
    _cdr_doubles(out, values)
    return bytes(out)


def test_a_command_vector_is_read_from_its_bytes_whatever_its_layout():
    from freeflyer_control.ros.conversions import MessageError
    from freeflyer_control.ros.serialized import multiarray_data

    for labels in ((), ("arm_joints",), ("rows", "cols")):
        assert multiarray_data(multiarray_cdr(labels, [0.5, -1.5, 2.0])).tolist() == [0.5, -1.5, 2.0]
    assert multiarray_data(multiarray_cdr(("x",), [])).size == 0
    with pytest.raises(MessageError) as refused:
        multiarray_data(multiarray_cdr(("arm_joints",), [1.0, 2.0])[:-3])   # truncated
    assert refused.value.kind == "malformed"
