"""Tests of the ``freeflyer`` command line: ``check`` and ``gjm``.

The subcommands are run in-process through ``freeflyer_control.cli.main.main(argv)`` (it returns
the exit code; argparse usage errors raise SystemExit); one test runs the installed console
script, if there is one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from freeflyer_control.cli.main import main
from freeflyer_control.model import load_model, load_robot
from freeflyer_control.physics.gjm import generalized_jacobian
from freeflyer_control.physics.modes import Mode
from freeflyer_control.physics.state import make_state
from freeflyer_control.resources import share_dir

PLANAR_URDF = share_dir() / "urdf" / "planar_4link.urdf"
GJM_KEYS = {"mode", "frame", "joint_names", "rows", "cols", "matrix"}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def gjm_json(capsys, *argv: str) -> dict:
    rc, out, err = run(capsys, "gjm", *argv, "--json")
    assert rc == 0, err
    assert err == ""
    return json.loads(out)


def library_gjm(ff, mode: str, frame: str, joint_positions: dict[str, float] | None = None):
    """What the CLI should print: base at the origin, identity attitude, zero momentum."""
    state = make_state(ff, joint_positions=joint_positions or {})
    return generalized_jacobian(ff, ff.create_data(), state, mode, frame)


# ---------------------------------------------------------------------------------------------
# freeflyer check

def test_check_bundled_robot_exits_0_printing_the_summary_and_all_five_modes_ok(capsys):
    rc, out, err = run(capsys, "check", "planar_4link")
    assert rc == 0, err
    assert err == ""
    assert load_robot("planar_4link").summary() in out
    for mode in Mode:
        assert re.search(rf"^mode {re.escape(mode.value)}\s+ok$", out, re.M), out
    assert "unavailable" not in out
    assert re.search(r"^mass matrix\s+eigenvalues \S+ \.\. \S+", out, re.M)
    assert out.splitlines()[-1] == "ok"


@pytest.mark.parametrize("name", ["spatial_6link", "dual_arm_planar", "spatial_7dof"])
def test_check_every_bundled_robot_has_all_five_modes(capsys, name):
    rc, out, err = run(capsys, "check", name)
    assert rc == 0, err
    assert f"robot          {name}" in out
    assert len(re.findall(r"^mode \S+\s+ok$", out, re.M)) == len(Mode) == 5


def test_check_bare_urdf_with_base_planar_works_and_reports_what_it_cannot_do(capsys):
    rc, out, err = run(capsys, "check", str(PLANAR_URDF), "--base", "planar")
    assert rc == 0, err
    assert re.search(r"^base\s+planar \(base_link\)", out, re.M)
    assert re.search(r"^thrusters\s+0$", out, re.M)
    assert re.search(r"^mode floating\s+ok$", out, re.M)  # needs joint motors only
    flying = re.search(r"^mode flying\s+unavailable: (.*)$", out, re.M)
    assert flying and "thruster" in flying.group(1)
    assert out.splitlines()[-1] == "ok"


def test_check_bare_urdf_without_base_exits_2_saying_to_give_one(capsys):
    rc, out, err = run(capsys, "check", str(PLANAR_URDF))
    assert rc == 2
    assert out == ""
    assert err.startswith("freeflyer check: error:")
    assert "base='planar'" in err


def test_check_broken_urdf_exits_2_with_the_error_naming_the_link_on_stderr(capsys, tmp_path):
    text = PLANAR_URDF.read_text()
    # link1's mass is the first <mass value="1"/> (base_inertia has 15 kg)
    broken = text.replace('<mass value="1"/>', '<mass value="-2"/>', 1)
    assert broken != text
    path = tmp_path / "broken.urdf"
    path.write_text(broken)
    rc, out, err = run(capsys, "check", str(path), "--base", "planar")
    assert rc == 2
    assert out == ""
    assert "error" in err and "'link1'" in err and "mass" in err
    assert str(path) in err


def test_check_warns_in_one_line_when_the_root_link_has_an_inertia(capsys, tmp_path):
    # The former planar_4link: base_inertia's <inertial> back on the root base_link.
    text = PLANAR_URDF.read_text()
    inertia_link = re.search(r'<link name="base_inertia">\s*(<inertial>.*?</inertial>)\s*</link>',
                             text, re.S)
    old = text.replace(inertia_link.group(0), "").replace(
        '<link name="base_link">', '<link name="base_link">' + inertia_link.group(1), 1)
    old = re.sub(r'<joint name="base_inertia_joint".*?</joint>', "", old, flags=re.S)
    path = tmp_path / "massive_root.urdf"
    path.write_text(old)
    rc, out, err = run(capsys, "check", str(path), "--base", "planar")
    assert rc == 0, err
    lines = [line for line in out.splitlines() if "robot_state_publisher (KDL)" in line]
    assert len(lines) == 1 and lines[0].startswith("warning")
    assert "root link 'base_link' has an <inertial>" in lines[0] and "massless" in lines[0]
    rc, clean, _ = run(capsys, "check", str(PLANAR_URDF), "--base", "planar")
    assert rc == 0 and "robot_state_publisher" not in clean


def test_check_unknown_robot_exits_2_listing_the_bundled_robots(capsys):
    rc, out, err = run(capsys, "check", "no_such_robot")
    assert rc == 2 and out == ""
    assert "'no_such_robot'" in err and "planar_4link" in err


# ---------------------------------------------------------------------------------------------
# freeflyer gjm

def test_gjm_json_of_planar_4link_floating_matches_the_library(capsys):
    q = [0.1, 0.2, 0.3, 0.4]
    doc = gjm_json(capsys, "--robot", "planar_4link", "--mode", "floating", "--frame", "ee_link",
                   "--q", json.dumps(q))
    assert GJM_KEYS <= set(doc)
    assert doc["mode"] == "floating" and doc["frame"] == "ee_link"
    assert doc["joint_names"] == ["joint1", "joint2", "joint3", "joint4"]
    assert (doc["rows"], doc["cols"]) == (3, 4)  # planar: vx, vy, wz; four arm joints
    matrix = np.array(doc["matrix"])
    assert matrix.shape == (3, 4)
    ff = load_robot("planar_4link")
    G = library_gjm(ff, "floating", "ee_link", dict(zip(ff.arm_joint_names, q)))
    np.testing.assert_allclose(matrix, G.matrix, rtol=1e-12, atol=1e-12)
    # the angles were used: at zero angles the matrix differs
    G0 = library_gjm(ff, "floating", "ee_link")
    assert not np.allclose(matrix, G0.matrix)


def test_gjm_default_frame_is_the_first_end_effector_and_default_mode_floating(capsys):
    doc = gjm_json(capsys, "--robot", "planar_4link")
    assert doc["frame"] == "ee_link" and doc["mode"] == "floating"
    ff = load_robot("planar_4link")
    np.testing.assert_allclose(doc["matrix"], library_gjm(ff, "floating", "ee_link").matrix,
                               atol=1e-12)


def test_gjm_json_of_spatial_6link_has_six_rows(capsys):
    q = [0.3, -0.2, 0.5, 0.1, -0.4, 0.2]
    doc = gjm_json(capsys, "--robot", "spatial_6link", "--q", json.dumps(q))
    assert (doc["rows"], doc["cols"]) == (6, 6)
    ff = load_robot("spatial_6link")
    G = library_gjm(ff, "floating", "ee_link", dict(zip(ff.arm_joint_names, q)))
    np.testing.assert_allclose(doc["matrix"], G.matrix, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("robot, n_arm, n_base", [("planar_4link", 4, 3), ("spatial_6link", 6, 6)])
def test_gjm_flying_mode_adds_the_base_velocity_columns(capsys, robot, n_arm, n_base):
    doc = gjm_json(capsys, "--robot", robot, "--mode", "flying")
    assert doc["mode"] == "flying"
    assert doc["cols"] == n_arm + n_base
    ff = load_robot(robot)
    G = library_gjm(ff, "flying", "ee_link")
    assert doc["joint_names"] == list(G.column_names)
    assert doc["joint_names"][:n_arm] == list(ff.arm_joint_names)
    assert all(n.startswith("base_") for n in doc["joint_names"][n_arm:])
    matrix = np.array(doc["matrix"])
    np.testing.assert_allclose(matrix, G.matrix, atol=1e-12)
    # base translation commanded in world axes: the point moves with the base
    np.testing.assert_allclose(matrix[:2, n_arm:n_arm + 2], np.eye(2), atol=1e-12)


def test_gjm_q_as_an_object_sets_the_named_joints_only(capsys):
    doc = gjm_json(capsys, "--robot", "planar_4link", "--q", '{"joint1": 0.1}')
    ff = load_robot("planar_4link")
    G = library_gjm(ff, "floating", "ee_link", {"joint1": 0.1})
    np.testing.assert_allclose(doc["matrix"], G.matrix, rtol=1e-12, atol=1e-12)
    assert not np.allclose(doc["matrix"], library_gjm(ff, "floating", "ee_link").matrix)


def test_gjm_q_of_wrong_length_exits_2_saying_how_many_angles(capsys):
    rc, out, err = run(capsys, "gjm", "--robot", "planar_4link", "--q", "[0.1, 0.2]")
    assert rc == 2 and out == ""
    assert "2 angles" in err
    assert "give 4" in err and "joint1" in err  # how many, and which


@pytest.mark.parametrize("q", ["[NaN, 0, 0, 0]", '{"joint1": Infinity}', '{"joint1": "a"}',
                               "[0.1, 0.2,"])
def test_gjm_q_that_is_not_finite_numbers_exits_2(capsys, q):
    rc, out, err = run(capsys, "gjm", "--robot", "planar_4link", "--q", q)
    assert rc == 2 and out == ""
    assert "--q" in err


def test_gjm_q_naming_an_unknown_joint_exits_2_listing_the_joints(capsys):
    rc, out, err = run(capsys, "gjm", "--robot", "planar_4link", "--q", '{"elbow": 0.1}')
    assert rc == 2 and out == ""
    assert "'elbow'" in err and "joint1" in err


def test_gjm_unknown_frame_exits_2_listing_the_links(capsys):
    rc, out, err = run(capsys, "gjm", "--robot", "planar_4link", "--frame", "tool0")
    assert rc == 2 and out == ""
    assert "'tool0'" in err
    for link in ("base_link", "link1", "link4", "ee_link"):
        assert f"'{link}'" in err


def test_gjm_unknown_robot_exits_2(capsys):
    rc, out, err = run(capsys, "gjm", "--robot", "no_such_robot")
    assert rc == 2 and out == ""
    assert "'no_such_robot'" in err and "spatial_6link" in err


def test_gjm_unknown_mode_is_an_argparse_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["gjm", "--robot", "planar_4link", "--mode", "hovering"])
    assert exc.value.code == 2
    assert "hovering" in capsys.readouterr().err


def test_gjm_of_a_bare_urdf_with_base_and_ee(capsys):
    doc = gjm_json(capsys, "--robot", str(PLANAR_URDF), "--base", "planar", "--ee", "ee_link")
    ff = load_model(PLANAR_URDF, base="planar", end_effectors=["ee_link"])
    # without a config the wheel is just another joint of the arm
    assert doc["joint_names"] == list(ff.arm_joint_names) == [
        "joint1", "joint2", "joint3", "joint4", "wheel_z_joint"]
    assert (doc["rows"], doc["cols"]) == (3, 5)
    np.testing.assert_allclose(doc["matrix"], library_gjm(ff, "floating", "ee_link").matrix,
                               atol=1e-12)


def test_gjm_of_a_bare_urdf_without_ee_or_frame_exits_2_asking_for_one(capsys):
    rc, out, err = run(capsys, "gjm", "--robot", str(PLANAR_URDF), "--base", "planar")
    assert rc == 2 and out == ""
    assert "--frame" in err


def test_gjm_table_output_lists_rows_columns_and_singularity_measures(capsys):
    rc, out, err = run(capsys, "gjm", "--robot", "planar_4link", "--q", "[0.1, 0.2, 0.3, 0.4]")
    assert rc == 0, err
    lines = out.splitlines()
    assert "ee_link" in lines[0] and "floating" in lines[0]
    assert lines[1].split() == ["joint1", "joint2", "joint3", "joint4"]
    assert [line.split()[0] for line in lines[2:5]] == ["vx", "vy", "wz"]
    assert "sigma_min" in lines[5] and lines[5].endswith("rank 3")  # bent arm: full rank


def test_gjm_planar_4link_at_zero_angles_obeys_momentum_conservation(capsys):
    """Physics sanity of the first column (joint 1) at the stretched-out pose.

    From urdf/planar_4link.urdf: joint1 sits at x = 0.175 m on the base, joints 2-4 and the
    ee_link are each 0.35 m further along +x (zero angles = arm straight along +x). With the
    base held fixed, turning joint 1 at 1 rad/s moves the tip at r = 4 * 0.35 = 1.4 m from the
    axis, in +y: the fixed-base entry d(vy)/d(qdot1) is 1.4 m.
    In floating mode the base counter-rotates (L = 0) and recoils, so the tip moves less, but
    still in +y (the 15 kg base is much heavier than the 4 kg arm).
    """
    fixed_base_vy = 4 * 0.35  # reach of the arm beyond joint 1, m
    floating = gjm_json(capsys, "--robot", "planar_4link", "--mode", "floating",
                        "--q", "[0, 0, 0, 0]")
    G = np.array(floating["matrix"])
    assert floating["joint_names"][0] == "joint1"
    vx, vy, wz = G[:, 0]
    assert vx == pytest.approx(0.0, abs=1e-12)  # straight arm along x: no x motion
    assert 0.0 < vy < fixed_base_vy
    assert vy < 0.5 * fixed_base_vy  # the base recoil is far from negligible
    assert 0.0 < wz < 1.0  # the tip turns with joint 1, less the base's counter-rotation

    # flying mode holds the base (its velocities are commanded, here zero): fixed-base Jacobian
    flying = np.array(gjm_json(capsys, "--robot", "planar_4link", "--mode", "flying")["matrix"])
    assert flying[1, 0] == pytest.approx(fixed_base_vy, rel=1e-9)
    np.testing.assert_allclose(flying[1, :4], [1.4, 1.05, 0.7, 0.35], rtol=1e-9)
    np.testing.assert_allclose(flying[2, :4], 1.0)


# ---------------------------------------------------------------------------------------------
# the installed console script

def _console_script() -> str | None:
    found = shutil.which("freeflyer")
    if found:
        return found
    beside = Path(sys.executable).parent / ("freeflyer.exe" if os.name == "nt" else "freeflyer")
    return str(beside) if beside.is_file() else None


def test_installed_freeflyer_console_script_runs_check():
    script = _console_script()
    if script is None:
        pytest.skip("no installed 'freeflyer' console script on PATH or beside sys.executable "
                    "(pip install the package, or colcon build and source the overlay)")
    proc = subprocess.run([script, "check", "planar_4link"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "robot          planar_4link" in proc.stdout
    assert proc.stdout.splitlines()[-1] == "ok"
    bad = subprocess.run([script, "check", "no_such_robot"], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode == 2 and "no_such_robot" in bad.stderr


def test_sim_via_testbed_closes_the_loop_through_the_emulated_testbed(capsys, tmp_path):
    assert main(["sim", "--via-testbed", "--duration", "2", "--no-plots", "--json", "--out", str(tmp_path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["engine"] == "testbed emulator" and summary["testbed"].endswith("planar_4link.yaml")
    assert summary["testbed_trips"] == []
    # Estimates within a few capture-noise sigmas (0.5 mm) and encoder counts (1.5 mrad).
    assert summary["estimation_error_base_position_m"] < 5e-3
    assert summary["estimation_error_joints_rad"] < 5e-3
    assert (tmp_path / "timeseries.csv").is_file()


def test_sim_via_an_unknown_testbed_exits_2_listing_the_bundled_ones(capsys, tmp_path):
    assert main(["sim", "--via-testbed", "no_such_lab", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no_such_lab" in err and "planar_4link" in err


def test_testbed_prints_the_frames_channels_and_stopping_distance_of_the_example(capsys):
    assert main(["testbed", "planar_4link"]) == 0
    out = capsys.readouterr().out
    assert "world z = +capture y" in out  # the example's capture system is y-up
    assert "joint2           <- elbow            q = -(reading - 0.5) rad" in out
    assert "channel 1: t3" in out and "to stop" in out and out.rstrip().endswith("ok")


def test_testbed_with_a_left_handed_capture_frame_exits_2_proposing_right_handed_ones(capsys, tmp_path):
    example = Path(__file__).parents[1] / "config" / "testbeds" / "planar_4link.yaml"
    bad = tmp_path / "lab.yaml"
    bad.write_text(example.read_text().replace("axes: y-up", "axes: [x, z, y]"))
    assert main(["testbed", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "left-handed" in err and "[x, -z, y]" in err.replace("'", "")


def test_sim_via_testbed_with_a_capture_dropout_trips_and_resets_after_it(capsys, tmp_path):
    argv = ["sim", "--via-testbed", "--maneuver", "station-keeping", "--mode", "flying", "--duration", "5",
            "--fault", "capture_dropout:3:0.5", "--reset-at", "3.2", "--reset-at", "4",
            "--no-plots", "--json", "--out", str(tmp_path)]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [t["kind"] for t in summary["testbed_trips"]] == ["capture_stale"]
    assert [r["ok"] for r in summary["testbed_resets"]] == [False, True]


def test_sim_fault_without_via_testbed_exits_2(capsys, tmp_path):
    assert main(["sim", "--fault", "capture_dropout:3:0.5", "--out", str(tmp_path)]) == 2
    assert "--via-testbed" in capsys.readouterr().err
