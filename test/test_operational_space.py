"""The operational-space inertia Lambda of a point, in each mode, and ``freeflyer osi``.

Lambda is checked three ways: the paper's sweeps (Alg. 8 / Eq. 4.7) against the Pinocchio
route (J_u M_uu^-1 J_u^T) at every link in every mode; and, physically, by pushing on the point
in a Pinocchio simulation (ABA with an external force, at rest): the point's acceleration must
be Lambda^-1 W, with the base free (floating) or welded to the world (flying, a fixed-base model
built from the same URDF).
"""

from __future__ import annotations

import json

import numpy as np
import pinocchio as pin
import pytest
from conftest import BUNDLED_ROBOTS, random_state, robot

from freeflyer_control.cli.main import main
from freeflyer_control.errors import ModelError
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.operational_space import operational_space_inertia, osi_all_links
from freeflyer_control.physics.state import make_state

# Both routes and ABA agree to ~1e-14 relative on Lambda^-1 (measured worst 2e-13); 1e-11
# leaves margin. Lambda itself is compared relative to ||Lambda|| times its condition number,
# since inverting a near-singular Lambda^-1 amplifies round-off by that much.
REL = 1e-11


def _rel(x, ref):
    return np.abs(x - ref).max() / max(np.abs(ref).max(), 1e-300)


@pytest.mark.parametrize("name", BUNDLED_ROBOTS)
@pytest.mark.parametrize("mode", list(Mode))
def test_paper_sweeps_and_pinocchio_route_give_the_same_lambda_at_every_link(name, mode):
    ff = robot(name)
    q = random_state(ff, np.random.default_rng(10)).q
    swept = osi_all_links(ff, ff.create_data(), q, mode)
    assert len(swept) == ff.model.njoints - 1  # every body, by its link name
    for link, osi in swept.items():
        ref = operational_space_inertia(ff, ff.create_data(), q, mode, link)
        assert osi.rank == ref.rank, link
        if not np.any(ref.inverse):  # a body held in every direction (flying base): 0 both ways
            assert not np.any(np.abs(osi.inverse) > 1e-12), link
            continue
        assert _rel(osi.inverse, ref.inverse) < REL, link
        if not ref.singular:
            cond = np.linalg.cond(ref.inverse)
            assert _rel(osi.matrix, ref.matrix) < REL * cond, link


def _pushed_acceleration(model, q, joint, placement_world, wrench_world, frame_id):
    """Acceleration [a; alpha] (world axes) of frame ``frame_id`` at rest under the wrench
    [force; moment about the frame origin] (world axes) applied at that origin."""
    data = model.createData()
    pin.forwardKinematics(model, data, q)
    pin.updateFramePlacements(model, data)
    oMi = data.oMi[joint]
    f, m = wrench_world[:3], wrench_world[3:]
    lever = placement_world.translation - oMi.translation
    fext = [pin.Force.Zero() for _ in range(model.njoints)]
    R = oMi.rotation
    fext[joint] = pin.Force(R.T @ f, R.T @ (m + np.cross(lever, f)))  # local, about the joint
    ddq = pin.aba(model, data, q, np.zeros(model.nv), np.zeros(model.nv), fext)
    pin.forwardKinematics(model, data, q, np.zeros(model.nv), ddq)
    pin.updateFramePlacements(model, data)
    return pin.getFrameAcceleration(model, data, frame_id, pin.LOCAL_WORLD_ALIGNED).vector


@pytest.mark.parametrize("name", ("spatial_7dof", "spatial_6link"))
def test_floating_lambda_inverse_gives_the_acceleration_of_a_pushed_end_effector(name):
    ff = robot(name)
    rng = np.random.default_rng(11)
    q = random_state(ff, rng).q
    ee = ff.end_effectors[0]
    osi = operational_space_inertia(ff, ff.create_data(), q, Mode.FLOATING, ee)
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, q)
    fid = ff.model.getFrameId(ee)
    wrench = rng.uniform(-5.0, 5.0, 6)
    acc = _pushed_acceleration(ff.model, q, ff.model.frames[fid].parentJoint, data.oMf[fid], wrench, fid)
    assert _rel(osi.inverse @ wrench, acc) < REL


def test_flying_lambda_is_the_inertia_of_the_arm_on_a_welded_base():
    """Flying mode holds every base coordinate: the end-effector pushes like a fixed-base arm's.
    The fixed-base model is the same URDF loaded without a floating joint."""
    ff = robot("spatial_7dof")
    rng = np.random.default_rng(12)
    state = make_state(ff, joint_positions=rng.uniform(-1.0, 1.0, ff.nj))  # base at the origin
    osi = operational_space_inertia(ff, ff.create_data(), state.q, Mode.FLYING, "ee_link")
    fixed = pin.buildModelFromXML(ff.urdf_xml)
    fixed.gravity.setZero()
    q_fixed = state.q[7:]  # same joints, same order, after the 7 free-flyer coordinates
    data = fixed.createData()
    pin.framesForwardKinematics(fixed, data, q_fixed)
    fid = fixed.getFrameId("ee_link")
    wrench = rng.uniform(-5.0, 5.0, 6)
    acc = _pushed_acceleration(fixed, q_fixed, fixed.frames[fid].parentJoint, data.oMf[fid], wrench, fid)
    assert _rel(osi.matrix @ acc, wrench) < REL * np.linalg.cond(osi.matrix)


def test_point_on_a_link_is_pushed_like_lambda_of_that_point_says():
    ff = robot("spatial_7dof")
    rng = np.random.default_rng(13)
    q = random_state(ff, rng).q
    point = np.array([0.05, -0.02, 0.03])  # in link5's axes, m
    osi = operational_space_inertia(ff, ff.create_data(), q, Mode.FLOATING, "link5", point)
    at_origin = operational_space_inertia(ff, ff.create_data(), q, Mode.FLOATING, "link5")
    assert _rel(osi.inverse, at_origin.inverse) > 1e-3  # the point matters
    model = ff.model.copy()  # a frame at the point, to read its acceleration back
    parent = model.frames[model.getFrameId("link5")]
    placement = parent.placement * pin.SE3(np.eye(3), point)
    fid = model.addFrame(pin.Frame("probe", parent.parentJoint, placement, pin.FrameType.OP_FRAME))
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    wrench = rng.uniform(-5.0, 5.0, 6)
    acc = _pushed_acceleration(model, q, parent.parentJoint, data.oMf[fid], wrench, fid)
    assert _rel(osi.inverse @ wrench, acc) < REL


def test_stretched_arm_in_flying_mode_has_a_singular_lambda_that_is_not_inverted():
    ff = robot("planar_4link")
    q = make_state(ff).q  # all joints at 0: the arm is a straight line from the base
    osi = operational_space_inertia(ff, ff.create_data(), q, Mode.FLYING, "ee_link")
    assert osi.singular and osi.matrix is None
    assert osi.rank == 2  # no acceleration along the arm: only vy and wz remain
    assert np.allclose(osi.inverse[0], 0.0)
    floating = operational_space_inertia(ff, ff.create_data(), q, Mode.FLOATING, "ee_link")
    assert not floating.singular  # the free base moves along the arm


def test_base_link_held_in_every_direction_has_rank_zero():
    ff = robot("spatial_6link")
    osi = operational_space_inertia(ff, ff.create_data(), make_state(ff).q, Mode.FLYING, "base_link")
    assert osi.singular and osi.rank == 0


def test_lambda_of_an_unknown_frame_names_the_links():
    ff = robot("planar_4link")
    with pytest.raises(ModelError, match="unknown frame 'gripper' in robot 'planar_4link'; links:"):
        operational_space_inertia(ff, ff.create_data(), make_state(ff).q, Mode.FLOATING, "gripper")


def test_non_finite_configuration_is_refused():
    ff = robot("planar_4link")
    q = make_state(ff).q
    q[4] = np.nan
    with pytest.raises(ValueError, match="q has non-finite entries"):
        operational_space_inertia(ff, ff.create_data(), q, Mode.FLOATING, "ee_link")


# ---------------------------------------------------------------------------------------------
# freeflyer osi


def _run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_osi_json_of_spatial_7dof_matches_the_library(capsys):
    rc, out, err = _run(capsys, "osi", "--robot", "spatial_7dof", "--mode", "rotation-floating",
                        "--frame", "ee_link", "--q", '{"joint2": -0.6, "joint4": 1.2}', "--json")
    assert rc == 0 and err == ""
    doc = json.loads(out)
    assert {"mode", "frame", "root", "rows", "matrix"} <= set(doc)
    assert (doc["mode"], doc["frame"], doc["root"]) == ("rotation-floating", "ee_link", "base_link")
    assert doc["rows"] == ["vx", "vy", "vz", "wx", "wy", "wz"]
    ff = robot("spatial_7dof")
    q = make_state(ff, joint_positions={"joint2": -0.6, "joint4": 1.2}).q
    ref = operational_space_inertia(ff, ff.create_data(), q, "rotation-floating", "ee_link")
    assert np.allclose(doc["matrix"], ref.matrix, rtol=1e-12, atol=0)


def test_osi_planar_rows_are_vx_vy_wz(capsys):
    rc, out, _ = _run(capsys, "osi", "--robot", "dual_arm_planar", "--frame", "right_ee_link", "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["rows"] == ["vx", "vy", "wz"] and np.shape(doc["matrix"]) == (3, 3)


def test_osi_of_a_singular_frame_exits_1_and_prints_lambda_inverse(capsys):
    rc, out, err = _run(capsys, "osi", "--robot", "planar_4link", "--mode", "flying",
                        "--q", "[0, 0, 0, 0]", "--json")
    assert rc == 1
    assert err.strip() == (
        "freeflyer osi: Lambda of 'ee_link' in flying mode is singular (Lambda^-1 has rank 2 "
        "of 3: a kinematic singularity); not inverted, Lambda^-1 printed instead")
    doc = json.loads(out)
    assert doc["matrix"] is None and doc["singular"] and doc["rank"] == 2


def test_osi_of_an_unknown_frame_exits_2(capsys):
    rc, out, err = _run(capsys, "osi", "--robot", "planar_4link", "--frame", "gripper")
    assert rc == 2 and out == ""
    assert err.startswith("freeflyer osi: error: unknown frame 'gripper' in robot 'planar_4link'; links: [")
