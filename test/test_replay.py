"""replay.html: a finished run in 3-D, from its own records, in a real (headless) browser.

The runs are short closed loops written by sim.output's writers, as ``freeflyer sim`` writes
them; the browser tests open the page in Debian's headless Chromium and judge the rendered pixels.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pinocchio as pin
import pytest

from freeflyer_control.cli.main import main
from freeflyer_control.sim.writers import write_outputs
from freeflyer_control.sim.replay import REPLAY_HTML, replay_missing, write_replay
from freeflyer_control.sim.replay.scene import MAX_FPS, build_scene, frame_stride, unpack
from freeflyer_control.sim.run_record import RUN_JSON, read_run
from freeflyer_control.sim.runner import SimConfig, run_simulation

from browser_support import Browser, chromium

needs_viewer = pytest.mark.skipif(replay_missing() is not None, reason=str(replay_missing()))
needs_browser = pytest.mark.skipif(chromium() is None, reason="no chromium installed (Debian: apt-get install chromium)")

# Wilde's first joint turns at 0.1 rad/s from t = 0 to 10 s: at 2 s and 10 s the arm points
# 0.8 rad apart, which moves its silhouette by tens of pixels.
EARLY, LATE = 2.0, 10.0


def floats(packed: str, *shape: int) -> np.ndarray:
    return unpack(packed).reshape(*shape)


@pytest.fixture(scope="module")
def wilde_run(tmp_path_factory):
    """planar_4link, Wilde maneuver, floating, 12 s: its folder, with replay.html."""
    out = tmp_path_factory.mktemp("wilde")
    result = run_simulation(SimConfig(robot="planar_4link", maneuver="wilde", duration=12.0), fast=False)
    write_outputs(result, out, mcap=False, replay=replay_missing() is None)
    return out


@pytest.fixture(scope="module")
def capture_run(tmp_path_factory):
    """dual_arm_planar capturing planar_box in flying mode, written as `freeflyer sim` does."""
    from freeflyer_control.sim.capture import CaptureConfig, run_capture
    from freeflyer_control.sim.cooperative import write_object_outputs

    out = tmp_path_factory.mktemp("capture")
    result = run_capture(CaptureConfig(robot="dual_arm_planar", obj="planar_box", mode="flying"))
    write_object_outputs(result, out, plots=False)
    return out


def test_frames_keep_at_most_the_replay_rate_evenly_and_always_the_last_sample():
    t = np.arange(0.0, 181.02, 0.02)  # a 3-minute run logged at 50 Hz
    d = frame_stride(t)
    assert d.fps <= MAX_FPS and d.indices[0] == 0 and d.indices[-1] == t.size - 1
    assert np.all(np.diff(d.indices)[:-1] == d.stride)
    long = frame_stride(np.arange(0.0, 36000.0, 0.1), max_frames=6000)  # ten hours at 10 Hz
    assert long.indices.size <= 6001


def test_run_json_names_what_rebuilds_the_model_from_anywhere(wilde_run):
    run = json.loads((wilde_run / RUN_JSON).read_text())
    assert run["kind"] == "sim" and run["robot"]["source"] == "planar_4link"
    assert len(run["thrusters"]) == 8 and run["options"]["maneuver"] == "wilde"
    assert read_run(wilde_run).load_robot().name == "planar_4link"


def test_the_com_the_replay_shows_stays_put_in_floating_mode(wilde_run):
    scene = build_scene(read_run(wilde_run))
    com = floats(scene["com"], -1, 3)
    # Momentum is conserved to round-off (1e-15 m of drift in the run); the page holds float32,
    # whose spacing near the CoM's coordinates (|x| < 1 m) is below 1.2e-7 m.
    assert np.abs(com - com[0]).max() < 2e-7
    assert scene["modes"] == [scene["mode_names"].index("floating")] * scene["frames"]["count"]


def test_link_poses_are_pinocchio_placements_of_the_recorded_configuration(wilde_run):
    records = read_run(wilde_run)
    scene = build_scene(records)
    poses = floats(scene["link_poses"], scene["frames"]["count"], len(scene["links"]), 7)
    ff = records.load_robot()
    k = scene["frames"]["count"] // 2
    row = int(np.argmin(np.abs(records.t - floats(scene["t"], -1)[k])))
    from freeflyer_control.physics.state import make_state

    q = make_state(ff, base_position=records.series["base_position"][row],
                   base_orientation_xyzw=records.series["base_orientation_xyzw"][row],
                   joint_positions=records.series["joint_positions"][row]).q
    data = ff.create_data()
    pin.framesForwardKinematics(ff.model, data, q)
    for j, link in enumerate(scene["links"]):
        placement = data.oMf[ff.model.getFrameId(link, pin.BODY)]
        assert np.allclose(poses[k, j, :3], placement.translation, atol=1e-6)  # float32 of |x| < 2 m
        assert np.allclose(pin.Quaternion(*np.roll(poses[k, j, 3:].astype(float), 1)).normalized().matrix(),
                           placement.rotation, atol=1e-6)


def test_after_the_capture_the_grasp_frame_rides_with_the_hand(capture_run):
    """Records of a capture: once the grasp closes, the object is rigidly held, so the offset of
    the end-effector from the object's grasp frame no longer changes."""
    records = read_run(capture_run)
    obj = records.load_object()
    ff = records.load_robot()
    data = ff.create_data()
    captured = records.series["phase"][:, 0] > 0.5
    assert captured.any() and not captured.all()
    grasp = obj.grasps[0]
    offsets = []
    from freeflyer_control.physics.state import make_state, rotation_from_xyzw

    for row in np.flatnonzero(captured):
        q = make_state(ff, base_position=records.series["base_position"][row],
                       base_orientation_xyzw=records.series["base_orientation_xyzw"][row],
                       joint_positions=records.series["joint_positions"][row]).q
        pin.framesForwardKinematics(ff.model, data, q)
        hand = data.oMf[ff.frame_id(grasp.end_effector)]
        pose = pin.SE3(rotation_from_xyzw(records.series["object_orientation_xyzw"][row]),
                       records.series["object_position"][row])
        offsets.append(pin.log6((pose * grasp.placement).inverse() * hand).vector)
    offsets = np.array(offsets)
    # A rigid hold: the same offset to round-off (the held plant integrates one body).
    assert np.abs(offsets - offsets[0]).max() < 1e-9


@needs_viewer
def test_object_runs_carry_the_object_and_its_grasp_frames(capture_run):
    scene = build_scene(read_run(capture_run))
    obj = scene["object"]
    assert obj["name"] == "planar_box" and obj["free"] and len(obj["grasps"]) == 2
    assert floats(obj["poses"], -1, 7).shape[0] == scene["frames"]["count"]


@needs_viewer
def test_replay_is_one_file_that_loads_nothing_from_elsewhere(wilde_run):
    page = (wilde_run / REPLAY_HTML).read_text()
    # No element fetches anything: no src= or href= attribute, no stylesheet link.
    assert not re.search(r"<(script|img|link|iframe)[^>]*\s(src|href)\s*=", page, re.IGNORECASE)
    assert page.count("<script") == 3  # the viewer bundle, the run's data, the player


def pixels(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def robot_mask(browser: Browser) -> np.ndarray:
    """Where the robot is drawn now: the pixels that change when it is hidden."""
    shown = pixels(browser.screenshot())
    browser.evaluate("window.replay.setVisible('robot', false)")
    hidden = pixels(browser.screenshot())
    browser.evaluate("window.replay.setVisible('robot', true)")
    return np.abs(shown - hidden).sum(axis=2) > 30


@needs_viewer
@needs_browser
def test_in_a_browser_the_robot_is_drawn_and_moves_between_two_times(wilde_run):
    url = (wilde_run / REPLAY_HTML).resolve().as_uri()
    with Browser(800, 600) as browser:
        browser.open(f"{url}#t={EARLY}")
        browser.wait_for("window.replay && window.replay.ready")
        assert browser.evaluate("window.replay.playing") is False  # a time in the URL shows it, paused
        early = robot_mask(browser)
        browser.evaluate(f"location.hash = 't={LATE}'")
        browser.wait_for(f"Math.abs(window.replay.t - {LATE}) < 1e-3")
        browser.wait_for("window.replay.drawn")
        late = robot_mask(browser)
        assert browser.errors() == []
        # Every request was the page itself or made inside it (no server, no network).
        assert all(u.startswith(("file:", "data:", "blob:")) for u in browser.requests), browser.requests
    # The robot covers a good part of the view (0.5 % of 800 x 600 is 2400 pixels) ...
    assert early.mean() > 0.005 and late.mean() > 0.005
    # ... and its silhouette at 10 s is not the one at 2 s: at least a fifth of it moved.
    moved = np.logical_xor(early, late).sum() / np.logical_or(early, late).sum()
    assert moved > 0.2


@needs_viewer
def test_freeflyer_replay_rebuilds_the_page_from_the_folder(capture_run, tmp_path, capsys):
    out = tmp_path / "capture.html"
    assert main(["replay", str(capture_run), "--out", str(out)]) == 0
    assert out.is_file() and "planar_box" in out.read_text()[-200000:]
    assert f"wrote {out.resolve()}" in capsys.readouterr().out


def test_freeflyer_replay_of_a_folder_without_a_run_is_refused_in_one_line(tmp_path, capsys):
    assert main(["replay", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"RUN_DIR {tmp_path}: no run.json" in err


@needs_viewer
def test_sim_writes_the_replay_unless_told_not_to(tmp_path, capsys):
    with_replay, without = tmp_path / "with", tmp_path / "without"
    base = ["sim", "--maneuver", "wilde", "--duration", "1", "--engine", "python", "--no-plots"]
    assert main(base + ["--out", str(with_replay)]) == 0
    assert main(base + ["--no-replay", "--out", str(without)]) == 0
    assert (with_replay / REPLAY_HTML).is_file() and not (without / REPLAY_HTML).exists()
    assert "replay.html" in capsys.readouterr().out


def test_sim_without_the_viewer_says_so_up_front_and_writes_the_rest(tmp_path, capsys, monkeypatch):
    import freeflyer_control.sim.replay as replay

    monkeypatch.setattr(replay, "replay_missing", lambda: "the replay needs the viewer of the 'meshcat' package")
    assert main(["sim", "--maneuver", "wilde", "--duration", "1", "--engine", "python", "--no-plots",
                 "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    warning = err.splitlines()[0]  # the progress bar follows on stderr
    assert warning.startswith("freeflyer sim: warning: no replay.html: the replay needs the viewer")
    assert "replay" not in "\n".join(err.splitlines()[1:])
    assert not (tmp_path / REPLAY_HTML).exists() and (tmp_path / RUN_JSON).is_file()
