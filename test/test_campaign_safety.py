"""Campaigns never mix or overwrite results, and refuse what would fail before anything runs
(issue 20, classes 3, 4, 5, 7, 8, 12, 13, 17, 19).

Each test names the class it holds. Those that start worker processes (Ctrl-C, SIGTERM, the
worker cap) need Dask's distributed and skip with the reason without it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from freeflyer_control.campaign.engine import probe_scheduler, quiet_library_logs, scheduler_address, worker_cap
from freeflyer_control.campaign.journal import CampaignFolderError, Journal
from freeflyer_control.campaign.spec import load_spec, parse_spec
from freeflyer_control.campaign.worker import fly
from freeflyer_control.cli.main import main, parse
from freeflyer_control.resources import share_dir

SHARE = share_dir()
BASE = {"robot": "planar_4link", "maneuver": "wilde", "duration": 0.2, "runs": 4, "seed": 3}


def write_spec(folder: Path, spec: dict, name: str = "spec.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def refused(*argv: str) -> str:
    err = io.StringIO()
    with pytest.raises(SystemExit) as exc, contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        parse(list(argv))
    assert exc.value.code == 2
    lines = err.getvalue().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def own_robot(folder: Path) -> None:
    """planar_4link's config and URDF copied into ``folder`` (robot.yaml next to robot.urdf)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(SHARE / "urdf" / "planar_4link.urdf", folder / "robot.urdf")
    text = (SHARE / "config" / "robots" / "planar_4link.yaml").read_text()
    (folder / "robot.yaml").write_text(text.replace("urdf: ../../urdf/planar_4link.urdf", "urdf: robot.urdf"))


# --- class 3: a resume with a changed file is refused, naming it ------------------------------------

def test_a_resume_after_the_urdf_changed_is_refused_naming_the_file(tmp_path):
    own_robot(tmp_path / "lab")
    spec_path = write_spec(tmp_path / "lab", {**BASE, "robot": "robot.yaml"})
    out = tmp_path / "out"
    spec = load_spec(spec_path)
    assert str((tmp_path / "lab" / "robot.urdf").resolve()) in spec.files
    journal = Journal(out, spec)
    journal.record([fly(spec, 0)])
    journal.close()
    assert parse(["campaign", str(spec_path), "--out", str(out)])  # unchanged: resumable
    urdf = tmp_path / "lab" / "robot.urdf"
    urdf.write_text(urdf.read_text() + "<!-- edited after the first runs -->\n")
    line = refused("campaign", str(spec_path), "--out", str(out))
    assert f"holds runs of this spec flown with other files: {urdf.resolve()} has changed since the campaign began" \
        in line and "its runs would mix with those flown before" in line
    with pytest.raises(CampaignFolderError, match="has changed since the campaign began"):
        Journal(out, load_spec(spec_path))


def test_relative_paths_in_a_spec_are_relative_to_the_spec(tmp_path, monkeypatch):
    own_robot(tmp_path / "lab")
    write_spec(tmp_path / "lab", {**BASE, "robot": "robot.yaml"})
    monkeypatch.chdir(tmp_path)  # not the spec's folder
    spec = load_spec(Path("lab") / "spec.yaml")
    assert spec.raw["robot"] == str((tmp_path / "lab" / "robot.yaml").absolute())
    assert spec.given["robot"] == "robot.yaml"  # the identity is the spec as written
    assert fly(spec, 0)["status"] == "ok"


# --- class 4: --out is checked before anything runs --------------------------------------------

@pytest.mark.parametrize("make, words", [
    (lambda p: p / "sim_run" / "summary.json", "holds outputs that are not this campaign's (summary.json)"),
    (lambda p: p / "notes.txt", "is a file, not a folder"),
])
def test_campaign_out_holding_other_outputs_or_a_file_is_refused(make, words, tmp_path):
    spec_path = write_spec(tmp_path, BASE)
    target = make(tmp_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("{}\n")
    out = target.parent if target.name == "summary.json" else target
    line = refused("campaign", str(spec_path), "--out", str(out))
    assert words in line, line
    assert target.read_text() == "{}\n"  # untouched


def test_campaign_out_under_a_file_or_empty_is_refused(tmp_path):
    spec_path = write_spec(tmp_path, BASE)
    (tmp_path / "notes.txt").write_text("x\n")
    assert "lies under" in refused("campaign", str(spec_path), "--out", str(tmp_path / "notes.txt" / "run"))
    assert "argument --out: empty" in refused("campaign", str(spec_path), "--out", "")


def test_campaign_out_in_an_unwritable_place_is_refused(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere: no place is unwritable to this test")
    spec_path = write_spec(tmp_path, BASE)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert "permission denied" in refused("campaign", str(spec_path), "--out", str(locked / "run"))
    finally:
        locked.chmod(0o700)


def test_overwrite_replaces_a_sim_runs_outputs_only(tmp_path):
    spec_path = write_spec(tmp_path, BASE)
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").write_text("{}\n")
    (out / "notes.txt").write_text("mine\n")
    args = parse(["campaign", str(spec_path), "--out", str(out), "--overwrite"])
    assert args.overwrite
    Journal(out, args.campaign_spec, overwrite=True).close()
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["notes.txt"]


def test_overwrite_never_removes_a_running_campaigns_files(tmp_path):
    running = Journal(tmp_path, parse_spec(BASE))
    running.record([{"run": 0, "status": "ok"}])
    try:
        with pytest.raises(CampaignFolderError, match="another campaign is running"):
            Journal(tmp_path, parse_spec({**BASE, "seed": 5}), overwrite=True)
        assert (tmp_path / "journal.jsonl").exists() and (tmp_path / "campaign.json").exists()
    finally:
        running.close()


# --- class 19: a refused scheduler leaves nothing; a second campaign on one folder waits its turn

def test_a_campaign_that_never_flew_leaves_nothing_that_refuses_another_spec(tmp_path):
    out = tmp_path / "out"
    journal = Journal(out, parse_spec(BASE))
    journal.close()  # e.g. the scheduler was refused
    assert not (out / "campaign.json").exists() and not (out / "spec.yaml").exists()
    Journal(out, parse_spec({**BASE, "seed": 99})).close()  # another spec is welcome


def test_two_campaigns_on_one_folder_are_refused_while_the_first_runs(tmp_path):
    first = Journal(tmp_path, parse_spec(BASE))
    try:
        with pytest.raises(CampaignFolderError, match=rf"another campaign is running in {tmp_path} \(process "
                                                       rf"'{os.getpid()}'\): wait for it to end, or give another --out"):
            Journal(tmp_path, parse_spec(BASE))
    finally:
        first.close()
    Journal(tmp_path, parse_spec(BASE)).close()  # released


# --- class 13: files that are not a campaign's -------------------------------------------------

def test_a_campaign_json_or_journal_line_that_is_not_a_campaigns_is_refused_naming_it(tmp_path):
    spec_path = write_spec(tmp_path, BASE)
    out = tmp_path / "out"
    out.mkdir()
    (out / "campaign.json").write_text("[1,2]\n")
    line = refused("campaign", str(spec_path), "--out", str(out))
    assert f"{out / 'campaign.json'} is not a campaign's record ([1, 2])" in line
    (out / "campaign.json").unlink()
    journal = Journal(out, load_spec(spec_path))
    journal.record([{"run": 0, "status": "ok"}])
    journal.close()
    with open(out / "journal.jsonl", "a") as f:
        f.write("1\n")
    with pytest.raises(CampaignFolderError, match=r"journal\.jsonl, line 2: not a run's record \('1\\n'\)"):
        Journal(out, load_spec(spec_path))


@pytest.mark.parametrize("spec, words", [
    ({**BASE, "ee": [1, 2]}, "ee[0] must be a frame name, got 1"),
    ({**BASE, "robot": "x" * 5000}, "robot must be a name of at most 4096 characters"),
])
def test_spec_values_of_the_wrong_kind_are_one_line(spec, words, tmp_path):
    assert words in refused("campaign", str(write_spec(tmp_path, spec)), "--out", str(tmp_path / "out"))


# --- classes 5 and 17: dispersions bounded, refused before any run -----------------------------

@pytest.mark.parametrize("dispersion, words", [
    ({"joint_noise": 1.0e300}, "dispersions.joint_noise reaches 1e+300 rad, outside a number in [0, 1] rad (an "
                               "encoder whose noise std is a radian measures nothing)"),
    ({"base_position_noise": 1.0e300}, "outside a number in [0, 1] m (a motion capture whose noise std is a metre"),
    ({"com_error": 1000.0}, "is no model error"),
    ({"initial_joint": 100.0}, "dispersions.initial_joint reaches 100 rad for joint1"),
    ({"initial_base_velocity": 1.0e300}, "the controller refuses base odometry faster than 5 m/s as implausible"),
    ({"initial_base_rate": {"normal": [0.0, 5.0]}}, "reaches -40 rad/s"),  # 8 std: what a normal reaches
])
def test_dispersions_beyond_their_physical_range_are_refused_before_any_run(dispersion, words, tmp_path):
    line = refused("campaign", str(write_spec(tmp_path, {**BASE, "dispersions": dispersion})), "--out",
                   str(tmp_path / "out"))
    assert words in line, line
    assert not (tmp_path / "out").exists()


def test_a_fault_on_a_joint_the_robot_lacks_is_refused_before_any_run(tmp_path):
    spec = {"via_testbed": "planar_4link", "maneuver": "wilde", "duration": 1.0, "runs": 2,
            "faults": ["encoder_nan:0:0.1:nojoint"]}
    line = refused("campaign", str(write_spec(tmp_path, spec)), "--out", str(tmp_path / "out"))
    assert "faults: fault encoder_nan: 'nojoint' is not a joint of robot 'planar_4link'; did you mean" in line


def test_a_criterion_can_fail_a_run_on_saturated_commands():
    # The impedance press commands far more than the 3 N m joints give (test_sim_safety): a
    # campaign can fail such runs on the fraction of saturated samples.
    spec = parse_spec({"robot": "planar_4link", "controller": "impedance", "maneuver": "ee-contact", "runs": 1,
                       "criteria": {"saturated_fraction": {"max": 0.0}}})
    row = fly(spec, 0)
    assert row["status"] == "ok" and row["saturated_fraction"] > 0 and not row["passed"]
    assert row["max_abs_arm_torque_nm"] <= 3.0 < row["max_abs_arm_torque_commanded_nm"]


# --- class 7: the scheduler address, and what answers there --------------------------------------

@pytest.mark.parametrize("address, words", [
    ("tls://10.0.0.1:8786", "tls:// needs the cluster's certificates"),
    ("inproc://x", "the 'inproc' protocol is not supported"),
    ("tcp://host:port", "the port must be a number from 1 to 65535"),
    ("tcp://:8786", "no host name in it"),
    ("10.0.0.1:8786", "give the address as tcp://HOST:PORT"),
])
def test_a_scheduler_address_of_the_wrong_form_is_one_line(address, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        scheduler_address(address)


@contextlib.contextmanager
def listening(greeting: bytes | None):
    """A TCP service on a free port that accepts and sends ``greeting`` (None: says nothing)."""
    server = socket.create_server(("127.0.0.1", 0))
    held = []

    def serve():
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                held.append(conn)
                if greeting is not None:
                    conn.sendall(greeting)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()
        for conn in held:
            conn.close()


def test_a_port_that_accepts_and_says_nothing_is_refused_within_the_timeout():
    with listening(None) as address:
        t0 = time.monotonic()
        with pytest.raises(ValueError, match=r"something accepts connections at 127\.0\.0\.1:\d+ but says nothing "
                                             r"within 1 s: not a Dask scheduler"):
            probe_scheduler(address, timeout=1.0)
        assert time.monotonic() - t0 < 3.0  # the 1 s timeout, and no Dask retry loop after it


def test_a_service_that_is_not_dask_is_refused_naming_its_greeting():
    with listening(b"SSH-2.0-OpenSSH_9.6\r\n") as address:
        with pytest.raises(ValueError, match=r"is not a Dask scheduler \(it greets with 'SSH-2\.0-OpenSSH_9\.6\\r\\n'\)"):
            probe_scheduler(address, timeout=1.0)


def test_the_command_refuses_a_silent_scheduler_in_one_line_within_its_5_s(tmp_path):
    pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'freeflyer_control[campaign]')")
    spec_path = write_spec(tmp_path, BASE)
    with listening(None) as address:
        t0 = time.monotonic()
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["campaign", str(spec_path), "--out", str(tmp_path / "out"), "--scheduler", address])
        elapsed = time.monotonic() - t0
    assert code == 2 and err.getvalue().count("\n") == 1 and "says nothing within 5 s" in err.getvalue()
    assert elapsed < 20.0  # 5 s of waiting; the rest is loading the spec on a loaded machine
    assert not (tmp_path / "out" / "campaign.json").exists()


# --- class 8: local workers capped ----------------------------------------------------------------

def test_workers_are_capped_by_the_runs_left_and_the_memory():
    gb = 2**30
    assert worker_cap(1000, 12, memory=24 * gb) == (12, "12 runs left to fly")
    n, why = worker_cap(1000, 5000, memory=24 * gb)
    assert n == 24 * gb // (300 * 2**20) == 81
    assert why == "24.0 GB of memory available at about 300 MB per worker"
    assert worker_cap(4, 100, memory=24 * gb) == (4, None)
    assert worker_cap(4, 100, memory=0)[0] == 1  # always one


# --- class 12: Ctrl-C and SIGTERM end a campaign in one clean line ------------------------------

def start_campaign(tmp_path: Path, workers: int = 2) -> tuple[subprocess.Popen, Path]:
    pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'freeflyer_control[campaign]')")
    spec_path = write_spec(tmp_path, {**BASE, "duration": 4.0, "runs": 12, "batch": 1})
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "freeflyer_control.cli.main", "campaign", str(spec_path), "--out",
                             str(out), "--workers", str(workers), "--no-plots"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    journal = out / "journal.jsonl"
    while time.monotonic() < deadline and not (journal.exists() and journal.read_text().count("\n") >= 1):
        time.sleep(0.05)
    assert journal.exists(), "no run recorded within 120 s"
    return proc, out


def test_ctrl_c_on_a_campaign_prints_one_line_and_no_worker_tracebacks(tmp_path):
    proc, out = start_campaign(tmp_path)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: to every process of the group
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout, stderr)
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    recorded = (out / "journal.jsonl").read_text().count("\n")
    assert f"interrupted: {recorded} of 12 runs are recorded in {out}/; run the same command to continue" in stdout


def test_no_logger_of_dask_or_tornado_speaks_below_critical_once_a_campaign_connects():
    # The Ctrl-C test above catches this only when the signal lands in a narrow window (CI saw
    # it once: Dask's own NameError traceback through tornado.application, which Dask's
    # configuration sets to ERROR); this checks the cause on every run.
    pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'freeflyer_control[campaign]')")
    import logging

    import distributed  # noqa: F401 - its configuration sets the levels quieted here

    quiet_library_logs()
    speaking = [name for name in ("tornado.application", "distributed.client", "distributed.gc", "distributed",
                                  "distributed.worker", "bokeh", "tornado")
                if logging.getLogger(name).isEnabledFor(logging.ERROR)]
    assert not speaking, f"these loggers would print during a campaign: {speaking}"


def test_sigterm_on_a_campaign_prints_one_line_and_keeps_its_rows(tmp_path):
    proc, out = start_campaign(tmp_path)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, (stdout, stderr)
    assert "Traceback" not in stderr, stderr
    recorded = (out / "journal.jsonl").read_text().count("\n")
    assert recorded >= 1
    assert f"terminated: {recorded} of 12 runs are recorded in {out}/; run the same command to continue" in stdout
    lines = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    assert len({row["run"] for row in lines}) == len(lines)  # none twice


def test_a_capped_campaign_says_so_and_a_second_one_finds_no_dashboard_port_in_use(tmp_path):
    pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'freeflyer_control[campaign]')")
    spec_path = write_spec(tmp_path, {**BASE, "runs": 2})
    held = None
    with contextlib.suppress(OSError):  # the port a scheduler's HTTP server took by default
        held = socket.create_server(("127.0.0.1", 8787))
    try:
        proc = subprocess.run([sys.executable, "-m", "freeflyer_control.cli.main", "campaign", str(spec_path), "--out",
                               str(tmp_path / "out"), "--workers", "1000", "--no-plots"],
                              capture_output=True, text=True, timeout=600)
    finally:
        if held is not None:
            held.close()
    assert proc.returncode == 0, proc.stderr
    assert "--workers 1000: starting 2 (2 runs left to fly" in proc.stderr
    assert "8787" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


# --- class 10: a full disk ends a campaign in one line, its rows safe ---------------------------

def test_a_full_disk_ends_a_campaign_in_one_line_with_the_runs_recorded(tmp_path, monkeypatch):
    pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'freeflyer_control[campaign]')")
    import errno

    real_record = Journal.record
    calls = []

    def record(self, rows):
        calls.append(len(rows))
        if len(calls) == 3:  # the disk fills after two batches
            raise OSError(errno.ENOSPC, "No space left on device", str(self.path))
        return real_record(self, rows)

    monkeypatch.setattr(Journal, "record", record)
    spec_path = write_spec(tmp_path, {**BASE, "runs": 6, "batch": 1})
    out = tmp_path / "out"
    err, stdout = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(stdout):
        code = main(["campaign", str(spec_path), "--out", str(out), "--workers", "1", "--no-plots"])
    assert code == 1
    lines = [line for line in err.getvalue().splitlines() if line.startswith("freeflyer campaign:")]
    assert lines == [f"freeflyer campaign: error: cannot write {out / 'journal.jsonl'}: No space left on device; "
                     f"2 of 6 runs are recorded in {out}/ (the journal is written and flushed a row at a time): "
                     "free some space and run the same command to continue"], err.getvalue()
    assert "Traceback" not in err.getvalue()
    assert len((out / "journal.jsonl").read_text().splitlines()) == 2
