"""Torque-free motion of a rigid body: what a tumbling target does until something grasps it.

A target (a dead satellite, a box on an air-bearing table) moves under no force and no torque.
Its CoM moves on a straight line, p(t) = p0 + v t, and its attitude obeys Euler's equations in
its body frame (principal or not; I the inertia about the CoM in body axes, Omega = R^T w the
angular velocity in body axes):

    I Omega' = (I Omega) x Omega,        R' = R [Omega]x

Spun about an axis that is not principal, Omega moves in the body (polhode) and w in the world
is not fixed: the body nutates about its angular momentum L = R I Omega, which is. A straight
line, or a constant-rate rotation about w(0), mispredicts such a target within seconds.

Integration: Runge-Kutta-Munthe-Kaas of order 4 on SO(3) x R^3 (the attitude only ever comes
out of the exponential map, so R stays a rotation), with the angular momentum projected after
each step (Omega = I^-1 R^T L0): L is conserved to round-off and the order stays 4, as in
physics.plant. This is an integrator of its own, independent of the plant's Pinocchio model of
the same body (model.objects.free_object_model, a one-body free-flyer that physics.plant
integrates): test_free_body holds the two equal.

Planar bodies (an air-bearing table) turn about world z only: the table's reaction supplies
whatever torque keeps them in the plane, so w_z is constant.

Frames and units: poses are the body frame (origin at the CoM) in world; linear velocity of the
CoM and angular velocity in world axes, m/s and rad/s; accelerations m/s^2 and rad/s^2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.physics.linalg import cross3

# A prediction's step turns the body by at most STEP_ANGLE rad (and lasts at most MAX_STEP_S s):
# RK4's local error, ~(w dt)^5 ~ 1e-10 rad, is then far below any grasp tolerance whatever the
# spin, and a target at 4 deg/s is predicted 10 s ahead in 100 steps.
STEP_ANGLE = 0.01
MAX_STEP_S = 0.1


@dataclass(frozen=True)
class FreeBody:
    """A rigid body's mass (kg) and inertia about its CoM in body axes (kg m^2); ``planar``: it
    turns about world z only (a body on an air-bearing table)."""

    mass: float
    inertia: np.ndarray
    planar: bool = False


def free_body(obj) -> FreeBody:
    """The torque-free body of an object config (model.objects.ObjectConfig)."""
    return FreeBody(float(obj.mass), np.asarray(obj.inertia, dtype=float), obj.base == "planar")


@dataclass(frozen=True)
class BodyState:
    """The body frame (origin at the CoM) in world, the CoM velocity and the angular velocity,
    both in world axes (m/s, rad/s)."""

    pose: pin.SE3
    linear_velocity: np.ndarray
    angular_velocity: np.ndarray

    @property
    def twist(self) -> np.ndarray:
        """[v; w] (6,), world axes at the CoM."""
        return np.concatenate([self.linear_velocity, self.angular_velocity])

    def angular_momentum(self, body: FreeBody) -> np.ndarray:
        """R I R^T w about the CoM, world axes (kg m^2/s)."""
        R = self.pose.rotation
        return R @ body.inertia @ R.T @ self.angular_velocity


def angular_acceleration(body: FreeBody, rotation: np.ndarray, angular_velocity: np.ndarray) -> np.ndarray:
    """w' (world axes, rad/s^2) of the torque-free body with attitude ``rotation`` (world <- body)
    and angular velocity ``angular_velocity`` (world axes): R I^-1 ((I Omega) x Omega)."""
    if body.planar:
        return np.zeros(3)
    Omega = rotation.T @ np.asarray(angular_velocity, dtype=float)
    return rotation @ np.linalg.solve(body.inertia, cross3(body.inertia @ Omega, Omega))


# The step below works on Python floats: on 3-vectors, NumPy's per-call overhead (np.cross,
# solve: several us each) costs more than the arithmetic, and a prediction takes hundreds of steps.
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _mul(M, x):
    return (M[0][0] * x[0] + M[0][1] * x[1] + M[0][2] * x[2], M[1][0] * x[0] + M[1][1] * x[1] + M[1][2] * x[2],
            M[2][0] * x[0] + M[2][1] * x[1] + M[2][2] * x[2])


def _axpy(a, x, y):
    return (y[0] + a * x[0], y[1] + a * x[1], y[2] + a * x[2])


def _dexp_inv(theta, omega):
    """theta' for body rate ``omega`` at algebra point ``theta`` of so(3), to order 4."""
    first = _cross(theta, omega)
    second = _cross(theta, first)
    return tuple(o + 0.5 * f + s / 12.0 for o, f, s in zip(omega, first, second))


def _attitude_step(I, Iinv, R: np.ndarray, Omega, h: float, L: np.ndarray):
    """One RKMK4 step of (R, Omega) over h s, inertia I and its inverse as nested lists; Omega
    re-solved from the world angular momentum L (momentum projection: L is the invariant)."""
    def rate(w):
        return _mul(Iinv, _cross(_mul(I, w), w))

    k1w = rate(Omega)
    k1t = Omega
    w2 = _axpy(0.5 * h, k1w, Omega)
    k2t = _dexp_inv(tuple(0.5 * h * x for x in k1t), w2)
    k2w = rate(w2)
    w3 = _axpy(0.5 * h, k2w, Omega)
    k3t = _dexp_inv(tuple(0.5 * h * x for x in k2t), w3)
    k3w = rate(w3)
    w4 = _axpy(h, k3w, Omega)
    k4t = _dexp_inv(tuple(h * x for x in k3t), w4)
    theta = np.array([h / 6.0 * (a + 2 * b + 2 * c + d) for a, b, c, d in zip(k1t, k2t, k3t, k4t)])
    R_new = R @ pin.exp3(theta)
    return R_new, _mul(Iinv, (R_new.T @ L).tolist())


def propagate(body: FreeBody, state: BodyState, duration: float, max_step: float | None = None) -> BodyState:
    """The body's state ``duration`` s after ``state`` (duration >= 0), torque-free; steps of at
    most ``max_step`` s (default: STEP_ANGLE of turn, at most MAX_STEP_S)."""
    if not (duration >= 0 and np.isfinite(duration)):
        raise ValueError(f"a prediction looks forward a finite number of seconds >= 0, got {duration}")
    p = state.pose.translation + duration * state.linear_velocity
    if body.planar:
        wz = float(state.angular_velocity[2])
        R = pin.rpy.rpyToMatrix(0.0, 0.0, wz * duration) @ state.pose.rotation
        return BodyState(pin.SE3(R, p), state.linear_velocity.copy(), np.array([0.0, 0.0, wz]))
    if max_step is None:
        speed = float(np.linalg.norm(state.angular_velocity))
        max_step = MAX_STEP_S if speed * MAX_STEP_S <= STEP_ANGLE else STEP_ANGLE / speed
    steps = max(1, int(np.ceil(duration / max_step)))
    h = duration / steps
    R = state.pose.rotation.copy()
    L = state.angular_momentum(body)
    Omega = tuple((R.T @ state.angular_velocity).tolist())
    I, Iinv = body.inertia.tolist(), np.linalg.inv(body.inertia).tolist()
    for _ in range(steps if duration > 0 else 0):
        R, Omega = _attitude_step(I, Iinv, R, Omega, h, L)
    return BodyState(pin.SE3(R, p), state.linear_velocity.copy(), R @ np.array(Omega))


def trajectory(body: FreeBody, state: BodyState, times: np.ndarray, max_step: float | None = None) -> list[BodyState]:
    """The body's states at increasing ``times`` (s after ``state``, each >= 0), one pass."""
    out, last, t_last = [], state, 0.0
    for t in np.asarray(times, dtype=float):
        if t < t_last:
            raise ValueError(f"prediction times must increase; got {t} after {t_last}")
        last = propagate(body, last, t - t_last, max_step)
        t_last = t
        out.append(last)
    return out


@dataclass(frozen=True)
class FrameMotion:
    """A frame fixed in the body: its pose in world, its twist [v; w] at its origin and its
    spatial acceleration [a; w'] (classical: the origin's acceleration), world axes."""

    pose: pin.SE3
    twist: np.ndarray
    acceleration: np.ndarray


def frame_motion(body: FreeBody, state: BodyState, placement: pin.SE3) -> FrameMotion:
    """Motion of the frame ``placement`` (in the body frame) of the torque-free body: a grasp frame
    on a tumbling target. Its origin moves with v + w x r and accelerates with w' x r + w x (w x r)."""
    pose = state.pose * placement
    r = pose.translation - state.pose.translation
    w = state.angular_velocity
    alpha = angular_acceleration(body, state.pose.rotation, w)
    v = state.linear_velocity + cross3(w, r)
    a = cross3(alpha, r) + cross3(w, cross3(w, r))
    return FrameMotion(pose, np.concatenate([v, w]), np.concatenate([a, alpha]))


def predicted_frame_path(body: FreeBody, state: BodyState, placement: pin.SE3, horizon: float,
                         samples: int = 50) -> list[FrameMotion]:
    """The frame's motion at ``samples`` instants evenly spread over [0, horizon] s ahead."""
    times = np.linspace(0.0, horizon, samples)
    return [frame_motion(body, s, placement) for s in trajectory(body, state, times)]
