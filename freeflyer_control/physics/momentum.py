"""System centre of mass and momentum, and the conserved quantity of each mode.

World-frame quantities (DESIGN.md §3): P is the total linear momentum, L_C the angular momentum
about the system CoM, L_B the angular momentum about the base_link origin; all in world axes.
Planar robots report the in-plane components: P = (Px, Py), L = Lz.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from freeflyer_control.model.loader import FreeFlyerModel
from freeflyer_control.physics.linalg import cross3
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import State, base_position, base_rotation


def system_com(ff: FreeFlyerModel, data: pin.Data, q: np.ndarray) -> np.ndarray:
    """Position of the system centre of mass in world, m (3,)."""
    return pin.centerOfMass(ff.model, data, q).copy()


def centroidal_momentum(ff: FreeFlyerModel, data: pin.Data, state: State) -> np.ndarray:
    """[P; L_C] (6,): total linear momentum (kg m/s) and angular momentum about the system
    CoM (kg m^2/s), both in world axes. Also leaves the CoM in ``data.com[0]``."""
    h = pin.computeCentroidalMomentum(ff.model, data, state.q, state.v)
    return np.concatenate([h.linear, h.angular])


def planar_components(ff: FreeFlyerModel, spatial: np.ndarray) -> np.ndarray:
    """The in-plane part of a [linear; angular] 6-vector for a planar robot, else itself."""
    return spatial[[0, 1, 5]] if ff.base == "planar" else spatial


def base_point_angular_momentum(
    ff: FreeFlyerModel, data: pin.Data, state: State
) -> np.ndarray:
    """L_B: angular momentum about the base_link origin, world axes (3,)."""
    h = centroidal_momentum(ff, data, state)
    lever = data.com[0] - base_position(ff, state.q)
    return h[3:] + cross3(lever, h[:3])


def conserved_momentum(ff: FreeFlyerModel, data: pin.Data, state: State, mode: Mode) -> np.ndarray:
    """The value, in world axes, of what ``mode`` conserves (see physics.modes).

    floating: [P; L_C]; rotation-floating / rotation-flying: P; translation-flying: L_B;
    flying: empty. Planar robots: in-plane components only.
    """
    mode = Mode.parse(mode)
    if mode is Mode.FLYING:
        return np.zeros(0)
    if mode is Mode.TRANSLATION_FLYING:
        L_B = base_point_angular_momentum(ff, data, state)
        return L_B[2:] if ff.base == "planar" else L_B
    h = planar_components(ff, centroidal_momentum(ff, data, state))
    if mode is Mode.FLOATING:
        return h
    return h[:2] if ff.base == "planar" else h[:3]


def conserved_to_base_rows(
    ff: FreeFlyerModel, data: pin.Data, q: np.ndarray, mode: Mode, value: np.ndarray
) -> np.ndarray:
    """Express a mode's conserved value (world) as the momentum rows of the base equations.

    The first nb rows of M(q) v are the system momentum about the base_link origin in base_link
    axes: [R^T P; R^T L_B] (planar: [R^T (Px, Py); L_Bz]). This returns the entries of that
    vector on the mode's free base coordinates, given the world value from
    :func:`conserved_momentum`, so that it can be held fixed while q changes.
    """
    mode = Mode.parse(mode)
    value = np.asarray(value, dtype=float)
    R = base_rotation(ff, q)
    planar = ff.base == "planar"
    if mode is Mode.FLYING:
        return np.zeros(0)
    if mode is Mode.TRANSLATION_FLYING:
        return value.copy() if planar else R.T @ value
    if mode is Mode.FLOATING:
        P = np.array([value[0], value[1], 0.0]) if planar else value[:3]
        L_C = np.array([0.0, 0.0, value[2]]) if planar else value[3:]
        com = pin.centerOfMass(ff.model, data, q)
        L_B = L_C + cross3(com - base_position(ff, q), P)
        lin = R.T @ P
        return np.array([lin[0], lin[1], L_B[2]]) if planar else np.concatenate([lin, R.T @ L_B])
    P = np.array([value[0], value[1], 0.0]) if planar else value
    lin = R.T @ P
    return lin[:2] if planar else lin


def world_momentum(ff: FreeFlyerModel, data: pin.Data, state: State) -> np.ndarray:
    """Momentum about the world origin, world axes, as the plant integrates it (nb,):
    spatial [P; L_O], planar [Px, Py, L_Oz]. Constant without external forces."""
    h = centroidal_momentum(ff, data, state)
    L_O = h[3:] + cross3(data.com[0], h[:3])
    return planar_components(ff, np.concatenate([h[:3], L_O]))


def centroidal_from_world(ff: FreeFlyerModel, h_world: np.ndarray, com: np.ndarray) -> np.ndarray:
    """[P; L_C] (planar [Px, Py, L_Cz]), world axes, from the momentum about the world origin
    ``h_world`` (:func:`world_momentum`) and the system CoM ``com`` (world, m): L_C = L_O - c x P.
    Once per plant step: on Python floats."""
    cx, cy, cz = com.tolist()
    if ff.base == "planar":
        Px, Py, L = h_world.tolist()
        return np.array([Px, Py, L - (cx * Py - cy * Px)])
    P0, P1, P2, L0, L1, L2 = h_world.tolist()
    return np.array([P0, P1, P2, L0 - (cy * P2 - cz * P1), L1 - (cz * P0 - cx * P2), L2 - (cx * P1 - cy * P0)])


def world_momentum_to_base_rows(ff: FreeFlyerModel, q: np.ndarray, h_world: np.ndarray) -> np.ndarray:
    """[R^T P; R^T L_B] (planar [R^T P_xy; L_Bz]): the momentum rows M[:nb] v of the base
    equations, from the momentum about the world origin (see :func:`world_momentum`)."""
    # Once per plant step: on Python floats, which cost less than NumPy calls on 3-vectors.
    if ff.base == "planar":
        x, y, c, s = q[:4].tolist()
        Px, Py, L_Oz = h_world.tolist()
        # R^T P with R the yaw rotation [[c, -s], [s, c]]; L_Bz = L_Oz - (r_B x P)_z.
        return np.array([c * Px + s * Py, -s * Px + c * Py, L_Oz - (x * Py - y * Px)])
    x, y, z, qx, qy, qz, qw = q[:7].tolist()
    P0, P1, P2, L0, L1, L2 = h_world.tolist()
    Lx, Ly, Lz = L0 - (y * P2 - z * P1), L1 - (z * P0 - x * P2), L2 - (x * P1 - y * P0)  # L_B
    # R (world <- base_link) of the unit quaternion, Eigen's toRotationMatrix (state.base_rotation_into)
    tx, ty, tz = 2.0 * qx, 2.0 * qy, 2.0 * qz
    twx, twy, twz, txx, txy, txz = tx * qw, ty * qw, tz * qw, tx * qx, ty * qx, tz * qx
    tyy, tyz, tzz = ty * qy, tz * qy, tz * qz
    r00, r01, r02 = 1.0 - (tyy + tzz), txy - twz, txz + twy
    r10, r11, r12 = txy + twz, 1.0 - (txx + tzz), tyz - twx
    r20, r21, r22 = txz - twy, tyz + twx, 1.0 - (txx + tyy)
    return np.array([r00 * P0 + r10 * P1 + r20 * P2, r01 * P0 + r11 * P1 + r21 * P2, r02 * P0 + r12 * P1 + r22 * P2,
                     r00 * Lx + r10 * Ly + r20 * Lz, r01 * Lx + r11 * Ly + r21 * Lz, r02 * Lx + r12 * Ly + r22 * Lz])


def base_wrench_about_world_origin(ff: FreeFlyerModel, q: np.ndarray, tau_base: np.ndarray) -> np.ndarray:
    """d/dt of :func:`world_momentum`: the base generalized force (base_link axes, about the
    base_link origin) as a wrench about the world origin in world axes (nb,)."""
    R = base_rotation(ff, q)
    r_B = base_position(ff, q)
    if ff.base == "planar":
        F = R @ np.array([tau_base[0], tau_base[1], 0.0])
        return np.array([F[0], F[1], tau_base[2] + cross3(r_B, F)[2]])
    F = R @ tau_base[:3]
    return np.concatenate([F, R @ tau_base[3:] + cross3(r_B, F)])
