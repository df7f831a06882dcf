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
    where: str
    given: str
    run: Callable[[], Outcome]


def cli(*argv: str) -> Callable[[], Outcome]:
    """Run ``freeflyer argv`` in-process; the message is its one error line on stderr.

    argparse prints its usage lines before the error line: those are not counted as the
    message, everything else on stderr is.
    """
    def run() -> Outcome:
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


_J = list(robot("planar_4link").joint_names)

CASES: tuple[Case, ...] = (
    Case("freeflyer check", "freeflyer check no_such_robot", cli("check", "no_such_robot")),
    Case("freeflyer gjm", "freeflyer gjm --q '[0, 0.1'", cli("gjm", "--q", "[0, 0.1")),
    Case("freeflyer gjm", "freeflyer gjm --q '[NaN, 0, 0, 0]'", cli("gjm", "--q", "[NaN, 0, 0, 0]")),
    Case("freeflyer gjm", "freeflyer gjm --frame nowhere", cli("gjm", "--frame", "nowhere")),
    Case("freeflyer sim", "freeflyer sim --mode hovering", cli("sim", "--mode", "hovering")),
    Case("controller_node /joint_states", "a joint position NaN",
         controller_message(_joint_state(_J, [float("nan")] + [0.0] * (len(_J) - 1), [0.0] * len(_J)))),
    Case("controller_node /joint_states", "a joint missing",
         controller_message(_joint_state(_J[1:], [0.0] * (len(_J) - 1), [0.0] * (len(_J) - 1)))),
    Case("controller_node /joint_states", "a joint named twice",
         controller_message(_joint_state(_J + _J[:1], [0.0] * (len(_J) + 1), [0.0] * (len(_J) + 1)))),
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
    assert not outcome.result.startswith("exit 0"), f"{case.given}: accepted"


def test_docs_bad_input_table_is_generated_from_these_cases(outcomes):
    text = render(outcomes)
    if os.environ.get("FREEFLYER_UPDATE_DOCS"):
        DOC.write_text(text)
    assert DOC.exists(), "docs/bad_inputs.md is missing: run FREEFLYER_UPDATE_DOCS=1 pytest test/test_bad_inputs_table.py"
    assert DOC.read_text() == text, (
        "docs/bad_inputs.md differs from what the code prints: run "
        "FREEFLYER_UPDATE_DOCS=1 pytest test/test_bad_inputs_table.py and review the diff")
