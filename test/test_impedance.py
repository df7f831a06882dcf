"""Operational-space impedance control: released from a displacement, the end-effector moves
like the commanded mass-spring-damper (natural frequency and damping ratio within 10 %), in
floating mode (arm torques only, the base free), in flying mode (base wrench too) and in
rotation-floating mode (the wheels hold the base attitude, the arm alone serves the task).

The simulation is the full floating-base dynamics (Pinocchio ABA), semi-implicit Euler at 1 ms
with the controller's effort held over each step; at w = 5 rad/s the integrator and the hold
shift frequency and damping by well under 1 %, so the 10 % band is about the controller.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import robot

from freeflyer_control.control.impedance import ImpedanceController, ImpedanceGains, TaskTarget
from freeflyer_control.physics.actuators import world_wrench_to_local
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import make_state

W, ZETA = 5.0, 0.2  # underdamped, so that period and decay are both measurable in 3 s
DT, DURATION = 1e-3, 3.0


def _release(ff, mode, offset, w=W, duration=DURATION, history=None):
    """Error history (n, rows) after releasing the end-effector ``offset`` from its setpoint;
    ``history``, a list, also receives (base rotation, wheel torques) every step."""
    ctrl = ImpedanceController(ff, ff.end_effectors[0], ImpedanceGains(w, ZETA, null_damping=2.0))
    state = make_state(ff, joint_positions=ff.ready_pose)
    data = ff.create_data()
    fid = ff.model.getFrameId(ff.end_effectors[0])
    pin.framesForwardKinematics(ff.model, data, state.q)
    pose = data.oMf[fid].copy()
    target = TaskTarget(pose.translation + offset[:3], pin.exp3(offset[3:]) @ pose.rotation)
    q, v = state.q.copy(), state.v.copy()
    errors = []
    for _ in range(int(duration / DT)):
        state.q, state.v = q, v
        effort = ctrl.effort(state, mode, target)
        tau = np.zeros(ff.model.nv)
        tau[ff.arm_v_indices] = effort.arm_torques
        tau[ff.wheel_v_indices] = effort.wheel_torques
        tau[: ff.nb] = world_wrench_to_local(ff, q, effort.base_wrench_world)
        a = pin.aba(ff.model, data, q, v, tau)
        v = v + DT * a
        q = pin.integrate(ff.model, q, DT * v)
        pin.framesForwardKinematics(ff.model, data, q)
        errors.append(target.position - data.oMf[fid].translation)
        if history is not None:
            history.append((data.oMi[1].rotation.copy(), effort.wheel_torques.copy()))
    return np.array(errors)


def _frequency_and_damping(e, dt=DT):
    """w_n and zeta of a free decay e(t) from rest, sampled every ``dt`` s: half periods from
    the zero crossings, logarithmic decrement from the extremes between them."""
    t = np.arange(1, e.size + 1) * dt
    idx = np.nonzero(np.sign(e[:-1]) != np.sign(e[1:]))[0]
    crossings = t[idx] - e[idx] * dt / (e[idx + 1] - e[idx])  # linear interpolation
    half = np.diff(crossings).mean()
    bounds = np.concatenate([[0], idx, [e.size]])
    peaks = np.array([np.abs(e[a:b + 1]).max() for a, b in zip(bounds[:-1], bounds[1:])])[:len(idx)]
    delta = np.mean(np.log(peaks[:-1] / peaks[1:]))  # per half period
    zeta = delta / np.sqrt(np.pi**2 + delta**2)
    wn = np.pi / half / np.sqrt(1 - zeta**2)
    return wn, zeta


@pytest.mark.parametrize("mode", [Mode.FLOATING, Mode.FLYING])
def test_released_end_effector_rings_at_the_commanded_frequency_and_damping(mode):
    ff = robot("spatial_7dof")
    e = _release(ff, mode, np.array([0.03, 0.0, 0.0, 0.0, 0.0, 0.0]))
    wn, zeta = _frequency_and_damping(e[:, 0])
    assert abs(wn - W) < 0.1 * W, wn
    assert abs(zeta - ZETA) < 0.1 * ZETA, zeta
    # decoupled: the other axes stay within 5 % of the released axis's amplitude
    assert np.abs(e[:, 1:]).max() < 0.05 * 0.03


# Rotation-floating: the wheels (0.2 N m on spatial_7dof) must hold the attitude against the
# arm's reaction, about 4.8 N m for a 3 cm step at 5 rad/s; the demand scales with w^2 x offset,
# so 2 rad/s and 5 mm ask ~0.13 N m: inside the wheels' authority, where the law is exact.
# Beyond it a wheel is clipped, the attitude let go that tick (as under computed torque).
W_RF, OFFSET_RF, DURATION_RF = 2.0, 0.005, 6.0  # 6 s: ~4 half periods of the 3.1 s ring


def test_released_end_effector_rings_at_the_commanded_frequency_and_damping_with_the_wheels_holding_the_attitude():
    ff = robot("spatial_7dof")
    history = []
    e = _release(ff, Mode.ROTATION_FLOATING, np.array([OFFSET_RF, 0, 0, 0, 0, 0]), W_RF, DURATION_RF, history)
    wn, zeta = _frequency_and_damping(e[:, 0])
    assert abs(wn - W_RF) < 0.1 * W_RF, wn
    assert abs(zeta - ZETA) < 0.1 * ZETA, zeta
    assert np.abs(e[:, 1:]).max() < 0.05 * OFFSET_RF
    R0 = history[0][0]
    drift = max(np.linalg.norm(pin.log3(R0.T @ R)) for R, _ in history)
    # Held exactly in the model; what is left is the 1 ms Euler integration's drift.
    assert drift < 1e-4, drift
    assert max(np.abs(tw).max() for _, tw in history) < ff.wheel_max_torques.min()  # never clipped


def test_rotation_floating_asks_the_attitude_torque_of_the_wheels_and_no_external_wrench():
    ff = robot("spatial_7dof")
    ctrl = ImpedanceController(ff, "ee_link")
    state = make_state(ff, joint_positions=ff.ready_pose)
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, state.q)
    pose = data.oMf[ff.frame_id("ee_link")]
    effort = ctrl.effort(state, "rotation-floating", TaskTarget(pose.translation + [0.0, 0.0, 0.002], pose.rotation))
    assert np.all(effort.base_wrench_world == 0.0)
    assert np.abs(effort.wheel_torques).max() > 1e-3  # the wheels answer the arm's reaction


def test_bad_gains_are_refused_naming_them():
    with pytest.raises(ValueError, match="natural_frequency > 0"):
        ImpedanceController(robot("spatial_7dof"), "ee_link", ImpedanceGains(natural_frequency=0.0))


@pytest.mark.parametrize("mode", [Mode.FLOATING, Mode.ROTATION_FLOATING, Mode.TRANSLATION_FLYING, Mode.FLYING])
def test_the_effort_gives_the_end_effector_exactly_the_commanded_task_acceleration(mode):
    """The law's defining property, checked through the plant's own dynamics (ABA) and not the
    law's algebra: at a moving state, x'' = J nu' + Jdot nu equals x''_cmd = K_D (x'_d - x') +
    K_P e to round-off (1e-9 of its size), and in rotation-floating the base attitude gets the
    commanded acceleration. Small gains and offsets keep the wheels inside their limits."""
    ff = robot("spatial_7dof")
    gains = ImpedanceGains(1.0, 0.5)
    ctrl = ImpedanceController(ff, "ee_link", gains)
    rng = np.random.default_rng(3)
    state = make_state(ff, joint_positions=ff.ready_pose, joint_velocities=rng.uniform(-0.005, 0.005, ff.nj))
    data, fid = ff.create_data(), ff.frame_id("ee_link")
    pin.framesForwardKinematics(ff.model, data, state.q)
    pose = data.oMf[fid].copy()
    target = TaskTarget(pose.translation + [0.002, -0.001, 0.001], pin.exp3(np.array([0.001, 0.0, -0.002])) @ pose.rotation)
    u = np.array([1e-4, -2e-4, 5e-5])  # rad/s^2, world: the attitude acceleration to hold
    effort = ctrl.effort(state, mode, target, u if mode is Mode.ROTATION_FLOATING else None)
    assert np.abs(effort.wheel_torques).max() < ff.wheel_max_torques.min()
    tau = np.zeros(ff.model.nv)
    tau[ff.arm_v_indices], tau[ff.wheel_v_indices] = effort.arm_torques, effort.wheel_torques
    tau[: ff.nb] = world_wrench_to_local(ff, state.q, effort.base_wrench_world)
    a = pin.aba(ff.model, data, state.q, state.v, tau)
    pin.forwardKinematics(ff.model, data, state.q, state.v, a)
    pin.updateFramePlacements(ff.model, data)
    x_dd = pin.getFrameClassicalAcceleration(ff.model, data, fid, pin.LOCAL_WORLD_ALIGNED).vector
    J = pin.computeFrameJacobian(ff.model, data, state.q, fid, pin.LOCAL_WORLD_ALIGNED)
    err = np.concatenate([target.position - pose.translation, pin.log3(target.orientation @ pose.rotation.T)])
    x_cmd = -2 * 0.5 * 1.0 * J.dot(state.v) + 1.0**2 * err
    np.testing.assert_allclose(x_dd, x_cmd, atol=1e-9 * np.abs(x_cmd).max())
    if mode is Mode.ROTATION_FLOATING:
        R = data.oMi[1].rotation  # base angular acceleration, world axes (no omega x omega term)
        np.testing.assert_allclose(R @ a[3:6], u, atol=1e-9)
