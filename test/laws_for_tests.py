"""Control laws written in a test folder, against the public interface only (control.law,
control.context), as a lab writes its own: the tests fly them through every front end."""

from __future__ import annotations

import time

import numpy as np

from freeflyer_control.control.law import ControlLaw, Parameter


class JointPD(ControlLaw):
    """Computed torque on the context's H*, C*, in floating mode (no base DOF commanded)."""

    name = "joint_pd"
    parameters = (Parameter("kp", float, 1.0, (0.0, 100.0), "joint stiffness, 1/s^2"),
                  Parameter("kd", float, 1.0, (0.0, 100.0), "joint damping, 1/s"))

    def refuses_mode(self, mode):
        return None if mode.value == "floating" else "joint_pd flies floating mode only"

    def effort(self, state, reference, context):
        ref, p = reference.joint, self.params
        u = (ref.acceleration + p.kd * (ref.velocity - context.joint_velocities())
             + p.kp * (ref.position - context.joint_positions()))
        rd = context.reduced_dynamics()  # floating: the arm joints only
        return context.joint_effort(rd.H.dot(u) + rd.C)


class Recording(JointPD):
    """JointPD that keeps what it was given and what it returned, to run it again directly."""

    name = "recording"

    def reset(self, context):
        self.calls = []

    def effort(self, state, reference, context):
        out = super().effort(state, reference, context)
        self.calls.append((context.t, state.copy(), reference, context.mode, out))
        return out


class _FailsAfter(JointPD):
    parameters = JointPD.parameters + (Parameter("after", float, 0.1, (0.0, 1e3), "s of good ticks"),)

    def effort(self, state, reference, context):
        good = super().effort(state, reference, context)
        return good if context.t < self.params.after else self.fail(good, context)


class Raises(_FailsAfter):
    name = "raises"

    def fail(self, good, context):
        return good.arm_torques[99]  # IndexError, as a slip in a lab's code raises


class GivesNaN(_FailsAfter):
    name = "gives_nan"

    def fail(self, good, context):
        return context.joint_effort(np.full(good.arm_torques.size, np.nan))


class OverLimit(_FailsAfter):
    name = "over_limit"

    def fail(self, good, context):
        return context.joint_effort(1000.0 * context.limits.arm_torque)  # N mm taken for N m


class InterruptedInCompiledCall(_FailsAfter):
    """Ctrl-C arriving while the law is inside a compiled (numba) kernel, e.g. the GJM's: CPython
    reports it as a SystemError caused by the KeyboardInterrupt."""

    name = "interrupted_in_compiled_call"

    def fail(self, good, context):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise SystemError("<numba kernel> returned a result with an exception set") from exc


class TooSlow(_FailsAfter):
    name = "too_slow"

    def fail(self, good, context):
        end = time.thread_time() + 2.0 * context.period  # busy: CPU time, as a heavy law spends it
        while time.thread_time() < end:
            pass
        return good


class NotALaw:
    """A class that does not derive from ControlLaw."""
