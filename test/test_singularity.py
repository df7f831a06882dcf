"""Singularity measures block by block, and the damped least squares resolved rate solves with.

The case the blocks exist for: a planar 2-link free-flyer has a tall 3 x 2 GJM (vx, vy, wz). At
a dynamic singularity its position block (vx, vy) loses rank while the whole matrix keeps two
healthy singular values through the wz row.
"""

from __future__ import annotations

import logging
import numpy as np
import pinocchio as pin
import pytest

from conftest import random_state, robot, two_link_dynamic_singularity, two_link_planar_robot
from freeflyer_control.control.references import TaskReference
from freeflyer_control.control.resolved_rate import (
    ResolvedRate,
    damped_least_squares,
    uncontrollable_message,
)
from freeflyer_control.physics.gjm import generalized_jacobian
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.singularity import (
    SIGMA_NEAR,
    block_measures,
    row_blocks,
    singularity_measures,
    singularity_warning,
    thin_svd,
)
from freeflyer_control.physics.state import make_state
from freeflyer_control.runtime.gjm_server import BLOCK_MEASURES, GjmServer

SHAPES = [(2, 5), (3, 4), (4, 4), (6, 6), (4, 3), (3, 2), (6, 4)]  # wide, square, tall


def singular_state():
    ff = two_link_planar_robot()
    q1, q2 = two_link_dynamic_singularity()
    return ff, make_state(ff, joint_positions={"joint1": q1, "joint2": q2})


# ---------------------------------------------------------------------------------------------
# Damped least squares


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("lam2", [1e-4, 1e-2, 0.3])
def test_dls_equals_the_svd_formula_and_the_normal_equations_of_its_shape(shape, lam2):
    rng = np.random.default_rng([*shape, int(lam2 * 1e4)])
    for _ in range(20):
        J, b = rng.normal(size=shape), rng.normal(size=shape[0])
        x = damped_least_squares(thin_svd(J), b, lam2)
        # The SVD formula from numpy's full SVD (an independent factorisation).
        U, s, Vt = np.linalg.svd(J)
        k = s.size
        x_svd = Vt[:k].T @ (s / (s**2 + lam2) * (U[:, :k].T @ b))
        m, n = shape
        if m <= n:  # wide or square: J^T (J J^T + l^2 I)^-1 b
            x_normal = J.T @ np.linalg.solve(J @ J.T + lam2 * np.eye(m), b)
        else:  # tall: (J^T J + l^2 I)^-1 J^T b
            x_normal = np.linalg.solve(J.T @ J + lam2 * np.eye(n), J.T @ b)
        # Round-off: the normal equations square the condition number, at most
        # (s_max^2 + l^2) / l^2 ~ 1e5 here, so 1e-9 relative leaves two decades of margin.
        np.testing.assert_allclose(x, x_svd, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(x, x_normal, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_dls_tends_to_the_pseudo_inverse_as_lambda_goes_to_zero(shape):
    rng = np.random.default_rng(7 + shape[0] * 10 + shape[1])
    J, b = rng.normal(size=shape), rng.normal(size=shape[0])
    svd = thin_svd(J)
    x_pinv = np.linalg.pinv(J) @ b
    smin = svd[1][-1]
    errors = []
    for lam in (1e-1, 1e-2, 1e-3, 1e-4, 1e-5):
        err = np.linalg.norm(damped_least_squares(svd, b, lam**2) - x_pinv)
        # |x_l - x_0| = sum_i l^2 / (s_i (s_i^2 + l^2)) |u_i . b| <= l^2 |b| / s_min^3.
        assert err <= lam**2 * np.linalg.norm(b) / smin**3 + 1e-12
        errors.append(err)
    assert all(a > b for a, b in zip(errors, errors[1:])), errors
    np.testing.assert_allclose(damped_least_squares(svd, b, 0.0), x_pinv, rtol=1e-10, atol=1e-12)


def test_undamped_dls_of_a_rank_deficient_tall_matrix_is_the_minimum_norm_least_squares_solution():
    rng = np.random.default_rng(3)
    J = rng.normal(size=(5, 1)) @ rng.normal(size=(1, 3))  # 5 x 3 of rank 1
    b = rng.normal(size=5)
    x = damped_least_squares(thin_svd(J), b, 0.0)
    x_lstsq = np.linalg.lstsq(J, b, rcond=None)[0]  # numpy's minimum-norm least squares
    np.testing.assert_allclose(x, x_lstsq, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Block measures


def test_rows_split_into_translational_rotational_and_full():
    assert row_blocks(("vx", "vy", "wz")) == {"translational": (0, 1), "rotational": (2,), "full": (0, 1, 2)}
    spatial = row_blocks(("vx", "vy", "vz", "wx", "wy", "wz"))
    assert spatial["translational"] == (0, 1, 2) and spatial["rotational"] == (3, 4, 5)
    with pytest.raises(ValueError, match="v\\* .*w\\*"):
        row_blocks(("vx", "q1"))


def test_two_link_dynamic_singularity_is_singular_in_translation_and_well_conditioned_in_full():
    ff, state = singular_state()
    G = generalized_jacobian(ff, ff.create_data(), state, Mode.FLOATING, "ee_link")
    assert G.matrix.shape == (3, 2)
    blocks = block_measures(G.matrix, G.row_names)
    t, r, full = blocks["translational"], blocks["rotational"], blocks["full"]
    assert t.rows == ("vx", "vy") and r.rows == ("wz",) and full.rows == ("vx", "vy", "wz")
    # Brent's root is within 1e-15 rad of det = 0 and the entries are O(0.1-1), so sigma_min of
    # the 2 x 2 block is round-off: 1e-12 leaves three decades.
    assert t.measures.sigma_min < 1e-12 and t.measures.rank == 1
    assert t.measures.condition_number > 1e10
    # The whole matrix hides it: both singular values above 5x the 0.02 threshold (0.104, cond 7.3).
    assert full.measures.sigma_min > 0.1 and full.measures.rank == 2
    assert full.measures.condition_number < 10
    assert r.measures.rank == 1 and r.measures.sigma_min == pytest.approx(np.linalg.norm(G.matrix[2]))
    line = singularity_warning("ee_link", blocks)
    assert line.startswith("'ee_link' is near a dynamic singularity: translational block (vx, vy) sigma_min")
    assert f"< threshold {SIGMA_NEAR:g}" in line and "full matrix" in line and "\n" not in line


def test_row_blocks_of_a_wide_full_rank_matrix_are_never_worse_than_the_whole():
    """Why only tall matrices hide a singular block (interlacing of singular values)."""
    rng = np.random.default_rng(11)
    for shape in [(3, 4), (6, 7), (3, 3), (6, 6)]:
        for _ in range(50):
            J = rng.normal(size=shape)
            rows = ("vx", "vy", "wz") if shape[0] == 3 else ("vx", "vy", "vz", "wx", "wy", "wz")
            b = block_measures(J, rows)
            for name in ("translational", "rotational"):
                assert b[name].measures.sigma_min >= b["full"].measures.sigma_min * (1 - 1e-12)


def test_bundled_robots_blocks_match_direct_svds_of_their_rows(bundled):
    state = random_state(bundled, np.random.default_rng(5))
    G = generalized_jacobian(bundled, bundled.create_data(), state, Mode.FLOATING, bundled.end_effectors[0])
    blocks = block_measures(G.matrix, G.row_names)
    n_lin = 2 if bundled.base == "planar" else 3
    for name, rows in (("translational", G.matrix[:n_lin]), ("rotational", G.matrix[n_lin:]), ("full", G.matrix)):
        assert blocks[name].measures == singularity_measures(rows)


# ---------------------------------------------------------------------------------------------
# The GJM server (gjm_node)


def test_gjm_server_publishes_the_blocks_and_warns_on_the_singular_translational_block():
    ff, state = singular_state()
    server = GjmServer(ff)
    out = server.compute(state)["ee_link"]
    assert out.blocks_array.dims == (("translational,rotational,full", 3, 12), (",".join(BLOCK_MEASURES), 4, 4))
    table = np.array(out.blocks_array.data).reshape(3, 4)
    assert table[0, 0] < 1e-12 and table[0, 3] == 1  # translational: sigma_min, rank
    assert table[2, 0] == out.measures.sigma_min > 0.1 and table[2, 3] == 2
    assert out.measures == out.blocks["full"].measures  # /gjm/<frame>/singularity unchanged

    status = server.singularity_status({"ee_link": out})
    assert status.level == "warn" and status.announce
    assert "'ee_link'" in status.message and "translational block (vx, vy)" in status.message
    assert status.values["ee_link near_singular"] == "translational"
    assert float(status.values["ee_link translational sigma_min"]) < 1e-12
    assert not server.singularity_status({"ee_link": out}).announce, "logged once per approach"

    away = make_state(ff, joint_positions={"joint1": 0.3, "joint2": 1.0})
    healthy = server.singularity_status(server.compute(away))
    assert healthy.level == "ok" and not healthy.announce
    assert healthy.values["ee_link near_singular"] == ""
    assert server.singularity_status(server.compute(state)).announce, "a new approach is logged again"


def test_gjm_server_waits_without_a_state_and_refuses_a_bad_threshold():
    ff = two_link_planar_robot()
    status = GjmServer(ff).singularity_status({})
    assert status.level == "warn" and "waiting" in status.message
    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="sigma_warn must be a finite number >= 0"):
            GjmServer(ff, sigma_warn=bad)


# ---------------------------------------------------------------------------------------------
# Resolved rate: the block the damping follows, tall tasks


def _target(ff, state, orientation: bool) -> TaskReference:
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, state.q)
    pose = data.oMf[ff.frame_id("ee_link")]
    quat = pin.Quaternion(pose.rotation).coeffs().copy() if orientation else None
    # 5 cm further out along the arm: the direction the singular translational block lacks.
    return TaskReference("ee_link", pose.translation + np.array([0.05, 0.0, 0.0]), quat, np.zeros(3), np.zeros(3))


def test_resolved_rate_damping_follows_the_block_of_the_commanded_rows():
    ff, state = singular_state()
    G = generalized_jacobian(ff, ff.create_data(), state, Mode.FLOATING, "ee_link")
    blocks = block_measures(G.matrix, G.row_names)
    rr = ResolvedRate(ff)
    position_only = rr.joint_rates(state, Mode.FLOATING, [_target(ff, state, orientation=False)])
    assert position_only.task_rows == (("ee_link", "vx"), ("ee_link", "vy"))
    assert position_only.sigma_min == pytest.approx(blocks["translational"].measures.sigma_min, abs=1e-12)
    assert position_only.damping == pytest.approx(rr.gains.lambda_max**2, rel=1e-9)  # sigma ~ 0: full damping
    assert np.all(np.isfinite(position_only.joint_rates))
    full_pose = rr.joint_rates(state, Mode.FLOATING, [_target(ff, state, orientation=True)])
    assert [r for _, r in full_pose.task_rows] == ["vx", "vy", "wz"]
    assert full_pose.sigma_min == pytest.approx(blocks["full"].measures.sigma_min, rel=1e-12)
    assert full_pose.damping == 0.0  # the full rows are well conditioned: no damping needed
    # Undamped least squares on the 3 x 2 task: J qdot is the projection of the command.
    assert np.all(np.isfinite(full_pose.joint_rates))


def test_a_tall_task_warns_once_per_controller_naming_the_lost_direction(package_log):
    ff = two_link_planar_robot()
    state = make_state(ff, joint_positions={"joint1": 0.3, "joint2": 1.0})
    rr = ResolvedRate(ff)
    with package_log.at_level(logging.DEBUG, "freeflyer_control.control.resolved_rate"):
        for _ in range(5):
            rr.joint_rates(state, Mode.FLOATING, [_target(ff, state, orientation=True)])
    assert package_log.messages == rr.warnings
    assert package_log.records[0].levelname == "WARNING"
    assert rr.warnings == ["ee_link: 3 task rows (vx, vy, wz), 2 joints (joint1, joint2): wz cannot be controlled "
                           "independently; tracked in the least-squares sense (a position-only target "
                           "is tracked without this compromise)"]
    rr.joint_rates(state, Mode.FLOATING, [_target(ff, state, orientation=False)])  # 2 x 2: square
    assert len(rr.warnings) == 1


def test_uncontrollable_message_names_orientation_rows_first_and_counts_when_fewer_are_lost():
    spatial = [("tool", r) for r in ("vx", "vy", "vz", "wx", "wy", "wz")]
    msg = uncontrollable_message(spatial, ["a", "b", "c", "d"])
    assert msg.startswith("tool: 6 task rows (vx, vy, vz, wx, wy, wz), 4 joints (a, b, c, d): "
                          "2 of wx, wy, wz cannot be controlled independently")
    two = [(f, r) for f in ("left", "right") for r in ("vx", "vy", "wz")]
    msg = uncontrollable_message(two, ["j1", "j2", "j3", "j4"])
    assert msg.startswith("left + right: 6 task rows (left vx, left vy, left wz, right vx, right vy, "
                          "right wz), 4 joints (j1, j2, j3, j4): left wz, right wz cannot be controlled")
    position = [("tip", r) for r in ("vx", "vy", "vz")]
    msg = uncontrollable_message(position, ["j1", "j2"])
    assert "1 of vx, vy, vz cannot be controlled" in msg and "position-only" not in msg


def test_spatial_6link_tick_is_unchanged_by_the_svd_solve():
    """Square 6 x 6 and wide tasks: the SVD solve equals the old J^T (J J^T + l^2 I)^-1 rhs."""
    ff = robot("spatial_6link")
    state = make_state(ff, joint_positions=ff.ready_pose)
    rr = ResolvedRate(ff)
    res = rr.joint_rates(state, Mode.FLOATING, [_spatial_target(ff, state)])
    G = generalized_jacobian(ff, ff.create_data(), state, Mode.FLOATING, "ee_link")
    J = G.matrix[:, :6]
    err = res.task_error
    rhs = err * 1.0 - G.drift  # gains 1/s, zero feed-forward
    expected = J.T @ np.linalg.solve(J @ J.T + res.damping * np.eye(6), rhs)
    assert not res.limited  # a 2 cm error asks for rates far below the 0.5 rad/s limit
    np.testing.assert_allclose(res.joint_rates, expected, rtol=1e-9, atol=1e-12)
    assert rr.warnings == []


def _spatial_target(ff, state) -> TaskReference:
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, state.q)
    pose = data.oMf[ff.frame_id("ee_link")]
    return TaskReference("ee_link", pose.translation + np.array([0.0, 0.02, -0.01]),
                         pin.Quaternion(pose.rotation).coeffs().copy(), np.zeros(3), np.zeros(3))
