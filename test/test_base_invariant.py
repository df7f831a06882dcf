"""Doc 004 (Jain & Rodriguez): the base-invariant sweeps reproduce Pinocchio (DIGEST §6.5).

Every claim is checked on all bundled robots: two planar ones (one of them a tree, two arms on
one base) and two spatial ones (both trees: an arm and reaction wheels on the base), at random
states with every velocity non-zero.

Tolerances. Pinocchio's ABA and the two sweeps are different orderings of O(n) products of 6x6
matrices, so they agree to a few hundred ulps of the result's magnitude; the worst measured
relative differences over these seeds are 2e-13 (accelerations) and 9e-13 (the S-side hinge
accelerations, which divide by the base side's inertia about one wheel axis, ~1e3 times the
wheel's own). The bound 1e-11 relative keeps a 10x margin and still catches any wrong term:
a missing Coriolis or gyroscopic term changes the result by ~1e-2 relative.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from conftest import BUNDLED_ROBOTS, random_state, robot

from freeflyer_control.physics.base_invariant.dynamics import two_sweep_forward_dynamics
from freeflyer_control.physics.base_invariant.spatial import PLANAR, SWAP, matrix_from_pinocchio
from freeflyer_control.physics.base_invariant.sweeps import (
    inverse_osi_all_links, osi_all_links, p_sweep,
)
from freeflyer_control.physics.base_invariant.tree import build_tree
from freeflyer_control.physics.dynamics import mass_matrix

REL = 1e-11
SEEDS = (0, 1, 2)


def _states(ff, seed):
    rng = np.random.default_rng(seed)
    state = random_state(ff, rng, joint_rate=1.0, base_speed=0.3, base_rate=0.5)
    tau = rng.uniform(-1.0, 1.0, ff.model.nv)
    return state, tau, rng


def _rel(x, ref):
    return np.abs(np.asarray(x) - ref).max() / max(np.abs(ref).max(), 1e-300)


def _paper_jacobian(ff, data, k):
    """Body k's Jacobian at O_k in the paper's order (angular first, world axes); planar rows
    (omega_z, v_x, v_y). Needs computeJointJacobians first."""
    J = pin.getJointJacobian(ff.model, data, k, pin.LOCAL_WORLD_ALIGNED)[SWAP]
    return J[PLANAR] if ff.base == "planar" else J


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_two_sweep_accelerations_equal_aba_with_zero_base_wrench(name, seed):
    ff = robot(name)
    state, tau, _ = _states(ff, seed)
    tau[: ff.nb] = 0.0  # floating: nothing pushes on the base
    ref = pin.aba(ff.model, ff.create_data(), state.q, state.v, tau)
    got = two_sweep_forward_dynamics(ff, ff.create_data(), state.q, state.v, tau)
    assert _rel(got.ddq, ref) < REL


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_two_sweep_accelerations_equal_aba_with_nonzero_base_wrench(name, seed):
    ff = robot(name)
    state, tau, rng = _states(ff, seed)
    tau[: ff.nb] = rng.uniform(-20.0, 20.0, ff.nb)  # thrusters: T(n) != 0, momentum not conserved
    ref = pin.aba(ff.model, ff.create_data(), state.q, state.v, tau)
    got = two_sweep_forward_dynamics(ff, ff.create_data(), state.q, state.v, tau)
    assert _rel(got.ddq, ref) < REL


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_lemma_3_2_link_accelerations_equal_pinocchio_at_every_body(name):
    ff = robot(name)
    state, tau, _ = _states(ff, 3)
    model, data = ff.model, ff.create_data()
    got = two_sweep_forward_dynamics(ff, ff.create_data(), state.q, state.v, tau)
    ddq = pin.aba(model, data, state.q, state.v, tau)
    pin.forwardKinematics(model, data, state.q, state.v, ddq)
    for k in range(1, model.njoints):
        R = data.oMi[k].rotation
        w, v, dw, dv = data.v[k].angular, data.v[k].linear, data.a[k].angular, data.a[k].linear
        # Pinocchio's spatial acceleration -> classical acceleration of the joint origin.
        ref = np.concatenate([R @ dw, R @ (dv + np.cross(w, v))])
        ref = ref[PLANAR] if ff.base == "planar" else ref
        assert _rel(got.alpha[k], ref) < REL, model.names[k]


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_eq_3_13_hinge_accelerations_from_either_side_agree(name, seed):
    ff = robot(name)
    state, tau, _ = _states(ff, seed)
    got = two_sweep_forward_dynamics(ff, ff.create_data(), state.q, state.v, tau)
    scale = np.abs(got.ddq).max()
    assert np.abs(got.hinge_from_p - got.hinge_from_s).max() < REL * scale


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_lambda_of_base_is_the_root_articulated_inertia_after_aba(name):
    """T004-4: Lambda(base) = P(base) = Pinocchio's Yaba of the root after ``aba``. Pinocchio
    also leaves every other body's Yaba[k] holding the projected P+(k) = tau_bar(k) P(k),
    which checks Alg. 2 at every body."""
    ff = robot(name)
    state, tau, _ = _states(ff, 4)
    model, data = ff.model, ff.create_data()
    pin.aba(model, data, state.q, state.v, tau)  # LOCAL convention: Yaba in joint frames
    pin.forwardKinematics(model, data, state.q)  # aba (LOCAL) leaves oMi untouched
    tree = build_tree(ff, ff.create_data(), state.q)
    lam = osi_all_links(tree)
    ps = p_sweep(tree)
    for k in range(1, model.njoints):
        ref = matrix_from_pinocchio(data.oMi[k].rotation, data.Yaba[k])
        ref = ref[np.ix_(PLANAR, PLANAR)] if ff.base == "planar" else ref
        mine = lam[1] if k == 1 else ps.inertia_plus[k]
        assert _rel(mine, ref) < REL, model.names[k]
    assert _rel(lam[1], ps.inertia[1]) < REL  # S(base) = 0


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_alg8_lambda_equals_inverse_of_j_minv_jt_at_every_link(name, seed):
    """T004-5 (Lemma 4.1): P(k) + S(k) = (J_k M^-1 J_k^T)^-1, and Eq. 4.7's Upsilon(k) is its
    inverse, for every body."""
    ff = robot(name)
    state, _, _ = _states(ff, seed)
    data = ff.create_data()
    M_inv = np.linalg.inv(mass_matrix(ff, data, state.q))
    pin.computeJointJacobians(ff.model, data, state.q)
    tree = build_tree(ff, ff.create_data(), state.q)
    lam = osi_all_links(tree)
    upsilon = inverse_osi_all_links(tree, np.eye(tree.dim))
    for k in range(1, ff.model.njoints):
        J = _paper_jacobian(ff, data, k)
        inv_ref = J @ M_inv @ J.T
        assert _rel(upsilon[k], inv_ref) < REL, ff.model.names[k]
        assert _rel(lam[k], np.linalg.inv(inv_ref)) < REL, ff.model.names[k]


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_free_flying_upsilon_is_positive_definite_at_every_link(name):
    """T004-7: every link of a free-flying robot can be pushed in every direction, even with
    the arm stretched straight (a kinematic singularity of the fixed-base arm)."""
    ff = robot(name)
    for q in (pin.neutral(ff.model), random_state(ff, np.random.default_rng(5)).q):
        upsilon = inverse_osi_all_links(build_tree(ff, ff.create_data(), q), np.eye(3 if ff.base == "planar" else 6))
        for k in range(1, ff.model.njoints):
            eig = np.linalg.eigvalsh(upsilon[k])
            # eigenvalues are >= 1/(largest inertia) ~ 1e-4 here; 1e-9 x the largest is far below
            assert eig[0] > 1e-9 * eig[-1], (ff.model.names[k], eig)


def test_fixed_base_upsilon_rank_is_the_number_of_joints_down_to_the_ground():
    """T004-7, fixed base: rank Upsilon(k) = min(6, joints between link k and the ground), so
    the first five arm links of spatial_7dof (counted from the base) have a singular Lambda."""
    ff = robot("spatial_7dof")
    q = random_state(ff, np.random.default_rng(6)).q  # generic: no accidental rank loss
    tree = build_tree(ff, ff.create_data(), q)
    upsilon = inverse_osi_all_links(tree, np.zeros((6, 0)))  # every base direction held
    ranks = {}
    for k in range(1, ff.model.njoints):
        depth = len([j for j in ff.model.supports[k] if j > 1])
        s = np.linalg.svd(upsilon[k], compute_uv=False)
        rank = int(np.sum(s > 1e-9 * max(s[0], 1e-300)))
        ranks[ff.model.names[k]] = rank
        assert rank == min(6, depth), (ff.model.names[k], s)
    assert [ranks[f"joint{j}"] for j in range(1, 8)] == [1, 2, 3, 4, 5, 6, 6]


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_alg8_referred_to_one_common_point_equals_the_per_link_frames(name):
    """The recursions hold for any body points; referring every body to the world origin
    (all phi = I, the fast path) and moving Lambda(k) to O_k afterwards changes nothing."""
    ff = robot(name)
    q = random_state(ff, np.random.default_rng(7)).q
    per_link = build_tree(ff, ff.create_data(), q)
    common = build_tree(ff, ff.create_data(), q, common_point=True)
    assert _rel(osi_all_links(common)[1:], osi_all_links(per_link)[1:]) < REL
    for free in (np.eye(per_link.dim), np.eye(per_link.dim)[:, :1], np.zeros((per_link.dim, 0))):
        assert _rel(inverse_osi_all_links(common, free)[1:],
                    inverse_osi_all_links(per_link, free)[1:]) < REL


SLIDER_URDF = """<robot name="slider">
  <link name="base_link"><inertial><mass value="10"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="rail"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="slide" type="prismatic"><parent link="base_link"/><child link="rail"/>
    <axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
</robot>"""


def test_a_prismatic_joint_is_refused_by_name():
    from freeflyer_control.errors import ModelError
    from freeflyer_control.model import load_model

    ff = load_model(SLIDER_URDF, base="spatial")
    with pytest.raises(ModelError) as err:
        build_tree(ff, ff.create_data(), pin.neutral(ff.model))
    assert str(err.value) == (
        "joint 'slide' of robot 'slider' is not a revolute joint; the base-invariant "
        "(Jain-Rodriguez) module handles revolute arm joints only")


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
def test_compiled_alg8_equals_the_numpy_sweeps(name):
    pytest.importorskip("numba", reason="the compiled Alg. 8 needs numba (pip install .[fast])")
    ff = robot(name)
    q = random_state(ff, np.random.default_rng(8)).q
    tree = build_tree(ff, ff.create_data(), q, common_point=True)
    assert _rel(osi_all_links(tree, compiled=True)[1:], osi_all_links(tree)[1:]) < REL
