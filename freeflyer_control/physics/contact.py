"""A wall the end-effector can press against: a stiff unilateral spring-damper contact.

The wall is the plane through ``point`` with unit ``normal`` (world axes, pointing out of the
wall, into free space). The contact acts at the origin of the end-effector frame p:

    d = n . (point - p)                      penetration, m (> 0 behind the surface)
    d' = -n . v_p                            its rate, m/s (v_p: the origin's velocity, world)
    f = n max(0, k d + c d')   if d > 0,     else 0          (N, world axes, on the end-effector)

a Hunt-Crossley-like law without the power of d: unilateral (the wall only pushes; the max
keeps the damper from pulling on separation), frictionless (no tangential force, no torque).
Defaults: k = ``STIFFNESS`` N/m, c = ``DAMPING`` N s/m (stated where they are defined).

The wall is external to the robot: its wrench about the world origin, [f; p x f], is what the
robot's momentum about the world origin changes by (d/dt [P; L_O] = that wrench, plus the base
actuation); the plant integrates it with the same stages as the dynamics
(:class:`~freeflyer_control.physics.plant.Plant`, attribute ``contact``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.linalg import cross3
from freeflyer_control.physics.state import base_rotation

# N/m: a stiff but not rigid wall. With the end-effector's operational-space mass of the bundled
# robots (~2-20 kg along the arm) the contact oscillates at sqrt(k / m) = 7-22 rad/s: resolved
# by the 250 Hz control rate (a period of 11-36 ticks) and inside RK4's stability bound
# (omega dt < 2.8) at any rate above 10 Hz. A 1 N press sinks 1 mm into the wall.
STIFFNESS = 1000.0
# N s/m: damping ratio c / (2 sqrt(k m)) of 0.35-1.1 over the same masses: a touch-down settles
# in a few oscillations instead of bouncing off.
DAMPING = 100.0


@dataclass(frozen=True)
class ContactSample:
    """The contact at one state.

    Attributes:
        force: on the end-effector, world axes, N (3,).
        penetration: d, m (negative: apart).
        tau: generalized force of the contact (nv,), Pinocchio's velocity coordinates.
        wrench_origin: its wrench about the world origin, world axes (the plant's momentum
            coordinates: spatial [f; p x f], planar [fx, fy, (p x f)z]).
    """

    force: np.ndarray
    penetration: float
    tau: np.ndarray
    wrench_origin: np.ndarray


class WallContact:
    """A wall touched by ``frame``'s origin (see the module docstring): fixed, or floating.

    A floating wall is a free body of ``mass`` kg touched at its centre of mass: the
    frictionless contact pushes it along the normal only, so it translates along the normal
    (``offset``, m, out of the wall positive; ``speed``, m/s). The plant advances it once per
    step (:meth:`after_step`) by the step's contact impulse, symplectic Euler, holding it at the
    step's start position and speed within the step: the wall's momentum changes by exactly
    minus the robot's contact impulse, so robot and wall together conserve momentum to
    round-off; the wall's motion is first order in the step (a 180 kg robot and a 10 kg wall
    on the 1000 N/m contact: omega dt = 0.04 at 250 Hz).

    Args:
        ff: the robot.
        frame: the end-effector frame.
        point: a point of the wall surface, world, m (3,).
        normal: out of the wall, world axes (3,), normalised here.
        stiffness: N/m, > 0; damping: N s/m, >= 0.
        mass: kg, > 0, for a floating wall; None for a fixed one.
    """

    def __init__(self, ff: FreeFlyerModel, frame: str, point, normal, *,
                 stiffness: float = STIFFNESS, damping: float = DAMPING, mass: float | None = None):
        if mass is not None and not (np.isfinite(mass) and mass > 0):
            raise ValueError(f"a floating wall's mass must be a finite number of kg > 0, got {mass}")
        self.mass = None if mass is None else float(mass)
        self.offset = self.speed = 0.0
        n = np.asarray(normal, dtype=float).reshape(3)
        if not (np.isfinite(n).all() and np.linalg.norm(n) > 0):
            raise ValueError(f"the wall normal must be a finite non-zero 3-vector, got {normal}")
        if not (np.isfinite(stiffness) and stiffness > 0 and np.isfinite(damping) and damping >= 0):
            raise ValueError(f"wall stiffness must be > 0 N/m and damping >= 0 N s/m, got {stiffness}, {damping}")
        self.ff, self.frame = ff, frame
        self.fid = ff.frame_id(frame)
        self.point = np.asarray(point, dtype=float).reshape(3).copy()
        self.normal = n / np.linalg.norm(n)
        self.stiffness, self.damping = float(stiffness), float(damping)
        self.data = ff.create_data()

    def sample(self, q: np.ndarray, v: np.ndarray) -> ContactSample:
        """The contact at (q, v) (Pinocchio's coordinates)."""
        ff, data = self.ff, self.data
        J = pin.computeFrameJacobian(ff.model, data, q, self.fid, pin.LOCAL_WORLD_ALIGNED)
        p = data.oMf[self.fid].translation
        n = self.normal
        d = float(n.dot(self.point - p)) + self.offset
        push = 0.0
        if d > 0.0:
            push = max(0.0, self.stiffness * d + self.damping * (self.speed - float(n.dot(J[:3].dot(v)))))
        f = push * n
        moment = cross3(p, f)
        if ff.base == "planar":
            wrench = np.array([f[0], f[1], moment[2]])
        else:
            wrench = np.concatenate([f, moment])
        return ContactSample(f, d, J[:3].T.dot(f), wrench)

    def after_step(self, impulse: np.ndarray, dt: float) -> None:
        """Advance a floating wall over a plant step of ``dt`` s whose contact impulse on the
        robot was ``impulse`` (the plant's momentum coordinates; its linear part, N s, world)."""
        if self.mass is None:
            return
        linear = np.array([impulse[0], impulse[1], 0.0]) if self.ff.base == "planar" else np.asarray(impulse[:3])
        self.speed -= float(self.normal.dot(linear)) / self.mass  # the wall gets minus the robot's
        self.offset += self.speed * dt

    @property
    def momentum(self) -> np.ndarray:
        """The floating wall's linear momentum, world axes, kg m/s (3,) (zero for a fixed one)."""
        return np.zeros(3) if self.mass is None else self.mass * self.speed * self.normal


def base_reaction(ff: FreeFlyerModel, data: pin.Data, q: np.ndarray, v: np.ndarray, a: np.ndarray,
                  contact: ContactSample | None = None, frame_id: int | None = None) -> np.ndarray:
    """The wrench the rest of the robot (arms, wheels) exerts on the base body, world axes,
    about the base_link origin, [f; m] (N, N m) (6,), at the motion (q, v, a) (Pinocchio's
    coordinates), with ``contact``'s force acting on frame ``frame_id``.

    Newton-Euler (RNEA) gives the spatial force each child joint of the base transmits to its
    subtree; the base feels the opposite. Planar robots: all six components (out-of-plane ones
    are what the air bearing carries).
    """
    model = ff.model
    fext = None
    if contact is not None and frame_id is not None and np.any(contact.force):
        frame = model.frames[frame_id]
        fext = pin.StdVec_Force()
        for _ in range(model.njoints):
            fext.append(pin.Force.Zero())
        pin.framesForwardKinematics(model, data, q)
        world = pin.Force(contact.force, cross3(data.oMf[frame_id].translation, contact.force))
        fext[frame.parentJoint] = data.oMi[frame.parentJoint].actInv(world)
        pin.rnea(model, data, q, v, a, fext)
    else:
        pin.rnea(model, data, q, v, a)
    base_joint = 1
    total = pin.Force.Zero()
    for j in range(base_joint + 1, model.njoints):
        if model.parents[j] == base_joint:
            total += data.liMi[j].act(data.f[j])  # base axes, about the base_link origin
    R = base_rotation(ff, q)
    return -np.concatenate([R.dot(total.linear), R.dot(total.angular)])
