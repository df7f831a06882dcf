"""Messages kept serialized: a message's CDR bytes, rewritten in place each period.

A node that publishes the same message every period (the plant's /joint_states and /base/odom,
the controller's commands) changes only its numbers: the names, frames and layout stay. rclpy's
``publish(msg)`` converts the Python message to its C struct and serializes it every time
(JointState: ~7 us of a ~8 us publish in a warm loop, far more with cold caches);
``publish(bytes)`` hands the bytes to the middleware as they are (~1.3 us). So the node
serializes its message once with marker values in the numbers it will change (rclpy's
``serialize_message``), finds each marker run in the bytes, and from then on writes the numbers
into those places (numpy views on the buffer) and publishes the bytes.

Nothing here imports rclpy: the node hands in the serialized bytes and the markers it wrote. A
marker run that is not found exactly once (another encoding, say big-endian CDR) raises
:class:`LayoutError`, and the node keeps publishing message objects.

The other way, the controller reads its /joint_states and /base/odom from their bytes
(subscriptions with ``raw=True``): rclpy's deserialization builds a Python object for every
field and sub-message (an Odometry is a dozen objects and two 36-element covariance arrays) to
be read once. :class:`JointStateBytes`, :func:`odometry_fields` and :func:`multiarray_data`
(the plant's commands) read the numbers straight
from the CDR (XCDR1, little-endian: alignment relative to the payload after the 4-byte
encapsulation header), and refuse what is not such a message with a MessageError, as the
message readers of ros.conversions refuse a bad message.
"""

from __future__ import annotations

import struct
from typing import Mapping, Sequence

import numpy as np

from freeflyer_control.ros.conversions import MessageError

# CDR encodes little-endian on the machines ROS 2 runs on (encapsulation 0x0001); the views
# are explicit about it, so a big-endian buffer finds no marker rather than wrong numbers.
FLOAT64 = np.dtype("<f8")
STAMP = np.dtype("<u4")


class LayoutError(ValueError):
    """A marker run is not in the serialized bytes exactly once."""


def markers(count: int, first: float) -> np.ndarray:
    """``count`` distinct float64 markers from ``first`` on: values no real message carries
    (give each field its own ``first``, e.g. 1.1e-300, 2.2e-300, ...), so that each run's 8-byte
    patterns occur once in a serialized message."""
    return first * (1.0 + np.arange(count) / 1024.0)


def stamp_marker() -> tuple[int, int]:
    """(sec, nanosec) for a header's stamp to find it by: two 32-bit patterns no clock gives."""
    return 0x5EC0FFEE, 0x0A5E1DED   # nanosec < 1e9


def _locate(buffer: bytes, pattern: bytes, what: str) -> int:
    at = buffer.find(pattern)
    if at < 0 or buffer.find(pattern, at + 1) >= 0:
        raise LayoutError(f"{what}: marker {'not found' if at < 0 else 'found twice'} in the serialized message")
    return at


class SerializedMessage:
    """A serialized message whose float64 runs (and stamp) are rewritten in place.

    Args:
        serialized: the message's CDR bytes (rclpy.serialization.serialize_message), with the
            markers in it.
        fields: name -> the markers written in that float64 run (:func:`markers`), in order.
        stamp: the (sec, nanosec) marker written in the header's stamp (:func:`stamp_marker`),
            or None for a message without one.

    Raises:
        LayoutError: a marker run is not found exactly once.
    """

    def __init__(self, serialized: bytes, fields: Mapping[str, Sequence[float]],
                 stamp: tuple[int, int] | None = None):
        self._buffer = bytearray(serialized)
        self.fields: dict[str, np.ndarray] = {}
        for name, values in fields.items():
            values = np.asarray(values, dtype=FLOAT64)
            if values.size == 0:
                self.fields[name] = np.zeros(0)
                continue
            at = _locate(serialized, values.tobytes(), name)
            self.fields[name] = np.frombuffer(self._buffer, dtype=FLOAT64, count=values.size, offset=at)
        self._stamp = None
        if stamp is not None:
            at = _locate(serialized, np.array(stamp, dtype=STAMP).tobytes(), "stamp")
            self._stamp = np.frombuffer(self._buffer, dtype=STAMP, count=2, offset=at)

    def set_stamp(self, nanoseconds: int) -> None:
        """The header's stamp, from nanoseconds since the clock's epoch (>= 0)."""
        self._stamp[0], self._stamp[1] = divmod(nanoseconds, 1_000_000_000)

    def data(self) -> bytes:
        """The message as it stands, to publish (a copy: the buffer is rewritten next period)."""
        return bytes(self._buffer)


# --- reading -------------------------------------------------------------------------------------
_HEADER = 4                      # encapsulation header; CDR aligns relative to what follows it
_CDR_LE = (b"\x00\x01", b"\x00\x03")   # plain CDR and PL_CDR, little-endian (ROS 2: the first)
_U32 = struct.Struct("<I")


def _align(at: int, size: int) -> int:
    return _HEADER + -(-(at - _HEADER) // size) * size


def _string(buf: bytes, at: int) -> tuple[bytes, int]:
    """A CDR string at ``at``: (its bytes without the terminating NUL, the offset after it)."""
    at = _align(at, 4)
    (n,) = _U32.unpack_from(buf, at)
    end = at + 4 + n
    if n == 0 or end > len(buf):
        raise MessageError("malformed", f"string of {n} bytes at {at} in a {len(buf)}-byte message")
    return buf[at + 4:end - 1], end


def _doubles(buf: bytes, at: int, count: int | None = None) -> tuple[np.ndarray, int]:
    """A float64 run at ``at``: a sequence (count first) when ``count`` is None, else a fixed
    array of ``count``; (a read-only view on ``buf``, the offset after it)."""
    if count is None:
        at = _align(at, 4)
        (count,) = _U32.unpack_from(buf, at)
        at += 4
    at = _align(at, 8)
    end = at + 8 * count
    if end > len(buf):
        raise MessageError("malformed", f"{count} doubles at {at} in a {len(buf)}-byte message")
    return np.frombuffer(buf, dtype=FLOAT64, count=count, offset=at), end


def _check(buf: bytes, what: str) -> None:
    if not isinstance(buf, (bytes, bytearray)) or len(buf) < _HEADER + 8 or bytes(buf[:2]) not in _CDR_LE:
        raise MessageError("malformed", f"{what}: not a little-endian CDR message "
                                        f"({len(buf) if isinstance(buf, (bytes, bytearray)) else type(buf).__name__})")


class JointStateBytes:
    """Reads a serialized sensor_msgs/JointState: (names, positions, velocities).

    A topic's messages keep their names and sizes, so the layout found in one message is kept
    and reused while the bytes before the positions (frame id and names) are the same.
    """

    def __init__(self):
        self._key: bytes = b""
        self._names: tuple[str, ...] = ()
        self._at = 0   # offset of the positions' count

    def read(self, buf: bytes) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
        """(joint names, positions rad, velocities rad/s) as the message gives them (velocities
        may be empty); views on ``buf``. MessageError("malformed") for bytes that are not one."""
        _check(buf, "joint_states")
        try:
            at = self._at
            if not (at and len(buf) > at and buf[12:at] == self._key):
                at = self._layout(buf)
            positions, at = _doubles(buf, at)
            velocities, _ = _doubles(buf, at)
        except (struct.error, ValueError, UnicodeDecodeError) as exc:
            if isinstance(exc, MessageError):
                raise
            raise MessageError("malformed", f"joint_states: {exc}") from None
        return self._names, positions, velocities

    def _layout(self, buf: bytes) -> int:
        _, at = _string(buf, 12)   # header: stamp (8 bytes), then frame_id
        at = _align(at, 4)
        (count,) = _U32.unpack_from(buf, at)
        if count > (len(buf) - at) // 5:   # each name takes at least 5 bytes: a corrupt count
            raise MessageError("malformed", f"joint_states: {count} names in a {len(buf)}-byte message")
        at += 4
        names = []
        for _ in range(count):
            name, at = _string(buf, at)
            names.append(name.decode("utf-8"))
        at = _align(at, 4)
        self._names, self._key, self._at = tuple(names), bytes(buf[12:at]), at
        return at


def odometry_fields(buf: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Reads a serialized nav_msgs/Odometry: (position m (3,), orientation (x, y, z, w),
    linear and angular velocity (3,) each), as the message gives them (copies).
    MessageError("malformed") for bytes that are not one."""
    _check(buf, "odometry")
    try:
        _, at = _string(buf, 12)    # header.frame_id
        _, at = _string(buf, at)    # child_frame_id
        pose, at = _doubles(buf, at, 7 + 36)     # pose: position, orientation, covariance
        twist, _ = _doubles(buf, at, 6)          # twist: linear, angular
    except (struct.error, ValueError) as exc:
        if isinstance(exc, MessageError):
            raise
        raise MessageError("malformed", f"odometry: {exc}") from None
    return pose[:3].copy(), pose[3:7].copy(), twist[:3].copy(), twist[3:6].copy()


def multiarray_data(buf: bytes) -> np.ndarray:
    """Reads a serialized std_msgs/Float64MultiArray: its data (a copy), whatever its layout
    says (the plant reads a command vector's values, as it does from the message object).
    MessageError("malformed") for bytes that are not one."""
    _check(buf, "multiarray")
    try:
        (dims,) = _U32.unpack_from(buf, _HEADER)
        if dims > (len(buf) - _HEADER) // 13:   # a dim takes at least 13 bytes: a corrupt count
            raise MessageError("malformed", f"multiarray: {dims} dims in a {len(buf)}-byte message")
        at = _HEADER + 4
        for _ in range(dims):
            _, at = _string(buf, at)   # label
            at = _align(at, 4) + 8     # size, stride
        at = _align(at, 4) + 4         # data_offset
        data, _ = _doubles(buf, at)
    except (struct.error, ValueError) as exc:
        if isinstance(exc, MessageError):
            raise
        raise MessageError("malformed", f"multiarray: {exc}") from None
    return data.copy()
