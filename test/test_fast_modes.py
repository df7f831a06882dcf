"""The compiled engine in every maneuvering mode: its control kernels against the Python
definitions they mirror, and closed loops (with mode switches) against the Python engine.

Skipped where numba is not installed (it is the optional 'fast' extra).
"""

import inspect
import io
import time

import numpy as np
import pinocchio as pin
import pytest

pytest.importorskip("numba", reason="the compiled path needs numba (pip install .[fast])")

from freeflyer_control.control.computed_torque import ComputedTorque
from freeflyer_control.control.mode_switch import ModeSwitcher
from freeflyer_control.control.references import BaseReference, JointReference
from freeflyer_control.model import load_robot
from freeflyer_control.model.robots import robot_names
from freeflyer_control.physics.actuators import (
    Actuation,
    base_wrench_limits,
    generalized_forces,
    limit_wrench_into,
    mode_support,
    thruster_matrix,
)
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.kernels import reduced as physics_compiled
from freeflyer_control.physics.state import (
    State, base_rotation_into, rotation_from_xyzw, world_to_local_base_map_into)
from freeflyer_control.control.kernels import computed_torque as CK
from freeflyer_control.physics.kernels import actuators as KA
from freeflyer_control.physics.kernels import rigid_body as K
from freeflyer_control.physics.kernels.arrays import NotCovered, kernel_model
from freeflyer_control.sim.fast.runner import (
    _due_tick, _mode_table, _reduced_layouts, compile_notice, not_covered, run_fast)
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.runner import run_simulation
from fast_support import assert_same_run

MODES = list(Mode)


def random_state(ff, rng, speed=0.5):
    m = ff.model
    q = pin.integrate(m, pin.neutral(m), rng.normal(size=m.nv))
    return q, speed * rng.normal(size=m.nv)


def random_rotation(rng, angle):
    axis = rng.normal(size=3)
    return pin.exp3(angle * axis / np.linalg.norm(axis))


@pytest.mark.parametrize("angle", [0.0, 1e-9, 1e-5, 1e-2, 0.5, 2.0, np.pi - 0.05, np.pi - 1e-3])
def test_log3_is_pinocchios_rotation_vector(angle):
    rng = np.random.default_rng(int(angle * 1000))
    out = np.empty(3)
    for _ in range(20):
        R = random_rotation(rng, angle)
        CK.log3(R, out)
        # Round-off of the antisymmetric part, scaled by theta / sin(theta) (62 at pi - 0.05);
        # within 1e-2 of pi both take the axis from the diagonal (sqrt of a difference): 1e-7.
        tol = 1e-7 if angle > np.pi - 1e-2 else 1e-13 * max(1.0, angle / np.sin(angle) if angle else 1.0)
        assert np.abs(out - pin.log3(R)).max() < tol


def _supported(ff):
    return [m for m in MODES if mode_support(ff, m) is None]


@pytest.mark.parametrize("name", robot_names())
def test_mode_effort_is_the_computed_torque_law_in_every_mode(name):
    """Arm torques, wheel torques and the base wrench (world) of the kernel equal
    ComputedTorque.effort's on random states, references and base poses, in every mode the
    robot can fly; in rotation-floating some states ask more than the wheels can give (the
    clipped second solve runs)."""
    ff = load_robot(name)
    km = kernel_model(ff)
    ct = ComputedTorque(ff)
    m = ff.model
    nb, nv, na, nw = ff.nb, m.nv, km.arm_v.size, km.wheel_v.size
    ws = K.workspace(m.njoints - 1, m.nq, nv, nb)
    cws = CK.control_workspace(nv, nb)
    cmd, layouts = _mode_table(ff), _reduced_layouts(ff)
    gains = np.array([ct.base_gains.kp_linear, ct.base_gains.kd_linear, ct.base_gains.kp_attitude,
                      ct.base_gains.kd_attitude])
    limits = np.asarray(ff.wheel_max_torques, dtype=float).reshape(-1)
    rng = np.random.default_rng(5)
    clipped = 0
    for mode in _supported(ff):
        code = MODES.index(mode)
        for _ in range(8):
            q, v = random_state(ff, rng)
            p_d = np.array([q[0], q[1], 0.0]) + 0.3 * rng.normal(size=3) * [1, 1, ff.base != "planar"]
            R0 = rotation_from_xyzw([0.0, 0.0, np.sin(0.2), np.cos(0.2)]) if ff.base == "planar" \
                else random_rotation(rng, 0.4)
            xyzw = pin.Quaternion(R0).coeffs()
            base_ref = BaseReference(p_d, xyzw, np.zeros(3), np.zeros(3))
            jref = JointReference(rng.normal(size=na), rng.normal(size=na), np.zeros(na))
            effort = ct.effort(State(q, v), mode, jref, base_ref)
            M, b = np.empty((nv, nv)), np.empty(nv)
            K.mass_and_bias(km.arrays(), q, v, M, b, ws)
            qa = np.empty(na)
            K.arm_positions(q, km.arm_q, km.arm_kind, qa)
            u = (0.0 + ct.kd * (jref.velocity - v[km.arm_v])) + ct.kp * (jref.position - qa)
            arm, wheels, wrench = np.empty(na), np.empty(nw), np.empty(nb)
            CK.mode_effort(code, km.planar, nb, cmd[code, 0], cmd[code, 1], M, b, q, v, u, km.arm_v - nb,
                           km.wheel_v - nb, layouts[code], limits, p_d, rotation_from_xyzw(xyzw), gains,
                           arm, wheels, wrench, cws, True)  # with the wheel solve
            scale = max(1.0, np.abs(effort.arm_torques).max(), np.abs(effort.base_wrench_world).max())
            # Same algebra in another order (Cholesky for LU, loops for BLAS): round-off of the
            # largest force, far below any torque resolution.
            assert np.abs(arm - effort.arm_torques).max() < 1e-10 * scale, mode
            assert np.abs(wheels - effort.wheel_torques).max() < 1e-10 * scale, mode
            assert np.abs(wrench - effort.base_wrench_world).max() < 1e-10 * scale, mode
            if mode is Mode.ROTATION_FLOATING and nw and np.isclose(np.abs(wheels), limits).any():
                clipped += 1
    assert clipped > 0, "no sample reached the wheel-torque clip: the test does not cover it"


@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
def test_compiled_generalized_forces_are_the_actuator_maps(name):
    """Saturation of arm and wheel torques (wheels at their speed limit included) and of the
    thrusters, and the bounded ideal base wrench turned to base_link axes, as
    physics.actuators does it."""
    ff = load_robot(name)
    km = kernel_model(ff)
    nb, nv = ff.nb, ff.model.nv
    max_force, max_torque = base_wrench_limits(ff)
    limits = np.asarray(ff.wheel_max_torques, float).reshape(-1)
    speeds = np.asarray(ff.wheel_max_speeds, float).reshape(-1)
    B, umax = np.ascontiguousarray(thruster_matrix(ff)), np.asarray(ff.thruster_max_forces, float)
    rng = np.random.default_rng(6)
    tau = np.empty(nv)
    for i in range(40):
        q, v = random_state(ff, rng)
        v[km.wheel_v] = rng.choice([-1.0, 1.0], size=km.wheel_v.size) * speeds * rng.choice([0.5, 1.0, 1.5])
        arm = rng.normal(size=km.arm_v.size) * km.effort * 2
        wheels = rng.normal(size=km.wheel_v.size) * limits * 2
        thrust = rng.normal(size=umax.size) * umax * (i % 3)  # below 0, within, above the limit
        wrench = rng.normal(size=nb) * (max_force if i % 2 else 1.0)
        if i % 5 == 0:
            wrench[:] = 0.0
        if i % 7 == 0:
            wrench *= 1e200  # the overflow guard of _clip_norm
        expected = generalized_forces(ff, q, Actuation(arm, wheels, thrust, wrench), v)
        KA.generalized_forces(km.planar, nb, q, v, arm, wheels, thrust, wrench.copy(), km.arm_v, km.effort,
                              km.wheel_v, limits, speeds, B, umax, max_force, max_torque, np.empty((3, 3)),
                              np.empty((nb, nb)), np.empty(nb), tau)
        assert np.abs(tau - expected).max() < 1e-12 * max(1.0, np.abs(expected).max())


def test_blend_weight_has_one_definition_compiled_as_written():
    switcher = ModeSwitcher(load_robot("planar_4link"), "floating", blend_time=0.7)
    switcher.request("rotation-floating", 1.3)
    for t in np.linspace(1.0, 2.5, 61):
        assert CK.blend_weight_compiled(t, 1.3, 0.7) == switcher.blend(t)


def test_rotation_base_map_wrench_bound_and_reduced_dynamics_are_physics_own_functions_compiled():
    """The compiled engine runs the physics layer's definitions, not copies: the base rotation
    and the world-to-base map of physics/state.py and the ideal-wrench bound of
    physics/wrench_bound.py compiled as written, and for H*, C* the very kernel
    physics.reduced.reduced_dynamics finishes with: physics.compiled.reduced_effort_into, H*
    acc + C* and columns of H* without forming H*, sits beside reduced_post (a wrapper of
    reduced_post_into) and test_compiled_post.py checks it against the NumPy H*, C*."""
    assert K.base_rotation.py_func is base_rotation_into
    assert K.base_map_from_rotation.py_func is world_to_local_base_map_into
    assert KA.limit_base_wrench.py_func is limit_wrench_into
    assert CK.reduced_effort_into is physics_compiled.reduced_effort_into
    assert "reduced_post_into(" in inspect.getsource(physics_compiled.reduced_post.py_func)
    assert not hasattr(CK, "reduced_dynamics")


@pytest.mark.parametrize("name", ["planar_4link", "spatial_6link"])
@pytest.mark.parametrize("mode", [m.value for m in MODES])
@pytest.mark.parametrize("base_actuation", ["thrusters", "ideal"])
def test_closed_loop_in_every_mode_matches_the_python_engine(name, mode, base_actuation):
    """0.5 s of station-keeping (a base kick to answer) at 1 kHz, the base wrench through the
    thrusters (the allocator saturates spatial_6link's at 1 N) or ideal."""
    fast = assert_same_run(SimConfig(robot=name, mode=mode, maneuver="station-keeping", duration=0.5,
                                     rate=1000.0, base_actuation=base_actuation, log_rate=100.0))
    fired = np.abs(fast.series["thruster_forces"]).max() > 0.0
    assert fired == (base_actuation == "thrusters" and mode not in ("floating", "rotation-floating"))


@pytest.mark.parametrize("base_actuation", ["ideal", "thrusters"])
def test_mode_schedule_switches_blend_and_refusals_match_the_python_engine(base_actuation):
    """Every mode in one wilde run, switched mid-blend, with a refused switch (already in the
    mode): same torques (and thruster forces) through every blend, same history, same final
    mode."""
    schedule = [(0.0, "rotation-floating"), (0.3, "flying"), (0.8, "translation-flying"), (1.2, "floating"),
                (1.25, "floating"), (1.5, "rotation-flying")]
    fast = assert_same_run(SimConfig(robot="spatial_6link", maneuver="wilde", duration=2.0, rate=1000.0,
                                     base_actuation=base_actuation, mode_schedule=schedule, log_rate=100.0))
    assert [s["accepted"] for s in fast.summary["mode_switches"]] == [True, True, True, False, True]
    blend = fast.series["blend"]
    assert blend.min() == 0.0 and ((blend > 0.0) & (blend < 1.0)).any()  # the blends were logged


def test_wheels_thrusters_off_mass_error_and_substeps_match_the_python_engine():
    """Thrusters as base actuation while only the wheels act (rotation-floating <-> floating),
    a controller model off by 10 %, two plant steps per tick, a log rate off the tick grid."""
    assert_same_run(SimConfig(robot="dual_arm_planar", maneuver="station-keeping", duration=1.0, rate=500.0,
                              plant_substeps=2, mass_error=0.1, base_actuation="thrusters", log_rate=30.0,
                              mode_schedule=[(0.0, "rotation-floating"), (0.3, "floating"),
                                             (0.61, "rotation-floating")]))


def test_flying_with_mass_error_on_a_7dof_arm_matches_the_python_engine():
    assert_same_run(SimConfig(robot="spatial_7dof", mode="flying", maneuver="station-keeping", duration=1.0,
                              rate=1000.0, base_actuation="ideal", mass_error=0.1, seed=3))


@pytest.mark.parametrize("t_switch, dt", [(0.3, 1e-3), (0.0, 4e-3), (1.0 / 3.0, 1.0 / 300.0), (0.61, 2e-3),
                                          (5.0, 1.0 / 7.0)])
def test_schedule_entries_are_due_on_the_tick_the_python_loop_applies_them(t_switch, dt):
    ticks = np.arange(0, 2 * int(np.ceil(t_switch / dt)) + 3)
    first = next(int(k) for k in ticks if t_switch <= k * dt + 1e-12)
    assert _due_tick(t_switch, dt) == first


def test_not_covered_names_what_stays_on_the_python_engine():
    for mode in MODES:
        for base_actuation in ("thrusters", "ideal"):
            for controller, maneuver in [("computed_torque", "wilde"), ("computed_torque", "ee-circle"),
                                         ("resolved_rate", "ee-point")]:
                assert not_covered(SimConfig(mode=mode.value, base_actuation=base_actuation, controller=controller,
                                             maneuver=maneuver)) is None
    assert not_covered(SimConfig(mode_schedule=[(0.0, "floating"), (1.0, "flying")])) is None
    assert not_covered(SimConfig(maneuver="ee-contact", controller="impedance")) == (
        "controller impedance (computed_torque and resolved_rate are compiled)")
    with pytest.raises(NotCovered, match="does not cover controller impedance"):
        run_fast(SimConfig(mode="rotation-flying", maneuver="ee-circle", controller="impedance"))


def test_auto_engine_takes_the_compiled_path_for_every_mode_and_both_controllers():
    for mode in ("translation-flying", "flying"):
        config = SimConfig(robot="planar_4link", mode=mode, maneuver="station-keeping", duration=0.05, rate=1000.0)
        assert run_simulation(config).summary["engine"] == "compiled (numba)"
    for controller in ("computed_torque", "resolved_rate"):
        config = SimConfig(robot="planar_4link", maneuver="ee-point", controller=controller, duration=0.05)
        assert run_simulation(config).summary["engine"] == "compiled (numba)"
    impedance = SimConfig(robot="planar_4link", maneuver="ee-point", controller="impedance", duration=0.05)
    assert run_simulation(impedance).summary["engine"] == "python"


def test_compile_notice_tells_the_user_only_when_the_first_call_is_slow(monkeypatch):
    from freeflyer_control.sim.fast import runner

    monkeypatch.setitem(runner._compiled, "done", False)
    out = io.StringIO()
    with compile_notice(out, after=0.05):
        time.sleep(0.3)  # a compile: longer than the notice delay
    assert out.getvalue().splitlines()[0] == ("freeflyer sim: compiling the simulation kernels (first use on "
                                              "this machine, about a minute; cached for later runs)...")
    assert out.getvalue().splitlines()[1].startswith("freeflyer sim: kernels compiled in ")
    monkeypatch.setitem(runner._compiled, "done", False)
    quiet = io.StringIO()
    with compile_notice(quiet, after=5.0):
        pass  # a cache load: nothing to say
    with compile_notice(quiet, after=0.0):
        time.sleep(0.05)  # after the first call of the process: never again
    assert quiet.getvalue() == ""
