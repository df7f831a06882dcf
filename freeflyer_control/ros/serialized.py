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
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

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
