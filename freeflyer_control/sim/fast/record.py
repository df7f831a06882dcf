"""Compiled counterpart of :class:`freeflyer_control.sim.result.Recorder` for logged states.

:func:`state_series` computes, for every logged (q, v), what ``Recorder.record`` derives from
the state: joint positions and velocities, the base pose and world twist, the system CoM, the
end-effector positions and the momenta of the base group (base + wheels), the arm group and
the whole system (P, and L about the CoM, world axes).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from freeflyer_control.physics.kernels.rigid_body import (
    _JIT,
    REVOLUTE_UNBOUNDED,
    _inertia_apply,
    _joint_velocity,
    _motion_to_child,
    forward_kinematics,
    world_placements,
)


@njit(**_JIT)
def state_series(km, planar, nb, base_group, ee_body, ee_p, log_q, log_v,
                 jpos, jvel, bpos, bquat, blin, bang, com, ee, m_total, m_base, m_arm):
    """Fill the per-sample output arrays (one row per logged state).

    base_group[i]: 1 if body i belongs to the base group (base joint and wheels).
    ee_body[e], ee_p[e]: parent body and translation in it of end-effector frame e.
    """
    jint, mass, hh, Ibar = km[0], km[4], km[5], km[6]
    n = jint.shape[0]
    R = np.empty((n, 3, 3))
    p = np.empty((n, 3))
    oR = np.empty((n, 3, 3))
    op = np.empty((n, 3))
    V = np.empty((n, 6))
    vJ = np.empty(6)
    f = np.empty(6)
    sums = np.empty((2, 6))
    total_mass = 0.0
    for i in range(n):
        total_mass += mass[i]
    for s in range(log_q.shape[0]):
        q, v = log_q[s], log_v[s]
        forward_kinematics(km, q, R, p)
        world_placements(km, R, p, oR, op)
        sums[:, :] = 0.0
        cx = cy = cz = 0.0
        for i in range(n):
            par, kind, iq, iv = jint[i, 0], jint[i, 1], jint[i, 2], jint[i, 3]
            _joint_velocity(kind, iv, km[3][i], v, vJ)
            if par >= 0:
                _motion_to_child(R, p, i, V[par], V[i])
                for k in range(6):
                    V[i, k] += vJ[k]
            else:
                for k in range(6):
                    V[i, k] = vJ[k]
            # CoM: sum of m_i * world position of body i's CoM (h_i = m_i c_i)
            for a in range(3):
                w = op[i, a] * mass[i] + oR[i, a, 0] * hh[i, 0] + oR[i, a, 1] * hh[i, 1] + oR[i, a, 2] * hh[i, 2]
                if a == 0:
                    cx += w
                elif a == 1:
                    cy += w
                else:
                    cz += w
            # body momentum about the world origin, world axes
            _inertia_apply(mass[i], hh[i], Ibar[i], V[i], f)
            g = 0 if base_group[i] else 1
            Fx = oR[i, 0, 0] * f[0] + oR[i, 0, 1] * f[1] + oR[i, 0, 2] * f[2]
            Fy = oR[i, 1, 0] * f[0] + oR[i, 1, 1] * f[1] + oR[i, 1, 2] * f[2]
            Fz = oR[i, 2, 0] * f[0] + oR[i, 2, 1] * f[1] + oR[i, 2, 2] * f[2]
            sums[g, 0] += Fx
            sums[g, 1] += Fy
            sums[g, 2] += Fz
            for a in range(3):
                sums[g, 3 + a] += oR[i, a, 0] * f[3] + oR[i, a, 1] * f[4] + oR[i, a, 2] * f[5]
            sums[g, 3] += op[i, 1] * Fz - op[i, 2] * Fy
            sums[g, 4] += op[i, 2] * Fx - op[i, 0] * Fz
            sums[g, 5] += op[i, 0] * Fy - op[i, 1] * Fx
        cx /= total_mass
        cy /= total_mass
        cz /= total_mass
        com[s, 0], com[s, 1], com[s, 2] = cx, cy, cz
        for g in range(2):
            out = m_base[s] if g == 0 else m_arm[s]
            P0, P1, P2 = sums[g, 0], sums[g, 1], sums[g, 2]
            out[0], out[1], out[2] = P0, P1, P2
            out[3] = sums[g, 3] - (cy * P2 - cz * P1)
            out[4] = sums[g, 4] - (cz * P0 - cx * P2)
            out[5] = sums[g, 5] - (cx * P1 - cy * P0)
        for k in range(6):
            m_total[s, k] = m_base[s, k] + m_arm[s, k]
        # joints
        for i in range(1, n):
            kind, iq, iv = jint[i, 1], jint[i, 2], jint[i, 3]
            if kind == REVOLUTE_UNBOUNDED:
                jpos[s, iv - nb] = math.atan2(q[iq + 1], q[iq])
            else:
                jpos[s, iv - nb] = q[iq]
        for k in range(nb, v.shape[0]):
            jvel[s, k - nb] = v[k]
        # base
        Rb = oR[0]
        if planar:
            bpos[s, 0], bpos[s, 1], bpos[s, 2] = q[0], q[1], 0.0
            yaw = math.atan2(q[3], q[2])
            bquat[s, 0], bquat[s, 1], bquat[s, 2], bquat[s, 3] = 0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)
            for a in range(3):
                blin[s, a] = Rb[a, 0] * v[0] + Rb[a, 1] * v[1] + Rb[a, 2] * 0.0
            bang[s, 0], bang[s, 1], bang[s, 2] = 0.0, 0.0, v[2]
        else:
            for a in range(3):
                bpos[s, a] = q[a]
                blin[s, a] = Rb[a, 0] * v[0] + Rb[a, 1] * v[1] + Rb[a, 2] * v[2]
                bang[s, a] = Rb[a, 0] * v[3] + Rb[a, 1] * v[4] + Rb[a, 2] * v[5]
            for a in range(4):
                bquat[s, a] = q[3 + a]
        for e in range(ee_body.shape[0]):
            i = ee_body[e]
            for a in range(3):
                ee[s, 3 * e + a] = op[i, a] + oR[i, a, 0] * ee_p[e, 0] + oR[i, a, 1] * ee_p[e, 1] + oR[i, a, 2] * ee_p[e, 2]
