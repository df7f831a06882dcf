"""Files of a simulation run: timeseries.csv, summary.json, run.mcap and the plots.

Short closed-loop runs (a few seconds of simulated time each), computed once per module.
"""

from __future__ import annotations

import csv
import json
import logging
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from freeflyer_control.physics.modes import Mode
from freeflyer_control.sim.output import json_safe
from freeflyer_control.sim.writers import write_outputs
from freeflyer_control.sim.ros_messages import MSG_DEFINITIONS, ros2_msgdef
from freeflyer_control.sim.plots import write_plots
from freeflyer_control.sim.config import SimConfig
from freeflyer_control.sim.runner import run_simulation

REQUIRED_SUMMARY_KEYS = {
    "max_abs_linear_momentum", "max_abs_angular_momentum", "com_drift_m",
    "base_attitude_change_rad", "rms_tracking_error", "real_time_factor", "mode_switches",
}
BASIC_PLOTS = {"joint_rates.png", "joint_angles.png", "momentum.png", "system_com.png"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SWITCH_TIME = 3.0


@pytest.fixture(scope="module")
def scheduled():
    """planar_4link, Wilde maneuver, floating until 3 s, then flying."""
    return run_simulation(SimConfig(robot="planar_4link", maneuver="wilde", duration=6.0,
                                    mode_schedule=[(0.0, "floating"), (SWITCH_TIME, "flying")]))


@pytest.fixture(scope="module")
def scheduled_files(scheduled, tmp_path_factory):
    out = tmp_path_factory.mktemp("scheduled")
    return write_outputs(scheduled, out), write_plots(scheduled, out)


@pytest.fixture(scope="module")
def task_space(tmp_path_factory):
    result = run_simulation(SimConfig(robot="planar_4link", maneuver="ee-point",
                                      controller="resolved_rate", duration=5.0))
    return result, write_plots(result, tmp_path_factory.mktemp("task_space"))


@pytest.fixture(scope="module")
def spatial(tmp_path_factory):
    result = run_simulation(SimConfig(robot="spatial_6link", maneuver="wilde", duration=4.0))
    return result, write_plots(result, tmp_path_factory.mktemp("spatial"))


def read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path.name} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])  # IHDR
    assert width >= 500 and height >= 300, f"{path.name}: {width} x {height} px"
    assert len(data) > 10_000, f"{path.name}: only {len(data)} bytes"


# ------------------------------------------------------------------------------------ CSV


def test_csv_header_and_one_row_per_sample(scheduled, scheduled_files):
    header, rows = read_csv(scheduled_files[0]["timeseries"])
    n = len(scheduled.series["t"])
    assert len(rows) == n
    assert all(len(row) == len(header) for row in rows)
    assert header[0] == "t" and header[-1] == "mode"
    assert len(set(header)) == len(header)
    for column in ("joint_positions.joint1", "joint_velocities.joint4", "momentum_total.Px",
                   "momentum_base.Lz", "momentum_arm.Py", "base_position.x", "com.y",
                   "mode.mode_index", "base_wrench_world.mz"):
        assert column in header
    # every column of every series, and nothing else
    expected = 1 + sum(v.shape[1] for k, v in scheduled.series.items() if k != "t") + 1
    assert len(header) == expected


def test_csv_values_round_trip_exactly(scheduled, scheduled_files):
    header, rows = read_csv(scheduled_files[0]["timeseries"])
    table = np.array([[float(x) for x in row[:-1]] for row in rows])
    col = {name: table[:, i] for i, name in enumerate(header[:-1])}
    s = scheduled.series
    np.testing.assert_array_equal(col["t"], s["t"][:, 0])
    for j, label in enumerate(scheduled.column_names["momentum_total"]):
        # bit-for-bit: float equality, not closeness
        assert np.array_equal(col[f"momentum_total.{label}"], s["momentum_total"][:, j])
    tiny = np.abs(col["momentum_total.Px"])
    assert np.any((tiny > 0) & (tiny < 1e-14)), "expected round-off-sized momenta in floating mode"
    for key, values in s.items():
        for j, label in enumerate(scheduled.column_names[key]):
            name = "t" if key == "t" else f"{key}.{label}"
            np.testing.assert_array_equal(col[name], values[:, j], err_msg=name)  # NaN == NaN here


def test_csv_mode_column_holds_mode_names(scheduled, scheduled_files):
    header, rows = read_csv(scheduled_files[0]["timeseries"])
    t = np.array([float(row[0]) for row in rows])
    modes = [row[-1] for row in rows]
    index = [int(float(row[header.index("mode.mode_index")])) for row in rows]
    assert modes == [list(Mode)[i].value for i in index]
    assert set(modes) == {"floating", "flying"}
    assert all(m == "floating" for m, tt in zip(modes, t) if tt < SWITCH_TIME - 1e-9)
    assert all(m == "flying" for m, tt in zip(modes, t) if tt > SWITCH_TIME + 1e-9)


# ------------------------------------------------------------------------------------ JSON


def test_summary_json_parses_and_has_the_required_keys(scheduled, scheduled_files):
    text = scheduled_files[0]["summary"].read_text(encoding="utf-8")

    def no_constants(name):
        raise AssertionError(f"summary.json is not strict JSON: {name}")

    summary = json.loads(text, parse_constant=no_constants)
    assert REQUIRED_SUMMARY_KEYS <= set(summary)
    assert summary["robot"] == "planar_4link"
    switch = summary["mode_switches"][0]
    assert (switch["t"], switch["from"], switch["to"], switch["accepted"]) == (
        SWITCH_TIME, "floating", "flying", True)
    assert summary["max_abs_linear_momentum"] == scheduled.summary["max_abs_linear_momentum"]
    assert text.startswith("{\n  \"")  # indent 2


def test_json_safe_converts_numpy_and_non_finite_values():
    value = {"a": np.float64(1.5), "b": np.int32(3), "c": np.array([1.0, 2.0]), "d": np.bool_(True),
             "e": float("inf"), "f": np.float32("nan"), "g": (Mode.FLYING, Path("/x")), 4: None}
    safe = json_safe(value)
    assert json.loads(json.dumps(safe, allow_nan=False)) == {
        "a": 1.5, "b": 3, "c": [1.0, 2.0], "d": True, "e": None, "f": None,
        "g": ["flying", "/x"], "4": None}


# ------------------------------------------------------------------------------------ plots


def test_plots_written_as_png(scheduled_files):
    outputs, plots = scheduled_files
    assert {p.name for p in plots} == BASIC_PLOTS  # joint-space maneuver: no ee / sigma plots
    for path in plots:
        assert path.parent == outputs["summary"].parent
        assert_png(path)


def test_task_space_plots(task_space):
    _, plots = task_space
    assert {p.name for p in plots} == BASIC_PLOTS | {"ee_tracking.png", "singularity.png"}
    for path in plots:
        assert_png(path)


def test_spatial_plots(spatial):
    _, plots = spatial
    assert {p.name for p in plots} == BASIC_PLOTS
    for path in plots:
        assert_png(path)


def test_importing_the_modules_needs_neither_matplotlib_nor_mcap():
    code = ("import sys, freeflyer_control.sim.output, freeflyer_control.sim.plots; "
            "bad = [m for m in ('matplotlib', 'mcap', 'mcap_ros2') if m in sys.modules]; "
            "sys.exit(f'imported at module import: {bad}' if bad else 0)")
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr or proc.stdout


# ------------------------------------------------------------------------------------ MCAP


def test_mcap_skipped_when_mcap_ros2_is_missing(scheduled, tmp_path, monkeypatch, package_log):
    for name in ("mcap_ros2", "mcap_ros2.writer"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    with package_log.at_level(logging.INFO):
        paths = write_outputs(scheduled, tmp_path)
    assert set(paths) == {"timeseries", "summary", "run"}
    assert not (tmp_path / "run.mcap").exists()
    assert not list(tmp_path.glob("*.part"))
    assert any("run.mcap not written" in m for m in package_log.messages)


def test_msgdefs_are_complete_ros2msg_texts():
    odom = ros2_msgdef("nav_msgs/msg/Odometry")
    assert odom.startswith(MSG_DEFINITIONS["nav_msgs/msg/Odometry"])
    sep = "\n" + "=" * 80 + "\nMSG: "
    deps = [block.split("\n", 1)[0] for block in odom.split(sep)[1:]]
    assert sorted(deps) == sorted({
        "geometry_msgs/PoseWithCovariance", "geometry_msgs/Pose", "geometry_msgs/Point",
        "geometry_msgs/Quaternion", "geometry_msgs/TwistWithCovariance", "geometry_msgs/Twist",
        "geometry_msgs/Vector3", "std_msgs/Header", "builtin_interfaces/Time"})
    wrench = ros2_msgdef("geometry_msgs/msg/WrenchStamped")
    assert [b.split("\n", 1)[0] for b in wrench.split(sep)[1:]] == [
        "geometry_msgs/Wrench", "geometry_msgs/Vector3", "std_msgs/Header", "builtin_interfaces/Time"]
    assert ros2_msgdef("std_msgs/msg/String").strip().endswith("string data")
    assert "float64[] position" in ros2_msgdef("sensor_msgs/msg/JointState")


def test_mcap_reads_back(scheduled, scheduled_files):
    pytest.importorskip("mcap_ros2", reason="run.mcap needs the optional mcap-ros2-support package")
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    outputs, _ = scheduled_files
    assert outputs["mcap"].name == "run.mcap"
    s = scheduled.series
    n = len(s["t"])
    by_topic: dict[str, list] = {}
    with open(outputs["mcap"], "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        assert reader.get_header().profile == "ros2"
        for schema, channel, message, decoded in reader.iter_decoded_messages():
            assert schema.encoding == "ros2msg" and channel.message_encoding == "cdr"
            by_topic.setdefault(channel.topic, []).append((schema.name, message, decoded))

    joint_states = by_topic["/joint_states"]
    assert len(joint_states) == n
    assert {name for name, _, _ in joint_states} == {"sensor_msgs/msg/JointState"}
    for k, (_, message, msg) in enumerate(joint_states):
        t_ns = int(round(s["t"][k, 0] * 1e9))
        assert message.log_time == t_ns
        assert msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec == t_ns
        assert list(msg.name) == list(scheduled.robot.joint_names)
        assert np.array_equal(np.asarray(msg.position), s["joint_positions"][k])
        assert np.array_equal(np.asarray(msg.velocity), s["joint_velocities"][k])

    odom = by_topic["/base/odom"]
    assert len(odom) == n
    _, _, last = odom[-1]
    assert (last.header.frame_id, last.child_frame_id) == ("world", "base_link")
    twist = last.twist.twist
    # world-frame twist (DESIGN section 5), not child-frame
    assert [twist.angular.x, twist.angular.y, twist.angular.z] == s["base_angular_velocity"][-1].tolist()
    assert [twist.linear.x, twist.linear.y, twist.linear.z] == s["base_linear_velocity"][-1].tolist()
    pose = last.pose.pose
    assert [pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w] == \
        s["base_orientation_xyzw"][-1].tolist()

    assert [msg.data for _, _, msg in by_topic["/mode"]] == ["floating", "flying"]

    from mcap_ros2.writer import Writer

    if hasattr(Writer, "add_metadata"):  # mcap-ros2-support >= 0.6
        with open(outputs["mcap"], "rb") as f:
            metadata = {m.name: m.metadata for m in make_reader(f).iter_metadata()}
        assert metadata["freeflyer_control"]["base_odom_twist_frame"] == "world"

    wrenches = by_topic["/base/wrench_command"]
    assert len(wrenches) == n
    fx, fy, mz = s["base_wrench_world"][-1]
    _, _, w = wrenches[-1]
    assert w.header.frame_id == "world"
    assert [w.wrench.force.x, w.wrench.force.y, w.wrench.force.z,
            w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z] == [fx, fy, 0.0, 0.0, 0.0, mz]
    assert any(np.abs(s["base_wrench_world"][-1]) > 0), "flying mode should command a base wrench"


# ------------------------------------------------------------------------ streaming, summary


def test_timeseries_streamed_during_the_run_is_the_file_written_after_it(scheduled, tmp_path):
    from freeflyer_control.sim.output import write_timeseries_csv
    from freeflyer_control.sim.stream import TimeseriesStream

    stream = TimeseriesStream(tmp_path / "streamed.csv")
    result = run_simulation(SimConfig(robot="planar_4link", maneuver="wilde", duration=6.0,
                                      mode_schedule=[(0.0, "floating"), (SWITCH_TIME, "flying")]),
                            stream=stream)
    stream.close()
    after = write_timeseries_csv(result, tmp_path / "after.csv")
    assert stream.rows == len(result.series["t"]) == len(scheduled.series["t"])
    assert (tmp_path / "streamed.csv").read_bytes() == after.read_bytes()


def test_compiled_engine_streams_the_same_file_as_it_writes_after_the_run(tmp_path):
    pytest.importorskip("numba", reason="the compiled engine needs numba (the 'fast' extra)")
    from freeflyer_control.sim.output import write_timeseries_csv
    from freeflyer_control.sim.stream import TimeseriesStream

    stream = TimeseriesStream(tmp_path / "streamed.csv")
    # 12 s at 250 Hz: several compiled chunks (1000 ticks each), so rows arrive in blocks.
    result = run_simulation(SimConfig(robot="planar_4link", maneuver="wilde", duration=12.0),
                            fast=True, stream=stream)
    stream.close()
    assert result.summary["engine"] == "compiled (numba)"
    after = write_timeseries_csv(result, tmp_path / "after.csv")
    assert stream.rows == len(result.series["t"]) == 12 * 50 + 1
    assert (tmp_path / "streamed.csv").read_bytes() == after.read_bytes()


def test_streamed_rows_reach_the_disk_before_the_run_ends(scheduled, tmp_path):
    from freeflyer_control.sim.stream import TimeseriesStream

    stream = TimeseriesStream(tmp_path / "timeseries.csv", flush_interval=0.0)
    stream.begin(scheduled.column_names)
    one = {key: values[0] for key, values in scheduled.series.items()}
    for _ in range(3):
        stream.write(one)
    header, rows = read_csv(tmp_path / "timeseries.csv")  # read while the stream is still open
    assert len(rows) == 3 and all(len(row) == len(header) for row in rows)
    stream.close()


def test_every_summary_figure_of_a_run_with_no_samples_is_not_available_with_the_reason(scheduled):
    from freeflyer_control.sim.metrics import run_metrics
    from freeflyer_control.sim.result import Recorder

    empty = Recorder(scheduled.robot).series()
    for task_space in (False, True):
        figures = run_metrics(scheduled.robot, empty, task_space)
        why = figures.pop("not_available")
        units = figures.pop("tracking_error_units")
        assert units
        assert all(value is None for value in figures.values()), figures
        expected = set(figures) - ({"min_sigma"} if not task_space else set())
        assert set(why) == expected and all(why.values())


def test_a_diverged_state_gives_not_available_figures_not_nan_or_an_exception(scheduled):
    from freeflyer_control.sim.metrics import run_metrics

    series = {key: np.array(values, dtype=float) for key, values in scheduled.series.items()}
    series["com"][-1] = np.nan
    series["momentum_total"][-1, 0] = np.inf
    figures = run_metrics(scheduled.robot, series, task_space=False)
    assert figures["com_drift_m"] is None and figures["max_abs_linear_momentum"] is None
    assert figures["not_available"]["com_drift_m"] == "non-finite samples of com"
    assert figures["base_position_change_m"] == scheduled.summary["base_position_change_m"]


def test_summary_says_the_run_was_complete(scheduled):
    s = scheduled.summary
    assert s["interrupted"] is False and s["error"] is None and s["t_reached_s"] == s["duration_s"]
    assert s["not_available"] == {}


def test_plot_files_are_the_ones_the_output_folder_check_knows(scheduled_files, task_space):
    from freeflyer_control.sim.plots import PLOT_FILES

    written = {p.name for p in scheduled_files[1]} | {p.name for p in task_space[1]}
    # contact_force.png: ee-contact runs only (test_ee_contact.py)
    assert written == set(PLOT_FILES) - {"contact_force.png"}


def test_missing_matplotlib_is_said_in_one_line_before_the_run_and_the_other_outputs_are_written(tmp_path):
    from freeflyer_control.cli.sim import MATPLOTLIB_MISSING

    # sys.modules[name] = None makes "import name" raise ImportError, as when it is not installed.
    code = ("import sys; sys.modules['matplotlib'] = None; "
            "from freeflyer_control.cli.main import main; "
            f"sys.exit(main(['sim', '--duration', '1', '--engine', 'python', '--out', {str(tmp_path)!r}]))")
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(root)}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.splitlines()
    assert err[0] == MATPLOTLIB_MISSING  # before the progress bar: said before simulating
    assert all("[" in line for line in err[1:])  # then only progress lines
    assert {"timeseries.csv", "summary.json"} <= {p.name for p in tmp_path.iterdir()}
    assert not list(tmp_path.glob("*.png"))
