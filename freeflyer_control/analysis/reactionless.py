"""The reactionless workspace: where an end-effector can go from a start pose with the base
attitude held within a bound, against where a naive inverse of the GJM takes it within the same
bound (Nenchev, Yoshida & Umetani's reaction null space; physics.reaction_null_space).

From the start pose (the robot at rest, zero momentum, floating: the base moves as momentum
conservation says) the end-effector's position is driven along a straight line to each point of
a grid (in the plane of motion for planar robots, a plane slice through the start point for
spatial ones), at ``speed``, its orientation free. The motion is integrated kinematically and
exactly as far as the base goes: joint rates from the law, the base velocity from the momentum
(M_bb nu_b = -M_bm qdot, RK4 on the configuration manifold), so what the base does is physics,
not an estimate. Two laws:

* naive: qdot = J*^+ v with J* the floating-mode GJM of the end-effector's position over its own
  arm's joints (damped near singularities);
* reactionless: over every arm joint (a second arm balances the first), the task first and the
  least base rotation second while the attitude error is inside the bound, the base first (the
  hand waits) outside it (physics.reaction_null_space.reaction_minimal_rates and
  reactionless_rates), with the attitude error fed back.

A point is reached when the end-effector ends within ``tolerance`` of it with the base's attitude
within ``bound`` of its start all along the way. The result counts the points of each workspace,
their area (planar grid: each point stands for a spacing^2 square), and plots both.

Units: m, rad, s; positions in world (the base starts at the origin with identity attitude).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.gjm import generalized_jacobian
from freeflyer_control.physics.grasp_pose import arm_joints
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.reaction_null_space import (
    damped_pinv,
    reaction_minimal_rates,
    reaction_null_space,
    reactionless_rates,
    singular_damping,
)
from freeflyer_control.physics.state import State, base_rotation, make_state

LAWS = ("naive", "reactionless")
PLANES = {"xy": (0, 1), "xz": (0, 2), "yz": (1, 2)}
MAX_GRID = 61


@dataclass(frozen=True)
class HandPath:
    """One straight-line move: the end-effector's final distance to the target (m), the base's
    largest attitude change along it (rad), and whether it was reached within the bound."""

    error: float
    attitude: float
    reached: bool


def fly_hand(ff: FreeFlyerModel, frame: str, q0: np.ndarray, target: np.ndarray, law: str, bound: float, *,
             speed: float = 0.1, dt: float = 0.05, tolerance: float = 1e-3, gain: float = 2.0,
             attitude_gain: float = 2.0) -> HandPath:
    """Drive ``frame``'s origin from its position at ``q0`` (robot at rest, zero momentum) to
    ``target`` (world, m) with ``law`` (see the module docstring)."""
    data = ff.create_data()
    planar = ff.base == "planar"
    rows = [0, 1] if planar else [0, 1, 2]
    fid = ff.frame_id(frame)
    arm = list(ff.arm_v_indices)
    own = np.array([arm.index(v) for v in arm_joints(ff, frame)])
    pin.framesForwardKinematics(ff.model, data, q0)
    start = data.oMf[fid].translation.copy()
    R0 = base_rotation(ff, q0)
    distance = float(np.linalg.norm(target - start))
    duration = distance / speed + 2.0  # the line, then 2 s to settle
    nv, nb = ff.model.nv, ff.nb

    def velocity(q: np.ndarray, t: float) -> np.ndarray:
        """Generalized velocity (nv,): the law's joint rates, the base's from zero momentum."""
        state = State(q, np.zeros(nv))
        gjm = generalized_jacobian(ff, data, state, Mode.FLOATING, frame)
        pin.framesForwardKinematics(ff.model, data, q)
        p = data.oMf[fid].translation
        s = min(t * speed / distance, 1.0) if distance > 0 else 1.0
        v = (speed * (target - start) / distance if s < 1.0 else np.zeros(3)) + gain * (start + s * (target - start) - p)
        J = gjm.matrix[rows]
        rates = np.zeros(ff.arm_v_indices.size)
        if law == "naive":
            Jo = J[:, own]
            sv = np.linalg.svd(Jo, compute_uv=False)
            rates[own] = damped_pinv(Jo, max(1e-3, singular_damping(float(sv[-1]), 0.05, 0.05))) @ v[rows]
        else:
            rns = reaction_null_space(ff, data, state)
            e = pin.log3(R0 @ base_rotation(ff, q).T)
            turn = e[2:] if planar else base_rotation(ff, q).T @ e
            solver = reaction_minimal_rates if np.linalg.norm(e) <= 0.5 * bound else reactionless_rates
            rates = solver(rns, J, v[rows], damping=1e-3, base_velocity=attitude_gain * turn,
                           sigma0=0.05, damping_max=0.05).rates
        M = mass_matrix(ff, data, q)
        u = np.zeros(nv)
        u[ff.arm_v_indices] = rates
        u[:nb] = -np.linalg.solve(M[:nb, :nb], M[:nb, nb:] @ u[nb:])
        return u

    q, t, worst = q0.copy(), 0.0, 0.0
    for _ in range(int(np.ceil(duration / dt))):
        k1 = velocity(q, t)
        k2 = velocity(pin.integrate(ff.model, q, 0.5 * dt * k1), t + 0.5 * dt)
        k3 = velocity(pin.integrate(ff.model, q, 0.5 * dt * k2), t + 0.5 * dt)
        k4 = velocity(pin.integrate(ff.model, q, dt * k3), t + dt)
        q = pin.integrate(ff.model, q, dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4))
        q = np.clip(q, ff.model.lowerPositionLimit, ff.model.upperPositionLimit) if not planar else q
        t += dt
        worst = max(worst, float(np.linalg.norm(pin.log3(R0.T @ base_rotation(ff, q)))))
    pin.framesForwardKinematics(ff.model, data, q)
    error = float(np.linalg.norm(data.oMf[fid].translation - target))
    return HandPath(error, worst, error <= tolerance and worst <= bound)


@dataclass(frozen=True)
class ReactionlessWorkspace:
    """The two workspaces on a grid (see the module docstring).

    Attributes:
        frame: the end-effector.
        bound: rad, the attitude bound.
        plane: the grid's axes (world), e.g. ``"xy"``.
        start: the end-effector's start position (world, m).
        points: (N, 3) the grid's points (world, m).
        spacing: m between grid points.
        naive, reactionless: (N,) HandPath per point, per law.
    """

    frame: str
    bound: float
    plane: str
    start: np.ndarray
    points: np.ndarray
    spacing: float
    naive: tuple[HandPath, ...]
    reactionless: tuple[HandPath, ...]

    def counts(self) -> dict[str, int]:
        return {law: int(sum(p.reached for p in getattr(self, law))) for law in LAWS}

    def to_dict(self) -> dict:
        counts = self.counts()
        cell = self.spacing ** 2
        out = {"frame": self.frame, "attitude_bound_rad": self.bound, "plane": self.plane,
               "start": self.start.tolist(), "grid_points": len(self.points), "spacing_m": self.spacing}
        for law in LAWS:
            paths = getattr(self, law)
            reached = [p for p in paths if p.reached]
            out[law] = {"points_reached": counts[law], "area_m2": counts[law] * cell,
                        "max_attitude_change_rad_reached": max((p.attitude for p in reached), default=None),
                        "median_attitude_change_rad": float(np.median([p.attitude for p in paths]))}
        return out

    def plot(self, path: str | Path) -> Path:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        a, b = PLANES[self.plane]
        fig, ax = plt.subplots(figsize=(6, 6))
        pts = self.points
        naive = np.array([p.reached for p in self.naive])
        rl = np.array([p.reached for p in self.reactionless])
        ax.scatter(pts[~rl & ~naive, a], pts[~rl & ~naive, b], s=12, c="0.85", label="neither")
        ax.scatter(pts[rl & ~naive, a], pts[rl & ~naive, b], s=18, c="tab:blue", label="reactionless only")
        ax.scatter(pts[naive & ~rl, a], pts[naive & ~rl, b], s=18, c="tab:orange", label="naive only")
        ax.scatter(pts[naive & rl, a], pts[naive & rl, b], s=18, c="tab:green", label="both")
        ax.plot(self.start[a], self.start[b], "k*", ms=12, label="start")
        counts = self.counts()
        ax.set(xlabel=f"{self.plane[0]} (m)", ylabel=f"{self.plane[1]} (m)",
               title=f"{self.frame}: reached with the base attitude within {np.degrees(self.bound):.3g} deg\n"
                     f"naive {counts['naive']}, reactionless {counts['reactionless']} of {len(pts)} points")
        ax.axis("equal")
        ax.legend(fontsize=8)
        path = Path(path)
        fig.tight_layout()
        fig.savefig(path, dpi=90)
        plt.close(fig)
        return path


def reactionless_workspace(ff: FreeFlyerModel, frame: str, bound: float, *, half_width: float = 0.4, grid: int = 9,
                           plane: str = "xy", speed: float = 0.1, dt: float = 0.05,
                           q0: np.ndarray | None = None) -> ReactionlessWorkspace:
    """Both workspaces of ``frame`` on a ``grid`` x ``grid`` square of half-width ``half_width``
    (m) centred on its start position, in ``plane`` (planar robots: xy), from the ready pose (or
    ``q0``), base at the origin."""
    if ff.base == "planar":
        plane = "xy"
    if plane not in PLANES:
        raise ValueError(f"plane must be one of {list(PLANES)}, got {plane!r}")
    if not 2 <= grid <= MAX_GRID:
        raise ValueError(f"grid must be 2..{MAX_GRID} points a side, got {grid}")
    if not bound > 0:
        raise ValueError(f"attitude bound must be > 0 rad, got {bound}")
    q = make_state(ff, joint_positions=ff.ready_pose).q if q0 is None else q0
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, q)
    start = data.oMf[ff.frame_id(frame)].translation.copy()
    a, b = PLANES[plane]
    offsets = np.linspace(-half_width, half_width, grid)
    points = []
    for da in offsets:
        for db in offsets:
            p = start.copy()
            p[a] += da
            p[b] += db
            points.append(p)
    points = np.array(points)
    paths = {law: tuple(fly_hand(ff, frame, q, p, law, bound, speed=speed, dt=dt) for p in points) for law in LAWS}
    return ReactionlessWorkspace(frame, bound, plane, start, points, float(offsets[1] - offsets[0]),
                                 paths["naive"], paths["reactionless"])
