"""sim_loop_node's plain periods in one compiled call.

After the hand-over of the plant's measurement, a lockstep period is the controller's tick, its
commands to the plant and the plant's step (:class:`~freeflyer_control.runtime.lockstep.LockstepLoop`).
Where that period is plain, :class:`CompiledPeriod` computes it in one call of
:func:`freeflyer_control.sim.fast.period.plain_period`, which makes the compiled calls the
Python period makes, on the same arguments, and keeps here the books the Python period keeps
(the controller's, its loop's, its law's and guard's, the plant's held commands and state), so
that the next period may take either path and every result is the Python period's, bit for bit
(test/test_compiled_period.py).

A period is plain when, after every check of the controller's tick before its law (watchdog,
plausibility, clock, e-stop: these stay in Python, as they are), the plant steps the compiled
plant (no object, noise, latency or contact) and the law is a built-in one the compiled engine
computes (computed torque: joint references, or end-effector targets through its resolved-rate
reference; resolved rate: end-effector targets over its joint-velocity servo) in floating or
rotation-floating mode, no mode blend under way, with an effort the law guard accepts and no
base wrench. Anything else (another law or mode, a blend, an effort the guard refuses, a
compiled call that raises) takes the Python period, which then meets it as it always did:
:func:`freeflyer_control.sim.fast.period.plain_period` changes nothing before it steps, and
declines before that step where the Python period would do something it does not. The counts of
each path are kept (``compiled``, ``python``).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from freeflyer_control.control.base_control import base_accelerations
from freeflyer_control.control.builtin import ComputedTorqueLaw, ResolvedRateLaw
from freeflyer_control.control.effort import ControlEffort
from freeflyer_control.control.law_guard import cpu_time
from freeflyer_control.control.loop import TickInfo
from freeflyer_control.control.references import JointReference, TaskReference
from freeflyer_control.physics import fastpath
from freeflyer_control.physics.actuators import Actuation, compiled_saturation
from freeflyer_control.physics.modes import Mode, base_partition
from freeflyer_control.physics.state import State, with_joint_positions
from freeflyer_control.runtime.controller_server import ControllerOutput
from freeflyer_control.sim.fast.period import STEPPED, plain_period

#: The modes whose computed-torque effort has no base wrench (nothing to allocate or bound).
PLAIN_MODES = (Mode.FLOATING, Mode.ROTATION_FLOATING)


def never_plain(plant, controller) -> str | None:
    """Why no period of ``plant`` (PlantServer) and ``controller`` (ControllerServer) can be
    compiled whole (one line), or None."""
    from freeflyer_control.physics.kernels.plant import CompiledPlant

    if fastpath.kernels() is None:
        return "numba is not installed"
    if plant.objects is not None or controller.objects is not None or controller.capture is not None:
        return "an object is held or captured"
    if type(plant.plant) is not CompiledPlant:
        return "the plant steps in Python"
    if plant.delay_steps or any(plant.noise.__dict__.values()):
        return "the plant's measurement has latency or noise"
    sizes = [(len(ff.arm_joint_names), len(ff.wheel_joint_names), len(ff.thrusters), ff.nb)
             for ff in (plant.ff, controller.ff)]
    if sizes[0] != sizes[1]:
        return "the controller's model has other actuators than the plant's"
    return None


class CompiledPeriod:
    """The controller's law tick, its commands and the plant's step of a lockstep period in
    one compiled call, where the period is plain (module docstring).

    Args:
        lockstep: the loop whose periods these are (its plant, controller and ``command``).

    Use: :meth:`begin` at each period's ``now``, then ``controller.tick(now, law_tick)``; then
    :attr:`stepped` says whether the plant stepped here (:attr:`diverged`: the reason when that
    step diverged), else the period goes on in Python (commands, step).
    """

    def __init__(self, lockstep):
        self.lockstep = lockstep
        self.plant, self.controller = lockstep.plant, lockstep.controller
        self.refusal = never_plain(self.plant, self.controller)
        self.compiled = 0   # periods computed here
        self.python = 0     # periods left to the Python period
        self.stepped = False
        self.diverged: str | None = None
        self._now = 0.0
        if self.refusal is None:
            self._prepare()

    def _prepare(self) -> None:
        ctl_ff, plant_ff = self.controller.ff, self.plant.ff
        guard = self.controller.loop.guard
        arm_bound, wheel_bound, force2, torque2, n_lin = guard.bounds
        self._guard = (np.ascontiguousarray(arm_bound, float), np.ascontiguousarray(wheel_bound, float),
                       float(force2), float(torque2), int(n_lin))
        self._zero_thrust = np.zeros(len(ctl_ff.thrusters))
        self._zero_wrench = (np.zeros(ctl_ff.nb), np.zeros(plant_ff.nb))
        self._plant_v = (np.ascontiguousarray(plant_ff.arm_v_indices, dtype=np.int64),
                         np.ascontiguousarray(plant_ff.wheel_v_indices, dtype=np.int64))
        self._partitions = {mode: base_partition(ctl_ff.base, mode) for mode in PLAIN_MODES}
        # The laws plain_period computes: whether the task's reference integrates (module docstring).
        self._laws = {ComputedTorqueLaw: True, ResolvedRateLaw: False}
        self._saturations = None   # (the controller's, the plant's) CompiledSaturation, once warmed
        self._warm()

    def _saturation_kernels(self) -> tuple | None:
        """The controller's and the plant's compiled saturation, kept once both exist (they do
        once warmed: ``physics.actuators.compiled_saturation``), else None."""
        sats = compiled_saturation(self.controller.ff), compiled_saturation(self.plant.ff)
        if all(sats):
            self._saturations = sats
            return sats
        return None

    def begin(self, now: float) -> None:
        """A new period at ``now`` (s, the node clock both servers read)."""
        self._now = now
        self.stepped = False
        self.diverged = None

    def law_tick(self, tc: float) -> ControllerOutput | None:
        """``ControllerServer.tick``'s law_tick: the period from the controller's state at the
        law's time ``tc`` (s) when it is plain, the plant stepped; else None (nothing changed)."""
        out = self._period(tc) if self.refusal is None else None
        if out is None:
            self.python += 1
        else:
            self.compiled += 1
        return out

    def _period(self, tc: float) -> ControllerOutput | None:
        plant, controller = self.plant, self.controller
        loop = controller.loop
        law = loop.law
        switcher = loop.switcher
        mode = switcher.mode
        integrate = self._laws.get(type(law))   # (None: not a built-in the kernel computes)
        if integrate is None or plant.status != "ok" or plant.plant.contact is not None:
            return None
        if mode not in PLAIN_MODES or switcher.blend(tc) != 1.0:
            return None
        guard = loop.guard
        if guard.overrun_limit is not None and guard.timing.running + 1 >= guard.overrun_limit:
            return None   # this tick could stop the law: the Python period says so before its commands
        ct = law.ct
        torque_kernel = ct._compiled_torque()
        sats = self._saturations or self._saturation_kernels()
        if not (torque_kernel and torque_kernel.covers(mode) and sats):
            return None
        if not self.lockstep.ideal_base and plant.holds_base_wrench(self._now):
            return None   # a base wrench someone else gave the plant: the Python step applies it

        model, state, period = controller.ff, controller.state, controller.period
        reference = loop.reference(tc)
        part = self._partitions[mode]
        if part.commanded.size:
            if reference.base is None:
                return None   # (the Python law refuses it: a fault)
            u_base = base_accelerations(model, state, reference.base, ct.base_gains, part)
        else:
            u_base = self._zero_wrench[0][:0]
        tasks = reference.tasks
        rr = law.rr
        rates_kernel = rr._compiled_rates() if tasks else None
        if tasks and not rates_kernel:
            return None
        uses = rr.uses(tasks) if tasks else None
        context = loop.context.begin(tc, state, mode, period, None)   # (as ControlLoop.tick begins it)
        # The joint reference the task's rates start from: computed torque's integrated one,
        # resolved rate's the measured arm angles (builtin's _task_reference).
        q_from = law.q_integrated if integrate or not tasks else context.joint_positions()
        t0 = cpu_time()
        try:
            call = self._call(rates_kernel, uses, tasks, torque_kernel, *sats, state, mode, u_base, q_from,
                              reference.joint, self._guard, integrate)
        except (np.linalg.LinAlgError, ValueError, ArithmeticError, RuntimeError):
            return None   # the Python period meets it again, and answers as it always did
        if call is None:
            return None
        (status, m, lam2, limited, code, energy, work), rates, torque, controller_sat, step = call
        seconds = cpu_time() - t0
        if status != STEPPED:
            return None

        # The books the Python period keeps: the loop's, the law's, the guard's, the mapper's.
        loop.state_seen = state
        if tasks:
            result = rr.compiled_result(tasks, uses, rates_kernel.solved(rates, m, lam2, limited))
            if integrate:
                law.q_integrated = torque[10][0].copy()
                jref = JointReference(law.q_integrated.copy(), result.joint_rates, np.zeros_like(result.joint_rates))
            else:
                jref = JointReference(q_from, result.joint_rates, np.zeros_like(q_from))
            law.resolved_rate = result
        else:
            jref = reference.joint
            law.q_integrated = jref.position.copy()
            law.resolved_rate = None
        law.joint_reference = jref
        # (It cannot stop the law: see above. The call's CPU time counts the saturations and the
        # plant's step with the law's, which it cannot tell apart.)
        guard.tick_time(seconds, period)
        residual = loop.mapper.last_residual = np.zeros(model.nb)
        info = TickInfo(mode, 1.0, ControlEffort(*torque[23:26]), jref, tasks, law.resolved_rate, residual,
                        base_reference=reference.base)
        out = ControllerOutput(Actuation(controller_sat[13], controller_sat[14], controller_sat[15],
                                         np.zeros(model.nb)), "ok", "", info)
        # The plant's: the commands it holds (LockstepLoop.command's, known finite here), its step.
        act = out.actuation
        plant.hold(act.arm_torques, act.wheel_torques, act.thruster_forces,
                   act.base_wrench_world if self.lockstep.ideal_base else None, self._now)
        self.diverged = plant.stepped(plant.plant.accept, code, energy, work, step)
        self.stepped = True
        return out

    def _call(self, rates_kernel, uses, tasks, torque_kernel, ctl_sat, plant_sat, state, mode, u_base, q_from, joint,
              guard, integrate) -> tuple | None:
        """:func:`~freeflyer_control.sim.fast.period.plain_period` from the controller's ``state``
        in ``mode`` on the end-effector ``tasks`` (rates_kernel, uses: the law's CompiledRates
        and each task's rows; q_from, integrate: plain_period's q_int and integrate) or else the
        ``joint`` reference, each argument built by the object that makes that call in the
        Python period: (its result, the rates', torque's, controller saturation's and step's
        arguments), or None where a saturation's arguments are not a period's own (the Python
        period then takes NumPy's path)."""
        model = self.controller.ff
        rates = None
        if tasks:   # computed torque's rates at its reference (the arm at q_from), resolved rate's at the state
            q_ref = with_joint_positions(model, state.q, model.arm_v_indices, q_from) if integrate else state.q
            rates = rates_kernel.arguments(q_ref, state.v, mode, tasks, uses)
        torque = torque_kernel.arguments(state.q, state.v, mode, u_base)
        if not tasks:
            jref = torque[10]
            jref[0], jref[1], jref[2] = joint.position, joint.velocity, joint.acceleration
        controller_sat = ctl_sat.arguments(torque[23], torque[24], self._zero_thrust, self._zero_wrench[0], state.v)
        cplant = self.plant.plant
        plant_sat = None if controller_sat is None else plant_sat.arguments(
            controller_sat[13], controller_sat[14], controller_sat[15], self._zero_wrench[1], cplant.state.v)
        if plant_sat is None:
            return None
        tau = np.empty(cplant.state.v.size)
        step = cplant.step_arguments(tau)
        result = plain_period(rates, integrate, self.controller.period, q_from, torque, guard, controller_sat,
                              plant_sat, *self._plant_v, tau, step)
        return result, rates, torque, controller_sat, step

    def _warm(self) -> None:
        """Compile (a machine's first use) or load :func:`plain_period` now, not in a period: its
        two variants (a joint reference; end-effector targets), each on a call a guard of
        negative bounds declines before it changes anything."""
        model = self.controller.ff
        law = ComputedTorqueLaw()
        law.prepare(model)
        torque_kernel = law.ct._compiled_torque()
        sats = compiled_saturation(model), compiled_saturation(self.plant.ff)
        if not (torque_kernel and all(sats)):
            return
        state = State(pin.neutral(model.model), np.zeros(model.model.nv))
        q_arm = np.zeros(len(model.arm_joint_names))
        declines = (-np.ones_like(self._guard[0]), -np.ones_like(self._guard[1]), -1.0, -1.0, self._guard[4])
        calls = [(None, None, ())]
        rates_kernel = law.rr._compiled_rates() if law.rr is not None else False
        if rates_kernel:
            tasks = (TaskReference(model.end_effectors[0], np.zeros(3), None, np.zeros(3), np.zeros(3)),)
            calls.append((rates_kernel, law.rr.uses(tasks), tasks))
        for rates, uses, tasks in calls:
            fastpath.with_compile_notice("the compiled lockstep period", lambda: self._call(
                rates, uses, tasks, torque_kernel, *sats, state, Mode.FLOATING, np.zeros(0), q_arm,
                JointReference.hold(q_arm), declines, True))
