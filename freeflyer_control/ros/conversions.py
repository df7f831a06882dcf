"""Message <-> numpy conversion: the one place where wire data meets the physics layer.

Nothing here imports rclpy or message packages: functions read the fields of a message object
(any object with the standard attribute names, e.g. ``sensor_msgs.msg.JointState``) or take plain
sequences, and the ROS nodes build messages from what these functions return. That keeps every
rule testable without ROS:

* joint order on the wire is the order of the names in the message, never an assumption;
* a missing joint, an unknown one, a NaN or an Inf is refused, counted by kind, and reported;
* the base twist is in ``world`` axes (DESIGN.md §3, §5);
* quaternions are (x, y, z, w), as in geometry_msgs.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.linalg import all_finite
from freeflyer_control.physics.state import (
    State,
    assembled_state,
    base_position,
    base_quaternion_xyzw,
    base_twist_world,
    joint_positions,
)


class MessageError(ValueError):
    """A message that cannot be used; ``kind`` is the counter key (e.g. ``"nan"``)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass
class ErrorCounter:
    """Counts refused messages by kind, for /diagnostics."""

    counts: Counter = field(default_factory=Counter)
    last: str = ""

    def record(self, error: MessageError) -> None:
        self.counts[error.kind] += 1
        self.last = str(error)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def finite_array(values: Sequence[float], what: str, size: int | None = None) -> np.ndarray:
    """``values`` as a float array, refused (MessageError) if non-finite or of the wrong size."""
    arr = np.asarray(values, dtype=float).reshape(-1)
    if size is not None and arr.size != size:
        raise MessageError("size", f"{what} has {arr.size} entries, expected {size}")
    if not all_finite(arr):  # ~0.3 us; np.isfinite(arr).all() ~1.3 us, 5 calls a lockstep period
        bad = [i for i, x in enumerate(arr) if not np.isfinite(x)]
        raise MessageError("nan", f"{what} has NaN/Inf at index {bad}")
    return arr


@dataclass(frozen=True)
class JointReading:
    """Joint positions (rad) and velocities (rad/s) in ``FreeFlyerModel.joint_names`` order."""

    positions: np.ndarray
    velocities: np.ndarray


class JointStateReader:
    """Reads JointState-like messages into the model's joint order.

    Args:
        expected: the joint names the reader must find (``ff.joint_names``).
        require_velocity: refuse messages without velocities.
        ignore_unknown: tolerate extra names (other devices on the same topic) instead of
            refusing the message.
        topic: what the messages are called in refusals (e.g. ``"encoders"`` for a testbed's).
    """

    def __init__(self, expected: Sequence[str], *, require_velocity: bool = True, ignore_unknown: bool = True,
                 topic: str = "joint_states"):
        self.expected = tuple(expected)
        self.require_velocity = require_velocity
        self.ignore_unknown = ignore_unknown
        self.topic = topic
        self._index_cache: dict[tuple[str, ...], np.ndarray] = {}

    def _index(self, names: tuple[str, ...]) -> np.ndarray:
        cached = self._index_cache.get(names)
        if cached is not None:
            return cached
        if len(set(names)) != len(names):
            raise MessageError("duplicate", f"{self.topic} names repeat a joint: {list(names)}")
        position = {n: i for i, n in enumerate(names)}
        missing = [n for n in self.expected if n not in position]
        if missing:
            raise MessageError("missing", f"{self.topic} lacks joint(s) {missing}")
        unknown = [n for n in names if n not in self.expected]
        if unknown and not self.ignore_unknown:
            raise MessageError("unknown", f"{self.topic} names unknown joint(s) {unknown}")
        index = np.array([position[n] for n in self.expected], dtype=int)
        if len(self._index_cache) < 16:  # a topic carries very few distinct name lists
            self._index_cache[names] = index
        return index

    def read(self, names: Sequence[str], positions: Sequence[float], velocities: Sequence[float]) -> JointReading:
        names = tuple(names)
        index = self._index(names)
        pos = finite_array(positions, f"{self.topic}.position", len(names))
        if len(velocities) == 0:
            if self.require_velocity:
                raise MessageError("missing", f"{self.topic} has no velocities")
            vel = np.zeros(len(names))
        else:
            vel = finite_array(velocities, f"{self.topic}.velocity", len(names))
        return JointReading(pos[index], vel[index])

    def read_msg(self, msg) -> JointReading:
        """From a ``sensor_msgs/JointState`` (its name, position, velocity fields)."""
        return self.read(msg.name, msg.position, msg.velocity)


@dataclass(frozen=True)
class BaseReading:
    """Base pose and twist: position m (3,), quaternion (x, y, z, w), linear and angular
    velocity (3,) each, all in ``world``."""

    position: np.ndarray
    orientation_xyzw: np.ndarray
    linear_velocity: np.ndarray
    angular_velocity: np.ndarray


def read_odometry(msg) -> BaseReading:
    """From a ``nav_msgs/Odometry`` whose pose and twist are in ``world`` (our convention)."""
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    lin, ang = msg.twist.twist.linear, msg.twist.twist.angular
    return base_reading([p.x, p.y, p.z], [o.x, o.y, o.z, o.w], [lin.x, lin.y, lin.z], [ang.x, ang.y, ang.z])


def base_reading(position, orientation_xyzw, linear, angular) -> BaseReading:
    """An odometry's numbers (world: m, (x, y, z, w), m/s, rad/s) checked: finite, and a unit
    quaternion (normalised); MessageError otherwise."""
    quat = finite_array(orientation_xyzw, "odometry.orientation", 4)
    norm = math.hypot(*quat)  # no overflow warning for a corrupt 1e308 component: inf, refused below
    if abs(norm - 1.0) > 1e-3:
        raise MessageError("quaternion", f"odometry orientation is not a unit quaternion (norm {norm:.4g})")
    return BaseReading(
        finite_array(position, "odometry.position", 3),
        quat / norm,
        finite_array(linear, "odometry.twist.linear", 3),
        finite_array(angular, "odometry.twist.angular", 3),
    )


def state_from_readings(ff: FreeFlyerModel, joints: JointReading, base: BaseReading) -> State:
    """A physics :class:`State` from what the topics said (planar robots: in-plane parts).

    The readings are checked where they are read (finite, sized, a unit quaternion), so the
    state is assembled without :func:`make_state`'s checks (~20 us a tick)."""
    p, quat = base.position, base.orientation_xyzw
    lin, ang = base.linear_velocity, base.angular_velocity
    if ff.base == "planar":
        # An air-bearing table: keep the in-plane part (capture noise puts small z/tilt in).
        yaw = 2.0 * math.atan2(quat[2], quat[3])
        base_q = np.array([p[0], p[1], math.cos(yaw), math.sin(yaw)])
        lin = np.array([lin[0], lin[1], 0.0])
        ang = np.array([0.0, 0.0, ang[2]])
    else:
        base_q = np.concatenate((p, quat))
    return assembled_state(ff, base_q, joints.positions, lin, ang, joints.velocities)


@dataclass(frozen=True)
class StateFields:
    """What the plant publishes, ready to copy into messages (world axes, x-y-z-w quaternion)."""

    joint_names: tuple[str, ...]
    joint_positions: np.ndarray
    joint_velocities: np.ndarray
    base: BaseReading


def fields_from_state(ff: FreeFlyerModel, state: State) -> StateFields:
    lin, ang = base_twist_world(ff, state)
    return StateFields(
        tuple(ff.joint_names),
        joint_positions(ff, state.q),
        state.v[ff.nb:].copy(),
        BaseReading(base_position(ff, state.q), base_quaternion_xyzw(ff, state.q), lin, ang),
    )


@dataclass(frozen=True)
class MultiArrayFields:
    """A ``std_msgs/Float64MultiArray``: layout dims (label, size, stride) and row-major data."""

    dims: tuple[tuple[str, int, int], ...]
    data: list[float]


def matrix_to_multiarray(matrix: np.ndarray, row_label: str = "rows", col_label: str = "cols") -> MultiArrayFields:
    """Row-major layout with labelled dims, the way std_msgs/MultiArrayLayout documents it."""
    m = np.asarray(matrix, dtype=float)
    rows, cols = m.shape
    return MultiArrayFields(((row_label, rows, rows * cols), (col_label, cols, cols)), m.reshape(-1).tolist())


def multiarray_to_matrix(dims: Sequence[tuple[str, int, int]], data: Sequence[float]) -> np.ndarray:
    """Inverse of :func:`matrix_to_multiarray` (checks the layout)."""
    if len(dims) != 2:
        raise MessageError("layout", f"expected a 2-D layout, got {len(dims)} dims")
    rows, cols = int(dims[0][1]), int(dims[1][1])
    strides = (int(dims[0][2]), int(dims[1][2]))
    if strides != (rows * cols, cols):
        raise MessageError("layout", f"multiarray strides {strides} are not row-major for {rows} x {cols} "
                                     f"(expected {(rows * cols, cols)})")
    arr = finite_array(data, "multiarray.data", rows * cols)
    return arr.reshape(rows, cols)


def named_vector(names: Sequence[str], values: Sequence[float], expected: Sequence[str], what: str) -> np.ndarray:
    """Values given with names (e.g. a command with a joint-name list) in ``expected`` order."""
    if len(names) != len(values):
        raise MessageError("size", f"{what}: {len(names)} names but {len(values)} values")
    reader = JointStateReader(expected, require_velocity=False, ignore_unknown=False)
    return reader.read(names, values, []).positions
