"""Tests of the ``freeflyer`` command line: ``check`` and ``gjm``.

The subcommands are run in-process through ``freeflyer_control.cli.main.main(argv)`` (it returns
the exit code, 2 for every refusal); one test runs the installed console
script, if there is one.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import TWO_LINK_PLANAR_URDF, two_link_dynamic_singularity
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
    """``freeflyer gjm ... --json``; stderr is empty, or one warning line when a block is near
    a singularity (the stretched arm at q = 0 is)."""
    rc, out, err = run(capsys, "gjm", *argv, "--json")
    assert rc == 0, err
    doc = json.loads(out)
    if doc["near_singular"]:
        assert err.startswith("freeflyer gjm: warning: ") and err.count("\n") == 1, err
    else:
        assert err == ""
    return doc


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


def test_gjm_unknown_mode_is_refused_in_one_line_with_exit_2(capsys):
    rc, out, err = run(capsys, "gjm", "--robot", "planar_4link", "--mode", "hovering")
    assert rc == 2 and out == ""
    assert "argument --mode" in err and "hovering" in err
    assert err.count("\n") == 1


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
    assert lines[5].split() == ["block", "sigma_min", "manipulability", "condition", "rank"]
    assert [line.split()[0] for line in lines[6:9]] == ["translational", "rotational", "full"]
    assert lines[6].startswith("translational (vx vy)") and lines[6].endswith(" 2")
    assert lines[8].startswith("full (vx vy wz)") and lines[8].endswith(" 3")  # bent arm: full rank
    assert len(lines) == 9 and err == ""  # well away from a singularity: no warning


def two_link_gjm(capsys, tmp_path, *extra: str) -> tuple[int, str, str]:
    """``freeflyer gjm`` of the planar 2-link arm (a bare URDF) at its dynamic singularity."""
    urdf = tmp_path / "two_link.urdf"
    urdf.write_text(TWO_LINK_PLANAR_URDF)
    q = json.dumps(list(two_link_dynamic_singularity()))
    return run(capsys, "gjm", "--robot", str(urdf), "--base", "planar", "--ee", "ee_link", "--q", q, *extra)


def test_gjm_json_reports_the_singular_translational_block_the_full_matrix_hides(capsys, tmp_path):
    rc, out, err = two_link_gjm(capsys, tmp_path, "--json")
    assert rc == 0, err
    sing = json.loads(out)["singularity"]
    assert set(sing) == {"translational", "rotational", "full"}
    t, full = sing["translational"], sing["full"]
    assert t["rows"] == ["vx", "vy"] and sing["rotational"]["rows"] == ["wz"]
    assert full["rows"] == ["vx", "vy", "wz"]
    # Brent's root of det J*_xy (xtol 1e-15 rad): sigma_min is round-off; the 3 x 2 whole keeps
    # both singular values above 5x the 0.02 threshold (0.104 here), condition number 7.3 < 10.
    assert t["sigma_min"] < 1e-12 and t["rank"] == 1
    assert t["condition_number"] is None or t["condition_number"] > 1e10  # null: infinite
    assert full["sigma_min"] > 0.1 and full["rank"] == 2 and full["condition_number"] < 10
    assert set(sing["rotational"]) == set(t) == {"rows", "sigma_min", "manipulability", "condition_number", "rank"}
    assert json.loads(out)["near_singular"] == ["translational"]


def test_gjm_warns_on_stderr_in_one_line_naming_the_block_its_sigma_min_and_the_threshold(capsys, tmp_path):
    rc, out, err = two_link_gjm(capsys, tmp_path)
    assert rc == 0
    assert re.fullmatch(
        r"freeflyer gjm: warning: 'ee_link' is near a dynamic singularity: translational block \(vx, vy\) "
        r"sigma_min (\S+) < --sigma-warn 0\.02 \(the full matrix, sigma_min 0\.1\d+, does not show it\)\n", err), err
    assert float(re.search(r"sigma_min (\S+) <", err).group(1)) < 1e-12
    table = {line.split()[0]: line for line in out.splitlines()[5:]}
    assert table["translational"].endswith(" 1") and table["full"].endswith(" 2")  # ranks


def test_gjm_sigma_warn_sets_the_threshold_and_zero_turns_the_warning_off(capsys, tmp_path):
    rc, out, err = two_link_gjm(capsys, tmp_path, "--sigma-warn", "0.5")
    assert rc == 0
    # 0.5 is above the full matrix's sigma_min (0.104) too: both blocks named, in one line.
    assert err.count("\n") == 1 and "translational block" in err and "full matrix (vx, vy, wz)" in err
    assert "< --sigma-warn 0.5" in err
    rc, out, err = two_link_gjm(capsys, tmp_path, "--sigma-warn", "0", "--json")
    assert rc == 0 and err == "" and json.loads(out)["near_singular"] == []


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_gjm_sigma_warn_not_a_finite_non_negative_number_exits_2(capsys, value):
    rc, out, err = run(capsys, "gjm", "--robot", "planar_4link", "--sigma-warn", value)
    assert rc == 2 and out == ""
    assert err == (f"freeflyer gjm: error: argument --sigma-warn: give a number in [0, inf) (m/rad on "
                   f"translational rows), got '{value}' (see freeflyer gjm --help)\n")


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


# ---------------------------------------------------------------------------------------------
# Bad arguments: one line on stderr, exit status 2, the option named as typed, nothing run

def refusal(capsys, *argv: str) -> str:
    """The one stderr line of a refused command (asserting exit 2, one line, no stdout)."""
    rc, out, err = run(capsys, *argv)
    assert rc == 2, (rc, err)
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("freeflyer "), err
    return err


def typed_options():
    """(subcommand path, option, type) of every option the parser converts to a number."""
    from freeflyer_control.cli.main import build_parser
    from freeflyer_control.inputs.values import Number, Whole

    def walk(parser, path):
        for action in parser._actions:
            if hasattr(action, "choices") and isinstance(action.choices, dict):
                for name, sub in action.choices.items():
                    yield from walk(sub, path + (name,))
            elif isinstance(action.type, (Number, Whole)):
                yield path, action.option_strings[-1], action.type

    return list(walk(build_parser(), ()))


REQUIRED = {("plan", "reorient"): ["--dtheta", "0.1"],
            ("plan", "lyapunov"): ["--theta-target", "0.1", "--q-target", "[0, 0, 0, 0]"],
            ("plan", "piw"): ["--theta-target", "0.1", "--target", "[0.5, 0.1]"]}


@pytest.mark.parametrize("path, option, kind", typed_options(),
                         ids=lambda x: " ".join(x) if isinstance(x, tuple) else str(x))
@pytest.mark.parametrize("value", ["nan", "inf", "-1e308", "x"])
def test_every_numeric_option_refuses_a_bad_value_naming_itself_and_its_range(capsys, path, option, kind, value):
    required = REQUIRED.get(path, [])
    if option in required:
        required = []  # the option under test is the required one
    positional = ["planar_4link"] if path in (("check",), ("testbed",)) else []
    err = refusal(capsys, *path, *positional, *required, f"{option}={value}")
    assert f"argument {option}: give {kind.describe()}, got '{value}'" in err, err


def test_sim_duration_of_a_billion_seconds_is_refused_before_any_allocation(capsys):
    for engine in ("compiled", "python"):
        err = refusal(capsys, "sim", "--engine", engine, "--duration", "1e9")
        assert err == ("freeflyer sim: error: --duration 1e+09 s at --rate 250 Hz x --substeps 1 is "
                       "2.5e+11 plant steps, above the limit of 1e+08; shorten --duration or lower --rate\n")


def test_sim_rate_of_ten_megahertz_is_refused_naming_the_limit(capsys):
    err = refusal(capsys, "sim", "--rate", "1e7")
    assert err.startswith("freeflyer sim: error: argument --rate: give a number in [1, 100000] Hz, got '1e7'")


def test_sim_log_that_would_hold_millions_of_samples_is_refused_naming_log_rate(capsys):
    err = refusal(capsys, "sim", "--duration", "100000")
    assert "is 5000001 samples, above the limit of 100000; lower --log-rate (at most 1 Hz" in err


def test_a_long_run_at_a_low_log_rate_is_accepted(capsys):
    from freeflyer_control.cli.main import parse

    args = parse(["sim", "--duration", "100000", "--log-rate", "0.5"])
    assert args.duration == 100000 and args.log_rate == 0.5


def test_workspace_grid_of_a_hundred_thousand_is_refused_naming_the_limit(capsys):
    err = refusal(capsys, "workspace", "--grid", "100000")
    assert "argument --grid: give a whole number from 16 to 2048 (grid points per joint), got '100000'" in err


@pytest.mark.parametrize("argv, option", [
    (["sim", "--q0", "[0.1, 0.2"], "--q0"),
    (["sim", "--q0", "[0.1, NaN, 0, 0]"], "--q0[1]"),
    (["sim", "--q0", "[1, 2]"], "--q0 has 2 angles"),
    (["sim", "--q0", '{"joint9": 0.1}'], "--q0 names joint 'joint9'"),
    (["plan", "reorient", "--dtheta", "0.1", "--q0", "[1, 2]"], "--q0 has 2 angles"),
    (["plan", "lyapunov", "--theta-target", "0", "--q-target", "[Infinity, 0, 0, 0]"], "--q-target[0]"),
    (["gjm", "--q", "not json"], "--q is not valid JSON"),
])
def test_joint_angle_errors_name_the_option_as_typed(capsys, argv, option):
    err = refusal(capsys, *argv)
    assert option in err, err
    if option.startswith("--q0") or option.startswith("--q-target"):
        assert "--q " not in err and "--q[" not in err


def test_mass_error_of_one_is_refused_naming_mass_error(capsys):
    err = refusal(capsys, "sim", "--mass-error", "1")
    assert "argument --mass-error: give a number in [0, 1) (relative), got '1'" in err


@pytest.mark.parametrize("argv", [
    ["sim", "--q0", "[3.0, 0, 0, 0]"],
    ["plan", "reorient", "--dtheta", "0.1", "--q0", "[0, 2.6, 0, 0]"],
    ["plan", "lyapunov", "--theta-target", "0", "--q-target", "[0, 0, 0, -2.7]"],
])
def test_a_start_or_target_outside_the_urdf_joint_limits_is_refused(capsys, argv):
    err = refusal(capsys, *argv)
    assert "is outside its URDF limits [-2.5, 2.5] rad; give angles inside the limits" in err


def test_gjm_outside_the_joint_limits_warns_once_and_still_answers(capsys):
    # A bent arm, so that no singularity warning joins the joint-limit one.
    rc, out, err = run(capsys, "gjm", "--robot", "planar_4link", "--q", "[3.0, 0.8, -0.8, 0.8]", "--json")
    assert rc == 0
    assert err == ("freeflyer gjm: warning: --q: joint1 = 3 rad is outside its URDF limits "
                   "[-2.5, 2.5] rad; the robot cannot reach this pose\n")
    assert json.loads(out)["rows"] == 3


def test_sim_summary_reports_the_initial_mode_flown_not_the_first_scheduled_one(capsys, tmp_path):
    rc, out, err = run(capsys, "sim", "--mode", "rotation-floating", "--mode-schedule", "0.5:flying",
                       "--duration", "1", "--rate", "100", "--no-plots", "--json", "--out", str(tmp_path))
    assert rc == 0, err
    summary = json.loads(out)
    assert summary["mode"] == "rotation-floating"
    assert summary["final_mode"] == "flying"
    assert [(s["t"], s["to"], s["accepted"]) for s in summary["mode_switches"]] == [(0.5, "flying", True)]


def test_a_schedule_entry_at_zero_sets_the_initial_mode(capsys, tmp_path):
    rc, out, err = run(capsys, "sim", "--mode-schedule", "0:flying", "--duration", "0.2", "--rate", "100",
                       "--no-plots", "--json", "--out", str(tmp_path))
    assert rc == 0, err
    assert json.loads(out)["mode"] == "flying"


@pytest.mark.parametrize("schedule, fragment", [
    ("nan:flying", "entry 'nan:flying': the time must be a finite number of seconds >= 0"),
    ("inf:flying", "entry 'inf:flying': the time must be a finite number of seconds >= 0"),
    ("-1:flying", "entry '-1:flying': the time must be a finite number of seconds >= 0"),
    ("5:flying,2:floating", "entry '2:floating' comes after an entry at 5 s"),
    ("2:flying,2:floating", "entry '2:floating' comes after an entry at 2 s"),
    ("2-flying", "entry '2-flying' must look like TIME:MODE"),
    ("2:hovering", "entry '2:hovering': unknown mode 'hovering'"),
    (",", "is empty"),
])
def test_bad_mode_schedules_are_refused_naming_the_entry(capsys, schedule, fragment):
    err = refusal(capsys, "sim", f"--mode-schedule={schedule}")
    assert err.startswith(f"freeflyer sim: error: --mode-schedule {fragment}"), err


def test_a_schedule_entry_past_the_end_of_the_run_is_reported_not_dropped_in_silence(capsys):
    from freeflyer_control.cli.main import parse

    parse(["sim", "--duration", "10", "--mode-schedule", "2:flying,30:floating"])
    assert capsys.readouterr().err == (
        "freeflyer sim: warning: --mode-schedule entry 30:floating is at or after the end of the run "
        "(10 s) and is never flown; give a longer --duration or drop it\n")


def test_an_estop_after_the_end_of_the_run_is_reported(capsys):
    from freeflyer_control.cli.main import parse

    parse(["sim", "--via-testbed", "--duration", "5", "--estop-at", "7"])
    assert capsys.readouterr().err == (
        "freeflyer sim: warning: --estop-at 7 is at or after the end of the run (5 s) and never "
        "happens; give a longer --duration or drop it\n")


def test_parse_validates_without_running_anything(capsys, tmp_path):
    from freeflyer_control.cli.main import parse

    out = tmp_path / "never"
    args = parse(["sim", "--duration", "5", "--out", str(out)])
    assert args.command == "sim" and not out.exists()
    assert capsys.readouterr() == ("", "")


class _CtrlCOnImport:
    """A meta-path finder that raises KeyboardInterrupt when ``name`` is imported: a Ctrl-C that
    lands while the command line loads, at a moment a test can choose."""

    def __init__(self, name: str):
        self.name = name

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.name:
            raise KeyboardInterrupt
        return None


def test_ctrl_c_while_the_freeflyer_command_loads_ends_in_one_line_and_the_shells_status(monkeypatch, capsys):
    from freeflyer_control.cli import entry

    monkeypatch.delitem(sys.modules, "freeflyer_control.cli.main")
    monkeypatch.setattr(sys, "meta_path", [_CtrlCOnImport("freeflyer_control.cli.main"), *sys.meta_path])
    assert entry.main(["check", "planar_4link"]) == 130
    assert capsys.readouterr() == ("", "freeflyer: interrupted\n")


def test_ctrl_c_while_the_input_is_checked_ends_in_one_line_and_the_shells_status(monkeypatch, capsys):
    import freeflyer_control.cli.main as cli_main

    def interrupted(argv=None, parser=None):
        raise KeyboardInterrupt  # a campaign's spec loading its robots when Ctrl-C lands

    monkeypatch.setattr(cli_main, "parse", interrupted)
    assert cli_main.main(["check", "planar_4link"]) == 130
    assert capsys.readouterr() == ("", "freeflyer: interrupted\n")


def test_check_piped_into_head_prints_no_broken_pipe_traceback():
    # The reader is gone before the command writes: every write raises BrokenPipeError.
    proc = subprocess.Popen([sys.executable, "-m", "freeflyer_control.cli.main", "check", "planar_4link"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert err == ""
    assert proc.returncode == 1  # as the Python docs' SIGPIPE recipe exits


# ---------------------------------------------------------------------------------------------
# The progress bar shared by every long run

class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_bar_warns_once_with_the_expected_run_time_of_a_slow_run():
    import io

    from freeflyer_control.sim.progress import ProgressBar

    clock, stream = FakeClock(), io.StringIO()
    bar = ProgressBar(stream, clock=clock)
    for wall, t in ((0.5, 0.0), (1.6, 0.001), (2.2, 0.0015), (3.0, 0.002)):
        clock.now = wall
        bar(t, 10.0)
    lines = stream.getvalue().splitlines()
    warnings = [line for line in lines if "warning" in line]
    # 1.1 s of wall time for 1 ms simulated: (10 - 0.001) s left x 1100 = 11 000 s, 3.1 h
    assert warnings == ["freeflyer sim: warning: this run will take about 3.1 h more at the pace "
                        "measured so far; Ctrl-C stops it (lower --rate or --duration for a shorter run)"]


def test_progress_bar_off_a_terminal_writes_a_line_per_log_interval_and_the_last():
    import io

    from freeflyer_control.sim.progress import ProgressBar

    clock, stream = FakeClock(), io.StringIO()
    bar = ProgressBar(stream, clock=clock, log_interval=10.0)
    for k in range(1, 101):  # 50 s of wall time, an update every 0.5 s
        clock.now = 0.5 * k
        bar(0.1 * k, 10.0)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 5  # at 10, 20, 30 and 40 s of wall time, and the final one
    assert lines[-1] == "[##############################]    10.0 / 10.0 s"


def test_sim_via_testbed_shows_the_progress_bar(capsys, tmp_path):
    rc, out, err = run(capsys, "sim", "--via-testbed", "--duration", "0.5", "--no-plots", "--out", str(tmp_path))
    assert rc == 0, err
    assert err.splitlines()[-1] == "[##############################]     0.5 / 0.5 s"


def test_run_via_testbed_reports_progress_in_simulated_time_up_to_the_end():
    from freeflyer_control.hil.sim import run_via_testbed
    from freeflyer_control.sim.config import SimConfig

    calls = []
    run_via_testbed(SimConfig(duration=0.2), "planar_4link", progress=lambda t, d: calls.append((t, d)))
    times = [t for t, _ in calls]
    assert times == sorted(times) and calls[-1] == (0.2, 0.2)
    assert {d for _, d in calls} == {0.2}


@pytest.mark.parametrize("schedule", [[(float("nan"), "flying")], [(-1.0, "flying")],
                                      [(5.0, "flying"), (2.0, "floating")]])
def test_the_library_refuses_the_schedules_the_command_line_refuses(schedule):
    from freeflyer_control.sim.config import SimConfig

    with pytest.raises(ValueError, match="mode_schedule entry"):
        SimConfig(mode_schedule=schedule).validate()


def test_initial_mode_is_the_schedule_entry_at_zero_else_the_configured_mode():
    from freeflyer_control.control.mode_switch import entries_never_flown, initial_mode

    assert initial_mode("rotation-floating", [(2.0, "flying")]) == ("rotation-floating", [(2.0, "flying")])
    assert initial_mode("floating", [(0.0, "flying"), (3.0, "floating")]) == ("flying", [(3.0, "floating")])
    assert entries_never_flown([(2.0, "flying"), (10.0, "floating")], 10.0) == [(10.0, "floating")]


# freeflyer sim --out: checked before any simulating

SHORT_SIM = ("sim", "--duration", "0.5", "--engine", "python", "--no-plots", "--json")


@pytest.fixture
def no_simulating(monkeypatch):
    """Fails the test if a simulation starts: a refused --out must be said before any work."""
    import freeflyer_control.cli.sim as cli_sim

    def refuse(*args, **kwargs):
        raise AssertionError("the simulation ran although --out was refused")

    monkeypatch.setattr(cli_sim, "run_simulation", refuse)


def test_sim_out_that_is_a_file_exits_2_before_simulating(capsys, tmp_path, no_simulating):
    target = tmp_path / "results.csv"
    target.write_text("keep me\n")
    rc, out, err = run(capsys, *SHORT_SIM, "--out", str(target))
    assert rc == 2 and out == ""
    assert err == (f"freeflyer sim: error: --out {target} is a file, not a folder: "
                   "give a folder (it is created if missing)\n")
    assert target.read_text() == "keep me\n"


def test_sim_empty_out_exits_2_instead_of_writing_into_the_current_folder(capsys, no_simulating):
    rc, _, err = run(capsys, *SHORT_SIM, "--out", "")
    assert rc == 2
    assert err == ("freeflyer sim: error: argument --out: empty; give a value, or leave the option out (see "
                   "freeflyer sim --help)\n")


def test_sim_out_under_a_file_exits_2_naming_the_file(capsys, tmp_path, no_simulating):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("")
    rc, _, err = run(capsys, *SHORT_SIM, "--out", str(blocker / "run1" / "out"))
    assert rc == 2
    assert err.count("\n") == 1 and "--out" in err and f"lies under {blocker}, which is a file" in err


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="needs Linux's /sys, where no one may write")
@pytest.mark.parametrize("out, problem", [("/sys/freeflyer_out", "cannot create the folder"),
                                          ("/sys/kernel", "cannot write in the folder")])
def test_sim_out_where_no_one_may_write_exits_2(capsys, no_simulating, out, problem):
    rc, _, err = run(capsys, *SHORT_SIM, "--out", out)
    assert rc == 2
    assert err.startswith(f"freeflyer sim: error: --out {out}: {problem} (")
    assert err.rstrip().endswith("give a folder you can write to") and err.count("\n") == 1


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes in read-only folders")
def test_sim_out_in_a_read_only_folder_exits_2(capsys, tmp_path, no_simulating):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        rc, _, err = run(capsys, *SHORT_SIM, "--out", str(locked / "out"))
    finally:
        locked.chmod(0o700)
    assert rc == 2 and "--out" in err and "give a folder you can write to" in err


def test_sim_refuses_a_folder_holding_an_earlier_run_unless_told_to_overwrite(capsys, tmp_path):
    out = tmp_path / "out"
    assert run(capsys, *SHORT_SIM, "--out", str(out))[0] == 0
    first = (out / "summary.json").read_bytes()
    rc, _, err = run(capsys, *SHORT_SIM, "--duration", "0.3", "--out", str(out))
    from freeflyer_control.cli.outdir import earlier_outputs

    found = earlier_outputs(out)  # timeseries.csv, summary.json, run.mcap, ..., run.json, replay.html
    assert found[:2] == ["timeseries.csv", "summary.json"] and "run.json" in found
    earlier = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    assert rc == 2
    assert err == (f"freeflyer sim: error: --out {out} holds the outputs of an earlier run ({earlier}): "
                   "add --overwrite to replace them, or give another folder\n")
    assert (out / "summary.json").read_bytes() == first  # untouched
    rc, outp, _ = run(capsys, *SHORT_SIM, "--duration", "0.3", "--out", str(out), "--overwrite")
    assert rc == 0 and json.loads(outp)["duration_s"] == 0.3
    assert json.loads((out / "summary.json").read_text())["duration_s"] == 0.3


def test_sim_overwrite_removes_every_file_of_the_earlier_run_and_nothing_else(capsys, tmp_path):
    # An earlier task-space run drew ee_tracking.png and wrote run.mcap; this joint-space run
    # without plots writes neither, so both must be gone, not pass as this run's.
    for name in ("ee_tracking.png", "singularity.png", "joint_rates.png", "summary.json", "run.mcap"):
        (tmp_path / name).write_text("earlier run")
    (tmp_path / "notes.txt").write_text("mine")
    rc, _, err = run(capsys, *SHORT_SIM, "--out", str(tmp_path), "--overwrite")
    assert rc == 0, err
    left = {p.name for p in tmp_path.iterdir()}
    assert left <= {"timeseries.csv", "summary.json", "run.mcap", "run.json", "replay.html", "notes.txt"}
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert "earlier run" not in (tmp_path / "summary.json").read_text()
    assert not (tmp_path / "run.mcap").exists() or (tmp_path / "run.mcap").read_bytes() != b"earlier run"


def test_sim_writes_beside_unrelated_files_and_into_new_nested_folders(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    assert run(capsys, *SHORT_SIM, "--out", str(tmp_path))[0] == 0
    assert (tmp_path / "notes.txt").read_text() == "mine" and (tmp_path / "summary.json").is_file()
    nested = tmp_path / "a" / "b" / "c"
    assert run(capsys, *SHORT_SIM, "--out", str(nested))[0] == 0
    assert (nested / "timeseries.csv").is_file()


def test_sim_whose_capture_always_drops_out_still_summarises_saying_what_is_not_available(capsys, tmp_path):
    # The controller never gets a state: every figure it feeds is "not available", with why,
    # and the plant's own figures (it stays at rest) are still there.
    rc, out, err = run(capsys, "sim", "--via-testbed", "planar_4link", "--fault", "capture_dropout:0:1000",
                       "--duration", "2", "--no-plots", "--out", str(tmp_path))
    assert rc == 0, err
    assert "RMS tracking error           not available (no sample has a reference: the controller never ran)" in out
    assert "base not available (the bridge never had an estimate)" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["rms_tracking_error"] is None and "rms_tracking_error" in summary["not_available"]
    assert summary["max_abs_linear_momentum"] == 0.0 and summary["interrupted"] is False
    with open(tmp_path / "timeseries.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert len(rows) == 1 + 101  # header + 2 s at the 50 Hz log rate, from t = 0
