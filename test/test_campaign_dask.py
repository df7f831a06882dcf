"""Campaigns on Dask ``distributed``: the local pool, a real scheduler with worker processes,
a worker killed mid-campaign, a resumed campaign, a scheduler address where nothing listens.

Every result is compared with the rows flown in this process by the function a worker calls:
the runs.csv of a campaign must not depend on where or in how many pieces it was flown.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

distributed = pytest.importorskip("distributed", reason="Dask distributed is not installed "
                                  "(pip install 'freeflyer_control[campaign]')")

import yaml  # noqa: E402

from freeflyer_control.campaign import report  # noqa: E402
from freeflyer_control.campaign.engine import run_campaign  # noqa: E402
from freeflyer_control.campaign.journal import Journal  # noqa: E402
from freeflyer_control.campaign.spec import parse_spec  # noqa: E402
from freeflyer_control.campaign.worker import fly  # noqa: E402
from freeflyer_control.cli.main import main  # noqa: E402

# The raising run overflows numpy on its way to the error (reference rows are flown here).
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                                        "ignore:invalid value:RuntimeWarning")

# Short runs; with this seed two runs of the eight spin their base at 1e50 rad/s and raise (the
# actuators refuse the NaN torques): the campaign must record them and go on.
RAW = {"robot": "planar_4link", "maneuver": "wilde", "duration": 0.2, "runs": 8, "seed": 19,
       "dispersions": {"mass_error": {"uniform": [-0.1, 0.1]}, "joint_noise": {"normal": [0, 0.001], "min": 0},
                       "initial_base_rate": {"choice": [0.0, 1e50], "p": [0.85, 0.15]}},
       "criteria": {"rms_tracking_error": {"max": 0.01}}}


def reference_csv(spec, folder) -> bytes:
    """runs.csv of ``spec`` flown run by run in this process."""
    folder.mkdir()
    report.write_tables(spec, {i: json.loads(json.dumps(fly(spec, i))) for i in range(spec.runs)}, folder)
    return (folder / "runs.csv").read_bytes()


def campaign_csv(spec, folder, **where):
    journal = Journal(folder, spec)
    outcome = run_campaign(spec, journal, **where)
    journal.close()
    report.write_tables(spec, journal.rows, folder)
    return (folder / "runs.csv").read_bytes(), outcome


@pytest.fixture(scope="module")
def spec():
    return parse_spec(RAW)


@pytest.fixture(scope="module")
def reference(spec, tmp_path_factory):
    csv = reference_csv(spec, tmp_path_factory.mktemp("campaign") / "reference")
    assert b",failed," in csv and b",ok," in csv  # the raising run is part of every comparison
    return csv


def test_three_local_workers_give_the_rows_flown_one_by_one(spec, reference, tmp_path):
    csv, outcome = campaign_csv(spec, tmp_path, workers=3)
    assert csv == reference
    assert (outcome.flown, outcome.workers, outcome.lost) == (spec.runs, 3, [])


def test_an_interrupted_campaign_resumes_on_one_worker_without_repeating_runs(spec, reference, tmp_path):
    out = tmp_path / "out"
    journal = Journal(out, spec)
    journal.record([fly(spec, i) for i in (0, 1, 5)])  # what a campaign stopped by Ctrl-C left
    journal.close()
    with open(out / "journal.jsonl", "a") as f:
        f.write('{"run": 2, "seed": 1')  # and a line cut by a crash
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(RAW, sort_keys=False))
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(["campaign", str(spec_path), "--out", str(out), "--workers", "1"])
    assert code == 0, stdout.getvalue()
    assert "resuming: 3 of 8 runs" in stdout.getvalue()
    assert "flew 5 runs on 1 workers" in stdout.getvalue()
    assert (out / "runs.csv").read_bytes() == reference
    rows = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()[:3]]
    assert [r["run"] for r in rows] == [0, 1, 5]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs_completed"] + summary["runs_failed"] == summary["runs_total"] == 8
    assert summary["runs_failed"] >= 1
    for name in ("runs.parquet", "plots/rms_tracking_error_hist.png"):
        assert (out / name).exists(), name
    assert len(list((out / "worst").iterdir())) == 3
    assert any(p.name.startswith("rms_tracking_error_vs_") for p in (out / "plots").iterdir())
    assert (out / "report.html").is_file() and "report.html" in stdout.getvalue()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_scheduler_address_where_nothing_listens_is_one_line_within_seconds(tmp_path, capsys):
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(RAW, sort_keys=False))
    address = f"tcp://127.0.0.1:{free_port()}"
    t0 = time.monotonic()
    code = main(["campaign", str(spec_path), "--out", str(tmp_path / "out"), "--scheduler", address])
    elapsed = time.monotonic() - t0
    err = capsys.readouterr().err
    assert code == 2
    assert err == (f"freeflyer campaign: error: --scheduler {address}: nothing answers within 5 s; start one "
                   "with `dask scheduler` and give its tcp://HOST:8786 address\n")
    assert elapsed < 15  # the 5 s connect timeout plus Python start-up under load


@contextlib.contextmanager
def dask_cluster(n_workers: int):
    """A real scheduler and ``n_workers`` worker processes (no nanny: killing one kills it) on
    127.0.0.1; yields (address, worker processes)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    procs = []
    try:
        scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                      "--port", "0", "--no-dashboard"], stderr=subprocess.PIPE, text=True, env=env)
        procs.append(scheduler)
        address, deadline = None, time.monotonic() + 60
        while address is None and time.monotonic() < deadline:
            line = scheduler.stderr.readline()
            if "Scheduler at:" in line:
                address = line.split("Scheduler at:")[1].strip()
        assert address, "the dask scheduler did not print its address within 60 s"
        threading.Thread(target=scheduler.stderr.read, daemon=True).start()  # keep its pipe drained
        workers = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                                     "--no-nanny", "--no-dashboard"], stderr=subprocess.DEVNULL, env=env)
                   for _ in range(n_workers)]
        procs += workers
        with distributed.Client(address, timeout=30) as client:
            client.wait_for_workers(n_workers, timeout=60)
        yield address, workers
    finally:
        for p in reversed(procs):
            p.kill()
            p.wait(timeout=30)


def test_a_dask_scheduler_with_two_worker_processes_gives_the_same_rows_and_survives_a_killed_worker(
        spec, reference, tmp_path):
    # Longer runs, one per task, so that the kill lands while runs are in flight.
    long_raw = {**RAW, "duration": 1.5, "runs": 10, "batch": 1}
    long_spec = parse_spec(long_raw)
    long_reference = reference_csv(long_spec, tmp_path / "long_reference")
    with dask_cluster(2) as (address, workers):
        csv, outcome = campaign_csv(spec, tmp_path / "same", scheduler=address)
        assert csv == reference
        assert outcome.workers == 2

        out = tmp_path / "killed"
        result = {}
        thread = threading.Thread(target=lambda: result.update(
            zip(("csv", "outcome"), campaign_csv(long_spec, out, scheduler=address))))
        thread.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (out / "journal.jsonl").exists():
            time.sleep(0.05)
        workers[1].send_signal(signal.SIGKILL)
        thread.join(timeout=120)
        assert not thread.is_alive()
    lines = (out / "journal.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["run"] for line in lines) == list(range(10))  # none lost, none twice
    assert result["outcome"].lost == []
    assert result["csv"] == long_reference


def test_a_campaign_stopped_by_ctrl_c_resumes_where_it_stopped(tmp_path):
    raw = {**RAW, "duration": 4.0, "runs": 10}
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "freeflyer_control.cli.main", "campaign", str(spec_path),
                             "--out", str(out), "--workers", "1", "--no-plots"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    journal = out / "journal.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (journal.exists() and journal.read_text().count("\n") >= 2):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, _ = proc.communicate(timeout=60)
    recorded = journal.read_text().count("\n")
    assert proc.returncode == 130, stdout
    assert 2 <= recorded < 10  # stopped in the middle
    assert f"interrupted: {recorded} of 10 runs are recorded in {out}/; run the same command to continue" in stdout
    resumed = io.StringIO()
    with contextlib.redirect_stdout(resumed):
        assert main(["campaign", str(spec_path), "--out", str(out), "--workers", "1", "--no-plots"]) == 0
    assert f"resuming: {recorded} of 10 runs" in resumed.getvalue()
    assert (out / "runs.csv").read_bytes() == reference_csv(parse_spec(raw), tmp_path / "reference")
