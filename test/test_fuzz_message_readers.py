"""Fuzz: the message readers (JointStateReader, read_odometry) on random and adversarial messages.

Claims, for every input: the reader returns a reading or refuses with a MessageError of a known
kind (no other exception escapes); a reading is finite, in model joint order, equal to what the
message said for each name, and its quaternion is a unit one. And the fuzz reaches both
outcomes often: a fuzzer that only ever produced refusals would prove nothing.
"""

from __future__ import annotations

import numpy as np
from conftest import robot
from fuzz_support import adversarial_float, adversarial_vector, fuzz_count, fuzz_rng
from wire_messages import odometry

from freeflyer_control.ros.conversions import ErrorCounter, JointStateReader, MessageError, read_odometry

JOINT_KINDS = {"duplicate", "missing", "unknown", "size", "nan"}
ODOMETRY_KINDS = {"nan", "quaternion"}


def _joint_message(rng: np.random.Generator, expected: tuple[str, ...]):
    """(names, positions, velocities): the expected joints shuffled, sometimes with a name
    dropped, repeated or foreign, values plausible or adversarial, lengths sometimes wrong."""
    names = list(rng.permutation(expected))
    pick = rng.random()
    if pick < 0.08:
        names.pop(rng.integers(len(names)))
    elif pick < 0.16:
        names.insert(rng.integers(len(names) + 1), names[rng.integers(len(names))])
    elif pick < 0.3:
        names.insert(rng.integers(len(names) + 1), "camera_pan")  # another device on the topic
    n = len(names)
    sizes = [n, n]
    if rng.random() < 0.08:
        sizes[rng.integers(2)] = int(rng.integers(0, n + 3))
    plain = rng.random() < 0.5
    positions = rng.normal(0.0, 1.0, sizes[0]) if plain else adversarial_vector(rng, sizes[0])
    velocities = rng.normal(0.0, 1.0, sizes[1]) if plain else adversarial_vector(rng, sizes[1])
    if rng.random() < 0.05:
        velocities = []
    return names, positions, velocities


def test_joint_state_reader_returns_finite_readings_in_model_order_or_refuses_with_a_known_kind():
    rng = fuzz_rng(1)
    readers = [JointStateReader(robot(name).joint_names) for name in ("planar_4link", "spatial_7dof")]
    strict = JointStateReader(robot("planar_4link").joint_names, require_velocity=False, ignore_unknown=False)
    readers.append(strict)
    counter = ErrorCounter()
    read = 0
    for _ in range(fuzz_count()):
        reader = readers[rng.integers(len(readers))]
        names, positions, velocities = _joint_message(rng, reader.expected)
        try:
            out = reader.read(names, positions, velocities)
        except MessageError as exc:
            assert exc.kind in JOINT_KINDS, exc
            counter.record(exc)
            continue
        read += 1
        n = len(reader.expected)
        assert out.positions.shape == out.velocities.shape == (n,)
        assert np.all(np.isfinite(out.positions)) and np.all(np.isfinite(out.velocities))
        for i, name in enumerate(reader.expected):
            assert out.positions[i] == positions[names.index(name)]
            assert out.velocities[i] == (velocities[names.index(name)] if len(velocities) else 0.0)
    total = fuzz_count()
    assert 0.2 * total < read < 0.8 * total, (read, counter.counts)
    assert set(counter.counts) == JOINT_KINDS, counter.counts


def test_read_odometry_returns_a_finite_reading_with_a_unit_quaternion_or_refuses_with_a_known_kind():
    rng = fuzz_rng(2)
    counter = ErrorCounter()
    read = 0
    for _ in range(fuzz_count()):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        if rng.random() < 0.3:
            quat = quat * (1.0 + rng.choice([1e-4, 1e-2, -1.0, 1e10]))  # rounding, corrupt, zero, huge
        if rng.random() < 0.2:
            quat[rng.integers(4)] = adversarial_float(rng)
        plain = rng.random() < 0.5
        parts = [rng.normal(0.0, 1.0, 3) if plain else adversarial_vector(rng, 3) for _ in range(3)]
        try:
            out = read_odometry(odometry(parts[0], quat, parts[1], parts[2]))
        except MessageError as exc:
            assert exc.kind in ODOMETRY_KINDS, exc
            counter.record(exc)
            continue
        read += 1
        values = np.concatenate([out.position, out.orientation_xyzw, out.linear_velocity, out.angular_velocity])
        assert values.shape == (13,) and np.all(np.isfinite(values))
        # Normalised from within 1e-3 of unit: unit to round-off.
        assert abs(np.linalg.norm(out.orientation_xyzw) - 1.0) < 1e-12
        np.testing.assert_array_equal(out.position, parts[0])
    total = fuzz_count()
    assert 0.1 * total < read < 0.9 * total, (read, counter.counts)
    assert set(counter.counts) == ODOMETRY_KINDS, counter.counts
