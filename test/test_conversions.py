"""Message <-> numpy conversion (freeflyer_control.ros.conversions), without ROS.

Wire data is given as plain sequences wherever the module offers that; the two functions that read
a message object (read_odometry, JointStateReader.read_msg) get a ``types.SimpleNamespace`` with
the real field names of nav_msgs/Odometry and sensor_msgs/JointState (plain data, not a fake ROS).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from conftest import random_state, robot
from wire_messages import odometry

from freeflyer_control.ros.conversions import (
    BaseReading,
    ErrorCounter,
    JointReading,
    JointStateReader,
    MessageError,
    fields_from_state,
    matrix_to_multiarray,
    multiarray_to_matrix,
    named_vector,
    read_odometry,
    state_from_readings,
)

NAMES = ("joint1", "joint2", "joint3", "joint4", "wheel_z_joint")  # planar_4link's model order


def _refused(kind: str, fn, *args, **kwargs) -> MessageError:
    with pytest.raises(MessageError) as info:
        fn(*args, **kwargs)
    assert info.value.kind == kind, f"expected kind {kind!r}, got {info.value.kind!r}: {info.value}"
    return info.value


# ---------------------------------------------------------------------------------------------
# JointStateReader


def test_model_names_are_what_the_reader_expects():
    assert robot("planar_4link").joint_names == NAMES


def test_shuffled_order_is_read_back_in_model_order():
    rng = np.random.default_rng(1)
    pos, vel = rng.normal(size=5), rng.normal(size=5)
    perm = rng.permutation(5)
    assert not np.array_equal(perm, np.arange(5))
    reader = JointStateReader(NAMES)
    out = reader.read([NAMES[i] for i in perm], pos[perm], vel[perm])
    assert isinstance(out, JointReading)
    np.testing.assert_array_equal(out.positions, pos)
    np.testing.assert_array_equal(out.velocities, vel)


def test_index_cache_does_not_leak_between_orders():
    reader = JointStateReader(NAMES)
    pos = np.arange(5.0)
    for perm in ([4, 3, 2, 1, 0], [1, 0, 2, 3, 4], [4, 3, 2, 1, 0], list(range(5)), [1, 0, 2, 3, 4]):
        perm = np.array(perm)
        out = reader.read([NAMES[i] for i in perm], pos[perm], 10 * pos[perm])
        np.testing.assert_array_equal(out.positions, pos, err_msg=f"order {perm}")
        np.testing.assert_array_equal(out.velocities, 10 * pos, err_msg=f"order {perm}")
    # More distinct orders than the cache holds: still right.
    rng = np.random.default_rng(2)
    for _ in range(40):
        perm = rng.permutation(5)
        np.testing.assert_array_equal(reader.read([NAMES[i] for i in perm], pos[perm], pos[perm]).positions, pos)


def test_unknown_names_ignored_by_default_and_refused_when_asked():
    names = ["gripper", *NAMES[::-1], "camera_pan"]
    pos = [99.0, 4.0, 3.0, 2.0, 1.0, 0.0, -99.0]
    out = JointStateReader(NAMES).read(names, pos, pos)
    np.testing.assert_array_equal(out.positions, [0.0, 1.0, 2.0, 3.0, 4.0])
    err = _refused("unknown", JointStateReader(NAMES, ignore_unknown=False).read, names, pos, pos)
    assert "gripper" in str(err) and "camera_pan" in str(err)


def test_missing_joint_refused_naming_it():
    names = [n for n in NAMES if n != "joint3"]
    err = _refused("missing", JointStateReader(NAMES).read, names, np.zeros(4), np.zeros(4))
    assert "joint3" in str(err)
    assert "joint1" not in str(err)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("field", ["position", "velocity"])
def test_nan_and_inf_refused_and_counted(bad, field):
    reader, counter = JointStateReader(NAMES), ErrorCounter()
    pos, vel = np.zeros(5), np.zeros(5)
    (pos if field == "position" else vel)[2] = bad
    try:
        reader.read(NAMES, pos, vel)
    except MessageError as exc:
        assert exc.kind == "nan"
        assert field in str(exc) and "2" in str(exc)  # which field, which index
        counter.record(exc)
    else:
        pytest.fail("a non-finite joint state was accepted")
    assert counter.counts["nan"] == 1 and counter.total == 1


def test_error_counter_counts_by_kind_total_and_last():
    reader, counter = JointStateReader(NAMES), ErrorCounter()
    bad_messages = [
        (NAMES, [np.nan, 0, 0, 0, 0], np.zeros(5)),
        (NAMES[:4], np.zeros(4), np.zeros(4)),  # missing wheel
        (NAMES, np.zeros(5), [0, 0, np.inf, 0, 0]),
        (NAMES, np.zeros(4), np.zeros(5)),  # size
    ]
    for msg in bad_messages:
        with pytest.raises(MessageError) as info:
            reader.read(*msg)
        counter.record(info.value)
    assert counter.counts == {"nan": 2, "missing": 1, "size": 1}
    assert counter.total == 4
    assert counter.last == str(info.value) and "4 entries, expected 5" in counter.last


@pytest.mark.parametrize("pos_len, vel_len", [(4, 5), (6, 5), (5, 4), (5, 6), (0, 5)])
def test_wrong_lengths_refused(pos_len, vel_len):
    _refused("size", JointStateReader(NAMES).read, NAMES, np.zeros(pos_len), np.ones(vel_len))


def test_duplicate_names_refused():
    names = [*NAMES, "joint2"]
    err = _refused("duplicate", JointStateReader(NAMES).read, names, np.zeros(6), np.zeros(6))
    assert "joint2" in str(err)


def test_velocities_required_unless_told_otherwise():
    _refused("missing", JointStateReader(NAMES).read, NAMES, np.ones(5), [])
    out = JointStateReader(NAMES, require_velocity=False).read(NAMES, np.ones(5), [])
    np.testing.assert_array_equal(out.velocities, np.zeros(5))


def test_read_msg_uses_the_joint_state_fields():
    msg = SimpleNamespace(name=list(NAMES[::-1]), position=[4.0, 3, 2, 1, 0], velocity=[0.4, 0.3, 0.2, 0.1, 0],
                          effort=[])
    out = JointStateReader(NAMES).read_msg(msg)
    np.testing.assert_array_equal(out.positions, [0, 1, 2, 3, 4])
    np.testing.assert_allclose(out.velocities, [0, 0.1, 0.2, 0.3, 0.4])


# ---------------------------------------------------------------------------------------------
# read_odometry (nav_msgs/Odometry fields)


def test_odometry_read_and_quaternion_normalised():
    quat = np.array([0.1, -0.2, 0.3, 0.9])
    quat = quat / np.linalg.norm(quat) * (1 + 5e-4)  # float32 round trips leave a little off unit
    out = read_odometry(odometry((1, 2, 3), quat, (0.1, 0.2, 0.3), (-0.1, -0.2, -0.3)))
    assert abs(np.linalg.norm(out.orientation_xyzw) - 1.0) < 1e-12
    np.testing.assert_allclose(out.orientation_xyzw, quat / np.linalg.norm(quat), atol=1e-15)  # x, y, z, w kept
    np.testing.assert_array_equal(out.position, [1, 2, 3])
    np.testing.assert_array_equal(out.linear_velocity, [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(out.angular_velocity, [-0.1, -0.2, -0.3])


@pytest.mark.parametrize("quat", [(0, 0, 0, 0.9), (0, 0, 0, 0), (0.5, 0.5, 0.5, 0.6)])
def test_non_unit_quaternion_refused(quat):
    _refused("quaternion", read_odometry, odometry(quat_xyzw=quat))


@pytest.mark.parametrize("where", ["position", "quat", "linear", "angular"])
def test_odometry_nan_refused(where):
    kwargs = {"position": (0.0, np.nan, 0.0), "quat": (0.0, 0.0, np.nan, 1.0),
              "linear": (np.inf, 0.0, 0.0), "angular": (0.0, 0.0, np.nan)}
    key = {"quat": "quat_xyzw"}.get(where, where)
    _refused("nan", read_odometry, odometry(**{key: kwargs[where]}))


# ---------------------------------------------------------------------------------------------
# state_from_readings o fields_from_state


@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_state_round_trip_through_the_wire(name):
    ff = robot(name)
    rng = np.random.default_rng(7)
    reader = JointStateReader(ff.joint_names)
    for _ in range(5):
        state = random_state(ff, rng)
        f = fields_from_state(ff, state)
        # As on the wire: joint names shuffled; every array goes through a list of floats.
        perm = rng.permutation(len(f.joint_names))
        joints = reader.read([f.joint_names[i] for i in perm], list(f.joint_positions[perm]),
                             list(f.joint_velocities[perm]))
        back = state_from_readings(ff, joints, f.base)
        f2 = fields_from_state(ff, back)
        np.testing.assert_allclose(f2.joint_positions, f.joint_positions, atol=1e-12)
        np.testing.assert_allclose(f2.joint_velocities, f.joint_velocities, atol=1e-12)
        np.testing.assert_allclose(f2.base.position, f.base.position, atol=1e-12)
        np.testing.assert_allclose(f2.base.orientation_xyzw, f.base.orientation_xyzw, atol=1e-12)
        np.testing.assert_allclose(f2.base.linear_velocity, f.base.linear_velocity, atol=1e-12)
        np.testing.assert_allclose(f2.base.angular_velocity, f.base.angular_velocity, atol=1e-12)
        # and the physics state itself
        np.testing.assert_allclose(back.q, state.q, atol=1e-12)
        np.testing.assert_allclose(back.v, state.v, atol=1e-12)


def test_world_twist_on_the_wire_is_not_the_local_one():
    """The published twist is in world axes: for a yawed base it differs from Pinocchio's v."""
    from freeflyer_control.physics.state import make_state

    ff = robot("planar_4link")
    state = make_state(ff, base_yaw=np.pi / 2, base_linear_velocity=(0.1, 0.0, 0.0))
    f = fields_from_state(ff, state)
    np.testing.assert_allclose(f.base.linear_velocity, [0.1, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(state.v[:2], [0.0, -0.1], atol=1e-15)  # base_link axes


def test_planar_capture_noise_projected_away():
    ff = robot("planar_4link")
    rng = np.random.default_rng(3)
    state = random_state(ff, rng)
    f = fields_from_state(ff, state)
    yaw = 2 * np.arctan2(f.base.orientation_xyzw[2], f.base.orientation_xyzw[3])
    tilt = 0.01  # rad about x of base_link, as a motion-capture system might report
    q_yaw = np.array([0, 0, np.sin(yaw / 2), np.cos(yaw / 2)])
    q_tilt = np.array([np.sin(tilt / 2), 0, 0, np.cos(tilt / 2)])
    from freeflyer_control.runtime.plant_server import _quat_mul_xyzw

    noisy = BaseReading(
        f.base.position + np.array([0, 0, 0.004]),
        _quat_mul_xyzw(q_yaw, q_tilt),
        f.base.linear_velocity + np.array([0, 0, -0.002]),
        f.base.angular_velocity + np.array([0.003, -0.001, 0]),
    )
    joints = JointReading(f.joint_positions, f.joint_velocities)
    back = state_from_readings(ff, joints, noisy)
    np.testing.assert_allclose(back.q, state.q, atol=1e-12)
    np.testing.assert_allclose(back.v, state.v, atol=1e-12)
    f2 = fields_from_state(ff, back)
    assert f2.base.position[2] == 0.0 and f2.base.linear_velocity[2] == 0.0
    np.testing.assert_array_equal(f2.base.angular_velocity[:2], 0.0)
    np.testing.assert_array_equal(f2.base.orientation_xyzw[:2], 0.0)


# ---------------------------------------------------------------------------------------------
# Float64MultiArray layout


def test_multiarray_round_trip_and_row_major_layout():
    m = np.arange(12.0).reshape(3, 4) + 0.5
    out = matrix_to_multiarray(m, "twist", "actuated")
    # std_msgs/MultiArrayLayout: dim[0].stride = rows * cols, dim[1].stride = cols,
    # element (i, j) at data[dim[1].stride * i + j].
    assert out.dims == (("twist", 3, 12), ("actuated", 4, 4))
    assert all(isinstance(x, float) for x in out.data)
    for i in range(3):
        for j in range(4):
            assert out.data[out.dims[1][2] * i + j] == m[i, j]
    np.testing.assert_array_equal(multiarray_to_matrix(out.dims, out.data), m)
    # default labels; a one-row and a one-column matrix keep their shape
    assert matrix_to_multiarray(np.ones((2, 5))).dims == (("rows", 2, 10), ("cols", 5, 5))
    for shape in ((1, 6), (6, 1)):
        a = matrix_to_multiarray(np.ones(shape))
        assert multiarray_to_matrix(a.dims, a.data).shape == shape


def test_multiarray_bad_input_refused():
    out = matrix_to_multiarray(np.ones((3, 4)))
    _refused("size", multiarray_to_matrix, out.dims, out.data[:-1])
    _refused("size", multiarray_to_matrix, out.dims, [*out.data, 1.0])
    _refused("nan", multiarray_to_matrix, out.dims, [np.nan, *out.data[1:]])
    _refused("layout", multiarray_to_matrix, out.dims[:1], out.data)
    _refused("layout", multiarray_to_matrix, (("rows", 3, 12), ("cols", 4, 4), ("x", 1, 1)), out.data)
    # column-major strides would silently transpose the data: refused
    _refused("layout", multiarray_to_matrix, (("rows", 3, 3), ("cols", 4, 1)), out.data)


# ---------------------------------------------------------------------------------------------
# named_vector


def test_named_vector_reorders():
    expected = ("joint1", "joint2", "joint3", "joint4")
    out = named_vector(["joint3", "joint1", "joint4", "joint2"], [3.0, 1.0, 4.0, 2.0], expected, "arm command")
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0, 4.0])


def test_named_vector_refusals():
    expected = ("joint1", "joint2")
    err = _refused("unknown", named_vector, ["joint1", "joint2", "elbow"], [1.0, 2.0, 3.0], expected, "cmd")
    assert "elbow" in str(err)
    err = _refused("missing", named_vector, ["joint1"], [1.0], expected, "cmd")
    assert "joint2" in str(err)
    err = _refused("size", named_vector, ["joint1", "joint2"], [1.0], expected, "arm command")
    assert "arm command" in str(err)
    _refused("nan", named_vector, ["joint1", "joint2"], [1.0, np.nan], expected, "cmd")


def test_refusals_name_the_topic_the_reader_was_made_for():
    reader = JointStateReader(NAMES, require_velocity=False, topic="encoders")
    err = _refused("duplicate", reader.read, [*NAMES, NAMES[0]], np.zeros(6), [])
    assert str(err).startswith("encoders names repeat a joint")
    err = _refused("nan", reader.read, NAMES, [np.nan, 0, 0, 0, 0], [])
    assert str(err).startswith("encoders.position has NaN/Inf")
