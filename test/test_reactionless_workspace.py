"""The reactionless workspace (analysis.reactionless, ``freeflyer reactionless``): with the base
attitude held within a bound, the reaction null space takes the end-effector where a naive GJM
inverse turns the base past it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from freeflyer_control.analysis.reactionless import fly_hand, reactionless_workspace
from freeflyer_control.cli.main import main
from freeflyer_control.model import load_robot
from freeflyer_control.physics.state import make_state
from freeflyer_control.resources import share_dir

URDF = str(share_dir() / "urdf" / "planar_3link.urdf")


@pytest.fixture(scope="module")
def arm():
    ff = load_robot(URDF, base="planar", end_effectors=["ee_link"])
    return ff, make_state(ff, joint_positions=[0.6, -1.2, -0.9]).q


def test_the_same_move_turns_the_base_by_degrees_naively_and_not_at_all_reactionlessly(arm):
    """A planar 3-joint arm on a 100 kg base, its hand 0.78 m in 7.8 s: the naive inverse turns
    the base by 32 deg, the reaction null space (2-D here: one attitude row, three joints) by
    round-off; both end on the target."""
    ff, q0 = arm
    import pinocchio as pin

    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, q0)
    target = data.oMf[ff.frame_id("ee_link")].translation + np.array([-0.5, 0.6, 0.0])
    naive = fly_hand(ff, "ee_link", q0, target, "naive", np.radians(1.0))
    reactionless = fly_hand(ff, "ee_link", q0, target, "reactionless", np.radians(1.0))
    assert naive.error < 1e-4 and reactionless.error < 1e-4  # both get there (1e-3 damping)
    assert np.degrees(naive.attitude) > 20.0 and not naive.reached
    # The base's rate is solved from zero momentum each RK4 stage and the joint rates lie in the
    # null space, so the attitude moves by round-off only (measured 2e-18 rad).
    assert reactionless.attitude < 1e-12 and reactionless.reached


def test_the_reactionless_workspace_holds_the_naive_one_and_more(arm):
    ff, q0 = arm
    ws = reactionless_workspace(ff, "ee_link", np.radians(1.0), q0=q0, grid=3, half_width=0.5)
    counts = ws.counts()
    naive = np.array([p.reached for p in ws.naive])
    reactionless = np.array([p.reached for p in ws.reactionless])
    assert counts["reactionless"] > counts["naive"]
    assert reactionless[naive].all()  # every point the naive law reaches within the bound
    d = ws.to_dict()
    assert d["reactionless"]["area_m2"] == pytest.approx(counts["reactionless"] * 0.25)


def test_cli_reactionless_prints_both_workspaces_and_writes_the_map(capsys, tmp_path):
    code = main(["reactionless", "--robot", URDF, "--base", "planar", "--ee", "ee_link", "--grid", "2",
                 "--half-width", "0.3", "--bound", "1", "--json", "--map", str(tmp_path / "ws.png")])
    out, _ = capsys.readouterr()
    assert code == 0
    d = json.loads(out)
    assert d["grid_points"] == 4 and (tmp_path / "ws.png").stat().st_size > 1000
    assert d["reactionless"]["points_reached"] >= d["naive"]["points_reached"]


def test_cli_reactionless_refuses_a_bound_that_is_not_an_angle(capsys):
    code = main(["reactionless", "--robot", URDF, "--base", "planar", "--ee", "ee_link", "--bound", "0"])
    _, err = capsys.readouterr()
    assert code == 2 and "--bound" in err
