"""Dynamic singularity maps and workspaces (freeflyer_control.analysis, issue 6).

The test robot is a planar base with a 2-link arm whose numbers are stated in ``TwoLinkArm``
(link CoMs on the link axes, the base CoM at the base_link origin); its URDF is written here.
The oracles are independent of the code under test:

* barycentric link lengths derived below by hand from the masses and lengths;
* the package's own per-configuration path: ``make_state`` + Pinocchio ``centerOfMass`` and
  frame placements for positions, ``generalized_jacobian`` + an SVD for the GJM.

Numbers of the test robot (printed by the reply of issue 6): reachable annulus
[0.122, 2.458] m, PIW [1.011536, 1.658] m, PDW [0.122, 1.011536] + [1.658, 2.458] m.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import pytest
from scipy.optimize import brentq, minimize

from freeflyer_control.analysis.singularity_map import (
    SINGULAR_RTOL,
    gjm_batch,
    gjm_loop,
    planar_chain,
    singularity_map,
    singularity_sample,
)
from freeflyer_control.analysis.workspace import (
    barycentric_vectors,
    planar_workspace,
    radius,
    reachable_annulus,
)
from freeflyer_control.cli import main as cli_main
from freeflyer_control.cli import workspace as workspace_cli
from freeflyer_control.model import load_model, load_robot
from freeflyer_control.physics.gjm import generalized_jacobian
from freeflyer_control.physics.momentum import system_com
from freeflyer_control.physics.singularity import singularity_measures
from freeflyer_control.physics.state import make_state

EE = "ee_link"


@dataclass(frozen=True)
class TwoLinkArm:
    """Planar base + 2-link arm. m, kg, kg m^2 (inertia about z at the body's CoM).

    The base CoM is at the base_link origin; joint 1 sits at ``mount`` in base_link; each link
    is straight along its x axis with its CoM at ``c`` on that axis; the end-effector is at the
    tip of link 2.
    """

    m0: float = 20.0
    I0: float = 2.0
    mount: tuple[float, float] = (0.4, 0.3)  # |mount| = 0.5 m
    l1: float = 1.5
    m1: float = 3.0
    c1: float = 0.75
    I1: float = 0.6
    l2: float = 0.8
    m2: float = 2.0
    c2: float = 0.4
    I2: float = 0.1


def two_link_urdf(arm: TwoLinkArm) -> str:
    """URDF text of ``arm``: base_link is the root; ee_link is a massless marker at the tip."""

    def body(name: str, mass: float, izz: float, com_x: float) -> str:
        # ixx = iyy = izz is a valid inertia (ixx + iyy >= izz); only izz enters planar motion.
        return (f'<link name="{name}"><inertial><origin xyz="{com_x} 0 0"/>'
                f'<mass value="{mass}"/><inertia ixx="{izz}" iyy="{izz}" izz="{izz}" '
                f'ixy="0" ixz="0" iyz="0"/></inertial></link>')

    def joint(name: str, kind: str, parent: str, child: str, x: float, y: float = 0.0) -> str:
        extra = ('<axis xyz="0 0 1"/><limit lower="-3.5" upper="3.5" effort="5" velocity="1"/>'
                 if kind == "revolute" else "")
        return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/>'
                f'<child link="{child}"/><origin xyz="{x} {y} 0"/>{extra}</joint>')

    return "".join([
        '<robot name="two_link_arm">',
        body("base_link", arm.m0, arm.I0, 0.0),
        body("link1", arm.m1, arm.I1, arm.c1),
        body("link2", arm.m2, arm.I2, arm.c2),
        f'<link name="{EE}"/>',
        joint("joint1", "revolute", "base_link", "link1", *arm.mount),
        joint("joint2", "revolute", "link1", "link2", arm.l1),
        joint("ee_joint", "fixed", "link2", EE, arm.l2),
        "</robot>",
    ])


def barycentric_lengths(arm: TwoLinkArm) -> np.ndarray:
    """|b_0|, |b_1|, |b_2| by hand. With mu_k the mass fraction of the bodies up to k,
    E - C = sum_i m_i (E - C_i) / M collects, per body, its inboard segment (joint to CoM)
    weighted by the mass inboard of it and its outboard segment (CoM to next joint, or to the
    end-effector) weighted by the mass up to and including it."""
    M = arm.m0 + arm.m1 + arm.m2
    mu0, mu1 = arm.m0 / M, (arm.m0 + arm.m1) / M
    return np.array([
        mu0 * np.hypot(*arm.mount),
        mu0 * arm.c1 + mu1 * (arm.l1 - arm.c1),
        mu1 * arm.c2 + 1.0 * (arm.l2 - arm.c2),
    ])


@pytest.fixture(scope="module")
def arm() -> TwoLinkArm:
    return TwoLinkArm()


@pytest.fixture(scope="module")
def ff(arm):
    return load_model(two_link_urdf(arm), base="planar", end_effectors=[EE])


@pytest.fixture(scope="module")
def workspace(ff):
    return planar_workspace(ff, EE)


def package_radius(ff, data, q: np.ndarray, base_xy: np.ndarray, yaw: float) -> float:
    """|EE - system CoM| through the package's state and Pinocchio (zero-momentum state)."""
    state = make_state(ff, base_position=(*base_xy, 0.0), base_yaw=yaw, joint_positions=q)
    com = system_com(ff, data, state.q)  # pin.centerOfMass
    pin.updateFramePlacements(ff.model, data)  # centerOfMass ran the forward kinematics
    return float(np.linalg.norm((data.oMf[ff.frame_id(EE)].translation - com)[:2]))


def package_det(ff, data, q: np.ndarray) -> float:
    """det of the package's floating-mode GJM, planar xy rows (2x2)."""
    state = make_state(ff, joint_positions=q)
    G = generalized_jacobian(ff, data, state, "floating", EE).matrix[:2]
    return float(np.linalg.det(G))


def package_singular_configurations(ff, n_q1: int = 24, n_scan: int = 145) -> np.ndarray:
    """Configurations with det J*_xy = 0 found with the package's GJM only: for n_q1 values of
    q1, every sign change of det along a q2 scan, refined by Brent's method to 1e-15 rad."""
    data = ff.create_data()
    roots = []
    for q1 in np.linspace(-np.pi, np.pi, n_q1, endpoint=False) + 0.05:
        q2s = np.linspace(-np.pi, np.pi, n_scan)
        dets = [package_det(ff, data, np.array([q1, q2])) for q2 in q2s]
        for a, b, da, db in zip(q2s[:-1], q2s[1:], dets[:-1], dets[1:]):
            if da * db < 0:
                q2 = brentq(lambda x: package_det(ff, data, np.array([q1, x])), a, b, xtol=1e-15)
                roots.append((q1, q2))
    return np.array(roots)


@pytest.fixture(scope="module")
def singular_configs(ff) -> np.ndarray:
    roots = package_singular_configurations(ff)
    assert len(roots) >= 24, "every q1 line meets the singular curves (see the map)"
    return roots


# ---------------------------------------------------------------------------------------------
# 1. reachable annulus


def test_reachable_annulus_equals_barycentric_closed_form_and_brute_force_sampling(arm, ff):
    L = barycentric_lengths(arm)
    r_max, r_min = L.sum(), max(0.0, 2 * L.max() - L.sum())
    chain = planar_chain(ff, EE)
    annulus = reachable_annulus(chain)
    # Both sides are a handful of additions and products of O(1) numbers: round-off ~1e-15.
    assert np.allclose(np.linalg.norm(barycentric_vectors(chain), axis=1), L, rtol=0, atol=1e-12)
    assert annulus.r_min == pytest.approx(r_min, abs=1e-12)
    assert annulus.r_max == pytest.approx(r_max, abs=1e-12)
    assert (r_min, r_max) == pytest.approx((0.122, 2.458), abs=1e-12)  # the numbers above

    # Brute force through the package's kinematics: random base poses (the radius must not
    # depend on them) and joint angles.
    rng = np.random.default_rng(1)
    data = ff.create_data()
    qs = rng.uniform(-np.pi, np.pi, (3000, 2))
    R = np.array([package_radius(ff, data, q, rng.uniform(-2, 2, 2), rng.uniform(-np.pi, np.pi))
                  for q in qs])
    # No sample outside the annulus (round-off of a sum of O(1) positions: ~1e-15).
    assert R.min() >= r_min - 1e-12 and R.max() <= r_max + 1e-12
    # The same map, vectorised, at base pose 0: equal to round-off.
    at_origin = [package_radius(ff, data, q, np.zeros(2), 0.0) for q in qs]
    assert np.allclose(radius(chain, qs), at_origin, rtol=0, atol=1e-12)

    # Polish the best samples with Nelder-Mead on the package's radius. Both extremes are
    # smooth (R_min > 0), so R is quadratic there and a 1e-10 rad simplex leaves ~1e-18 m.
    def polish(q0, sign):
        res = minimize(lambda q: sign * package_radius(ff, data, q, np.zeros(2), 0.0), q0,
                       method="Nelder-Mead", options=dict(xatol=1e-10, fatol=1e-15, maxiter=5000))
        return sign * res.fun

    assert polish(qs[np.argmin(R)], +1.0) == pytest.approx(r_min, abs=1e-9)
    assert polish(qs[np.argmax(R)], -1.0) == pytest.approx(r_max, abs=1e-9)


# ---------------------------------------------------------------------------------------------
# 2. singular marks agree with the rank of the package's GJM


def test_configurations_marked_singular_have_rank_deficient_gjm_and_vice_versa(
    ff, singular_configs
):
    # "Marked singular" = sigma_min <= SINGULAR_RTOL * sigma_max (1e-6, justified in
    # analysis/singularity_map.py). The package's rank uses the same relative rule
    # (singularity_measures(tol=...)). Sample: random configurations, the package's own
    # singular configurations, and points at 1e-9 ... 1e-3 rad from them along q2 (so
    # sigma_min / sigma_max ~ 1e-9 ... 1e-3: both sides of the threshold; observed at 1e-7 rad:
    # 3.5e-8 .. 7.5e-8, at 1e-5 rad: 3.5e-6 .. 7.5e-6, so every offset is clear of 1e-6).
    rng = np.random.default_rng(2)
    near = [root + [0.0, d] for root in singular_configs
            for d in (0.0, 1e-9, -1e-9, 1e-7, -1e-7, 1e-5, -1e-5, 1e-3, -1e-3)]
    q = np.concatenate([rng.uniform(-np.pi, np.pi, (300, 2)), np.array(near)])
    # The grid map too (its marks must follow the same rule).
    grid = singularity_map(ff, EE, resolution=41)
    q = np.concatenate([q, grid.sample.q])
    marked = np.concatenate([
        singularity_sample(ff, EE, q[: -grid.sample.q.shape[0]], method="closed-form").singular(),
        grid.sample.singular(),
    ])

    data = ff.create_data()
    rank, ratio = [], []
    for angles in q:
        G = generalized_jacobian(ff, data, make_state(ff, joint_positions=angles), "floating", EE)
        m = singularity_measures(G.matrix[:2], tol=SINGULAR_RTOL)  # planar xy rows, 2x2
        s = np.linalg.svd(G.matrix[:2], compute_uv=False)
        rank.append(m.rank)
        ratio.append(s[-1] / s[0])
    rank, ratio = np.array(rank), np.array(ratio)
    # No sample sits where round-off (~1e-13 here) could flip the verdict.
    assert np.all(np.abs(np.log10(ratio / SINGULAR_RTOL)) > 1e-3)
    assert np.array_equal(marked, rank < 2)
    assert marked.sum() >= 3 * len(singular_configs)  # roots and +-1e-9, +-1e-7
    assert (~marked[300:300 + len(near)]).sum() >= 4 * len(singular_configs)  # +-1e-5, 1e-3


# ---------------------------------------------------------------------------------------------
# 3. vectorised = per configuration


@pytest.mark.parametrize("robot", ["two_link", "planar_4link", "dual_arm_planar"])
def test_vectorised_gjm_and_sigma_min_equal_the_per_configuration_computation(robot, ff):
    # Tolerance 1e-10 on entries of order 0.01-1: both sides are double-precision sums of a few
    # dozen products (observed <= 1e-15); a wrong lever arm, sign or inertia shows at >= 1e-3.
    # planar_4link and dual_arm_planar add a reaction wheel, 4 links and a branched tree.
    model = ff if robot == "two_link" else load_robot(robot)
    rng = np.random.default_rng(3)
    for frame in model.end_effectors:
        chain = planar_chain(model, frame)
        q = rng.uniform(-np.pi, np.pi, (100, len(model.arm_joint_names)))
        yaw = rng.uniform(-np.pi, np.pi)
        loop = gjm_loop(model, frame, q, base_yaw=yaw)
        assert np.abs(gjm_batch(chain, q, yaw) - loop).max() < 1e-10
        fast = singularity_sample(model, frame, q, method="closed-form")
        slow = singularity_sample(model, frame, q, method="pinocchio")
        assert np.abs(fast.sigma_min - slow.sigma_min).max() < 1e-10
        assert np.abs(fast.sigma_max - slow.sigma_max).max() < 1e-10
        if fast.det is not None:
            assert np.abs(fast.det - slow.det).max() < 1e-10
        # sigma_min through the closed-form 2-row formula = LAPACK's SVD of the package GJM.
        svd = np.linalg.svd(gjm_loop(model, frame, q)[:, :2][:, :, [
            model.arm_joint_names.index(j) for j in fast.columns]], compute_uv=False)
        assert np.abs(fast.sigma_min - svd[:, -1]).max() < 1e-10


# ---------------------------------------------------------------------------------------------
# 4. PIW / PDW


def test_piw_and_pdw_partition_the_reachable_annulus_and_piw_samples_are_never_singular(
    ff, arm, workspace, singular_configs
):
    ws = workspace
    assert ws.method == "exact"
    r_min, r_max = ws.reachable.r_min, ws.reachable.r_max
    pieces = sorted([(lo, hi, "piw") for lo, hi in ws.piw] + [(lo, hi, "pdw") for lo, hi in ws.pdw])
    assert pieces[0][0] == r_min and pieces[-1][1] == r_max
    for (lo, hi, kind), (lo2, hi2, kind2) in zip(pieces, pieces[1:]):
        assert lo < hi
        assert hi == lo2  # contiguous, sharing only an end: no gap, no overlap
        assert kind != kind2  # merged: a PIW interval always borders a PDW one
    assert ws.piw, "this robot has a path-independent workspace"

    # Random configurations whose radius is in the PIW: never singular.
    rng = np.random.default_rng(4)
    q = rng.uniform(-np.pi, np.pi, (200_000, 2))
    chain = planar_chain(ff, EE)
    R = radius(chain, q)
    sample = singularity_sample(ff, EE, q, method="closed-form")
    for lo, hi in ws.piw:
        inside = (R > lo) & (R < hi)
        assert inside.sum() > 1000
        assert not sample.singular()[inside].any()
    # ... also through the package's GJM on a subset.
    in_piw = np.flatnonzero(np.any([(R > lo) & (R < hi) for lo, hi in ws.piw], axis=0))[:200]
    data = ff.create_data()
    for angles in q[in_piw]:
        G = generalized_jacobian(ff, data, make_state(ff, joint_positions=angles), "floating", EE)
        assert singularity_measures(G.matrix[:2], tol=SINGULAR_RTOL).rank == 2

    # Conversely, the singular configurations found with the package's GJM have their radius
    # in the PDW (interval ends are refined to ~1e-9 m), and so have the critical radii
    # |+-L0 +-L1 +-L2| where all barycentric vectors are (anti)aligned (grad R = 0).
    def in_pdw(r):
        return any(lo - 1e-9 <= r <= hi + 1e-9 for lo, hi in ws.pdw)

    assert all(in_pdw(r) for r in radius(chain, singular_configs))
    L = barycentric_lengths(arm)
    for s1 in (1, -1):
        for s2 in (1, -1):
            assert in_pdw(abs(L[0] + s1 * L[1] + s2 * L[2]))

    # Each PIW end is an extreme radius of a singular curve: SLSQP on the package's own radius
    # and det (constraint det = 0), from the package's singular configuration nearest to it,
    # lands on the same radius. Observed agreement ~2e-14 m (the starts are 1e-4 .. 1e-3 m
    # off); 1e-9 m leaves room for SLSQP's stopping rule (R is stationary at the optimum, so a
    # 1e-5 rad error in q moves R by ~1e-10 m).
    root_radii = np.array([package_radius(ff, data, q, np.zeros(2), 0.0) for q in singular_configs])
    for lo, hi in ws.piw:
        for end, sign in ((lo, -1.0), (hi, +1.0)):  # below the PIW: max R; above it: min R
            start = singular_configs[np.argmin(np.abs(root_radii - end))]
            res = minimize(lambda q: sign * package_radius(ff, data, q, np.zeros(2), 0.0), start,
                           method="SLSQP", options=dict(ftol=1e-14, maxiter=500),
                           constraints={"type": "eq", "fun": lambda q: package_det(ff, data, q)})
            assert abs(package_det(ff, data, res.x)) < 1e-10
            assert sign * res.fun == pytest.approx(end, abs=1e-9)


def test_raster_method_agrees_with_the_exact_one_to_a_ring(ff, workspace):
    raster = planar_workspace(ff, EE, method="raster", samples=200_000, bins=100)
    ring = raster.resolution
    assert ring == pytest.approx(workspace.reachable.r_max / 100)
    assert len(raster.piw) == len(workspace.piw)
    for (lo, hi), (lo_r, hi_r) in zip(workspace.piw, raster.piw):
        # The raster classifies a ring by its middle radius: its ends are within a ring.
        assert abs(lo - lo_r) <= ring and abs(hi - hi_r) <= ring


def test_singularity_map_writes_a_png(ff, tmp_path):
    path = singularity_map(ff, EE, resolution=64).plot(tmp_path / "map.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------------------------------------
# 5. CLI


@pytest.fixture
def cli(capsys):
    """Run ``freeflyer workspace`` in-process. Returns (exit code, stdout, stderr)."""
    assert workspace_cli in cli_main.SUBCOMMANDS, "freeflyer workspace must be registered"

    def run(*argv: str) -> tuple[int, str, str]:
        rc = cli_main.main(["workspace", *argv])
        out, err = capsys.readouterr()
        return rc, out, err

    return run


def test_cli_json_has_the_required_keys_and_writes_the_map(cli, arm, workspace, tmp_path):
    urdf = tmp_path / "two_link.urdf"
    urdf.write_text(two_link_urdf(arm))
    png = tmp_path / "ws.png"
    rc, out, err = cli("--robot", str(urdf), "--base", "planar", "--ee", EE, "--frame", EE,
                       "--json", "--map", str(png))
    assert rc == 0, err
    result = json.loads(out)
    assert {"reachable", "piw", "pdw"} <= result.keys()
    assert set(result["reachable"]) == {"r_min", "r_max"}
    assert result["reachable"]["r_max"] == pytest.approx(workspace.reachable.r_max, abs=1e-12)
    assert result["piw"] == [list(i) for i in workspace.piw]
    assert all(len(i) == 2 for i in result["pdw"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_refuses_spatial_robots_and_multi_joint_arms_without_map(cli):
    rc, out, err = cli("--robot", "spatial_6link", "--json")
    assert rc == 2 and out == ""
    assert "workspaces are computed for planar bases" in err
    rc, out, err = cli("--robot", "planar_4link", "--json")
    assert rc == 2 and out == ""
    assert "two joints" in err and "use --map" in err and "r_max" in err


def test_cli_raster_for_a_two_arm_robot_with_map(cli, tmp_path):
    rc, out, err = cli("--robot", "dual_arm_planar", "--frame", "left_ee_link", "--json",
                       "--map", str(tmp_path / "dual.png"), "--samples", "20000", "--bins", "40")
    assert rc == 0, err
    result = json.loads(out)
    assert result["method"] == "raster"
    assert result["singularity_columns"] == ["left_joint1", "left_joint2", "left_joint3"]
    r_min, r_max = result["reachable"]["r_min"], result["reachable"]["r_max"]
    ends = sorted(v for i in result["piw"] + result["pdw"] for v in i)
    assert ends[0] == r_min and ends[-1] == r_max


def test_workspace_sizes_beyond_their_limits_are_refused_before_any_allocation(ff):
    from freeflyer_control.analysis.workspace import MAX_BINS, MAX_GRID, MAX_SAMPLES

    # grid 100 000 would be 10^10 configurations (about a terabyte): refused, naming the limit
    with pytest.raises(ValueError, match=f"grid must be from 16 to {MAX_GRID} points per joint, got 100000"):
        planar_workspace(ff, EE, grid=100_000)
    with pytest.raises(ValueError, match=r"samples must be from 1 to 1e\+08 and bins from 1 to 10000"):
        planar_workspace(ff, EE, method="raster", samples=MAX_SAMPLES + 1, bins=10)
    with pytest.raises(ValueError, match="bins from 1 to 10000, got 1000 and 10001"):
        planar_workspace(ff, EE, method="raster", samples=1000, bins=MAX_BINS + 1)


def test_singularity_map_resolution_beyond_its_limit_is_refused(ff):
    from freeflyer_control.analysis.singularity_map import MAX_RESOLUTION, singularity_map

    with pytest.raises(ValueError, match=f"resolution must be from 2 to {MAX_RESOLUTION} points per axis"):
        singularity_map(ff, EE, resolution=100_000)
