"""Testbed state estimation: base pose and twist from motion capture, joint rates from encoders.

Capture poses come time-stamped and noisy at 50-250 Hz, sometimes drop out and sometimes jump
(markers mis-identified); encoders give quantized angles, with or without velocities. The bridge
wants all of it at its own control ticks, so estimates are extrapolated from the last sample to
the tick (latency compensation). Bad samples are refused, not raised on: the returned
:class:`SampleVerdict` carries a diagnostics counter key, as ``conversions.MessageError`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.physics.state import rotation_from_xyzw
from freeflyer_control.ros.conversions import BaseReading

# Rate std (units/s) of a filter's prior: vague enough that the second sample's finite
# difference sets the rate (the prior pulls it by 2 m^2 / (INITIAL_RATE_STD dt)^2 towards the start).
INITIAL_RATE_STD = 1e3
# Same tolerance as read_odometry: a capture quaternion further from unit is corrupt, not rounded.
QUATERNION_NORM_TOLERANCE = 1e-3
# A network reorders messages by milliseconds: a sample stamped this much before the last accepted
# one comes from a clock that stepped back (a restarted driver, an NTP step), not from the queue.
MAX_REORDER = 0.05          # s


@dataclass(frozen=True)
class KalmanNoise:
    """Noise of one coordinate of a constant-velocity filter.

    measurement: std of one measurement, in the coordinate's units (m, rad), > 0. For an encoder
        of resolution q, quantization alone gives q / sqrt(12).
    acceleration: sqrt of the spectral density of the white-noise acceleration driving the model,
        units/s^2/sqrt(Hz) (= units/s^1.5): over dt the rate random-walks by a*sqrt(dt). Larger
        follows real accelerations faster with noisier rates; smaller smooths more and lags.
    """

    measurement: float
    acceleration: float

    def __post_init__(self):
        for name, unit in (("measurement", "std, units of the coordinate"), ("acceleration", "units/s^2/sqrt(Hz)")):
            value = getattr(self, name)
            if not (isinstance(value, (int, float, np.number)) and math.isfinite(value) and value > 0):
                raise ValueError(f"KalmanNoise.{name} must be a finite number > 0 ({unit}), got {value!r}")


class ConstantVelocityFilter:
    """n independent coordinates, each with state [value, rate], sharing one 2x2 covariance (they
    share the sample times and the noise). Predict with F = [[1, dt], [0, 1]] and
    Q = a^2 [[dt^3/3, dt^2/2], [dt^2/2, dt]]; measure the value (H = [1, 0], R = m^2).

    ``value`` (n,) and ``rate`` (n,) are the estimates at ``t`` (s), in the caller's units.
    """

    def __init__(self, n: int, noise: KalmanNoise):
        if not (isinstance(n, (int, np.integer)) and n > 0):
            raise ValueError(f"a filter needs n >= 1 coordinates, got {n!r}")
        self.n = int(n)
        self.noise = noise
        self.reset()

    @property
    def initialized(self) -> bool:
        return self._P is not None

    def reset(self) -> None:
        """Forget everything; ``initialize`` must be called again."""
        self.t = -math.inf
        self.value = np.zeros(self.n)
        self.rate = np.zeros(self.n)
        self._P: np.ndarray | None = None

    def initialize(self, t: float, value, rate=None) -> None:
        """Start at ``value`` (n,) with ``rate`` (n,) (default 0) at time ``t`` (s). The covariance
        starts at diag(m^2, INITIAL_RATE_STD^2) whatever ``rate`` is: the starting rate serves
        extrapolation until the second sample, whose finite difference then replaces it."""
        if not math.isfinite(t):
            raise ValueError(f"initialize needs a finite time, s, got {t}")
        self.value = self._vector(value, "value")
        self.rate = np.zeros(self.n) if rate is None else self._vector(rate, "rate")
        self.t = float(t)
        self._P = np.diag([self.noise.measurement**2, INITIAL_RATE_STD**2])

    def innovation(self, t: float, measured) -> np.ndarray:
        """``measured`` (n,) minus the value predicted at ``t`` (s); no state change."""
        return self._vector(measured, "measured") - self.extrapolate(t)[0]

    def gain(self, dt: float) -> np.ndarray:
        """Kalman gain [alpha, beta / dt] (2,) that an update ``dt`` (s) after ``t`` would use."""
        P = self._predicted_covariance(dt)
        return P[:, 0] / (P[0, 0] + self.noise.measurement**2)

    def update(self, t: float, measured, innovation=None) -> None:
        """Predict to ``t`` (s, >= ``self.t``) and correct with ``measured`` (n,). A caller whose
        innovation is not a plain difference (e.g. a rotation log) passes it as ``innovation`` (n,)
        and ``measured`` is then ignored."""
        self._require_initialized("update")
        if not (math.isfinite(t) and t >= self.t):
            raise ValueError(f"update at t = {t} s is not a finite time at or after the last update ({self.t} s): "
                             "feed samples in time order, or reset() and initialize() to restart")
        y = self.innovation(t, measured) if innovation is None else self._vector(innovation, "innovation")
        dt = t - self.t
        P, K = self._predicted_covariance(dt), self.gain(dt)
        self.value = self.value + self.rate * dt + K[0] * y
        self.rate = self.rate + K[1] * y
        # Joseph form: stays symmetric positive definite despite the vague prior's large entries.
        A = np.eye(2) - np.outer(K, [1.0, 0.0])
        self._P = A @ P @ A.T + self.noise.measurement**2 * np.outer(K, K)
        self.t = float(t)

    def extrapolate(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(value + rate (t - self.t), rate) at ``t`` (s); no state change. A ``t`` before
        ``self.t`` follows the same line backwards (no clamp: a tick stamped just before the
        last sample is served as well by the line, and a clamp would put a kink in it)."""
        self._require_initialized("extrapolate")
        return self.value + self.rate * (t - self.t), self.rate.copy()

    def _require_initialized(self, what: str) -> None:
        if self._P is None:
            raise RuntimeError(f"ConstantVelocityFilter.{what} before initialize(): initialize with the first sample")

    def _predicted_covariance(self, dt: float) -> np.ndarray:
        self._require_initialized("prediction")
        F = np.array([[1.0, dt], [0.0, 1.0]])
        Q = self.noise.acceleration**2 * np.array([[dt**3 / 3, dt**2 / 2], [dt**2 / 2, dt]])
        return F @ self._P @ F.T + Q

    def _vector(self, values, what: str) -> np.ndarray:
        arr = np.asarray(values, dtype=float).reshape(-1)
        if arr.size != self.n:
            raise ValueError(f"{what} must have {self.n} entries (one per filtered coordinate), got {arr.size}")
        return arr


@dataclass(frozen=True)
class BaseEstimatorConfig:
    """position: noise in m and m/s^2/sqrt(Hz); attitude: in rad and rad/s^2/sqrt(Hz).
    max_position_jump (m) / max_attitude_jump (rad): a sample whose innovation (distance / angle
    from the prediction) exceeds it is refused as a capture jump. planar: x, y, yaw only (an
    air-bearing table): z, roll and pitch of the samples are ignored and estimated as 0."""

    position: KalmanNoise
    attitude: KalmanNoise
    max_position_jump: float
    max_attitude_jump: float
    planar: bool = True

    def __post_init__(self):
        for name, unit in (("max_position_jump", "m"), ("max_attitude_jump", "rad")):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"BaseEstimatorConfig.{name} must be a finite gate > 0 {unit}, got {value!r}")


@dataclass(frozen=True)
class SampleVerdict:
    """Whether a sample was used; ``reason`` says why not, ``kind`` is the diagnostics counter key
    ("out_of_order", "clock_step", "jump", "nan", "quaternion"; "" when accepted). After a
    "clock_step" no later sample on the new clock would be accepted: the caller must reset()."""

    accepted: bool
    reason: str = ""
    kind: str = ""


ACCEPTED = SampleVerdict(True)


def _count(owner, verdict: SampleVerdict) -> SampleVerdict:
    owner.consecutive_rejections = 0 if verdict.accepted else owner.consecutive_rejections + 1
    return verdict


def _out_of_order(t: float, last: float) -> SampleVerdict:
    if t < last - MAX_REORDER:
        return SampleVerdict(False, f"stamp {t:.6f} s is {last - t:.3f} s before the last accepted sample ({last:.6f} s): "
                                    "its clock stepped back, or the message is very late", "clock_step")
    # A repeated stamp is a repeated message, not a second measurement of the same instant.
    return SampleVerdict(False, f"out of order: stamp {t:.6f} s is not after the last accepted sample "
                                f"({last:.6f} s)", "out_of_order")


def _finite(values, size: int, what: str) -> np.ndarray | None:
    """``values`` as a float array, or None if not finite; a wrong size is the caller's bug."""
    arr = np.asarray(values, dtype=float).reshape(-1)
    if arr.size != size:
        raise ValueError(f"{what} must have {size} entries, got {arr.size}")
    return arr if np.isfinite(arr).all() else None


def _yaw_only(R: np.ndarray) -> np.ndarray:
    # The heading of base x is the yaw that a small tilt (capture noise, a tilted table) disturbs least.
    return pin.exp3(np.array([0.0, 0.0, math.atan2(R[1, 0], R[0, 0])]))


class BaseEstimator:
    """Pose and twist of base_link in world from time-stamped capture samples of that pose.

    Position: a ConstantVelocityFilter(3). Attitude: the state is a rotation R (world <- base) and
    an angular velocity w (world axes), predicted as R(t + dt) = exp(w dt) R. The innovation
    log(R_meas R_pred^T) (world axes, rad) feeds a ConstantVelocityFilter(3) on the attitude
    error; after each update the corrected error is folded into R and the filter's value zeroed.
    Planar: the samples' z and tilt are dropped, so the estimate is a pure yaw at z = 0.

    ``consecutive_rejections`` counts refusals since the last accepted sample: if it keeps growing
    the robot really is where the capture says (e.g. after a long dropout) and the caller should
    reset(), which re-anchors on the next sample.
    """

    def __init__(self, config: BaseEstimatorConfig):
        self.config = config
        self._position = ConstantVelocityFilter(3, config.position)
        self._attitude = ConstantVelocityFilter(3, config.attitude)
        self.reset()

    @property
    def initialized(self) -> bool:
        return self._position.initialized

    @property
    def t(self) -> float:
        """Stamp of the last accepted sample, s (-inf before the first)."""
        return self._position.t

    def reset(self) -> None:
        self._position.reset()
        self._attitude.reset()
        self._R = np.eye(3)
        self.consecutive_rejections = 0

    def update(self, t: float, position, orientation_xyzw) -> SampleVerdict:
        """Use the sample of base_link at ``t`` (s): ``position`` (3,) m and ``orientation_xyzw``
        (4,) (world <- base), both in world. A refused sample leaves the estimate untouched."""
        return _count(self, self._update(t, position, orientation_xyzw))

    def _update(self, t: float, position, orientation_xyzw) -> SampleVerdict:
        p = _finite(position, 3, "position (x, y, z, m)")
        q = _finite(orientation_xyzw, 4, "orientation_xyzw (x, y, z, w)")
        if p is None or q is None or not math.isfinite(t):
            return SampleVerdict(False, f"not finite: NaN/Inf in stamp {t}, position {np.asarray(position).tolist()} "
                                        f"or orientation {np.asarray(orientation_xyzw).tolist()}", "nan")
        norm = float(np.linalg.norm(q))
        if abs(norm - 1.0) > QUATERNION_NORM_TOLERANCE:
            return SampleVerdict(False, f"not a unit quaternion (norm {norm:.4g})", "quaternion")
        R = rotation_from_xyzw(q / norm)
        if self.config.planar:
            p[2] = 0.0
            R = _yaw_only(R)
        if not self.initialized:
            self._position.initialize(t, p)
            self._attitude.initialize(t, np.zeros(3))
            self._R = R
            return ACCEPTED
        if t <= self.t:
            return _out_of_order(t, self.t)

        dp = self._position.innovation(t, p)
        R_pred = self._predicted_rotation(t)
        dtheta = pin.log3(R @ R_pred.T)
        if self.config.planar:
            dtheta[:2] = 0.0  # both rotations are pure yaws: this only drops rounding
        jumps = []
        if np.linalg.norm(dp) > self.config.max_position_jump:
            jumps.append(f"position moved {np.linalg.norm(dp):.3g} m from the prediction "
                         f"(gate {self.config.max_position_jump:.3g} m)")
        if np.linalg.norm(dtheta) > self.config.max_attitude_jump:
            jumps.append(f"attitude turned {np.linalg.norm(dtheta):.3g} rad from the prediction "
                         f"(gate {self.config.max_attitude_jump:.3g} rad)")
        if jumps:
            return SampleVerdict(False, "jump: " + "; ".join(jumps), "jump")

        self._position.update(t, p, innovation=dp)
        # The filter's value was 0 (re-centred), so after the update it is w_old dt + K0 dtheta;
        # applying only the correction K0 dtheta to R_pred keeps the prediction exactly exp(w dt) R.
        predicted_error = self._attitude.extrapolate(t)[0]
        self._attitude.update(t, None, innovation=dtheta)
        self._R = pin.exp3(self._attitude.value - predicted_error) @ R_pred
        self._attitude.value = np.zeros(3)
        return ACCEPTED

    def _predicted_rotation(self, t: float) -> np.ndarray:
        return pin.exp3(self._attitude.extrapolate(t)[0]) @ self._R

    def estimate(self, t: float) -> BaseReading:
        """Pose and twist (world) extrapolated to ``t`` (s), e.g. the control tick: the latency
        compensation. The caller judges staleness from ``t - self.t``."""
        if not self.initialized:
            raise RuntimeError("BaseEstimator.estimate before the first accepted capture sample: wait for one")
        position, velocity = self._position.extrapolate(t)
        return BaseReading(position, pin.Quaternion(self._predicted_rotation(t)).coeffs().copy(),
                           velocity, self._attitude.rate.copy())


class JointEstimator:
    """Joint angles (rad) and rates (rad/s) from encoder samples (n,), in model joint order.

    Samples with velocities are used as they are (positions and velocities as measured); without,
    the rates come from a ConstantVelocityFilter on the (quantized) positions, whose ``noise`` is
    then the encoder's (measurement >= resolution / sqrt(12)). The filter runs on every sample,
    so a stream that stops carrying velocities switches over without a transient.
    """

    def __init__(self, n: int, noise: KalmanNoise):
        self._filter = ConstantVelocityFilter(n, noise)
        self.n = self._filter.n
        self.reset()

    @property
    def initialized(self) -> bool:
        return self._filter.initialized

    @property
    def t(self) -> float:
        """Stamp of the last accepted sample, s (-inf before the first)."""
        return self._filter.t

    def reset(self) -> None:
        self._filter.reset()
        self._measured: tuple[np.ndarray, np.ndarray] | None = None
        self.consecutive_rejections = 0

    def update(self, t: float, positions, velocities=None) -> SampleVerdict:
        """Use joint ``positions`` (n,) rad and optional ``velocities`` (n,) rad/s sampled at ``t`` (s)."""
        return _count(self, self._update(t, positions, velocities))

    def _update(self, t: float, positions, velocities) -> SampleVerdict:
        q = _finite(positions, self.n, "joint positions (rad)")
        v = None if velocities is None else _finite(velocities, self.n, "joint velocities (rad/s)")
        if q is None or (velocities is not None and v is None) or not math.isfinite(t):
            given = "none" if velocities is None else np.asarray(velocities).tolist()
            return SampleVerdict(False, f"not finite: NaN/Inf in stamp {t}, positions "
                                        f"{np.asarray(positions).tolist()} or velocities {given}", "nan")
        if not self.initialized:
            self._filter.initialize(t, q, v)
        elif t <= self.t:
            return _out_of_order(t, self.t)
        else:
            self._filter.update(t, q)
        self._measured = None if v is None else (q, v)
        return ACCEPTED

    def estimate(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(positions rad, rates rad/s), each (n,), extrapolated to ``t`` (s) along the rates."""
        if not self.initialized:
            raise RuntimeError("JointEstimator.estimate before the first accepted encoder sample: wait for one")
        if self._measured is None:
            return self._filter.extrapolate(t)
        q, v = self._measured
        return q + v * (t - self.t), v.copy()
