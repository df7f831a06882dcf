"""The compiled lockstep tick loop of ``freeflyer sim``'s compiled engine: plant step and
control law in one compiled loop, run in chunks by :mod:`freeflyer_control.sim.fast.runner`.

Per tick, in the Python engine's order (``sim.runner.run_simulation``): the reference of the
maneuver (``control.kernels.references`` / ``control.kernels.resolved_rate``), the control law
in the mode in force and its blend after a switch (``control.kernels.computed_torque``), the
actuator map (thrusters through ``control.kernels.allocation``, or an ideal bounded wrench),
then ``substeps`` plant steps (``physics.kernels.rigid_body.plant_step``), each checked for
divergence as ``Plant.step`` checks it (``physics.kernels.divergence.step_check``).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import register_jitable

from freeflyer_control.control.kernels import resolved_rate as TK
from freeflyer_control.control.kernels.allocation import allocate_forces
from freeflyer_control.control.kernels.computed_torque import (
    BASE_IDEAL,
    BASE_THRUSTERS,
    blend_weight_compiled,
    control_workspace,
    mode_effort,
)
from freeflyer_control.control.kernels.references import wilde_reference
from freeflyer_control.physics.kernels.actuators import generalized_forces, world_to_local
from freeflyer_control.physics.kernels.divergence import STEPPING, step_check
from freeflyer_control.physics.kernels.rigid_body import (
    _NO_NRT,
    arm_positions,
    forward_kinematics,
    integrate,
    mass_and_bias,
    plant_step,
    workspace,
)
from freeflyer_control.sim.perturbation import LATENCY_SLACK


@register_jitable  # allocations, once per run: plain Python there, compiled where a kernel calls it
def tick_scratch(kmP, kmC, nq, nv, nb, arm_v, wheel_v, n_thrusters, task):
    """The scratch arrays of :func:`run_ticks` for a run (allocated once; a call of run_ticks
    allocates nothing and runs without numba's runtime, so that the arrays a tick takes out of
    tuples and the views it makes cost no reference count: an atomic increment and decrement
    each, ~17 % of a tick's time by perf when they were counted). n_thrusters: the columns of the
    allocator's B (0 without one); task: run_ticks' ``task`` (None: a joint maneuver, and no
    end-effector scratch)."""
    na, nw = arm_v.shape[0], wheel_v.shape[0]
    arm_rel = np.empty(na, np.int64)
    wheel_rel = np.empty(nw, np.int64)
    for j in range(na):
        arm_rel[j] = arm_v[j] - nb
    for j in range(nw):
        wheel_rel[j] = wheel_v[j] - nb
    if task is None:  # None: numba drops this branch, and the task kernels are not compiled
        tws, rws, n_ee = None, None, 0
    else:
        n_ee = task[4].shape[0]
        tws, rws = TK.task_workspace(kmC[0].shape[0], nv, nb), TK.rate_workspace(nq, nv, nb, na, 6 * n_ee)
    return (workspace(kmP[0].shape[0], nq, nv, nb), control_workspace(nv, nb), tws, rws,
            arm_rel, wheel_rel, np.empty((6, na)), np.empty((2, nw)), np.empty((4, nb)),
            np.zeros(n_thrusters), np.zeros(nv), np.empty((3, 3)), np.empty((nb, nb)),
            np.empty((2, nv, nv)), np.empty((4, max(nq, nv))), np.empty((2, n_ee, 3)))


@njit(**_NO_NRT)
def run_ticks(kmP, kmC, same_model, planar, nb, arm_v, arm_q, arm_kind, wheel_v, layouts, effort,
              wheel_limit, wheel_speed, max_force, max_torque, base_actuation, alloc, hybrid, sense, act_gains,
              B_plant, thrust_max,
              kp, kd, gains, p_d, R_d, mode, previous, switched_at, blend_time, cmd,
              ref_kind, ref_q0, ref_rate, phases, period, dt, substeps, resolved, task, gjm_layouts,
              k0, k1, n_ticks, q, v, mom, M, b, v_bounds, div, log_every, log_q, log_v, out_arm, out_pos,
              out_vel, out_wheel, out_wrench, out_thrust, out_blend, out_targets, out_sigma, scratch):
    """Control ticks k0 .. k1-1 in lockstep with the plant, in ``mode`` (blended from
    ``previous``, -1 for none, since ``switched_at`` s over ``blend_time`` s). State q, v and
    world momentum mom are updated in place; M, b: M(q), b(q, v) of the plant model on entry
    and on exit. cmd[m] = (c0, c1): the commanded base coordinates of mode m; layouts[m]: the
    ``physics.kernels.reduced.reduced_layout`` of its H*, C* (the same length, nv + 4, for every mode).

    ``base_actuation`` (a code, see the module docstring) maps the base wrench: to the
    thrusters through ``alloc`` = (B, A2, u, params, work, iwork) of the controller's
    allocator (None when no tick of the run can ask the thrusters for a wrench) (``allocation_kernel.allocator_arrays``; work and iwork also carry its warm start
    from tick to tick and, the runner passing the same arrays, from chunk to chunk); the plant
    applies them with its own B_plant (nb, n) and thrust_max (n,). Every tick with k % log_every == 0 or k == n_ticks is
    logged to the next row: the state it was computed from, the arm and wheel torques, the
    thruster forces and the base wrench (world) before saturation, the joint reference and the
    blend weight; for an end-effector maneuver (``ref_kind`` REF_EE_POINT or REF_EE_CIRCLE of
    :mod:`freeflyer_control.control.kernels.resolved_rate`) the targets (out_targets) and the task rows' smallest singular value
    (out_sigma), NaN otherwise. Stops after the control of tick n_ticks. Returns the number of
    rows written.

    Every plant step is checked as ``Plant.step`` checks it (docs/conventions.md, "Divergence"):
    a speed over ``v_bounds`` (nv,) or NaN, or a kinetic energy gain the work of the held forces
    does not explain (``physics.energy_balance.energy_explained``, compiled from that definition). ``div``
    (7,) carries the check across calls: [0] the kinetic energy of the accepted state (J), kept
    up to date; a failed step stops the loop, leaves the rejected state in q, v and sets [1] to
    DIVERGED_SPEED or DIVERGED_ENERGY, [2], [3] to its tick and substep, [4], [5] to its energy
    and work (J). While a step runs [1] is STEPPING and [6] the rows written by this call, so a
    caller that catches an exception out of the step knows where it happened.

    End-effector maneuvers: ``task`` (:func:`freeflyer_control.control.kernels.resolved_rate.ee_joint_reference`, whose q_int,
    the integrated joint reference of computed torque, is advanced in place) and the mode's
    GJM layout ``gjm_layouts[mode]`` give the joint reference; ``resolved`` selects the
    resolved-rate law (its gains kp, kd: the joint servo's). ``scratch``: :func:`tick_scratch`
    of the run (a call allocates nothing: it runs without numba's runtime).

    A dispersed run (``sim.perturbation``): ``sense`` = (noise, std, latency, hist_q, hist_v,
    front, qm, vm, dv, noisy) makes the controller read what ``sim.perturbation.Sensor`` reads:
    the newest state at least ``latency`` s old (hist_q (D, nq), hist_v (D, nv): the true
    states of the last D ticks, tick k in row k % D; front (1,): the oldest tick still kept, as
    the Sensor's history), its configuration moved by noise[k - k0] * std (noise: this call's
    standard normals, a row per tick, drawn in order from the run's generator; none drawn
    unless ``noisy``); qm, vm, dv: scratch. ``act_gains`` = (thruster gains, wheel gains): what
    the actuators deliver of each command (``Perturbation.actuator_gains``), the commands being
    logged as commanded.

    What a run does not use is passed as None, and numba compiles the loop without it (its
    branch pruning on None arguments): ``task`` for a joint maneuver, ``alloc`` without
    thrusters to allocate to, ``hybrid`` (rotation-floating's wheel solve) where no mode of the
    run flies rotation-floating, ``sense`` and ``act_gains`` without dispersions. A first run on
    a machine then compiles only what it flies.
    """
    ws, cws, tws, rws, arm_rel, wheel_rel, arm_s, wheel_s, base_s, thrust, tau, Rb, Tb, mats, vecs, tp = scratch
    nv, na, nw = v.shape[0], arm_v.shape[0], wheel_v.shape[0]
    pos, vel, qa, u, arm, arm0 = arm_s[0], arm_s[1], arm_s[2], arm_s[3], arm_s[4], arm_s[5]
    wheels, wheels0 = wheel_s[0], wheel_s[1]
    wrench, wrench0, w_local, wsc = base_s[0], base_s[1], base_s[2], base_s[3]
    Mc, Mn = mats[0], mats[1]
    qn, vn, bc, bn = vecs[0, :q.shape[0]], vecs[1, :nv], vecs[2, :nv], vecs[3, :nv]
    tpos, tvel = tp[0], tp[1]
    h = dt / substeps
    # ws[0], ws[1]: the controller model's placements at q, which the end-effector reference
    # reads: from here, then from each plant step (or mass_and_bias for another model)
    forward_kinematics(kmC, q, ws[0], ws[1])
    row = 0
    for k in range(k0, k1):
        t = k * dt
        log_now = k % log_every == 0 or k == n_ticks
        if sense is not None:  # the controller reads (qc, vc): the Sensor's reading
            measured(k, k0, t, dt, q, v, sense, kmP)
            qc, vc = sense[6], sense[7]
            mass_and_bias(kmC, qc, vc, Mc, bc, ws)
            Mu, bu = Mc, bc
        else:
            qc, vc = q, v
            if same_model:
                Mu, bu = M, b
            else:
                mass_and_bias(kmC, q, v, Mc, bc, ws)
                Mu, bu = Mc, bc
        arm_positions(qc, arm_q, arm_kind, qa)
        sigma = np.nan
        if task is not None:
            sigma = TK.ee_joint_reference(kmC, resolved, gjm_layouts[mode], nb, qc, vc, Mu, ws[0], ws[1], t, dt,
                                          task, tws, rws, ws, arm_q, arm_kind, qa, pos, vel, tpos, tvel, log_now)
        elif ref_kind == 1:
            wilde_reference(t, ref_q0, ref_rate, phases, period, pos, vel)
        else:
            for j in range(na):
                pos[j] = ref_q0[j]
                vel[j] = 0.0
        for j in range(na):
            u[j] = (0.0 + kd[j] * (vel[j] - vc[arm_v[j]])) + kp[j] * (pos[j] - qa[j])
        mode_effort(mode, planar, nb, cmd[mode, 0], cmd[mode, 1], Mu, bu, qc, vc, u, arm_rel, wheel_rel,
                    layouts[mode], wheel_limit, p_d, R_d, gains, arm, wheels, wrench, cws, hybrid)
        s = 1.0 if previous < 0 else blend_weight_compiled(t, switched_at, blend_time)
        if s < 1.0:
            mode_effort(previous, planar, nb, cmd[previous, 0], cmd[previous, 1], Mu, bu, qc, vc, u, arm_rel,
                        wheel_rel, layouts[previous], wheel_limit, p_d, R_d, gains, arm0, wheels0, wrench0,
                        cws, hybrid)
            for j in range(na):
                arm[j] = (1 - s) * arm0[j] + s * arm[j]
            for j in range(nw):
                wheels[j] = (1 - s) * wheels0[j] + s * wheels[j]
            for j in range(nb):
                wrench[j] = (1 - s) * wrench0[j] + s * wrench[j]
        any_wrench = False
        for j in range(nb):
            if wrench[j] != 0.0:
                any_wrench = True
        for j in range(thrust.shape[0]):
            thrust[j] = 0.0
        if alloc is not None:
            if base_actuation == BASE_THRUSTERS and any_wrench:
                B, A2, umax, params, work, iwork = alloc
                world_to_local(planar, qc, wrench, Rb, Tb, w_local, False)
                allocate_forces(B, A2, umax, params, w_local, thrust, work, iwork)
        if log_now:
            if task is not None:
                for e in range(task[4].shape[0]):
                    for a in range(3):
                        out_targets[row, 3 * e + a] = tpos[e, a]
            out_sigma[row] = sigma
            for j in range(thrust.shape[0]):
                out_thrust[row, j] = thrust[j]
            for j in range(na):
                out_arm[row, j] = arm[j]
                out_pos[row, j] = pos[j]
                out_vel[row, j] = vel[j]
            for j in range(nw):
                out_wheel[row, j] = wheels[j]
            for j in range(nb):
                out_wrench[row, j] = wrench[j]
            out_blend[row] = s
            for j in range(q.shape[0]):
                log_q[row, j] = q[j]
            for j in range(nv):
                log_v[row, j] = v[j]
            row += 1
        if k == n_ticks:
            return row
        if base_actuation != BASE_IDEAL:  # the thrusters carry it, or nothing does
            for j in range(nb):
                wrench[j] = 0.0
        if act_gains is not None:  # what the actuators deliver of the (logged) commands
            for j in range(thrust.shape[0]):
                thrust[j] *= act_gains[0][j]
            for j in range(nw):
                wheels[j] *= act_gains[1][j]
        for sub in range(substeps):
            generalized_forces(planar, nb, q, v, arm, wheels, thrust, wrench, arm_v, effort, wheel_v, wheel_limit,
                               wheel_speed, B_plant, thrust_max, max_force, max_torque, Rb, Tb, wsc, tau)
            div[1], div[2], div[3], div[6] = STEPPING, k, sub, row
            plant_step(kmP, planar, nb, q, v, tau, h, mom, M, b, qn, vn, Mn, bn, ws)
            code, energy, step_work = step_check(v, tau, h, vn, Mn, ws[14], v_bounds, div[0])
            for j in range(q.shape[0]):
                q[j] = qn[j]
            for j in range(nv):
                v[j] = vn[j]
            if code:
                div[1], div[4], div[5] = code, energy, step_work
                return row
            div[0], div[1] = energy, 0.0
            for i in range(nv):
                b[i] = bn[i]
                for j in range(nv):
                    M[i, j] = Mn[i, j]
    return row


@njit(**_NO_NRT)
def measured(k, k0, t, dt, q, v, sense, km):
    """The state the controller reads at tick k (time t = k dt s), into sense's qm, vm:
    ``sim.perturbation.Sensor`` on the ring of past true states (q, v: tick k's, stored here).
    ``km``: kernel arrays of the robot whose configuration the noise moves."""
    noise, std, latency, hq, hv, front, qm, vm, dv, noisy = sense
    depth, nq, nv = hq.shape[0], q.shape[0], v.shape[0]
    slot = k % depth
    for j in range(nq):
        hq[slot, j] = q[j]
    for j in range(nv):
        hv[slot, j] = v[j]
    # The Sensor's history: drop the oldest while the next one is old enough.
    while front[0] < k and (front[0] + 1) * dt <= t - latency + LATENCY_SLACK:
        front[0] += 1
    seen = front[0] % depth
    if noisy:
        for j in range(nv):
            dv[j] = noise[k - k0, j] * std[j]
        integrate(km, hq[seen], dv, qm)
    else:
        for j in range(nq):
            qm[j] = hq[seen, j]
    for j in range(nv):
        vm[j] = hv[seen, j]
