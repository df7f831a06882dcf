"""numba-compiled rigid-body algorithms and plant step (zero gravity).

Conventions are Pinocchio's (see :mod:`freeflyer_control.physics.state`): motions and forces
are 6-vectors [linear; angular]; q, v, tau are Pinocchio's coordinates; a body's placement
(R, p) maps its frame to its parent's (x_parent = R x + p). Inside RNEA, CRBA and ABA, body i's
quantities are in the base joint's axes about body i's joint origin (the "Base axes" section).
``km`` is the tuple of :meth:`~freeflyer_control.physics.kernels.arrays.KernelModel.arrays`.

The algorithms: forward kinematics, RNEA (b = nonlinear effects), CRBA (mass matrix with
composite rigid inertias) for the controller, forward dynamics by the articulated-body algorithm
(ABA) for the plant, the configuration exponential (``pin.integrate``, same formulas as Pinocchio 4:
SE(3) with quaternions, SE(2), SO(2)) and the CF4 plant step with momentum projection of
:class:`~freeflyer_control.physics.plant.Plant`. The control laws are in
:mod:`freeflyer_control.control.kernels`, the lockstep loop in :mod:`freeflyer_control.sim.fast.loop`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numba.extending import register_jitable

from freeflyer_control.physics.state import base_rotation_into, world_to_local_base_map_into

_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}
# For the kernels that allocate nothing: without numba's runtime (NRT), the array views their
# loops take (V[i], Ia[par], ...) are not reference-counted, an atomic increment and decrement
# each that made up a third of the articulated-body algorithm's time.
_NO_NRT = dict(_JIT, _nrt=False)

EPS = float(np.finfo(float).eps)
TS_PREC = EPS ** 0.25  # Pinocchio's TaylorSeriesExpansion<double>::precision<3>()

FREEFLYER, PLANAR, REVOLUTE, REVOLUTE_UNBOUNDED, PRISMATIC = range(5)


# ---------------------------------------------------------------------------------------------
# Scratch space: one tuple of arrays, allocated once per compiled call (numba's allocations cost
# ~50-100 ns each, more than the arithmetic of a small rigid-body algorithm).


@register_jitable  # allocations, once per run: plain Python there, compiled where a kernel calls it
def workspace(n, nq, nv, nb):
    """(R, p, V, A, F, s6, cm, ch, cI, T, zero_nv, Ia, Ud, Dr, stage, qs, snb, Lb, X, H, C, acc, w, L,
    bR, r, u, hb, Ib): bR .. Ib the bodies' base-axes frames (:func:`base_frames`)"""
    nj = nv - nb
    return (np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6)),
            np.empty((6, 6)), np.empty(n), np.empty((n, 3)), np.empty((n, 3, 3)), np.empty((3, 3)),
            np.zeros(nv), np.empty((n, 6, 6)), np.empty((n, 8)), np.empty((4, 6, 6)), np.empty((9, nv)),
            np.empty((3, nq)), np.empty((3, nb)), np.empty((nb, nb)), np.empty((nb, nj + 1)),
            np.empty((nj, nj)), np.empty(nj), np.empty(nj), np.empty((4, max(nj, 1))), np.empty((nv, nv)),
            np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3, 3)))


@njit(inline="always", **_JIT)
def _carve(buf, o, shape):
    """(buf[o:o + prod(shape)] as an array of ``shape``, the offset after it)."""
    size = 1
    for s in shape:
        size *= s
    return buf[o:o + size].reshape(shape), o + size


@njit(**_JIT)
def workspace_views(buf, n, nq, nv, nb):
    """(the arrays of :func:`workspace`, in its order and shapes, as views of the flat float buffer
    ``buf``; the offset in buf after the last one). A caller from Python passes one array instead of
    29 (numba's dispatch unboxes each array argument: ~60 ns apiece). buf's entry for ``zero_nv``
    (ws[10]) must hold zeros; the size is that of workspace()'s arrays together (test_compiled_plant
    holds the two layouts equal)."""
    nj = nv - nb
    R, o = _carve(buf, 0, (n, 3, 3))
    p, o = _carve(buf, o, (n, 3))
    V, o = _carve(buf, o, (n, 6))
    A, o = _carve(buf, o, (n, 6))
    F, o = _carve(buf, o, (n, 6))
    s6, o = _carve(buf, o, (6, 6))
    cm, o = _carve(buf, o, (n,))
    ch, o = _carve(buf, o, (n, 3))
    cI, o = _carve(buf, o, (n, 3, 3))
    T, o = _carve(buf, o, (3, 3))
    zero_nv, o = _carve(buf, o, (nv,))
    Ia, o = _carve(buf, o, (n, 6, 6))
    Ud, o = _carve(buf, o, (n, 8))
    Dr, o = _carve(buf, o, (4, 6, 6))
    stage, o = _carve(buf, o, (9, nv))
    qs, o = _carve(buf, o, (3, nq))
    snb, o = _carve(buf, o, (3, nb))
    Lb, o = _carve(buf, o, (nb, nb))
    X, o = _carve(buf, o, (nb, nj + 1))
    H, o = _carve(buf, o, (nj, nj))
    C, o = _carve(buf, o, (nj,))
    acc, o = _carve(buf, o, (nj,))
    w, o = _carve(buf, o, (4, max(nj, 1)))
    L, o = _carve(buf, o, (nv, nv))
    bR, o = _carve(buf, o, (n, 3, 3))
    r, o = _carve(buf, o, (n, 3))
    u, o = _carve(buf, o, (n, 3))
    hb, o = _carve(buf, o, (n, 3))
    Ib, o = _carve(buf, o, (n, 3, 3))
    return (R, p, V, A, F, s6, cm, ch, cI, T, zero_nv, Ia, Ud, Dr, stage, qs, snb, Lb, X, H, C, acc, w, L,
            bR, r, u, hb, Ib), o


# ---------------------------------------------------------------------------------------------
# Kinematics


@njit(**_NO_NRT)
def forward_kinematics(km, q, R, p):
    """R[i], p[i]: placement of body i in its parent's frame at configuration q."""
    for i in range(km[0].shape[0]):
        _joint_placement(km, q, i, R, p)


@njit(inline="always", **_JIT)
def _joint_placement(km, q, i, R, p):
    """R[i] (3, 3), p[i] (3,) (m): placement of body i in its parent's frame at configuration q."""
    jint, PR, Pp, axis = km[0], km[1], km[2], km[3]
    kind, iq = jint[i, 1], jint[i, 2]
    # the joint's own placement (j00 .. j22, t0 .. t2), in locals: no scratch array
    t0 = t1 = t2 = 0.0
    if kind == FREEFLYER:
        x, y, z, w = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
        tx, ty, tz = 2.0 * x, 2.0 * y, 2.0 * z
        twx, twy, twz = tx * w, ty * w, tz * w
        txx, txy, txz = tx * x, ty * x, tz * x
        tyy, tyz, tzz = ty * y, tz * y, tz * z
        j00, j01, j02 = 1.0 - (tyy + tzz), txy - twz, txz + twy
        j10, j11, j12 = txy + twz, 1.0 - (txx + tzz), tyz - twx
        j20, j21, j22 = txz - twy, tyz + twx, 1.0 - (txx + tyy)
        t0, t1, t2 = q[iq], q[iq + 1], q[iq + 2]
    elif kind == PLANAR:
        c, s = q[iq + 2], q[iq + 3]
        j00, j01, j02 = c, -s, 0.0
        j10, j11, j12 = s, c, 0.0
        j20, j21, j22 = 0.0, 0.0, 1.0
        t0, t1 = q[iq], q[iq + 1]
    elif kind == PRISMATIC:
        j00, j01, j02 = 1.0, 0.0, 0.0
        j10, j11, j12 = 0.0, 1.0, 0.0
        j20, j21, j22 = 0.0, 0.0, 1.0
        t0, t1, t2 = axis[i, 0] * q[iq], axis[i, 1] * q[iq], axis[i, 2] * q[iq]
    else:
        if kind == REVOLUTE:
            c, s = math.cos(q[iq]), math.sin(q[iq])
        else:
            c, s = q[iq], q[iq + 1]
        ax, ay, az = axis[i, 0], axis[i, 1], axis[i, 2]
        t = 1.0 - c
        j00 = t * ax * ax + c
        j11 = t * ay * ay + c
        j22 = t * az * az + c
        j01 = t * ax * ay - s * az
        j10 = t * ax * ay + s * az
        j02 = t * ax * az + s * ay
        j20 = t * ax * az - s * ay
        j12 = t * ay * az - s * ax
        j21 = t * ay * az + s * ax
    for a in range(3):
        pa0, pa1, pa2 = PR[i, a, 0], PR[i, a, 1], PR[i, a, 2]
        p[i, a] = Pp[i, a] + pa0 * t0 + pa1 * t1 + pa2 * t2
        R[i, a, 0] = pa0 * j00 + pa1 * j10 + pa2 * j20
        R[i, a, 1] = pa0 * j01 + pa1 * j11 + pa2 * j21
        R[i, a, 2] = pa0 * j02 + pa1 * j12 + pa2 * j22




@njit(**_NO_NRT)
def world_placements(km, R, p, oR, op):
    """oR[i] (3, 3), op[i] (3,): world placement of body i (world <- body i), m, from the
    placements R, p of each body in its parent's frame (:func:`forward_kinematics`)."""
    jint = km[0]
    for i in range(jint.shape[0]):
        par = jint[i, 0]
        if par < 0:
            for a in range(3):
                op[i, a] = p[i, a]
                for c in range(3):
                    oR[i, a, c] = R[i, a, c]
            continue
        for a in range(3):
            for c in range(3):
                oR[i, a, c] = oR[par, a, 0] * R[i, 0, c] + oR[par, a, 1] * R[i, 1, c] + oR[par, a, 2] * R[i, 2, c]
            op[i, a] = op[par, a] + oR[par, a, 0] * p[i, 0] + oR[par, a, 1] * p[i, 1] + oR[par, a, 2] * p[i, 2]


@njit(inline="always", **_JIT)
def _joint_velocity(kind, iv, ax, v, out):
    """out (6,) = S qdot of a joint (joint frame)."""
    out[0], out[1], out[2], out[3], out[4], out[5] = _joint_motion(kind, iv, ax, v)


@njit(inline="always", **_JIT)
def _joint_motion(kind, iv, ax, v):
    """S qdot of a joint (the frame of its axis ax), as a tuple [linear; angular]."""
    if kind == FREEFLYER:
        return v[iv], v[iv + 1], v[iv + 2], v[iv + 3], v[iv + 4], v[iv + 5]
    if kind == PLANAR:
        return v[iv], v[iv + 1], 0.0, 0.0, 0.0, v[iv + 2]
    qd = v[iv]
    if kind == PRISMATIC:
        return ax[0] * qd, ax[1] * qd, ax[2] * qd, 0.0, 0.0, 0.0
    return 0.0, 0.0, 0.0, ax[0] * qd, ax[1] * qd, ax[2] * qd


@njit(inline="always", **_JIT)
def _joint_force(kind, iv, ax, f, tau):
    """tau[iv:iv+nv] = S^T f."""
    if kind == FREEFLYER:
        for k in range(6):
            tau[iv + k] = f[k]
    elif kind == PLANAR:
        tau[iv], tau[iv + 1], tau[iv + 2] = f[0], f[1], f[5]
    elif kind == PRISMATIC:
        tau[iv] = ax[0] * f[0] + ax[1] * f[1] + ax[2] * f[2]
    else:
        tau[iv] = ax[0] * f[3] + ax[1] * f[4] + ax[2] * f[5]


@njit(inline="always", **_JIT)
def _motion_to_child(R, p, i, m, out):
    """out = X_i m: a parent-frame motion in body i's frame."""
    # every operand in a local first: stores to out cannot force reloads of R, p, m
    r00, r01, r02 = R[i, 0, 0], R[i, 0, 1], R[i, 0, 2]
    r10, r11, r12 = R[i, 1, 0], R[i, 1, 1], R[i, 1, 2]
    r20, r21, r22 = R[i, 2, 0], R[i, 2, 1], R[i, 2, 2]
    px, py, pz = p[i, 0], p[i, 1], p[i, 2]
    m0, m1, m2, m3, m4, m5 = m[0], m[1], m[2], m[3], m[4], m[5]
    lx = m0 - (py * m5 - pz * m4)
    ly = m1 - (pz * m3 - px * m5)
    lz = m2 - (px * m4 - py * m3)
    out[0] = r00 * lx + r10 * ly + r20 * lz
    out[1] = r01 * lx + r11 * ly + r21 * lz
    out[2] = r02 * lx + r12 * ly + r22 * lz
    out[3] = r00 * m3 + r10 * m4 + r20 * m5
    out[4] = r01 * m3 + r11 * m4 + r21 * m5
    out[5] = r02 * m3 + r12 * m4 + r22 * m5


@njit(inline="always", **_JIT)
def _inertia_times(m, h0, h1, h2, i00, i01, i02, i11, i12, i22, vx, vy, vz, wx, wy, wz):
    """I v as a tuple, for the rigid inertia of mass m, first moment h and symmetric rotational
    inertia (i00 .. i22) about the origin, and the motion v = (vx, vy, vz, wx, wy, wz)."""
    return (m * vx - (h1 * wz - h2 * wy),
            m * vy - (h2 * wx - h0 * wz),
            m * vz - (h0 * wy - h1 * wx),
            (i00 * wx + i01 * wy + i02 * wz) + (h1 * vz - h2 * vy),
            (i01 * wx + i11 * wy + i12 * wz) + (h2 * vx - h0 * vz),
            (i02 * wx + i12 * wy + i22 * wz) + (h0 * vy - h1 * vx))


@njit(inline="always", **_JIT)
def _inertia_apply(m, h, Ib, v, out):
    """out = I v for the rigid inertia (m, first moment h, rotational inertia Ib about the origin)."""
    out[0], out[1], out[2], out[3], out[4], out[5] = _inertia_times(
        m, h[0], h[1], h[2], Ib[0, 0], Ib[0, 1], Ib[0, 2], Ib[1, 1], Ib[1, 2], Ib[2, 2],
        v[0], v[1], v[2], v[3], v[4], v[5])


@njit(inline="always", **_JIT)
def _bias_times(m, h0, h1, h2, i00, i01, i02, i11, i12, i22, vx, vy, vz, wx, wy, wz):
    """v x* (I v) as a tuple: the rate of change of a rigid body's momentum I v at motion v
    (arguments as :func:`_inertia_times`)."""
    g0, g1, g2, g3, g4, g5 = _inertia_times(m, h0, h1, h2, i00, i01, i02, i11, i12, i22, vx, vy, vz, wx, wy, wz)
    return (wy * g2 - wz * g1,
            wz * g0 - wx * g2,
            wx * g1 - wy * g0,
            wy * g5 - wz * g4 + vy * g2 - vz * g1,
            wz * g3 - wx * g5 + vz * g0 - vx * g2,
            wx * g4 - wy * g3 + vx * g1 - vy * g0)


@njit(inline="always", **_JIT)
def _motion_cross(m, n, out):
    """out = m x n, the cross product of two motions [linear; angular]."""
    out[0], out[1], out[2], out[3], out[4], out[5] = _motion_cross_times(
        m[0], m[1], m[2], m[3], m[4], m[5], n[0], n[1], n[2], n[3], n[4], n[5])


@njit(inline="always", **_JIT)
def _motion_cross_times(vx, vy, vz, wx, wy, wz, j0, j1, j2, j3, j4, j5):
    """(v, w) x (j0 .. j5), the cross product of two motions [linear; angular], as a tuple."""
    return (wy * j2 - wz * j1 + vy * j5 - vz * j4,
            wz * j0 - wx * j2 + vz * j3 - vx * j5,
            wx * j1 - wy * j0 + vx * j4 - vy * j3,
            wy * j5 - wz * j4,
            wz * j3 - wx * j5,
            wx * j4 - wy * j3)


# ---------------------------------------------------------------------------------------------
# Base axes: the frames of RNEA, CRBA and ABA
#
# Body i's motions, forces and inertias are expressed in the base joint's AXES at this instant,
# about body i's joint ORIGIN: frames that differ from their parent's by a translation only. A
# motion, force or inertia then passes between parent and child by a shift of origin, where in
# joint frames (Pinocchio's algorithms) it is rotated as well: an articulated inertia's three
# 3x3 blocks (two thirds of the ABA's flops), each CRBA column at every ancestor. The price is
# one rotation of each body's rigid inertia and joint axis, once per configuration. Lever arms
# stay joint-to-joint: about the base origin instead (one frame for all bodies, as Pinocchio 3's
# world-frame algorithms do), a light distal body's S^T Ia S is the small difference of large
# terms (measured: 60x the round-off, 1.2e-12 relative, on spatial_dual_arm).


@njit(inline="always", **_JIT)
def _rigid_rotated(R, i, h, Ib):
    """(R[i] h, R[i] Ib R[i]^T) as a tuple (h0, h1, h2, i00, i01, i02, i11, i12, i22): a rigid
    body's first moment (kg m) and rotational inertia (kg m^2) about its origin, from its own
    axes into those of a frame F (R[i]: F <- body)."""
    r00, r01, r02 = R[i, 0, 0], R[i, 0, 1], R[i, 0, 2]
    r10, r11, r12 = R[i, 1, 0], R[i, 1, 1], R[i, 1, 2]
    r20, r21, r22 = R[i, 2, 0], R[i, 2, 1], R[i, 2, 2]
    h0, h1, h2 = h[0], h[1], h[2]
    # T = R Ib, then T R^T: symmetric, one triangle
    t00 = r00 * Ib[0, 0] + r01 * Ib[1, 0] + r02 * Ib[2, 0]
    t01 = r00 * Ib[0, 1] + r01 * Ib[1, 1] + r02 * Ib[2, 1]
    t02 = r00 * Ib[0, 2] + r01 * Ib[1, 2] + r02 * Ib[2, 2]
    t10 = r10 * Ib[0, 0] + r11 * Ib[1, 0] + r12 * Ib[2, 0]
    t11 = r10 * Ib[0, 1] + r11 * Ib[1, 1] + r12 * Ib[2, 1]
    t12 = r10 * Ib[0, 2] + r11 * Ib[1, 2] + r12 * Ib[2, 2]
    t20 = r20 * Ib[0, 0] + r21 * Ib[1, 0] + r22 * Ib[2, 0]
    t21 = r20 * Ib[0, 1] + r21 * Ib[1, 1] + r22 * Ib[2, 1]
    t22 = r20 * Ib[0, 2] + r21 * Ib[1, 2] + r22 * Ib[2, 2]
    return (r00 * h0 + r01 * h1 + r02 * h2,
            r10 * h0 + r11 * h1 + r12 * h2,
            r20 * h0 + r21 * h1 + r22 * h2,
            t00 * r00 + t01 * r01 + t02 * r02,
            t00 * r10 + t01 * r11 + t02 * r12,
            t00 * r20 + t01 * r21 + t02 * r22,
            t10 * r10 + t11 * r11 + t12 * r12,
            t10 * r20 + t11 * r21 + t12 * r22,
            t20 * r20 + t21 * r21 + t22 * r22)


@njit(inline="always", **_JIT)
def _base_axes(km, R, p, i, ws):
    """Body i's base-axes frame from the placements R, p (parent <- body): in ws, bR[i] (base
    <- body i), r[i] (its origin from its parent's, base axes, m), u[i] (its joint axis, base
    axes). The base: its own frame."""
    par, axis = km[0][i, 0], km[3]
    bR, r, u = ws[24], ws[25], ws[26]
    if par < 0:
        for e in range(3):
            r[i, e], u[i, e] = 0.0, axis[i, e]
            for c in range(3):
                bR[i, e, c] = 1.0 if e == c else 0.0
        return
    for e in range(3):
        b0, b1, b2 = bR[par, e, 0], bR[par, e, 1], bR[par, e, 2]
        r[i, e] = b0 * p[i, 0] + b1 * p[i, 1] + b2 * p[i, 2]
        for c in range(3):
            bR[i, e, c] = b0 * R[i, 0, c] + b1 * R[i, 1, c] + b2 * R[i, 2, c]
    for e in range(3):
        u[i, e] = bR[i, e, 0] * axis[i, 0] + bR[i, e, 1] * axis[i, 1] + bR[i, e, 2] * axis[i, 2]


@njit(inline="always", **_JIT)
def _base_inertia(km, i, ws):
    """hb[i], Ib[i] in ws: body i's first moment (kg m) and rotational inertia about its origin
    (kg m^2) in base axes (bR[i] from :func:`_base_axes`)."""
    hb, Ib = ws[27], ws[28]
    (hb[i, 0], hb[i, 1], hb[i, 2], Ib[i, 0, 0], Ib[i, 0, 1], Ib[i, 0, 2], Ib[i, 1, 1], Ib[i, 1, 2],
     Ib[i, 2, 2]) = _rigid_rotated(ws[24], i, km[5][i], km[6][i])
    Ib[i, 1, 0], Ib[i, 2, 0], Ib[i, 2, 1] = Ib[i, 0, 1], Ib[i, 0, 2], Ib[i, 1, 2]


@njit(**_NO_NRT)
def base_frames(km, R, p, ws):
    """Every body's base-axes frame and inertia (:func:`_base_axes`, :func:`_base_inertia`)
    from the placements R, p."""
    for i in range(km[0].shape[0]):
        _base_axes(km, R, p, i, ws)
        _base_inertia(km, i, ws)


@njit(**_NO_NRT)
def kinematics(km, q, ws):
    """Forward kinematics at q (R, p = ws[0], ws[1]) and the base-axes frames and inertias, in
    one loop."""
    R, p = ws[0], ws[1]
    for i in range(km[0].shape[0]):
        _joint_placement(km, q, i, R, p)
        _base_axes(km, R, p, i, ws)
        _base_inertia(km, i, ws)


@njit(inline="always", **_JIT)
def _shift_motion(r, i, m, out):
    """out = X m (:func:`_shifted`)."""
    out[0], out[1], out[2], out[3], out[4], out[5] = _shifted(r, i, m)


@njit(inline="always", **_JIT)
def _shifted(r, i, m):
    """X m as a tuple: a motion about the parent's origin, about body i's (r[i] from the
    parent's, same axes, m): the linear part gains w x r."""
    rx, ry, rz = r[i, 0], r[i, 1], r[i, 2]
    wx, wy, wz = m[3], m[4], m[5]
    return (m[0] + (wy * rz - wz * ry), m[1] + (wz * rx - wx * rz), m[2] + (wx * ry - wy * rx),
            wx, wy, wz)


@njit(inline="always", **_JIT)
def _shift_force_add(r, i, f, out):
    """out += X^T f: a force about body i's origin, about its parent's (r[i] from the parent's,
    same axes, m), accumulated: the moment gains r x f."""
    rx, ry, rz = r[i, 0], r[i, 1], r[i, 2]
    f0, f1, f2 = f[0], f[1], f[2]
    out[0] += f0
    out[1] += f1
    out[2] += f2
    out[3] += f[3] + (ry * f2 - rz * f1)
    out[4] += f[4] + (rz * f0 - rx * f2)
    out[5] += f[5] + (rx * f1 - ry * f0)


@njit(**_NO_NRT)
def rnea(km, R, p, v, a, tau, ws):
    """tau = M(q) a + b(q, v) (zero gravity) for the placements R, p of configuration q."""
    base_frames(km, R, p, ws)
    rnea_base_axes(km, v, a, tau, ws)


@njit(**_NO_NRT)
def rnea_base_axes(km, v, a, tau, ws):
    """:func:`rnea` on the base-axes frames already in ws (:func:`base_frames`, :func:`kinematics`)."""
    jint, mass = km[0], km[4]
    n = jint.shape[0]
    V, A, F = ws[2], ws[3], ws[4]
    r, u, hb, Ib = ws[25], ws[26], ws[27], ws[28]
    for i in range(n):  # on locals: no store can force a reload
        par, kind, iv = jint[i, 0], jint[i, 1], jint[i, 3]
        j0, j1, j2, j3, j4, j5 = _joint_motion(kind, iv, u[i], v)
        a0, a1, a2, a3, a4, a5 = _joint_motion(kind, iv, u[i], a)
        if par >= 0:
            s0, s1, s2, s3, s4, s5 = _shifted(r, i, V[par])
            vx, vy, vz, wx, wy, wz = s0 + j0, s1 + j1, s2 + j2, s3 + j3, s4 + j4, s5 + j5
            s0, s1, s2, s3, s4, s5 = _shifted(r, i, A[par])
            a0, a1, a2, a3, a4, a5 = s0 + a0, s1 + a1, s2 + a2, s3 + a3, s4 + a4, s5 + a5
        else:
            vx, vy, vz, wx, wy, wz = j0, j1, j2, j3, j4, j5
        c0, c1, c2, c3, c4, c5 = _motion_cross_times(vx, vy, vz, wx, wy, wz, j0, j1, j2, j3, j4, j5)
        a0, a1, a2, a3, a4, a5 = a0 + c0, a1 + c1, a2 + c2, a3 + c3, a4 + c4, a5 + c5
        V[i, 0], V[i, 1], V[i, 2], V[i, 3], V[i, 4], V[i, 5] = vx, vy, vz, wx, wy, wz
        A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5] = a0, a1, a2, a3, a4, a5
        # f = I a + v x* (I v)
        m, h, I = mass[i], hb[i], Ib[i]
        h0, h1, h2 = h[0], h[1], h[2]
        i00, i01, i02, i11, i12, i22 = I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2]
        f0, f1, f2, f3, f4, f5 = _inertia_times(m, h0, h1, h2, i00, i01, i02, i11, i12, i22, a0, a1, a2, a3, a4, a5)
        b0, b1, b2, b3, b4, b5 = _bias_times(m, h0, h1, h2, i00, i01, i02, i11, i12, i22, vx, vy, vz, wx, wy, wz)
        F[i, 0], F[i, 1], F[i, 2], F[i, 3], F[i, 4], F[i, 5] = f0 + b0, f1 + b1, f2 + b2, f3 + b3, f4 + b4, f5 + b5
    for i in range(n - 1, -1, -1):
        par, kind, iv = jint[i, 0], jint[i, 1], jint[i, 3]
        _joint_force(kind, iv, u[i], F[i], tau)
        if par >= 0:
            _shift_force_add(r, i, F[i], F[par])


@njit(inline="always", **_JIT)
def _rigid_shift_add(r, i, m, h, I, hp, Ip):
    """hp, Ip += a rigid inertia (mass m, kg; first moment h, kg m; rotational inertia I, kg m^2)
    about body i's origin, moved to its parent's origin (r[i] from the parent's, same axes, m):
    h + m r and I - (r^ h^ + h^ r^) - m r^ r^, with u^ w^ = w u^T - (u.w) 1."""
    rx, ry, rz = r[i, 0], r[i, 1], r[i, 2]
    hx, hy, hz = h[0], h[1], h[2]
    diag = 2.0 * (rx * hx + ry * hy + rz * hz) + m * (rx * rx + ry * ry + rz * rz)
    mx, my, mz = m * rx, m * ry, m * rz
    Ip[0, 0] += I[0, 0] + (diag - (2.0 * hx * rx + mx * rx))
    Ip[1, 1] += I[1, 1] + (diag - (2.0 * hy * ry + my * ry))
    Ip[2, 2] += I[2, 2] + (diag - (2.0 * hz * rz + mz * rz))
    e01 = I[0, 1] - (hx * ry + rx * hy + mx * ry)
    e02 = I[0, 2] - (hx * rz + rx * hz + mx * rz)
    e12 = I[1, 2] - (hy * rz + ry * hz + my * rz)
    Ip[0, 1] += e01
    Ip[1, 0] += e01
    Ip[0, 2] += e02
    Ip[2, 0] += e02
    Ip[1, 2] += e12
    Ip[2, 1] += e12
    hp[0] += hx + mx
    hp[1] += hy + my
    hp[2] += hz + mz


@njit(**_NO_NRT)
def translation_rows(km, R, p, M, ws):
    """The base-translation rows of M(q) (the linear momentum per unit velocity, base axes:
    spatial rows 0-2, planar 0-1; upper triangle, the other rows left as they are) for the
    placements R, p. The composite masses and first moments only, where :func:`crba` carries
    the composite rotational inertias too: what a GJM whose free base coordinates are the
    translations reads of M (rotation-floating, rotation-flying). Column of joint j: m_j u_j
    (prismatic) or u_j x h_j (revolute), with m_j, h_j the mass and first moment of the subtree
    from j about j's origin; base columns: m 1 and e x h of the whole robot."""
    jint, mass, hh = km[0], km[4], km[5]
    n = jint.shape[0]
    cm, ch = ws[6], ws[7]
    bR, r, u = ws[24], ws[25], ws[26]
    for i in range(n):
        _base_axes(km, R, p, i, ws)
        cm[i] = mass[i]
        for e in range(3):
            ch[i, e] = bR[i, e, 0] * hh[i, 0] + bR[i, e, 1] * hh[i, 1] + bR[i, e, 2] * hh[i, 2]
    for i in range(n - 1, -1, -1):
        par, kind, iv = jint[i, 0], jint[i, 1], jint[i, 3]
        m, hx, hy, hz = cm[i], ch[i, 0], ch[i, 1], ch[i, 2]
        if kind == FREEFLYER or kind == PLANAR:
            nt = 3 if kind == FREEFLYER else 2
            for a in range(nt):
                for c in range(a, nt):
                    M[iv + a, iv + c] = m if a == c else 0.0
            if kind == FREEFLYER:  # e_k x h, k = x, y, z
                M[iv, iv + 3], M[iv + 1, iv + 3], M[iv + 2, iv + 3] = 0.0, -hz, hy
                M[iv, iv + 4], M[iv + 1, iv + 4], M[iv + 2, iv + 4] = hz, 0.0, -hx
                M[iv, iv + 5], M[iv + 1, iv + 5], M[iv + 2, iv + 5] = -hy, hx, 0.0
            else:  # e_z x h, rows x, y
                M[iv, iv + 2], M[iv + 1, iv + 2] = -hy, hx
            continue
        ux, uy, uz = u[i, 0], u[i, 1], u[i, 2]
        if kind == PRISMATIC:
            fx, fy, fz = m * ux, m * uy, m * uz
        else:
            fx, fy, fz = uy * hz - uz * hy, uz * hx - ux * hz, ux * hy - uy * hx
        b0 = jint[0, 3]  # the base is body 0 (kernel_model checks): its translation rows
        M[b0, iv], M[b0 + 1, iv] = fx, fy
        if jint[0, 1] == FREEFLYER:
            M[b0 + 2, iv] = fz
        cm[par] += m
        ch[par, 0] += hx + m * r[i, 0]
        ch[par, 1] += hy + m * r[i, 1]
        ch[par, 2] += hz + m * r[i, 2]


@njit(**_NO_NRT)
def crba(km, R, p, M, ws):
    """M (nv, nv), full symmetric, for the placements R, p (composite rigid inertias)."""
    base_frames(km, R, p, ws)
    crba_base_axes(km, M, ws)


@njit(**_NO_NRT)
def crba_base_axes(km, M, ws):
    """:func:`crba` on the base-axes frames already in ws (:func:`base_frames`, :func:`kinematics`)."""
    jint, mass = km[0], km[4]
    n = jint.shape[0]
    cm, ch, cI = ws[6], ws[7], ws[8]
    r, u, hb, Ib = ws[25], ws[26], ws[27], ws[28]
    for i in range(n):  # elementwise: array-to-array assignment needs numba's runtime
        cm[i] = mass[i]
        for e in range(3):
            ch[i, e] = hb[i, e]
            for c in range(3):
                cI[i, e, c] = Ib[i, e, c]
    S, F = ws[5][0], ws[5][1]
    M[:, :] = 0.0  # entries of bodies on different branches stay zero
    for i in range(n - 1, -1, -1):
        par, kind, iv, nvj = jint[i, 0], jint[i, 1], jint[i, 3], jint[i, 4]
        for k in range(nvj):
            # column iv + k: F = Ic_i S_k, then walk up to the root
            for e in range(6):
                S[e] = 0.0
            if kind == FREEFLYER:
                S[k] = 1.0
            elif kind == PLANAR:
                S[(0, 1, 5)[k]] = 1.0
            elif kind == PRISMATIC:
                S[0], S[1], S[2] = u[i, 0], u[i, 1], u[i, 2]
            else:
                S[3], S[4], S[5] = u[i, 0], u[i, 1], u[i, 2]
            _inertia_apply(cm[i], ch[i], cI[i], S, F)
            col = iv + k
            j = i
            while True:
                kj, ivj = jint[j, 1], jint[j, 3]
                if kj == FREEFLYER:
                    for e in range(6):
                        M[ivj + e, col] = F[e]
                elif kj == PLANAR:
                    M[ivj, col], M[ivj + 1, col], M[ivj + 2, col] = F[0], F[1], F[5]
                elif kj == PRISMATIC:
                    M[ivj, col] = u[j, 0] * F[0] + u[j, 1] * F[1] + u[j, 2] * F[2]
                else:
                    M[ivj, col] = u[j, 0] * F[3] + u[j, 1] * F[4] + u[j, 2] * F[5]
                pj = jint[j, 0]
                if pj < 0:
                    break
                # about the parent's origin: the moment gains r x f
                rx, ry, rz = r[j, 0], r[j, 1], r[j, 2]
                f0, f1, f2 = F[0], F[1], F[2]
                F[3] += ry * f2 - rz * f1
                F[4] += rz * f0 - rx * f2
                F[5] += rx * f1 - ry * f0
                j = pj
        if par >= 0:
            _rigid_shift_add(r, i, cm[i], ch[i], cI[i], ch[par], cI[par])
            cm[par] += cm[i]
    nv = M.shape[0]
    for a in range(nv):
        for c in range(a + 1, nv):
            # the column walk filled the rows of ancestors (a < c); mirror them
            M[c, a] = M[a, c]


@njit(**_NO_NRT)
def cholesky(A, L, shift=0.0):
    """L lower with L L^T = A - shift I (only the lower triangle of A is read). False if that is
    not positive definite."""
    n = A.shape[0]
    for j in range(n):
        d = A[j, j] - shift
        for k in range(j):
            d -= L[j, k] * L[j, k]
        if not d > 0.0:
            return False
        d = math.sqrt(d)
        L[j, j] = d
        dinv = 1.0 / d  # one division per column, not one per entry: a division costs ~4 products
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s * dinv
        for i in range(j):
            L[i, j] = 0.0
    return True


@njit(**_NO_NRT)
def cholesky_solve(L, x):
    """Solve L L^T x = rhs in place (x holds rhs on entry)."""
    n = L.shape[0]
    # x[i] waits for s, not for the reciprocal: the divisions run while the sums accumulate
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s * (1.0 / L[i, i])
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s * (1.0 / L[i, i])


@njit(**_NO_NRT)
def mass_and_bias(km, q, v, M, b, ws):
    """M(q) and b(q, v) (nonlinear effects)."""
    kinematics(km, q, ws)
    crba_base_axes(km, M, ws)
    rnea_base_axes(km, v, ws[10], b, ws)


@njit(**_NO_NRT)
def forward_dynamics(km, q, v, tau, a, ws):
    """a (nv,) = M(q)^-1 (tau - b(q, v)): accelerations under generalized forces tau (Pinocchio's
    velocity coordinates and units, zero gravity), by the articulated-body algorithm. Leaves
    the forward kinematics at q in ws[0], ws[1] (R, p)."""
    aba(km, q, v, tau, a, ws)


# ---------------------------------------------------------------------------------------------
# Articulated-body algorithm (Featherstone, Rigid Body Dynamics Algorithms, 7.3; Pinocchio's
# ``aba``): O(n), against CRBA + RNEA + a dense Cholesky. Only the base joint, always the root
# (kernel_model checks), has more than one DOF; its articulated inertia is solved, not propagated.
# In base axes (see above): an articulated inertia passes to its parent by a shift of origin.
# Articulated inertias are symmetric: Ia[i] holds the lower triangle (row >= column) only, the
# other half is neither read nor written (the 6x6 updates, a third of the pass's memory traffic).


@njit(inline="always", **_JIT)
def _sym(I, a, b):
    """I[a, b] of a symmetric matrix of which only the lower triangle is stored."""
    return I[a, b] if a >= b else I[b, a]


@njit(inline="always", **_JIT)
def _rigid_lower(m, h0, h1, h2, i00, i01, i02, i11, i12, i22, out):
    """out (6, 6), lower triangle = the rigid inertia (mass m, kg; first moment h, kg m;
    symmetric rotational inertia i00 .. i22 about the origin, kg m^2) on [linear; angular]
    motions: [[m 1, -h^], [h^, Ib]]."""
    out[0, 0], out[1, 0], out[1, 1], out[2, 0], out[2, 1], out[2, 2] = m, 0.0, m, 0.0, 0.0, m
    out[3, 0], out[3, 1], out[3, 2] = 0.0, -h2, h1
    out[4, 0], out[4, 1], out[4, 2] = h2, 0.0, -h0
    out[5, 0], out[5, 1], out[5, 2] = -h1, h0, 0.0
    out[3, 3], out[4, 3], out[4, 4], out[5, 3], out[5, 4], out[5, 5] = i00, i01, i11, i02, i12, i22


@njit(inline="always", **_JIT)
def _articulated_to_parent(r, i, I, U, dinv, ud, pA, c, Ip, Fp):
    """Body i's articulated inertia I and bias force pA, projected across its joint
    (Ia_A = I - U U^T / d, pa = pA + Ia_A c + U u / d) and added to its parent's about the
    parent's origin (r[i] from it, same axes, m): Ip += X^T Ia_A X, Fp += X^T pa, X the
    translation. I, Ip: lower triangles. Every operand in a local: no store can force a reload.

    With Ia_A = [[A, B], [B^T, C]], K = r^ A, G = r^ B:
    X^T Ia_A X = [[A, B + K^T], [., C + G + G^T + r^ K^T]].
    """
    rx, ry, rz = r[i, 0], r[i, 1], r[i, 2]
    u0, u1, u2, u3, u4, u5 = U[0], U[1], U[2], U[3], U[4], U[5]
    w0, w1, w2, w3, w4, w5 = u0 * dinv, u1 * dinv, u2 * dinv, u3 * dinv, u4 * dinv, u5 * dinv
    a00, a10, a11 = I[0, 0] - w0 * u0, I[1, 0] - w1 * u0, I[1, 1] - w1 * u1
    a20, a21, a22 = I[2, 0] - w2 * u0, I[2, 1] - w2 * u1, I[2, 2] - w2 * u2
    # B[a, c] = bac, stored as I[3 + c, a]
    b00, b10, b20 = I[3, 0] - w3 * u0, I[3, 1] - w3 * u1, I[3, 2] - w3 * u2
    b01, b11, b21 = I[4, 0] - w4 * u0, I[4, 1] - w4 * u1, I[4, 2] - w4 * u2
    b02, b12, b22 = I[5, 0] - w5 * u0, I[5, 1] - w5 * u1, I[5, 2] - w5 * u2
    c00, c10, c11 = I[3, 3] - w3 * u3, I[4, 3] - w4 * u3, I[4, 4] - w4 * u4
    c20, c21, c22 = I[5, 3] - w5 * u3, I[5, 4] - w5 * u4, I[5, 5] - w5 * u5
    v0, v1, v2, v3, v4, v5 = c[0], c[1], c[2], c[3], c[4], c[5]
    p0 = pA[0] + u0 * ud + (a00 * v0 + a10 * v1 + a20 * v2 + b00 * v3 + b01 * v4 + b02 * v5)
    p1 = pA[1] + u1 * ud + (a10 * v0 + a11 * v1 + a21 * v2 + b10 * v3 + b11 * v4 + b12 * v5)
    p2 = pA[2] + u2 * ud + (a20 * v0 + a21 * v1 + a22 * v2 + b20 * v3 + b21 * v4 + b22 * v5)
    p3 = pA[3] + u3 * ud + (b00 * v0 + b10 * v1 + b20 * v2 + c00 * v3 + c10 * v4 + c20 * v5)
    p4 = pA[4] + u4 * ud + (b01 * v0 + b11 * v1 + b21 * v2 + c10 * v3 + c11 * v4 + c21 * v5)
    p5 = pA[5] + u5 * ud + (b02 * v0 + b12 * v1 + b22 * v2 + c20 * v3 + c21 * v4 + c22 * v5)
    Fp[0] += p0
    Fp[1] += p1
    Fp[2] += p2
    Fp[3] += p3 + (ry * p2 - rz * p1)
    Fp[4] += p4 + (rz * p0 - rx * p2)
    Fp[5] += p5 + (rx * p1 - ry * p0)
    # K[:, c] = r x A[:, c], G[:, c] = r x B[:, c]
    k00, k10, k20 = ry * a20 - rz * a10, rz * a00 - rx * a20, rx * a10 - ry * a00
    k01, k11, k21 = ry * a21 - rz * a11, rz * a10 - rx * a21, rx * a11 - ry * a10
    k02, k12, k22 = ry * a22 - rz * a21, rz * a20 - rx * a22, rx * a21 - ry * a20
    g00, g10, g20 = ry * b20 - rz * b10, rz * b00 - rx * b20, rx * b10 - ry * b00
    g01, g11, g21 = ry * b21 - rz * b11, rz * b01 - rx * b21, rx * b11 - ry * b01
    g02, g12, g22 = ry * b22 - rz * b12, rz * b02 - rx * b22, rx * b12 - ry * b02
    Ip[0, 0] += a00
    Ip[1, 0] += a10
    Ip[1, 1] += a11
    Ip[2, 0] += a20
    Ip[2, 1] += a21
    Ip[2, 2] += a22
    # B + K^T, stored transposed: Ip[3 + c, a] += B[a, c] + K[c, a]
    Ip[3, 0] += b00 + k00
    Ip[3, 1] += b10 + k01
    Ip[3, 2] += b20 + k02
    Ip[4, 0] += b01 + k10
    Ip[4, 1] += b11 + k11
    Ip[4, 2] += b21 + k12
    Ip[5, 0] += b02 + k20
    Ip[5, 1] += b12 + k21
    Ip[5, 2] += b22 + k22
    # C + G + G^T + r^ K^T, (r^ K^T)[a, b] = (r x K[b, :])[a]
    Ip[3, 3] += c00 + g00 + g00 + (ry * k02 - rz * k01)
    Ip[4, 3] += c10 + g10 + g01 + (rz * k00 - rx * k02)
    Ip[4, 4] += c11 + g11 + g11 + (rz * k10 - rx * k12)
    Ip[5, 3] += c20 + g20 + g02 + (rx * k01 - ry * k00)
    Ip[5, 4] += c21 + g21 + g12 + (rx * k11 - ry * k10)
    Ip[5, 5] += c22 + g22 + g22 + (rx * k21 - ry * k20)


@njit(**_NO_NRT)
def aba(km, q, v, tau, a, ws):
    """a (nv,) = M(q)^-1 (tau - b(q, v)) (zero gravity) at configuration q, by the articulated-body
    algorithm (Pinocchio's ``aba``, the same three passes, in base axes). The forward kinematics
    runs in the first pass: R, p = ws[0], ws[1] hold it afterwards."""
    jint, mass, hh, Ibar = km[0], km[4], km[5], km[6]
    n = jint.shape[0]
    R, p = ws[0], ws[1]
    V, A, F, Ia, Ud = ws[2], ws[3], ws[4], ws[11], ws[12]
    bR, r, u = ws[24], ws[25], ws[26]
    g = ws[5][1]
    # 1: placements and base-axes frames; velocities V, velocity-product accelerations
    # c = V x (S qdot) (in A), rigid inertias (in Ia), bias forces pA = V x* (I V) (in F)
    for i in range(n):
        par, kind, iv = jint[i, 0], jint[i, 1], jint[i, 3]
        # in the loop that uses them: the sines and cosines overlap with the previous body's work
        _joint_placement(km, q, i, R, p)
        _base_axes(km, R, p, i, ws)
        j0, j1, j2, j3, j4, j5 = _joint_motion(kind, iv, u[i], v)
        Vi, Ai = V[i], A[i]
        if par < 0:  # the base: V = S qdot, c = V x V = 0
            vx, vy, vz, wx, wy, wz = j0, j1, j2, j3, j4, j5
            Ai[0], Ai[1], Ai[2], Ai[3], Ai[4], Ai[5] = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        else:  # V = X V_parent + S qdot, X the shift by r: the linear part gains w x r
            s0, s1, s2, s3, s4, s5 = _shifted(r, i, V[par])
            vx, vy, vz, wx, wy, wz = s0 + j0, s1 + j1, s2 + j2, s3 + j3, s4 + j4, s5 + j5
            Ai[0], Ai[1], Ai[2], Ai[3], Ai[4], Ai[5] = _motion_cross_times(vx, vy, vz, wx, wy, wz,
                                                                           j0, j1, j2, j3, j4, j5)
        Vi[0], Vi[1], Vi[2], Vi[3], Vi[4], Vi[5] = vx, vy, vz, wx, wy, wz
        m = mass[i]
        h0, h1, h2, i00, i01, i02, i11, i12, i22 = _rigid_rotated(bR, i, hh[i], Ibar[i])
        _rigid_lower(m, h0, h1, h2, i00, i01, i02, i11, i12, i22, Ia[i])
        F[i, 0], F[i, 1], F[i, 2], F[i, 3], F[i, 4], F[i, 5] = _bias_times(
            m, h0, h1, h2, i00, i01, i02, i11, i12, i22, vx, vy, vz, wx, wy, wz)
    # 2: articulated inertias and bias forces, leaves to root; per 1-DOF joint
    # Ud[i] = (U = Ia S, 1 / (S^T U), tau - S^T pA)
    for i in range(n - 1, -1, -1):
        par, kind, iv = jint[i, 0], jint[i, 1], jint[i, 3]
        if par < 0:
            continue  # the base: solved in pass 3
        Ii, pA, U, ci = Ia[i], F[i], Ud[i], A[i]
        # S is the axis in the linear (prismatic) or angular (revolute) half
        off = 0 if kind == PRISMATIC else 3
        u0, u1, u2 = u[i, 0], u[i, 1], u[i, 2]
        for e in range(6):
            U[e] = _sym(Ii, e, off) * u0 + _sym(Ii, e, off + 1) * u1 + _sym(Ii, e, off + 2) * u2
        dinv = 1.0 / (U[off] * u0 + U[off + 1] * u1 + U[off + 2] * u2)
        ut = tau[iv] - (pA[off] * u0 + pA[off + 1] * u1 + pA[off + 2] * u2)
        U[6], U[7] = dinv, ut
        _articulated_to_parent(r, i, Ii, U, dinv, ut * dinv, pA, ci, Ia[par], F[par])
    # 3: accelerations, root to leaves
    for i in range(n):
        par, kind, iv = jint[i, 0], jint[i, 1], jint[i, 3]
        Ai = A[i]
        if par < 0:
            _root_acceleration(kind, iv, Ia[i], F[i], tau, Ai, a, ws[13])
            continue
        _shift_motion(r, i, A[par], g)
        for k in range(6):
            Ai[k] += g[k]
        U = Ud[i]
        x = U[7]
        for k in range(6):
            x -= U[k] * Ai[k]
        x *= U[6]
        a[iv] = x
        off = 0 if kind == PRISMATIC else 3
        Ai[off] += u[i, 0] * x
        Ai[off + 1] += u[i, 1] * x
        Ai[off + 2] += u[i, 2] * x


@njit(inline="always", **_JIT)
def _base_row(kind, k):
    """Row of a 6-vector [linear; angular] that base velocity coordinate k is (planar: vx, vy, wz)."""
    return k if kind == FREEFLYER else (0, 1, 5)[k]


@njit(inline="always", **_JIT)
def _root_acceleration(kind, iv, Ia, pA, tau, Ai, a, Dr):
    """The base joint's rates: S^T Ia S qdd = tau - S^T pA, then Ai = S qdd (the base's
    velocity-product acceleration V x (S qdot) = V x V is zero; Ia: its lower triangle)."""
    nvj = 6 if kind == FREEFLYER else 3
    x = Dr[2, 0]
    for k in range(nvj):
        x[k] = tau[iv + k] - pA[_base_row(kind, k)]
    L = Dr[1, :nvj, :nvj]
    if kind == FREEFLYER:  # S = 1: Ia itself, no copy (its lower triangle, what cholesky reads)
        ok = cholesky(Ia, L)
    else:
        D = Dr[0, :nvj, :nvj]
        for k in range(nvj):  # the lower triangle: the rows increase with k
            for m in range(k + 1):
                D[k, m] = Ia[_base_row(kind, k), _base_row(kind, m)]
        ok = cholesky(D, L)
    if not ok:
        raise np.linalg.LinAlgError("base articulated inertia not positive definite")
    cholesky_solve(L, x[:nvj])
    for k in range(6):
        Ai[k] = 0.0
    for k in range(nvj):
        a[iv + k] = x[k]
        Ai[_base_row(kind, k)] = x[k]


# ---------------------------------------------------------------------------------------------
# Configuration exponential (pin.integrate)


@njit(**_NO_NRT)
def integrate(km, q, dq, out):
    """out = q (+) dq, joint by joint, with Pinocchio 4's formulas."""
    jint = km[0]
    n = jint.shape[0]
    for i in range(n):
        kind, iq, iv = jint[i, 1], jint[i, 2], jint[i, 3]
        if kind == FREEFLYER:
            vx, vy, vz = dq[iv], dq[iv + 1], dq[iv + 2]
            wx, wy, wz = dq[iv + 3], dq[iv + 4], dq[iv + 5]
            sq = wx * wx + wy * wy + wz * wz
            t2 = sq + EPS * EPS
            t = math.sqrt(t2)
            st, ct = math.sin(t), math.cos(t)
            inv_t2 = 1.0 / t2
            if t < TS_PREC:
                a_wxv = 0.5 - t2 / 24.0
                a_w2 = 1.0 / 6.0 - t2 / 120.0
            else:
                a_wxv = (1.0 - ct) * inv_t2
                a_w2 = (t - st) * inv_t2 / t
            cx, cy, cz = wy * vz - wz * vy, wz * vx - wx * vz, wx * vy - wy * vx
            ccx, ccy, ccz = wy * cz - wz * cy, wz * cx - wx * cz, wx * cy - wy * cx
            ex = vx + a_wxv * cx + a_w2 * ccx
            ey = vy + a_wxv * cy + a_w2 * ccy
            ez = vz + a_wxv * cz + a_w2 * ccz
            # exp3(w) as a quaternion
            te = math.sqrt(sq + EPS * EPS)
            if sq > TS_PREC:
                ha = 0.5 * te
                sh = math.sin(ha)
                bw = math.cos(ha)
                bx, by, bz = sh * (wx / te), sh * (wy / te), sh * (wz / te)
            else:
                t22 = sq / 4.0
                k = 0.5 * (1.0 - t22 / 6.0 + t22 * t22 / 120.0)
                bx, by, bz = k * wx, k * wy, k * wz
                bw = 1.0 - t22 / 2.0 + t22 * t22 / 24.0
            ax, ay, az, aw = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
            # translation: quat * e + p (Eigen's _transformVector)
            ux, uy, uz = ay * ez - az * ey, az * ex - ax * ez, ax * ey - ay * ex
            ux, uy, uz = ux + ux, uy + uy, uz + uz
            out[iq] = (ex + aw * ux + (ay * uz - az * uy)) + q[iq]
            out[iq + 1] = (ey + aw * uy + (az * ux - ax * uz)) + q[iq + 1]
            out[iq + 2] = (ez + aw * uz + (ax * uy - ay * ux)) + q[iq + 2]
            rw = aw * bw - ax * bx - ay * by - az * bz
            rx = aw * bx + ax * bw + ay * bz - az * by
            ry = aw * by + ay * bw + az * bx - ax * bz
            rz = aw * bz + az * bw + ax * by - ay * bx
            if rx * ax + ry * ay + rz * az + rw * aw < 0.0:
                rx, ry, rz, rw = -rx, -ry, -rz, -rw
            alpha = (3.0 - (rx * rx + ry * ry + rz * rz + rw * rw)) / 2.0
            out[iq + 3], out[iq + 4], out[iq + 5], out[iq + 6] = rx * alpha, ry * alpha, rz * alpha, rw * alpha
        elif kind == PLANAR:
            v0, v1, om = dq[iv], dq[iv + 1], dq[iv + 2]
            c0, s0 = q[iq + 2], q[iq + 3]
            sv, cv = math.sin(om), math.cos(om)
            tx = -v1 - (-v1 * cv + v0 * (-sv))
            ty = v0 - (-v1 * sv + v0 * cv)
            tx /= om
            ty /= om
            if not abs(om) > 1e-14:
                tx, ty = v0, v1
            out[iq] = (c0 * tx + (-s0) * ty) + q[iq]
            out[iq + 1] = (s0 * tx + c0 * ty) + q[iq + 1]
            out[iq + 2] = c0 * cv + (-s0) * sv
            out[iq + 3] = s0 * cv + c0 * sv
        elif kind == REVOLUTE_UNBOUNDED:
            ca, sa, om = q[iq], q[iq + 1], dq[iv]
            so, co = math.sin(om), math.cos(om)
            x = co * ca - so * sa
            y = so * ca + co * sa
            f = (3.0 - (x * x + y * y)) / 2.0
            out[iq], out[iq + 1] = x * f, y * f
        else:
            out[iq] = q[iq] + dq[iv]


# ---------------------------------------------------------------------------------------------
# Plant step (physics/plant.py)


# Rb = world <- base_link rotation (3x3) of configuration q: the one definition, in
# physics/state.py, compiled as it is.
base_rotation = njit(**_NO_NRT)(base_rotation_into)
# T = world_to_local_base_map from that rotation: likewise physics/state.py's, compiled as it is.
base_map_from_rotation = njit(**_JIT)(world_to_local_base_map_into)


@njit(**_NO_NRT)
def log3(R, out):
    """out (3,) = the rotation vector of R (rad), Pinocchio's ``log3``: theta from the trace,
    the axis from the antisymmetric part (from the diagonal within 1e-2 rad of pi)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr >= 3.0:
        tr, theta = 3.0, 0.0
    elif tr <= -1.0:
        tr, theta = -1.0, math.pi
    else:
        theta = math.acos((tr - 1.0) / 2.0)
    if theta >= math.pi - 1e-2:
        cphi = -(tr - 1.0) / 2.0
        beta = theta * theta / (1.0 + cphi)
        for a in range(3):
            i1, i2 = (a + 1) % 3, (a + 2) % 3
            t = (R[a, a] + cphi) * beta
            sign = 1.0 if R[i2, i1] > R[i1, i2] else -1.0
            out[a] = sign * (math.sqrt(t) if t > 0.0 else 0.0)
        return
    t = (theta / math.sin(theta) if theta > TS_PREC else 1.0) / 2.0
    out[0] = t * (R[2, 1] - R[1, 2])
    out[1] = t * (R[0, 2] - R[2, 0])
    out[2] = t * (R[1, 0] - R[0, 1])




@njit(**_NO_NRT)
def base_wrench_about_world_origin(planar, q, tau_b, Rb, out):
    """out = physics.momentum.base_wrench_about_world_origin(q, tau_b)."""
    base_rotation(planar, q, Rb)
    if planar:
        Fx = Rb[0, 0] * tau_b[0] + Rb[0, 1] * tau_b[1]
        Fy = Rb[1, 0] * tau_b[0] + Rb[1, 1] * tau_b[1]
        out[0], out[1] = Fx, Fy
        out[2] = tau_b[2] + (q[0] * Fy - q[1] * Fx)
        return
    for a in range(3):
        out[a] = Rb[a, 0] * tau_b[0] + Rb[a, 1] * tau_b[1] + Rb[a, 2] * tau_b[2]
    rx, ry, rz = q[0], q[1], q[2]
    for a in range(3):
        out[3 + a] = Rb[a, 0] * tau_b[3] + Rb[a, 1] * tau_b[4] + Rb[a, 2] * tau_b[5]
    out[3] += ry * out[2] - rz * out[1]
    out[4] += rz * out[0] - rx * out[2]
    out[5] += rx * out[1] - ry * out[0]


@njit(**_NO_NRT)
def momentum_base_rows(planar, q, hw, Rb, out):
    """out = physics.momentum.world_momentum_to_base_rows(q, hw)."""
    base_rotation(planar, q, Rb)
    if planar:
        Px, Py = hw[0], hw[1]
        out[0] = Rb[0, 0] * Px + Rb[1, 0] * Py
        out[1] = Rb[0, 1] * Px + Rb[1, 1] * Py
        out[2] = hw[2] - (q[0] * Py - q[1] * Px)
        return
    rx, ry, rz = q[0], q[1], q[2]
    P0, P1, P2 = hw[0], hw[1], hw[2]
    Lx = hw[3] - (ry * P2 - rz * P1)
    Ly = hw[4] - (rz * P0 - rx * P2)
    Lz = hw[5] - (rx * P1 - ry * P0)
    for a in range(3):
        out[a] = Rb[0, a] * P0 + Rb[1, a] * P1 + Rb[2, a] * P2
        out[3 + a] = Rb[0, a] * Lx + Rb[1, a] * Ly + Rb[2, a] * Lz


@njit(**_NO_NRT)
def plant_step(km, planar, nb, q0, v0, tau, h, mom, M0, b0, q_new, v_new, M_new, b_new, ws):
    """One CF4 step of h seconds with momentum projection: Plant.step under raw generalized
    forces tau (nv,) held over the step (Pinocchio's velocity coordinates: base wrench in
    base_link axes, N and N m; joint forces, N m or N), from (q0, v0) to (q_new, v_new).

    M0, b0: M(q0), b(q0, v0), e.g. the previous step's M_new, b_new (what the controller of a
    lockstep loop uses too): the first stage is a Cholesky solve with them. The other three
    stages run the articulated-body algorithm. Writes M_new = M(q_new) (full) and
    b_new = b(q_new, v_new): the mass matrix's base rows make the momentum projection, and both
    are the next step's M0, b0 and the next tick's controller terms. ``mom`` (the world momentum
    [P; L about the world origin], world axes) is updated in place when the base force is
    non-zero. k1v, k2v, k3v stay in ws[14][2], [3], [4].
    """
    _plant_step(km, planar, nb, q0, v0, tau, h, mom, M0, b0, q_new, v_new, M_new, b_new, ws, None, None)


@njit(**_NO_NRT)
def plant_step_wall(km, planar, nb, q0, v0, tau, h, mom, M0, b0, q_new, v_new, M_new, b_new, ws, wall, wall_out):
    """:func:`plant_step` with the end-effector touching a wall (physics/contact.py's WallContact,
    as ``Plant`` steps it): at each stage the contact force of the stage's (q, v) joins tau, its
    wrench about the world origin the momentum and its power the work, with the RK4 weights.

    wall: (point (3) m, normal (3), stiffness N/m, damping N s/m, offset m, speed m/s, 0, 0,
    the end-effector frame's origin in its body (3) m, that body's index), world axes; wall_out
    (nb + 1 + 2 nv): the step's contact impulse (nb; N s, N m s), the contact's work (J), then
    scratch. An empty ``wall`` is no contact (:func:`plant_step`).
    """
    if wall.shape[0] > 0:
        _plant_step(km, planar, nb, q0, v0, tau, h, mom, M0, b0, q_new, v_new, M_new, b_new, ws, wall, wall_out)
    else:
        _plant_step(km, planar, nb, q0, v0, tau, h, mom, M0, b0, q_new, v_new, M_new, b_new, ws, None, None)


@njit(**_NO_NRT)
def _plant_step(km, planar, nb, q0, v0, tau, h, mom, M0, b0, q_new, v_new, M_new, b_new, ws, wall, wall_out):
    """:func:`plant_step_wall`'s body; :func:`plant_step`'s with ``wall`` and ``wall_out`` None.

    A separate function, not inlined, and its wall tested as ``wall is not None`` at every use:
    numba prunes those branches at compile time for a None argument, so the specialisation
    without a wall holds no contact code: the step's own compile went from 17 to 7 s, the README's
    main command's first run from 61 to 43 s wall (docs/benchmarks.md, "First run")."""
    nv = v0.shape[0]
    st, qs, snb = ws[14], ws[15], ws[16]
    th, vs, k1v, k2v, k3v, v2, v3, v4, k4v = st[0], st[1], st[2], st[3], st[4], st[5], st[6], st[7], st[8]
    q2, q3, q4 = qs[0], qs[1], qs[2]
    if not cholesky(M0, ws[23]):
        raise np.linalg.LinAlgError("mass matrix not positive definite")
    hh, h6, h12 = 0.5 * h, h / 6.0, h / 12.0
    ts = tau
    if wall is not None:
        ts = _wall_start(nb, nv, wall_out)
        _wall_stage(km, planar, nb, q0, v0, tau, wall, h6, wall_out, ws)
    for k in range(nv):
        k1v[k] = ts[k] - b0[k]
    cholesky_solve(ws[23], k1v)
    # CF4 (physics/plant.py's module docstring): q2 = q0 (+) h/2 V1, q3 = q0 (+) h/2 V2,
    # q4 = q2 (+) (h V3 - h/2 V1), the stage velocities V2..V4 in v2..v4.
    for k in range(nv):
        th[k] = hh * v0[k]
        v2[k] = v0[k] + hh * k1v[k]
    integrate(km, q0, th, q2)
    if wall is not None:
        _wall_stage(km, planar, nb, q2, v2, tau, wall, 2.0 * h6, wall_out, ws)
    forward_dynamics(km, q2, v2, ts, k2v, ws)
    for k in range(nv):
        vs[k] = hh * v2[k]
        v3[k] = v0[k] + hh * k2v[k]
    integrate(km, q0, vs, q3)
    if wall is not None:
        _wall_stage(km, planar, nb, q3, v3, tau, wall, 2.0 * h6, wall_out, ws)
    forward_dynamics(km, q3, v3, ts, k3v, ws)
    for k in range(nv):
        vs[k] = h * v3[k] - th[k]
        v4[k] = v0[k] + h * k3v[k]
    integrate(km, q2, vs, q4)
    if wall is not None:
        _wall_stage(km, planar, nb, q4, v4, tau, wall, h6, wall_out, ws)
    forward_dynamics(km, q4, v4, ts, k4v, ws)
    # The sums in the Python engine's order; q_new's two exponentials once the momentum's
    # quadrature has read q3, their scratch.
    for k in range(nv):
        v23 = v2[k] + v3[k]
        th[k] = h12 * ((3.0 * v0[k] - v4[k]) + 2.0 * v23)  # h/12 (3 V1 + 2 V2 + 2 V3 - V4)
        vs[k] = h12 * ((3.0 * v4[k] - v0[k]) + 2.0 * v23)  # h/12 (-V1 + 2 V2 + 2 V3 + 3 V4)
        v_new[k] = v0[k] + h6 * (((k1v[k] + k4v[k]) + 2.0 * k2v[k]) + 2.0 * k3v[k])

    any_base = False
    for k in range(nb):
        if tau[k] != 0.0:
            any_base = True
    Rb = ws[9]
    if any_base:
        tb = tau[:nb]
        w = snb[0]
        wsum = snb[1]
        base_wrench_about_world_origin(planar, q0, tb, Rb, w)
        for k in range(nb):
            wsum[k] = w[k]
        base_wrench_about_world_origin(planar, q2, tb, Rb, w)
        for k in range(nb):
            wsum[k] = wsum[k] + 2.0 * w[k]
        base_wrench_about_world_origin(planar, q3, tb, Rb, w)
        for k in range(nb):
            wsum[k] = wsum[k] + 2.0 * w[k]
        base_wrench_about_world_origin(planar, q4, tb, Rb, w)
        for k in range(nb):
            mom[k] = mom[k] + h6 * (wsum[k] + w[k])
    if wall is not None:  # the wall is external: its impulse about the world origin joins the momentum
        for k in range(nb):
            mom[k] = mom[k] + wall_out[k]
    integrate(km, q0, th, q3)
    integrate(km, q3, vs, q_new)
    kinematics(km, q_new, ws)
    crba_base_axes(km, M_new, ws)
    rows = snb[2]
    momentum_base_rows(planar, q_new, mom, Rb, rows)
    for r in range(nb):
        s = rows[r]
        for c in range(nb, nv):
            s -= M_new[r, c] * v_new[c]
        rows[r] = s
    Lb = ws[17]
    if not cholesky(M_new[:nb, :nb], Lb):
        raise np.linalg.LinAlgError("base inertia not positive definite")
    cholesky_solve(Lb, rows)
    for r in range(nb):
        v_new[r] = rows[r]
    rnea_base_axes(km, v_new, ws[10], b_new, ws)


@njit(inline="always", **_JIT)
def _wall_start(nb, nv, wall_out):
    """Zero the impulse and work of wall_out; return its stage-forces scratch (nv,)."""
    for k in range(nb + 1):
        wall_out[k] = 0.0
    return wall_out[nb + 1 + nv:nb + 1 + 2 * nv]


@njit(inline="always", **_JIT)
def _wall_stage(km, planar, nb, q, v, tau, wall, weight, wall_out, ws):
    """The wall contact of physics/contact.py (``WallContact.sample``) at a stage (q, v): with
    p_e the end-effector origin (world), g = J^T n its Jacobian's transpose on the normal (nv,),
    d = n . (point - p_e) + offset, push = max(0, k d + c (speed - g . v)) when d > 0, else 0.
    Writes tau + push g into wall_out's stage forces and adds weight x [f; p_e x f] (f = push n;
    planar [fx, fy, (p_e x f)z]) to the impulse and weight x push (g . v) to the work. Uses the
    placement scratch of ws (R, p, and the composite-inertia arrays, which CRBA rewrites)."""
    nv = v.shape[0]
    g = wall_out[nb + 1:nb + 1 + nv]
    ts = wall_out[nb + 1 + nv:nb + 1 + 2 * nv]
    R, p, oR, op = ws[0], ws[1], ws[8], ws[7]
    forward_kinematics(km, q, R, p)
    world_placements(km, R, p, oR, op)
    b = int(wall[15])
    fx, fy, fz = wall[12], wall[13], wall[14]
    e0 = op[b, 0] + oR[b, 0, 0] * fx + oR[b, 0, 1] * fy + oR[b, 0, 2] * fz
    e1 = op[b, 1] + oR[b, 1, 0] * fx + oR[b, 1, 1] * fy + oR[b, 1, 2] * fz
    e2 = op[b, 2] + oR[b, 2, 0] * fx + oR[b, 2, 1] * fy + oR[b, 2, 2] * fz
    n0, n1, n2 = wall[3], wall[4], wall[5]
    for k in range(nv):
        g[k] = 0.0
    jint, axis = km[0], km[3]
    i = b
    while i >= 0:
        par, kind, iv = jint[i, 0], jint[i, 1], jint[i, 3]
        r0, r1, r2 = e0 - op[i, 0], e1 - op[i, 1], e2 - op[i, 2]
        m0, m1, m2 = r1 * n2 - r2 * n1, r2 * n0 - r0 * n2, r0 * n1 - r1 * n0   # r x n
        if kind == FREEFLYER:  # base velocity in base_link axes: R^T n, R^T (r x n)
            for a in range(3):
                g[iv + a] = oR[i, 0, a] * n0 + oR[i, 1, a] * n1 + oR[i, 2, a] * n2
                g[iv + 3 + a] = oR[i, 0, a] * m0 + oR[i, 1, a] * m1 + oR[i, 2, a] * m2
        elif kind == PLANAR:
            g[iv] = oR[i, 0, 0] * n0 + oR[i, 1, 0] * n1 + oR[i, 2, 0] * n2
            g[iv + 1] = oR[i, 0, 1] * n0 + oR[i, 1, 1] * n1 + oR[i, 2, 1] * n2
            g[iv + 2] = m2
        else:
            a0 = oR[i, 0, 0] * axis[i, 0] + oR[i, 0, 1] * axis[i, 1] + oR[i, 0, 2] * axis[i, 2]
            a1 = oR[i, 1, 0] * axis[i, 0] + oR[i, 1, 1] * axis[i, 1] + oR[i, 1, 2] * axis[i, 2]
            a2 = oR[i, 2, 0] * axis[i, 0] + oR[i, 2, 1] * axis[i, 1] + oR[i, 2, 2] * axis[i, 2]
            if kind == PRISMATIC:
                g[iv] = a0 * n0 + a1 * n1 + a2 * n2
            else:
                g[iv] = a0 * m0 + a1 * m1 + a2 * m2
        i = par
    gv = 0.0
    for k in range(nv):
        gv += g[k] * v[k]
    d = n0 * (wall[0] - e0) + n1 * (wall[1] - e1) + n2 * (wall[2] - e2) + wall[8]
    push = 0.0
    if d > 0.0:
        push = max(0.0, wall[6] * d + wall[7] * (wall[9] - gv))
    for k in range(nv):
        ts[k] = tau[k] + push * g[k]
    f0, f1, f2 = push * n0, push * n1, push * n2
    if planar:
        wall_out[0] += weight * f0
        wall_out[1] += weight * f1
        wall_out[2] += weight * (e0 * f1 - e1 * f0)
    else:
        wall_out[0] += weight * f0
        wall_out[1] += weight * f1
        wall_out[2] += weight * f2
        wall_out[3] += weight * (e1 * f2 - e2 * f1)
        wall_out[4] += weight * (e2 * f0 - e0 * f2)
        wall_out[5] += weight * (e0 * f1 - e1 * f0)
    wall_out[nb] += weight * push * gv


# ---------------------------------------------------------------------------------------------
# Arm joint positions and the Wilde reference (the control law: control/kernels/computed_torque.py)


@njit(**_JIT)
def arm_positions(q, arm_q, arm_kind, out):
    """Arm joint positions as joint_positions() gives them (continuous joints wrapped)."""
    for k in range(arm_q.shape[0]):
        if arm_kind[k] == REVOLUTE_UNBOUNDED:
            out[k] = math.atan2(q[arm_q[k] + 1], q[arm_q[k]])
        else:
            out[k] = q[arm_q[k]]

