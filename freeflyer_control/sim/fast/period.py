"""One lockstep period in one compiled call: the control law's tick, the commands and the plant's
step of sim_loop_node's plain periods (:mod:`freeflyer_control.runtime.compiled_period` says
which periods are plain and keeps the servers' books around the call).

It makes the compiled calls the Python period makes, in its order and on the same arguments,
each built by the object that makes that call from Python (``CompiledRates.arguments``,
``CompiledTorque.arguments``, ``CompiledSaturation.arguments``, ``CompiledPlant.step_arguments``),
and writes here only the Python that runs between them: the computed-torque law's integrated
reference, the law guard's bounds, the plant's generalized forces of its held commands. So the
period it computes is the Python period's, bit for bit (test/test_compiled_period.py). What it
saves is the Python around those calls: about 350 function calls a period.

Why: at 500 Hz on a machine half as fast as this one, sim_loop_node's period spent four fifths
of its physics and control in that Python (bench/bench_lockstep.py, "compiled calls alone"),
and the loop missed its periods when the machine slowed further (docs/benchmarks.md, "The ROS
loop").
"""

from __future__ import annotations

from numba import njit

from freeflyer_control.control.kernels.computed_torque import joint_space_effort
from freeflyer_control.control.kernels.resolved_rate import task_rates
from freeflyer_control.physics.kernels.actuators import saturated_commands
from freeflyer_control.physics.kernels.divergence import checked_plant_step
from freeflyer_control.physics.kernels.rigid_body import _JIT, _NO_NRT

#: :func:`plain_period` stepped the plant (its check's code says whether the step was accepted).
STEPPED = 0
#: :func:`plain_period` stopped before the plant's step, nothing kept: the law's effort needs
#: what only the Python period does (the guard's refusal and its message, a base wrench to
#: allocate to the thrusters or to bound).
DECLINED = 1


@njit(inline="always", **_JIT)
def _within(x, bound):
    """Every |x[j]| <= bound[j] (a NaN fails)."""
    for j in range(x.shape[0]):
        if not abs(x[j]) <= bound[j]:
            return False
    return True


@njit(inline="always", **_JIT)
def _squares(x, start, stop):
    s = 0.0
    for j in range(start, stop):
        s += x[j] * x[j]
    return s


@njit(inline="always", **_JIT)
def _saturated(args):
    """``saturated_commands`` on its arguments ``args`` (a tuple of them)."""
    (planar, v, wheel_v, arm, wheels, thrust, wrench, effort, wheel_limit, wheel_speed, thrust_max, max_force,
     max_torque, arm_out, wheels_out, thrust_out, wrench_out) = args
    return saturated_commands(planar, v, wheel_v, arm, wheels, thrust, wrench, effort, wheel_limit, wheel_speed,
                              thrust_max, max_force, max_torque, arm_out, wheels_out, thrust_out, wrench_out)


@njit(**_NO_NRT)   # no reference counts on the ~140 arrays its tuples carry (sim.fast.loop.tick_scratch)
def plain_period(rates, integrate, period, q_int, torque, guard, controller_sat, plant_sat, arm_v, wheel_v, tau, step):
    """A built-in law's tick (computed torque, or resolved rate over its joint-velocity servo),
    the controller's and the plant's saturation, and the plant's checked step, as the Python
    period computes them.

    rates: ``task_rates``' arguments for the tick's end-effector targets, or None for a joint
        reference (then already in torque's jref: position, velocity, acceleration). With
        targets the joint reference is the law's, written into torque's jref: position q_int +
        qdot period where ``integrate`` (computed torque's ``_task_reference``: resolved rate at
        the arm's integrated reference q_int, rad, arm order; s), else q_int (resolved rate's:
        the measured arm angles, the rates at the measured state); velocity qdot; acceleration
        zero. q_int is only read.
    torque: ``joint_space_effort``'s arguments at the controller's state; its outputs (arm,
        wheels, wrench) are the law's effort.
    guard: (arm bound, wheel bound, force bound squared, torque bound squared, linear rows) of
        ``control.law_guard.LawGuard``: an effort beyond them (or NaN), or with any base
        wrench, is DECLINED before anything is saturated or stepped.
    controller_sat: ``saturated_commands``' arguments on the effort (arm, wheels), zero thrust
        and no wrench, at the controller's velocity: the commands the controller publishes.
    plant_sat: ``saturated_commands``' arguments on controller_sat's outputs, at the plant's
        velocity: what the plant applies of the commands it holds.
    arm_v, wheel_v: the plant's arm and wheel velocity indices; tau (nv,): the generalized
        forces, which ``step`` (``checked_plant_step``'s arguments) reads.

    Returns (STEPPED or DECLINED, the task rows m, lambda^2, limited, the step check's code,
    kinetic energy J, work J).
    """
    if rates is not None:
        km_c, layout_r, nb_r, q_r, v_r, targets, rr, rate_limit, tws, rws, ws_r, qdot, err, sv = rates
        m, lam2, limited = task_rates(km_c, layout_r, nb_r, q_r, v_r, targets, rr, rate_limit, tws, rws, ws_r,
                                      qdot, err, sv)
        jref = torque[10]
        for j in range(qdot.shape[0]):
            jref[0, j] = q_int[j] + qdot[j] * period if integrate else q_int[j]
            jref[1, j] = qdot[j]
            jref[2, j] = 0.0
    else:
        m, lam2, limited = 0, 0.0, False
    (km, ws_buf, mode, nb, c0, c1, layout, q, v, ubase, jref_t, kp, kd, arm_v_c, arm_q, arm_kind, arm_rel,
     wheel_rel, wheel_limit, M, b, qa, u, arm, wheels, wrench, cws) = torque
    joint_space_effort(km, ws_buf, mode, nb, c0, c1, layout, q, v, ubase, jref_t, kp, kd, arm_v_c, arm_q, arm_kind,
                       arm_rel, wheel_rel, wheel_limit, M, b, qa, u, arm, wheels, wrench, cws)
    arm_bound, wheel_bound, force2, torque2, n_lin = guard
    if not (_within(arm, arm_bound) and _within(wheels, wheel_bound)
            and _squares(wrench, 0, n_lin) <= force2 and _squares(wrench, n_lin, wrench.shape[0]) <= torque2):
        return DECLINED, m, lam2, limited, 0.0, 0.0, 0.0
    for j in range(wrench.shape[0]):
        if wrench[j] != 0.0:
            return DECLINED, m, lam2, limited, 0.0, 0.0, 0.0
    if _saturated(controller_sat) != 0 or _saturated(plant_sat) != 0:   # (non-zero: NaN, or a wrench)
        return DECLINED, m, lam2, limited, 0.0, 0.0, 0.0
    arm_p, wheels_p, thrust_p = plant_sat[13], plant_sat[14], plant_sat[15]
    for j in range(thrust_p.shape[0]):   # (zero: no base wrench was asked of them)
        if thrust_p[j] != 0.0:
            return DECLINED, m, lam2, limited, 0.0, 0.0, 0.0
    # physics.actuators.generalized_forces of the held commands: joint torques in place, no base force
    for k in range(tau.shape[0]):
        tau[k] = 0.0
    for j in range(arm_v.shape[0]):
        tau[arm_v[j]] = arm_p[j]
    for j in range(wheel_v.shape[0]):
        tau[wheel_v[j]] = wheels_p[j]
    (km_p, planar_s, nb_p, q0, v0, tau_s, h, mom0, energy_before, buf, current, q_new, v_new, mom_new, wall,
     wall_out) = step
    code, energy, work = checked_plant_step(km_p, planar_s, nb_p, q0, v0, tau_s, h, mom0, energy_before, buf,
                                            current, q_new, v_new, mom_new, wall, wall_out)
    return STEPPED, m, lam2, limited, code, energy, work
