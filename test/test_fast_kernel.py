"""The compiled (numba) path against Pinocchio and the package's Python path.

Skipped where numba is not installed (it is the optional 'fast' extra).
"""


import numpy as np
import pinocchio as pin
import pytest

pytest.importorskip("numba", reason="the compiled path needs numba (pip install .[fast])")

from freeflyer_control.model import load_robot
from freeflyer_control.model.robots import robot_names
from freeflyer_control.physics.dynamics import mass_matrix
from freeflyer_control.physics.plant import Plant
from freeflyer_control.physics.state import State
from freeflyer_control.physics.kernels import rigid_body as K
from freeflyer_control.physics.kernels.arrays import NotCovered, kernel_model
from freeflyer_control.sim.fast.runner import not_covered, run_fast
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.runner import run_simulation
from fast_support import assert_same_run

ROBOTS = robot_names()


def _link(name, m, com, inertia):
    ixx, iyy, izz, ixy, ixz, iyz = inertia
    return (f'<link name="{name}"><inertial><origin xyz="{com}"/><mass value="{m}"/><inertia ixx="{ixx}" '
            f'iyy="{iyy}" izz="{izz}" ixy="{ixy}" ixz="{ixz}" iyz="{iyz}"/></inertial></link>')


def _joint(name, kind, parent, child, xyz, rpy, axis):
    limit = '' if kind == "continuous" else '<limit lower="-2" upper="2" effort="10" velocity="2"/>'
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{limit}</joint>')


# Every 1-DOF joint kind the kernels implement off the coordinate axes (Pinocchio's *Unaligned
# joints), on rotated mounts, with off-axis CoMs and full inertia tensors, on two branches.
EVERY_KIND_URDF = '<robot name="every_kind">' + "".join([
    _link("base_link", 20, "0.05 -0.02 0.01", (2, 2.5, 3, 0.1, -0.05, 0.02)),
    _link("a", 2, "0.1 0.02 0", (0.02, 0.03, 0.04, 0.001, 0, 0.002)),
    _link("b", 1.5, "0 0.1 0.03", (0.01, 0.02, 0.015, 0, 0.001, 0)),
    _link("c", 1, "0.05 0 0.05", (0.01, 0.01, 0.02, 0.002, 0, 0)),
    _link("d", 0.8, "0.02 0.02 0.02", (0.005, 0.006, 0.007, 0, 0, 0.001)),
    _joint("revolute", "revolute", "base_link", "a", "0.3 0.1 0.2", "0.1 -0.2 0.3", "0.6 0.8 0"),
    _joint("prismatic", "prismatic", "a", "b", "0.2 0 0.05", "0 0.4 0", "0 0.6 0.8"),
    _joint("continuous", "continuous", "b", "c", "0 0.25 0", "0.3 0 -0.1", "0.6 0 0.8"),
    _joint("aligned", "revolute", "base_link", "d", "-0.3 0 0.1", "0 0 1.2", "0 0 1"),
]) + "</robot>"
MODELS = ROBOTS + ["every_kind", "spart_7dof"]


def load(name):
    """A bundled robot, the every-joint-kind URDF above, or SPART's 7-DOF URDF (the benchmark
    peer's robot: skipped where the optional spartpy is not installed)."""
    if name == "every_kind":
        from freeflyer_control.model import load_model

        return load_model(EVERY_KIND_URDF, base="spatial", end_effectors=["c"])
    if name == "spart_7dof":
        import logging
        from pathlib import Path

        spart = pytest.importorskip("SPARTpy", reason="SPART's URDF ships with spartpy (pip install .[bench])")
        log = logging.getLogger("freeflyer_control.model.loader")
        level = log.level
        log.setLevel(logging.ERROR)  # its joints have no <limit>: one warning each
        try:
            return load_robot(str(Path(spart.__file__).parent / "urdf" / "floating_7dof_manipulator.urdf"),
                              base="spatial", end_effectors=["Link_EE"])
        finally:
            log.setLevel(level)
    return load_robot(name)


def rel(x, y):
    return np.abs(x - y).max() / np.abs(y).max()


def random_state(ff, rng, speed=0.5):
    m = ff.model
    q = pin.integrate(m, pin.neutral(m), rng.normal(size=m.nv))
    return q, speed * rng.normal(size=m.nv)


def kernel_setup(ff):
    km = kernel_model(ff)
    m = ff.model
    return km, km.arrays(), K.workspace(m.njoints - 1, m.nq, m.nv, ff.nb)


# Kernels and Pinocchio compute the same quantities by the same recursions, in a different order
# of summation: they differ by a few ulps times the conditioning of the inertias (measured: at
# most 2e-14 relative, spatial_6link, whose light wrist makes its mass matrix the worst
# conditioned). 1e-12 leaves room for other states and catches any error of physics, which shows
# at 1e-3 or more.
ROUND_OFF = 1e-12


@pytest.mark.parametrize("name", MODELS)
def test_mass_matrix_bias_and_articulated_body_forward_dynamics_match_pinocchio(name):
    ff = load(name)
    m, data = ff.model, ff.create_data()
    _, km, ws = kernel_setup(ff)
    rng = np.random.default_rng(1)
    for _ in range(10):
        q, v = random_state(ff, rng)
        tau = rng.normal(size=m.nv)
        M, b, a = np.empty((m.nv, m.nv)), np.empty(m.nv), np.empty(m.nv)
        K.mass_and_bias(km, q, v, M, b, ws)
        assert rel(M, mass_matrix(ff, data, q)) < ROUND_OFF
        assert rel(b, pin.nonLinearEffects(m, data, q, v)) < ROUND_OFF
        K.forward_dynamics(km, q, v, tau, a, ws)
        assert rel(a, pin.aba(m, data, q, v, tau)) < ROUND_OFF
        R, p = ws[0], ws[1]
        acc = rng.normal(size=m.nv)
        out = np.empty(m.nv)
        K.forward_kinematics(km, q, R, p)
        K.rnea(km, R, p, v, acc, out, ws)
        assert rel(out, pin.rnea(m, data, q, v, acc)) < ROUND_OFF
        for scale in (1e-4, 1e-2, 1.0):
            dq = scale * rng.normal(size=m.nv)
            qi = np.empty(m.nq)
            K.integrate(km, q, dq, qi)
            assert np.abs(qi - pin.integrate(m, q, dq)).max() < 1e-14


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("base_force", [False, True])
def test_plant_step_matches_python_plant(name, base_force):
    ff = load(name)
    m = ff.model
    km_full, km, ws = kernel_setup(ff)
    rng = np.random.default_rng(2)
    for _ in range(5):
        q, v = random_state(ff, rng)
        tau = rng.normal(size=m.nv)
        if not base_force:
            tau[: ff.nb] = 0.0
        plant = Plant(ff, State(q, v), 1e-3)
        mom = plant.momentum_world.copy()
        expected = plant.step(tau=tau)
        M, b = np.empty((m.nv, m.nv)), np.empty(m.nv)
        K.mass_and_bias(km, q, v, M, b, ws)
        qn, vn, Mn, bn = np.empty(m.nq), np.empty(m.nv), np.empty((m.nv, m.nv)), np.empty(m.nv)
        K.plant_step(km, km_full.planar, ff.nb, q, v, tau, 1e-3, mom, M, b, qn, vn, Mn, bn, ws)
        assert np.abs(qn - expected.q).max() < 1e-12
        assert rel(vn, expected.v) < ROUND_OFF
        assert rel(mom, plant.momentum_world) < ROUND_OFF
        assert rel(ws[14][2], plant.last_acceleration) < ROUND_OFF  # k1 = a(q0, v0)
        assert rel(Mn, mass_matrix(ff, ff.create_data(), qn)) < ROUND_OFF
        assert rel(bn, pin.nonLinearEffects(m, ff.create_data(), qn, vn)) < ROUND_OFF


@pytest.mark.parametrize("name", MODELS)
def test_crba_and_rnea_on_placements_computed_elsewhere_match_pinocchio(name):
    """The resolved-rate reference's route (task_kernels): the placements of another configuration
    in the caller's arrays, then crba / rnea, each building its own base-axes frames from them
    (the workspace holds another state's frames beforehand)."""
    ff = load(name)
    m, data = ff.model, ff.create_data()
    _, km, ws = kernel_setup(ff)
    n = m.njoints - 1
    R, p = np.empty((n, 3, 3)), np.empty((n, 3))
    M, b, tau = np.empty((m.nv, m.nv)), np.empty(m.nv), np.empty(m.nv)
    rng = np.random.default_rng(3)
    for _ in range(10):
        q, v = random_state(ff, rng)
        acc = rng.normal(size=m.nv)
        K.forward_kinematics(km, q, R, p)
        K.mass_and_bias(km, *random_state(ff, rng), M, b, ws)
        K.crba(km, R, p, M, ws)
        assert rel(M, mass_matrix(ff, data, q)) < ROUND_OFF
        K.mass_and_bias(km, *random_state(ff, rng), M, b, ws)
        K.rnea(km, R, p, v, acc, tau, ws)
        assert rel(tau, pin.rnea(m, data, q, v, acc)) < ROUND_OFF


@pytest.mark.parametrize("name", MODELS)
def test_translation_rows_are_the_mass_matrix_base_translation_rows(name):
    """translation_rows (the linear momentum per unit velocity, from composite masses and first
    moments only) fills the upper triangle of M's base-translation rows as Pinocchio's CRBA
    does, from a workspace holding another state's frames; the other rows are left alone."""
    ff = load(name)
    m, data = ff.model, ff.create_data()
    _, km, ws = kernel_setup(ff)
    n = m.njoints - 1
    nt = 3 if ff.base == "spatial" else 2
    upper = np.triu(np.ones((m.nv, m.nv), dtype=bool))[:nt]
    R, p = np.empty((n, 3, 3)), np.empty((n, 3))
    rng = np.random.default_rng(4)
    for _ in range(10):
        q, _ = random_state(ff, rng)
        K.forward_kinematics(km, q, R, p)
        K.mass_and_bias(km, *random_state(ff, rng), np.empty((m.nv, m.nv)), np.empty(m.nv), ws)
        M = np.full((m.nv, m.nv), np.nan)
        K.translation_rows(km, R, p, M, ws)
        expected = mass_matrix(ff, data, q)
        assert rel(M[:nt][upper], expected[:nt][upper]) < ROUND_OFF
        assert np.isnan(M[nt:]).all()


@pytest.mark.parametrize("name", ["spatial_6link", "dual_arm_planar", "every_kind"])
def test_forward_dynamics_leaves_the_forward_kinematics_of_its_configuration_in_the_workspace(name):
    """The kinematics runs inside the articulated-body algorithm's first pass: ws[0], ws[1]
    afterwards are what forward_kinematics gives (the same code: bit for bit)."""
    ff = load(name)
    m = ff.model
    _, km, ws = kernel_setup(ff)
    n = m.njoints - 1
    R, p = np.empty((n, 3, 3)), np.empty((n, 3))
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, v = random_state(ff, rng)
        K.forward_dynamics(km, q, v, rng.normal(size=m.nv), np.empty(m.nv), ws)
        K.forward_kinematics(km, q, R, p)
        np.testing.assert_array_equal(ws[0], R)
        np.testing.assert_array_equal(ws[1], p)


@pytest.mark.parametrize("name", ["spatial_6link", "spatial_dual_arm", "dual_arm_planar"])
def test_forward_dynamics_of_a_base_kilometres_from_the_world_origin_matches_pinocchio_to_round_off(name):
    """The kernels' frames are the base's axes about each joint: no lever arm from the world
    origin enters, so a base 2 km out (a long flying run) costs no digits (in world-frame
    coordinates the inertias would carry terms of m |p|^2 ~ 1e6 kg m^2 that must cancel down to
    the arm's)."""
    ff = load(name)
    m, data = ff.model, ff.create_data()
    _, km, ws = kernel_setup(ff)
    rng = np.random.default_rng(5)
    for _ in range(5):
        q, v = random_state(ff, rng)
        q[:2] = (1500.0, -1300.0)  # both bases store x, y first
        tau = rng.normal(size=m.nv)
        a = np.empty(m.nv)
        K.forward_dynamics(km, q, v, tau, a, ws)
        assert rel(a, pin.aba(m, data, q, v, tau)) < ROUND_OFF


@pytest.mark.parametrize("name, extra", [
    ("spatial_6link", {}),
    ("planar_4link", {}),
    ("dual_arm_planar", {"mass_error": 0.1, "plant_substeps": 2, "rate": 500.0}),
    ("spatial_7dof", {"maneuver": "station-keeping", "log_rate": 30.0}),
])
def test_closed_loop_matches_python_path(name, extra):
    """2 s of the lockstep simulation: every logged series and summary figure equal to the
    Python path's."""
    assert_same_run(SimConfig(robot=name, mode="floating", maneuver=extra.pop("maneuver", "wilde"),
                              duration=2.0, rate=extra.pop("rate", 1000.0), **extra))


def test_configurations_outside_the_compiled_path_are_refused():
    assert not_covered(SimConfig(mode="floating", maneuver="wilde")) is None
    assert not_covered(SimConfig(mode="flying", controller="impedance", maneuver="ee-point")) is not None
    assert not_covered(SimConfig(mode="floating", controller="impedance", maneuver="ee-contact")) is not None
    with pytest.raises(NotCovered):
        run_fast(SimConfig(mode="floating", maneuver="ee-circle", controller="impedance"))


# ---------------------------------------------------------------------------------------------
# Allocation: nothing sized by the run before its size is checked, no array of every tick

@pytest.mark.parametrize("n_ticks, log_every", [(0, 1), (10, 3), (12, 3), (1, 5), (997, 7), (1000, 1)])
def test_logged_ticks_are_every_log_every_th_and_the_last_as_the_python_loop_logs(n_ticks, log_every):
    from freeflyer_control.sim.fast.runner import _logged_ticks
    from freeflyer_control.sim.limits import log_samples

    ticks = np.arange(n_ticks + 1)
    np.testing.assert_array_equal(_logged_ticks(n_ticks, log_every),
                                  ticks[(ticks % log_every == 0) | (ticks == n_ticks)])
    rate = 100.0
    assert log_samples(n_ticks / rate, rate, rate / log_every) == _logged_ticks(n_ticks, log_every).size


def test_logged_ticks_of_a_trillion_tick_run_cost_only_the_logged_rows():
    from freeflyer_control.sim.fast.runner import _logged_ticks

    logged = _logged_ticks(10**12, 10**7)  # an array of all ticks would be 8 TB
    assert logged.size == 10**5 + 1 and logged[-1] == 10**12


def test_compiled_run_of_a_billion_seconds_is_refused_before_allocating():
    with pytest.raises(ValueError, match=r"duration 1e\+09 s at rate 250 Hz x plant_substeps 1 is "
                                         r"2.5e\+11 plant steps, above the limit of 1e\+08"):
        run_simulation(SimConfig(duration=1e9), fast=True)
