"""Every bad input gets one clear line, and docs/bad_inputs.md is generated from these cases.

Each case runs a real entry point (the ``freeflyer`` command in-process, or a ROS-free server's
callback with the message a node would hand it) and records what a user sees: the exit status or
the status and counter, and the one line shown. The test fails when any message is empty, spans
several lines, or differs from the table in docs/bad_inputs.md; ``FREEFLYER_UPDATE_DOCS=1 pytest
test/test_bad_inputs_table.py`` rewrites the table from the cases, so it cannot drift.
"""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from conftest import robot
from freeflyer_control.cli.main import main as freeflyer

from freeflyer_control.runtime.controller_server import ControllerServer

DOC = Path(__file__).resolve().parent.parent / "docs" / "bad_inputs.md"


@dataclass(frozen=True)
class Outcome:
    result: str   # "exit 2", "refused (counter nan)", ...
    message: str  # the one line a user sees


@dataclass(frozen=True)
class Case:
    """``accepted``: the input is run or answered anyway, and the line is a warning."""

    where: str
    given: str
    run: Callable[[], Outcome]
    accepted: bool = False


def cli(*argv: str, setup: Callable[[], None] | None = None) -> Callable[[], Outcome]:
    """Run ``freeflyer argv`` in-process (after ``setup``, e.g. a file in the way); the message
    is what it prints on stderr.

    argparse prints its usage lines before the error line: those are not counted as the
    message, everything else on stderr is.
    """
    def run() -> Outcome:
        if setup is not None:
            setup()
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                status = freeflyer(list(argv))
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else 1
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        usage_end = 0
        for i, line in enumerate(lines):  # argparse: "usage: ..." and its indented continuation
            if line.startswith("usage:") or (usage_end and line.startswith(" ")):
                usage_end = i + 1
        return Outcome(f"exit {status}", "\n".join(lines[usage_end:]))
    return run


def controller_message(make_call: Callable[[ControllerServer], None]) -> Callable[[], Outcome]:
    """Hand a ControllerServer (planar_4link, 100 Hz) a message; report the counted refusal."""
    def run() -> Outcome:
        server = ControllerServer(robot("planar_4link"), rate=100.0)
        make_call(server)
        counts = server.stats.errors.counts
        kinds = ", ".join(sorted(counts)) or "none"
        return Outcome(f"refused, counted as `{kinds}`", server.stats.errors.last)
    return run


def _joint_state(names, positions, velocities):
    def call(server: ControllerServer) -> None:
        server.on_joint_state(names, positions, velocities, now=0.0)
    return call


def controller_tick(disturb: Callable) -> Callable[[], Outcome]:
    """planar_4link in closed loop with its plant server for 1 s, then ``disturb(lockstep)``
    returns the controller's output; the message is the reason it gives for zero commands."""
    def run() -> Outcome:
        from test_runtime import _running

        sim = _running(robot("planar_4link"))
        out = disturb(sim)
        zero = "commands zero" if not out.actuation.arm_torques.any() else "COMMANDS NOT ZERO"
        return Outcome(f"status `{out.status}`, {zero}", out.reason)
    return run


def _clock_back_inputs_stopped(sim):
    sim.clock_offset = -10.0
    return sim.step(feed=False)


def _absurd_input(where: str, value: float):
    def disturb(sim):
        from test_runtime import _absurd, _joint_args

        bad = _absurd(sim.plant.measurement(), where, value)
        sim.ctl.on_joint_state(*_joint_args(bad), now=sim.now)
        sim.ctl.on_base_odometry(bad.base, now=sim.now)
        return sim.ctl.tick(sim.now)
    return disturb


def bridge_trip(disturb: Callable) -> Callable[[], Outcome]:
    """The example testbed's bridge, armed, then ``disturb(rig)`` returns the next tick's output;
    the message is the reason of the trip it latches."""
    def run() -> Outcome:
        from test_hil_bridge import Rig

        rig = Rig()
        rig.arm()
        out = disturb(rig)
        off = "everything off" if not out.command.joint_efforts.any() else "EFFORTS NOT ZERO"
        return Outcome(f"trip `{out.trip.kind}`, {off}", out.trip.reason)
    return run


def _bridge_clock_back(rig):
    rig.clock_offset = -10.0
    return rig.step()


def _bridge_duplicate_encoder(rig):
    names, raw = rig.encoder_message(rig.t)
    rig.bridge.on_encoders(rig.t, [*names, names[0]], [*raw, raw[0]], [], rig.t)
    return rig.step()


def plant_diverges() -> Outcome:
    """plant_node at 10 Hz with every arm joint at its effort limit (its plant server)."""
    from freeflyer_control.physics.state import make_state
    from freeflyer_control.runtime.plant_server import PlantServer

    ff = robot("planar_4link")
    server = PlantServer(ff, make_state(ff), rate=10.0)
    server.set_arm_torques(ff.arm_effort_limits, 0.0)
    reason = server.step(0.0)
    return Outcome(f"status `{server.status}`, publishes nothing", reason)


def _write(path: str, text: str) -> Callable[[], None]:
    def setup() -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    return setup


def _bad_base_limits() -> None:
    from freeflyer_control.resources import share_dir

    Path("bad.yaml").write_text(
        f"urdf: {share_dir() / 'urdf' / 'planar_4link.urdf'}\nbase: planar\nend_effectors: [ee_link]\n"
        "base_limits: {max_force: -2, max_torque: 0.5}\n")


_J = list(robot("planar_4link").joint_names)
_SHORT = ("--json", "--no-plots", "--out")  # quiet runs: no progress bar, no plots

CASES: tuple[Case, ...] = (
    # --- models and configs
    Case("freeflyer check", "freeflyer check no_such_robot", cli("check", "no_such_robot")),
    Case("freeflyer check", "freeflyer check bad.yaml (base_limits: {max_force: -2, ...})",
         cli("check", "bad.yaml", setup=_bad_base_limits)),
    # --- queries
    Case("freeflyer gjm", "freeflyer gjm --q '[0, 0.1'", cli("gjm", "--q", "[0, 0.1")),
    Case("freeflyer gjm", "freeflyer gjm --q '[NaN, 0, 0, 0]'", cli("gjm", "--q", "[NaN, 0, 0, 0]")),
    Case("freeflyer gjm", "freeflyer gjm --frame nowhere", cli("gjm", "--frame", "nowhere")),
    Case("freeflyer gjm", "freeflyer gjm --sigma-warn -1", cli("gjm", "--sigma-warn", "-1")),
    Case("freeflyer gjm", "freeflyer gjm --q '[3.0, 0.8, -0.8, 0.8]' (joint 1 past its URDF limit)",
         cli("gjm", "--q", "[3.0, 0.8, -0.8, 0.8]"), accepted=True),
    Case("freeflyer gjm", "freeflyer gjm --q '[0, 0.1, 0.1, 0]' (an arm nearly stretched: near a dynamic singularity)",
         cli("gjm", "--q", "[0, 0.1, 0.1, 0]"), accepted=True),
    Case("freeflyer osi", "freeflyer osi --root gripper", cli("osi", "--root", "gripper")),
    Case("freeflyer osi", "freeflyer osi --robot spatial_7dof --root link3 --mode flying",
         cli("osi", "--robot", "spatial_7dof", "--root", "link3", "--mode", "flying")),
    Case("freeflyer workspace", "freeflyer workspace --grid 100000", cli("workspace", "--grid", "100000")),
    Case("freeflyer plan", "freeflyer plan reorient --dtheta 0.1 --q0 '[0, 2.6, 0, 0]'",
         cli("plan", "reorient", "--dtheta", "0.1", "--q0", "[0, 2.6, 0, 0]")),
    # --- simulation options
    Case("freeflyer sim", "freeflyer sim --mode hovering", cli("sim", "--mode", "hovering")),
    Case("freeflyer sim", "freeflyer sim --rate 1e7", cli("sim", "--rate", "1e7")),
    Case("freeflyer sim", "freeflyer sim --engine compiled --duration 1e9",
         cli("sim", "--engine", "compiled", "--duration", "1e9")),
    Case("freeflyer sim", "freeflyer sim --duration 100000", cli("sim", "--duration", "100000")),
    Case("freeflyer sim", "freeflyer sim --substeps 5000", cli("sim", "--substeps", "5000")),
    Case("freeflyer sim", "freeflyer sim --mass-error 1.5", cli("sim", "--mass-error", "1.5")),
    Case("freeflyer sim", "freeflyer sim --q0 '[0.1, 0.2'", cli("sim", "--q0", "[0.1, 0.2")),
    Case("freeflyer sim", "freeflyer sim --q0 '[3, 0, 0, 0]'", cli("sim", "--q0", "[3, 0, 0, 0]")),
    Case("freeflyer sim", "freeflyer sim --mode-schedule nan:flying", cli("sim", "--mode-schedule", "nan:flying")),
    Case("freeflyer sim", "freeflyer sim --mode-schedule 5:flying,2:floating",
         cli("sim", "--mode-schedule", "5:flying,2:floating")),
    Case("freeflyer sim", "freeflyer sim --duration 1 --mode-schedule 0.5:flying,30:floating",
         cli("sim", "--duration", "1", "--mode-schedule", "0.5:flying,30:floating", *_SHORT, "schedule_out"),
         accepted=True),
    Case("freeflyer sim", "freeflyer sim --fault capture_dropout:1:1 (without --via-testbed)",
         cli("sim", "--fault", "capture_dropout:1:1")),
    # --- simulation outputs
    Case("freeflyer sim", "freeflyer sim --out results.csv (a file)",
         cli("sim", "--out", "results.csv", setup=_write("results.csv", "t\n"))),
    Case("freeflyer sim", "freeflyer sim --out notes.txt/run1", cli("sim", "--out", "notes.txt/run1",
                                                                   setup=_write("notes.txt", "x\n"))),
    Case("freeflyer sim", "freeflyer sim --out ''", cli("sim", "--out", "")),
    Case("freeflyer sim", "freeflyer sim --out earlier (a folder holding an earlier run)",
         cli("sim", "--out", "earlier", setup=_write("earlier/summary.json", "{}\n"))),
    Case("freeflyer sim", "freeflyer sim --maneuver ee-circle --rate 1 --duration 20 (the plant diverges)",
         cli("sim", "--maneuver", "ee-circle", "--rate", "1", "--duration", "20", *_SHORT, "diverged_out")),
    Case("freeflyer replay", "freeflyer replay earlier (a folder without run.json)",
         cli("replay", "earlier", setup=_write("earlier/summary.json", "{}\n"))),
    Case("freeflyer replay", "freeflyer replay run --out missing/replay.html (no such folder)",
         cli("replay", "run", "--out", "missing/replay.html", setup=_write("run/run.json", "{}\n"))),
    Case("controller_node /joint_states", "a joint position NaN",
         controller_message(_joint_state(_J, [float("nan")] + [0.0] * (len(_J) - 1), [0.0] * len(_J)))),
    Case("controller_node /joint_states", "a joint missing",
         controller_message(_joint_state(_J[1:], [0.0] * (len(_J) - 1), [0.0] * (len(_J) - 1)))),
    Case("controller_node /joint_states", "a joint named twice",
         controller_message(_joint_state(_J + _J[:1], [0.0] * (len(_J) + 1), [0.0] * (len(_J) + 1)))),
    Case("controller_node /joint_states", "a joint rate of 1e154 rad/s (finite, absurd)",
         controller_tick(_absurd_input("joint_velocity", 1e154))),
    Case("controller_node /base/odom", "a base position 1e308 m from the origin",
         controller_tick(_absurd_input("base_position", 1e308))),
    Case("controller_node clock", "the clock steps back 10 s and the inputs stop",
         controller_tick(_clock_back_inputs_stopped)),
    Case("testbed_bridge clock", "the clock steps back 10 s", bridge_trip(_bridge_clock_back)),
    Case("testbed_bridge encoders", "a joint named twice", bridge_trip(_bridge_duplicate_encoder)),
    Case("plant_node", "rate 10 Hz with every arm joint at its effort limit (the plant diverges)",
         plant_diverges),
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def render(rows: list[tuple[Case, Outcome]]) -> str:
    lines = [
        "# Bad inputs and what a user sees",
        "",
        "Generated from `test/test_bad_inputs_table.py`, which runs every row and fails when this",
        "table differs from what the code prints (`FREEFLYER_UPDATE_DOCS=1 pytest",
        "test/test_bad_inputs_table.py` rewrites it). Each message is the one line shown.",
        "",
        "| where | bad input | result | message shown |",
        "|---|---|---|---|",
    ]
    for case, outcome in rows:
        lines.append(f"| {_cell(case.where)} | `{_cell(case.given)}` | {_cell(outcome.result)} "
                     f"| {_cell(outcome.message)} |")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> list[tuple[Case, Outcome]]:
    # Relative paths in the cases resolve in a scratch folder, so messages never show a
    # machine-specific absolute path.
    scratch = tmp_path_factory.mktemp("bad_inputs")
    cwd = os.getcwd()
    os.chdir(scratch)
    try:
        return [(case, case.run()) for case in CASES]
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{c.where}: {c.given}" for c in CASES])
def test_every_bad_input_gets_one_clear_line(outcomes, index):
    case, outcome = outcomes[index]
    assert outcome.message.strip(), f"{case.given}: nothing shown"
    assert "\n" not in outcome.message, f"{case.given}: more than one line:\n{outcome.message}"
    assert "Traceback" not in outcome.message
    if case.accepted:
        assert outcome.result == "exit 0" and ": warning: " in outcome.message, (case.given, outcome)
    else:
        assert outcome.result != "exit 0", f"{case.given}: accepted"
        assert "NOT ZERO" not in outcome.result, f"{case.given}: {outcome.result}"


def test_docs_bad_input_table_is_generated_from_these_cases(outcomes):
    text = render(outcomes)
    if os.environ.get("FREEFLYER_UPDATE_DOCS"):
        DOC.write_text(text)
    assert DOC.exists(), "docs/bad_inputs.md is missing: run FREEFLYER_UPDATE_DOCS=1 pytest test/test_bad_inputs_table.py"
    assert DOC.read_text() == text, (
        "docs/bad_inputs.md differs from what the code prints: run "
        "FREEFLYER_UPDATE_DOCS=1 pytest test/test_bad_inputs_table.py and review the diff")
