"""What the package guarantees around any control law, its own or a user's.

:class:`LawGuard` makes every call of a law's ``effort`` and checks what comes back. A law that

* raises,
* returns something that is not a :class:`~freeflyer_control.control.effort.ControlEffort` of
  the robot's sizes, or non-finite values,
* returns a command more than :data:`OVER_LIMIT_FACTOR` times what the actuator can give (a law
  in the wrong units or diverging; an ordinary saturating law stays well inside: it is clipped),
* or takes more CPU time than its control period on :data:`OVERRUN_LIMIT` ticks running,

is stopped: the guard returns a :class:`~freeflyer_control.control.law.LawFault` (the law's
name, the time, one line) and the loop commands zero. What follows is the caller's: the
simulation ends its run, the controller server answers ``fault`` with zero commands and the HIL
path trips the bridge. Overruns are counted whether or not they stop the law.

Time is the law's own CPU time (``time.thread_time``): a machine busy with other work delays a
tick without making the law slower, and that lateness is the watchdogs' business (the bridge's
controller timeout), not the law's. A law whose work runs in other threads (a multithreaded
BLAS) shows less than its wall time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from freeflyer_control.control.effort import ControlEffort
from freeflyer_control.control.law import LawFault

# A command this many times what the actuators give is corrupt, not large (the testbed bridge
# refuses controller commands past the same factor). The built-in laws' largest request, over
# station keeping after a kick (planar and spatial, every base actuation), a mode schedule,
# resolved rate, contact and a 30 % mass error, is 0.15 of a limit. A measured state at the edge
# of plausible (the base turning at 10 rad/s, controller_node's max_base_rate, and moving at
# 5 m/s) asks computed torque for 14-23 times the arm's limits (the centrifugal terms: large, and
# clipped), and, on spatial_6link in flying mode, 197 times the ideal base torque bound (the
# gyroscopic terms), which the guard stops as the bridge refuses it. A law in N mm instead of
# N m asks 1000 times what it means.
OVER_LIMIT_FACTOR = 100.0
# Ticks running over the period before the law is stopped: one slow call (a garbage
# collection, a first-call cache) is counted, not fatal.
OVERRUN_LIMIT = 3


@dataclass
class LawTiming:
    """The law's CPU time per tick: calls, overruns (ticks over the period), the longest tick, s."""

    ticks: int = 0
    overruns: int = 0
    running: int = 0
    longest_s: float = 0.0
    total_s: float = 0.0

    def as_dict(self) -> dict:
        return {"ticks": self.ticks, "overruns": self.overruns, "longest_tick_s": self.longest_s,
                "mean_tick_s": self.total_s / self.ticks if self.ticks else None}


class LawGuard:
    """Checks one robot's law outputs (see the module docstring).

    Args:
        ff: the controller's model (sizes and actuator limits).
        overrun_limit: ticks running over the period that stop the law; None: count only.
    """

    def __init__(self, ff, overrun_limit: int | None = OVERRUN_LIMIT):
        from freeflyer_control.physics.actuators import base_wrench_limits

        self.ff = ff
        self.overrun_limit = overrun_limit
        self.timing = LawTiming()
        force, torque = base_wrench_limits(ff)
        n_lin = 2 if ff.base == "planar" else 3
        self._sizes = (len(ff.arm_joint_names), len(ff.wheel_joint_names), ff.nb)
        self._n_lin = n_lin
        self._limits = (np.asarray(ff.arm_effort_limits, float), np.asarray(ff.wheel_max_torques, float),
                        float(force), float(torque))
        k = OVER_LIMIT_FACTOR
        self._bounds = (k * self._limits[0], k * self._limits[1], (k * force) ** 2, (k * torque) ** 2)
        self._float_bounds = (self._bounds[0].tolist(), self._bounds[1].tolist())
        self._wrench_shape = (ff.nb,)

    @property
    def bounds(self) -> tuple[np.ndarray, np.ndarray, float, float, int]:
        """What :meth:`problem` holds an effort within: (|arm torque| bound, |wheel torque|
        bound, base force bound squared, base torque bound squared, the wrench's force rows)."""
        arm, wheel, force2, torque2 = self._bounds
        return arm, wheel, force2, torque2, self._n_lin

    def tick_time(self, seconds: float, period: float) -> str | None:
        """Count a tick that took ``seconds`` of CPU; why the law is stopped, or None."""
        timing = self.timing
        timing.ticks += 1
        timing.total_s += seconds
        timing.longest_s = max(timing.longest_s, seconds)
        if seconds <= period:
            timing.running = 0
            return None
        timing.overruns += 1
        timing.running += 1
        if self.overrun_limit is not None and timing.running >= self.overrun_limit:
            return (f"slower than its period: {timing.running} ticks running over {period * 1e3:.3g} ms "
                    f"(the last took {seconds * 1e3:.3g} ms of CPU)")
        return None

    def problem(self, effort) -> str | None:
        """Why ``effort`` cannot be used (one line), or None.

        Runs every tick, so the common case is three array comparisons (a NaN fails them too);
        only an effort that fails one is looked at closely for the message."""
        if not isinstance(effort, ControlEffort):
            return f"returned {type(effort).__name__}, not a ControlEffort"
        arm, wheels, wrench = effort.arm_torques, effort.wheel_torques, effort.base_wrench_world
        arm_bound, wheel_bound, force2, torque2 = self._bounds
        arm_floats, wheel_floats = self._float_bounds
        try:
            if arm.shape == arm_bound.shape and wheels.shape == wheel_bound.shape and wrench.shape == self._wrench_shape:
                # A few floats each: plain arithmetic on Python floats is a third of NumPy's
                # per-call cost here (~1 against ~3 us a tick).
                w = wrench.tolist()
                f, m = w[:self._n_lin], w[self._n_lin:]
                # NaN fails every comparison, so finite and within bounds is one test each.
                if (all(abs(x) <= b for x, b in zip(arm.tolist(), arm_floats))
                        and all(abs(x) <= b for x, b in zip(wheels.tolist(), wheel_floats))
                        and sum(x * x for x in f) <= force2 and sum(x * x for x in m) <= torque2):
                    return None
        except (AttributeError, TypeError, ValueError):  # not arrays: say what is wrong below
            pass
        return self._diagnose(effort)

    def _diagnose(self, effort: ControlEffort) -> str:
        """The one-line reason for an effort :meth:`problem` refused."""
        names = ("arm_torques", "wheel_torques", "base_wrench_world")
        for name in names:
            value = getattr(effort, name)
            if not isinstance(value, np.ndarray):
                return (f"returned {name} as {type(value).__name__}, not a numpy array "
                        "(context.joint_effort builds the effort)")
        try:
            parts = [np.asarray(getattr(effort, name), dtype=float) for name in names]
        except (TypeError, ValueError) as exc:
            return f"returned an effort that is not numbers ({exc})"
        for name, part, size in zip(names, parts, self._sizes):
            if part.shape != (size,):
                return f"returned {name} of shape {part.shape}; the robot needs ({size},)"
            if not np.isfinite(part).all():
                return f"returned non-finite {name} {part.tolist()}"
        arm, wheels, wrench = parts
        arm_limit, wheel_limit, force, torque = self._limits
        checks = (("arm_torques", np.abs(arm), arm_limit, "N m"), ("wheel_torques", np.abs(wheels), wheel_limit, "N m"),
                  ("base force", np.array([np.linalg.norm(wrench[:self._n_lin])]), np.array([force]), "N"),
                  ("base torque", np.array([np.linalg.norm(wrench[self._n_lin:])]), np.array([torque]), "N m"))
        for name, value, limit, unit in checks:
            over = value > OVER_LIMIT_FACTOR * limit
            if over.any():
                i = int(np.argmax(value / np.maximum(limit, 1e-300)))
                return (f"returned {name} {value[i]:.4g} {unit}, over {OVER_LIMIT_FACTOR:g} times the limit "
                        f"{limit[i]:.4g} {unit}")
        return "returned an effort the guard cannot use"


def fault(law_name: str, t: float, reason: str) -> LawFault:
    """The fault record (one line: no newlines from an exception's text)."""
    return LawFault(law_name, float(t), " ".join(str(reason).split()))


def raised(exc: BaseException) -> str:
    """One line for a law that raised ``exc``."""
    return f"raised {type(exc).__name__}: {exc}"


def cpu_time() -> float:
    """The calling thread's CPU time, s."""
    return time.thread_time()
