"""Re-rooting (doc 004: no body is special; DIGEST §6.5 T004-1, T004-2, T004-3/T004-5).

The same robot loaded with its base, a middle link or the tip as the floating root must be the
same physical system: for the same physical state (physics.rerooted.map_state) and the same
joint torques, every body has the same acceleration in the world, with and without external
wrenches; kinetic energy and momentum agree; the mass matrices are congruent through the
explicit velocity map; and Lambda is the same at every link. The robots are the bundled URDFs
without their configs (the configs' base actuators stay on the base; see the bad-input tests).

Tolerance: both models are Pinocchio runs on the same physics with differently ordered
arithmetic; differences measured are <= 2e-13 relative to each quantity's magnitude, and 1e-10
leaves room for the ill-conditioned Lambda of thin links while any modelling slip (a wrong
axis sign, a frame left unmoved) shows at >= 1e-3.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import random_state
from engine_support import ENGINES

from freeflyer_control.errors import ModelError
from freeflyer_control.model import load_robot
from freeflyer_control.physics.base_invariant.sweeps import p_sweep
from freeflyer_control.physics.base_invariant.tree import build_tree
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.operational_space import osi_all_links
from freeflyer_control.physics.rerooted import map_state, velocity_map
from freeflyer_control.resources import share_dir

REL = 1e-10
CASES = [  # (urdf, base, new root): a middle link, the tip (merged with a fixed joint), a wheel
    ("spatial_7dof", "spatial", "link3"),
    ("spatial_7dof", "spatial", "ee_link"),
    ("spatial_7dof", "spatial", "wheel_y"),
    ("spatial_6link", "spatial", "link6"),
    ("dual_arm_planar", "planar", "left_link2"),
    ("dual_arm_planar", "planar", "right_ee_link"),
    ("planar_4link", "planar", "link4"),
]


def _pair(urdf, base, root):
    path = str(share_dir() / "urdf" / f"{urdf}.urdf")
    return load_robot(path, base=base), load_robot(path, base=base, root=root)


def _rel(x, ref):
    return np.abs(np.asarray(x) - ref).max() / max(np.abs(ref).max(), 1e-300)


def _links(ff):
    return [f.name for f in ff.model.frames if f.type == pin.FrameType.BODY]


def _torques(src, dst, rng):
    """The same joint torques for both models (zero base wrench: the root is unactuated)."""
    by_name = {n: rng.uniform(-2.0, 2.0) for n in src.joint_names}
    tau_src, tau_dst = np.zeros(src.model.nv), np.zeros(dst.model.nv)
    for n, t in by_name.items():
        tau_src[src.joint_v_index(n)] = t
        tau_dst[dst.joint_v_index(n)] = t
    return tau_src, tau_dst


def _fext(ff, data, pushes):
    """Pinocchio's external forces (local, about each joint) for world wrenches
    {link: [force; moment about the link frame origin]}. Needs frame placements."""
    fext = [pin.Force.Zero() for _ in range(ff.model.njoints)]
    for link, w in pushes.items():
        frame = ff.model.frames[ff.model.getFrameId(link)]
        oMi = data.oMi[frame.parentJoint]
        lever = data.oMf[ff.model.getFrameId(link)].translation - oMi.translation
        f, m = w[:3], w[3:] + np.cross(lever, w[:3])
        fext[frame.parentJoint] += pin.Force(oMi.rotation.T @ f, oMi.rotation.T @ m)
    return fext


def _body_accelerations(ff, state, tau, pushes, engine=None):
    """Every link's [classical linear acceleration of its origin; angular acceleration],
    world axes, on Pinocchio (``engine`` None: external forces through ABA's fext) or on an
    engine of engine_support (external forces as generalized forces)."""
    model, data = ff.model, ff.create_data()
    pin.framesForwardKinematics(model, data, state.q)
    if engine is None:
        ddq = pin.aba(model, data, state.q, state.v, tau, _fext(ff, data, pushes))
    else:
        pushed = np.zeros(model.nv)
        for link, w in pushes.items():
            J = pin.computeFrameJacobian(model, data, state.q, model.getFrameId(link), pin.LOCAL_WORLD_ALIGNED)
            pushed += J.T @ w
        ddq = engine.forward_dynamics(ff, state.q, state.v, tau + pushed)
    pin.forwardKinematics(model, data, state.q, state.v, ddq)
    pin.updateFramePlacements(model, data)
    return {link: pin.getFrameClassicalAcceleration(
        model, data, model.getFrameId(link), pin.LOCAL_WORLD_ALIGNED).vector for link in _links(ff)}


@pytest.mark.parametrize("engine", [None, *ENGINES], ids=["pinocchio-fext", "python", "compiled"])
@pytest.mark.parametrize("urdf,base,root", CASES)
@pytest.mark.parametrize("pushed", [False, True], ids=["no-external-wrench", "external-wrench"])
def test_rerooted_robot_gives_every_body_the_same_world_acceleration(urdf, base, root, pushed, engine):
    """On Pinocchio with external forces through ABA's fext, and on each engine with them as
    generalized forces J' w."""
    src, dst = _pair(urdf, base, root)
    rng = np.random.default_rng(20)
    state = random_state(src, rng, joint_rate=1.0, base_speed=0.3, base_rate=0.5)
    mapped = map_state(src, state, dst)
    tau_src, tau_dst = _torques(src, dst, rng)
    pushes = {}
    if pushed:  # a thruster-like wrench on the old base and a push on another link
        other = [l for l in _links(src) if l not in (src.base_link, root)][1]
        pushes = {src.base_link: rng.uniform(-10, 10, 6), other: rng.uniform(-3, 3, 6)}
        if base == "planar":
            for w in pushes.values():
                w[[2, 3, 4]] = 0.0  # in-plane forces, moments about z
    a_src = _body_accelerations(src, state, tau_src, pushes, engine)
    a_dst = _body_accelerations(dst, mapped, tau_dst, pushes, engine)
    assert set(a_src) == set(a_dst)
    scale = max(np.abs(a).max() for a in a_src.values())
    for link in a_src:
        assert np.abs(a_dst[link] - a_src[link]).max() < REL * scale, link


@pytest.mark.parametrize("urdf,base,root", CASES)
def test_rerooted_robot_has_the_same_kinetic_energy_and_momentum(urdf, base, root):
    src, dst = _pair(urdf, base, root)
    state = random_state(src, np.random.default_rng(21), joint_rate=1.0)
    mapped = map_state(src, state, dst)
    d_src, d_dst = src.create_data(), dst.create_data()
    ke = pin.computeKineticEnergy(src.model, d_src, state.q, state.v)
    assert abs(pin.computeKineticEnergy(dst.model, d_dst, mapped.q, mapped.v) - ke) < REL * ke
    h_src = pin.computeCentroidalMomentum(src.model, d_src, state.q, state.v).vector
    h_dst = pin.computeCentroidalMomentum(dst.model, d_dst, mapped.q, mapped.v).vector
    assert _rel(h_dst, h_src) < REL
    com_src, com_dst = d_src.com[0], d_dst.com[0]
    planar_rows = slice(0, 2) if base == "planar" else slice(0, 3)  # planar roots move at z = 0
    assert np.abs(com_dst[planar_rows] - com_src[planar_rows]).max() < 1e-12


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("urdf,base,root", CASES)
def test_mass_matrices_are_congruent_through_the_explicit_velocity_map(urdf, base, root, engine):
    """T004-2: M_dst = T^T M_src T with nu_src = T nu_dst, each M from the engine."""
    src, dst = _pair(urdf, base, root)
    state = random_state(src, np.random.default_rng(22), joint_rate=1.0)
    mapped = map_state(src, state, dst)
    T = velocity_map(src, dst, mapped.q)
    assert _rel(T @ mapped.v, state.v) < REL  # the map takes the mapped velocity back
    M_src = engine.mass_and_bias(src, state.q, state.v)[0]
    M_dst = engine.mass_and_bias(dst, mapped.q, mapped.v)[0]
    assert _rel(T.T @ M_src @ T, M_dst) < REL


@pytest.mark.parametrize("urdf,base,root", CASES)
def test_lambda_is_the_same_at_every_link_whatever_the_root(urdf, base, root):
    """T004-3: Lambda(k) does not depend on the choice of root."""
    src, dst = _pair(urdf, base, root)
    state = random_state(src, np.random.default_rng(23))
    mapped = map_state(src, state, dst)
    lam_src = osi_all_links(src, src.create_data(), state.q, Mode.FLOATING)
    lam_dst = osi_all_links(dst, dst.create_data(), mapped.q, Mode.FLOATING)
    for link, osi in lam_src.items():
        other = lam_dst[link] if link in lam_dst else None
        if other is None:  # merged into another body by a fixed joint under this rooting
            continue
        assert _rel(other.matrix, osi.matrix) < REL * np.linalg.cond(osi.matrix), link


@pytest.mark.parametrize("urdf,base", [("spatial_7dof", "spatial"), ("dual_arm_planar", "planar")])
def test_lambda_of_each_link_is_the_root_articulated_inertia_when_rooted_there(urdf, base):
    """T004-5, second form: Lambda(k) = P(root) of the model re-rooted at link k."""
    src = load_robot(str(share_dir() / "urdf" / f"{urdf}.urdf"), base=base)
    state = random_state(src, np.random.default_rng(24))
    lam = osi_all_links(src, src.create_data(), state.q, Mode.FLOATING)
    for link, osi in lam.items():
        dst = load_robot(str(share_dir() / "urdf" / f"{urdf}.urdf"), base=base, root=link)
        q = map_state(src, state, dst).q
        P_root = p_sweep(build_tree(dst, dst.create_data(), q)).inertia[1]
        mine = osi_all_links(dst, dst.create_data(), q, Mode.FLOATING)[link].matrix
        assert _rel(mine, osi.matrix) < REL, link
        # P(root) is in the paper's order about O_root = the link frame origin (root frames
        # do not move), angular first; compare through the same reordering as the API's.
        order = np.array([1, 2, 0]) if base == "planar" else np.array([3, 4, 5, 0, 1, 2])
        assert _rel(P_root[np.ix_(order, order)], osi.matrix) < REL, link


# ---------------------------------------------------------------------------------------------
# Bad input


def test_unknown_root_link_names_the_links():
    with pytest.raises(ModelError) as err:
        load_robot("planar_4link", root="gripper")
    assert str(err.value) == (
        "unknown root link 'gripper' in robot 'planar_4link'; links: ['base_link', 'base_inertia', 'link1', "
        "'link2', 'link3', 'link4', 'ee_link', 'wheel_z']")


def test_root_away_from_the_base_actuators_is_refused_saying_floating_mode_remains():
    with pytest.raises(ModelError) as err:
        load_robot("spatial_7dof", root="link3")
    assert str(err.value) == (
        "root link 'link3' would leave robot 'spatial_7dof' without its base actuators (3 "
        "reaction wheel(s) and 12 thruster(s) on 'base_link'): only floating mode remains; ask "
        "for floating mode (--mode floating, or floating_only=True) or keep the root 'base_link'")


def test_floating_only_root_drops_the_base_actuators():
    ff = load_robot("spatial_7dof", root="link3", floating_only=True)
    assert ff.base_link == "link3" and ff.thrusters == () and ff.wheel_joint_names == ()
    assert "wheel_x_joint" in ff.joint_names  # the wheels stay, as plain joints


def test_root_key_in_a_robot_config(tmp_path):
    urdf = share_dir() / "urdf" / "planar_4link.urdf"
    cfg = tmp_path / "rooted.yaml"
    cfg.write_text(yaml.safe_dump({"urdf": str(urdf), "base": "planar", "root": "link2",
                                   "end_effectors": ["ee_link"]}))
    ff = load_robot(str(cfg))
    assert ff.base_link == "link2"
    cfg.write_text(yaml.safe_dump({"urdf": str(urdf), "base": "planar", "root": 3}))
    with pytest.raises(ModelError, match=r"root must be a link name, got 3"):
        load_robot(str(cfg))


def test_osi_cli_with_another_root_prints_the_same_lambda_in_that_roots_world(capsys):
    """The CLI puts the root at the world origin with identity attitude, so rooting at link5
    turns the world by link5's attitude: Lambda_b = Rb Lambda_a Rb^T, Rb = diag(R5^T, R5^T)."""
    import json

    from freeflyer_control.cli.main import main
    from freeflyer_control.physics.state import make_state

    angles = {"joint2": -0.6, "joint4": 1.2}
    docs = []
    for root in ("base_link", "link5"):
        assert main(["osi", "--robot", "spatial_7dof", "--root", root, "--frame", "link6",
                     "--q", json.dumps(angles), "--json"]) == 0
        docs.append(json.loads(capsys.readouterr().out))
    assert [d["root"] for d in docs] == ["base_link", "link5"]
    ff = load_robot("spatial_7dof")
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, make_state(ff, joint_positions=angles).q)
    R5 = data.oMf[ff.model.getFrameId("link5")].rotation
    Rb = np.kron(np.eye(2), R5.T)
    a, b = np.array(docs[0]["matrix"]), np.array(docs[1]["matrix"])
    assert _rel(b, Rb @ a @ Rb.T) < REL * np.linalg.cond(a)


def test_osi_cli_refuses_a_commanded_base_mode_on_a_root_without_actuators(capsys):
    from freeflyer_control.cli.main import main

    assert main(["osi", "--robot", "spatial_7dof", "--root", "link3", "--mode", "flying"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("freeflyer osi: error: root link 'link3' would leave robot "
                          "'spatial_7dof' without its base actuators")
