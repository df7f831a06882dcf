"""Compiled actuator saturation (needs numba): what ``physics/actuators.py`` does to a period's
commands, in scalar loops.

* :func:`saturated_commands`: ``physics.actuators.saturate`` (the arm torques clipped to the
  effort limits, the wheel torques to their limits and to zero where a wheel at its speed limit
  would be pushed faster, the thrusters to [0, max force], the ideal base wrench bounded). Every
  control tick and every plant step saturates its commands (the controller what it publishes,
  the plant what it applies): on 2-12 entries NumPy's calls cost ~10 us a time, this ~4.
  ``physics.actuators`` calls it through :class:`CompiledSaturation` where numba is installed;
  its NumPy expressions stay the reference, and the path for anything but a period's own
  commands (lists, wrong sizes, non-finite entries: they get its errors).
* :func:`generalized_forces`: the same saturation and the generalized forces it applies
  (``physics.actuators.generalized_forces``), in the compiled engine's loop.

The ideal-wrench bound is ``physics/wrench_bound.py: limit_wrench_into``, compiled here as it
is; the clip of a wheel torque is :func:`wheel_torque`, one definition for both kernels.
``test/test_compiled_saturation.py`` holds :func:`saturated_commands` equal to the NumPy path;
``test/test_fast_modes.py`` holds :func:`generalized_forces` to it through the engine.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from freeflyer_control.physics.kernels.rigid_body import _JIT, base_map_from_rotation, base_rotation
from freeflyer_control.physics.wrench_bound import limit_wrench_into

# The ideal-wrench bound has one definition, in physics/wrench_bound.py; compiled here as it is.
limit_base_wrench = njit(**_JIT)(limit_wrench_into)

NOT_FINITE = -1   # saturated_commands: a command entry is NaN or infinite


@njit(inline="always", **_JIT)
def wheel_torque(command, limit, speed, max_speed):
    """A wheel's torque command (N m) clipped to +-limit, and zero where the wheel, turning at
    ``speed`` (rad/s) at or beyond ``max_speed``, would be pushed faster."""
    t = min(max(command, -limit), limit)
    if abs(speed) >= max_speed and t * speed > 0.0:
        t = 0.0
    return t


@njit(inline="always", **_JIT)
def _finite(x):
    for k in range(x.shape[0]):
        if not math.isfinite(x[k]):
            return False
    return True


@njit(**_JIT)
def saturated_commands(planar, v, wheel_v, arm, wheels, thrust, wrench, effort, wheel_limit, wheel_speed,
                       thrust_max, max_force, max_torque, arm_out, wheels_out, thrust_out, wrench_out):
    """``physics.actuators.saturate`` of the commands arm, wheels, thrust (arm and config order;
    N m, N) and wrench (world axes, nb) into the *_out arrays. v: the velocity (nv,) whose entries
    wheel_v are the wheels' speeds (rad/s), or empty (no speed rule, as saturate without v).
    Returns :data:`NOT_FINITE` (nothing to use: the NumPy path names the entry), else 1 when the
    bounded wrench is non-zero, 0 when it is zero."""
    if not (_finite(arm) and _finite(wheels) and _finite(thrust) and _finite(wrench)):
        return NOT_FINITE
    for j in range(arm.shape[0]):
        arm_out[j] = min(max(arm[j], -effort[j]), effort[j])
    for j in range(wheels.shape[0]):
        speed = v[wheel_v[j]] if v.shape[0] else 0.0
        max_speed = wheel_speed[j] if v.shape[0] else math.inf
        wheels_out[j] = wheel_torque(wheels[j], wheel_limit[j], speed, max_speed)
    for j in range(thrust.shape[0]):
        thrust_out[j] = min(max(thrust[j], 0.0), thrust_max[j])
    any_wrench = False
    for k in range(wrench.shape[0]):
        wrench_out[k] = wrench[k]
        if wrench[k] != 0.0:
            any_wrench = True
    if not any_wrench:
        return 0
    limit_base_wrench(planar, wrench_out, max_force, max_torque)
    return 1


class CompiledSaturation:
    """:func:`saturated_commands` for one robot: its limits as arrays, built once, and the test
    that commands are a period's own (float64 vectors of the robot's sizes), which alone take
    it (every array keeps one type, so that the kernel compiles once).

    Args:
        planar: the base is planar.
        effort, wheel_limit, wheel_speed, thrust_max: the robot's arm effort limits, wheel
            torque and speed limits, thruster forces (N m, N m, rad/s, N).
        wheel_v: the wheels' velocity indices.
        max_force, max_torque: the ideal base wrench's bounds (N, N m).
        nb: base velocity coordinates.
    """

    def __init__(self, planar: bool, effort, wheel_limit, wheel_speed, thrust_max, wheel_v, max_force: float,
                 max_torque: float, nb: int):
        def floats(x):
            return np.array(x, dtype=float).reshape(-1)

        self.planar = bool(planar)
        self.limits = (floats(effort), floats(wheel_limit), floats(wheel_speed), floats(thrust_max),
                       float(max_force), float(max_torque))
        self.wheel_v = np.array(wheel_v, dtype=np.int64).reshape(-1)
        self.sizes = (self.limits[0].size, self.limits[1].size, self.limits[3].size, int(nb))
        self.no_v = np.zeros(0)
        self.no_wrench = np.zeros(nb)
        self._float = np.dtype(float)

    def _floats(self, x) -> bool:
        """x is a writeable, contiguous float64 vector: numba types a read-only or strided
        array apart, and would compile anew, on a tick."""
        return (type(x) is np.ndarray and x.ndim == 1 and x.dtype == self._float and x.flags.c_contiguous
                and x.flags.writeable)

    def saturate(self, arm, wheels, thrust, wrench, v):
        """(arm, wheels, thrust, wrench or None) as ``physics.actuators`` saturates them, in
        fresh arrays; None where the commands are not a period's own (the caller's NumPy path
        takes them: conversions, sizes, its errors), or hold a non-finite entry. wrench may be
        empty (no ideal base wrench); v: the velocity (nv,) or None."""
        args = self.arguments(arm, wheels, thrust, wrench, v)
        if args is None:
            return None
        code = saturated_commands(*args)
        if code == NOT_FINITE:
            return None
        return args[13], args[14], args[15], (args[16] if code else None)

    def arguments(self, arm, wheels, thrust, wrench, v) -> tuple | None:
        """:func:`saturated_commands`' arguments for :meth:`saturate`'s commands, its outputs
        (the last four) fresh arrays; None where the commands are not a period's own. For
        :meth:`saturate`, and for a compiled caller that makes the same call itself
        (sim.fast.period)."""
        na, nw, nt, nb = self.sizes
        own = self._floats
        if not (own(arm) and own(wheels) and own(thrust) and own(wrench)
                and (arm.size, wheels.size, thrust.size) == (na, nw, nt) and wrench.size in (0, nb)):
            return None
        if v is None:
            v = self.no_v
        elif not own(v):
            return None
        effort, wheel_limit, wheel_speed, thrust_max, max_force, max_torque = self.limits
        return (self.planar, v, self.wheel_v, arm, wheels, thrust, wrench if wrench.size else self.no_wrench, effort,
                wheel_limit, wheel_speed, thrust_max, max_force, max_torque, np.empty(na), np.empty(nw), np.empty(nt),
                np.empty(nb))


@njit(**_JIT)
def generalized_forces(planar, nb, q, v, arm, wheels, thrust, wrench_world, arm_v, effort, wheel_v, wheel_limit,
                       wheel_speed, B, thrust_max, max_force, max_torque, Rb, T, w, tau):
    """tau (nv,) = ``physics.actuators.generalized_forces`` of the held commands at (q, v):
    arm torques clipped to the effort limits, wheel torques to their limits (zero where a
    wheel at its speed limit would be pushed faster), thruster forces to [0, thrust_max] N
    through B (nb, n: base_link wrench per newton), the ideal base wrench (world axes)
    bounded and turned to base_link axes. ``w`` (nb,), Rb (3, 3), T (nb, nb): scratch."""
    for k in range(tau.shape[0]):
        tau[k] = 0.0
    for j in range(arm_v.shape[0]):
        tau[arm_v[j]] = min(max(arm[j], -effort[j]), effort[j])
    for j in range(wheel_v.shape[0]):
        tau[wheel_v[j]] = wheel_torque(wheels[j], wheel_limit[j], v[wheel_v[j]], wheel_speed[j])
    for j in range(thrust.shape[0]):
        f = min(max(thrust[j], 0.0), thrust_max[j])
        if f != 0.0:
            for r in range(nb):
                tau[r] += B[r, j] * f
    any_wrench = False
    for k in range(nb):
        w[k] = wrench_world[k]
        if w[k] != 0.0:
            any_wrench = True
    if not any_wrench:
        return
    limit_base_wrench(planar, w, max_force, max_torque)
    world_to_local(planar, q, w, Rb, T, tau[:nb], True)


@njit(**_JIT)
def world_to_local(planar, q, w, Rb, T, out, add):
    """out (nb,) = T(q) w, plus out's values if ``add``: ``physics.actuators.world_wrench_to_local``,
    a base wrench about the base_link origin from world axes to base_link axes. T is
    ``physics.state.world_to_local_base_map`` (its plain function, compiled as is, into the
    scratch T (nb, nb); Rb (3, 3): scratch). out must not be w."""
    base_rotation(planar, q, Rb)
    base_map_from_rotation(planar, Rb, T)
    for r in range(out.shape[0]):
        s = out[r] if add else 0.0
        for c in range(w.shape[0]):
            s += T[r, c] * w[c]
        out[r] = s
