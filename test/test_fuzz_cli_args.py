"""Fuzz of the command line's parse + validate layer (``freeflyer_control.cli.main.parse``).

Random and adversarial argument vectors for every subcommand (the options are read from the
parser itself, so a new option is fuzzed without editing this file). Nothing is run: ``parse``
only parses and validates. The claims, for every vector:

* no exception escapes except ``SystemExit(2)``, and then stderr holds exactly one line;
* nothing is printed on stdout;
* an accepted argument set is valid: every number finite and inside its option's limits, a
  simulation within the run-size limits, a mode schedule in increasing finite times, joint
  angles finite (and inside the URDF limits where a run starts from them).

``FREEFLYER_FUZZ_N`` sets the number of vectors (default 10^4, a few seconds).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math

import numpy as np
import pytest

from fuzz_support import ABSURD_FINITE, adversarial_float, fuzz_count, fuzz_rng
from freeflyer_control.cli.common import validation_robot
from freeflyer_control.model.joint_positions import parse_joint_positions
from freeflyer_control.cli.main import build_parser, parse
from freeflyer_control.inputs.values import Number, Whole
from freeflyer_control.model.joint_limits import limit_violations
from freeflyer_control.physics.modes import Mode
from freeflyer_control.resources import share_dir
from freeflyer_control.sim.limits import MAX_LOG_SAMPLES, MAX_PLANT_STEPS, log_samples
from freeflyer_control.sim.config import parse_mode_schedule

ROBOTS = ("planar_4link", "planar_4link", "planar_4link", "spatial_6link", "dual_arm_planar",
          "spatial_7dof")
JUNK = ("", " ", "-", "--", "nan", "NaN", "inf", "-inf", "1e999", "0x10", "1_000", "١٢", "--5",
        "\x00", "é", "[", "{}", "null", "true", "a" * 300, "-1", "0", "1e-320", "+3", " 5 ")
# Options that are only valid together with others (a bare URDF's --base and --ee, the
# testbed's --fault ...): the plausible half of the vectors leaves them out.
NEEDS_CONTEXT = {"base", "ee", "fault", "estop_at", "reset_at", "frame", "via_testbed"}
MODES = tuple(m.value for m in Mode) + ("hovering", "", "FLYING", "rotation_floating")


def number_text(rng: np.random.Generator, kind, bad: float) -> str:
    """A value for a Number/Whole option: plausible (inside its limits) unless drawn ``bad``."""
    pick = 0.0 if rng.random() > bad else rng.uniform(0.45, 1.0)
    if pick < 0.45 and isinstance(kind, Number):
        lo = kind.lo if kind.lo is not None else -10.0
        hi = kind.hi if kind.hi is not None else lo + 100.0
        return repr(float(rng.uniform(lo, min(hi, lo + 100.0))))
    if pick < 0.45 and isinstance(kind, Whole):
        lo = kind.lo if kind.lo is not None else 0
        hi = kind.hi if kind.hi is not None else lo + 1000
        return str(int(rng.integers(lo, min(hi, lo + 1000) + 1)))
    if pick < 0.75:
        return repr(adversarial_float(rng, 10.0))
    if pick < 0.85:
        return str(int(rng.integers(-10**6, 10**6))) if rng.random() < 0.5 else "9" * int(rng.integers(10, 60))
    return str(rng.choice(JUNK))


def angles_json(rng: np.random.Generator) -> str:
    """Joint angles as the CLI takes them, mostly well-formed JSON with adversarial numbers."""
    pick = rng.random()
    n = int(rng.integers(0, 9))
    if pick < 0.5:
        return json.dumps([float(rng.normal(0, 1.5)) if rng.random() < 0.8 else adversarial_float(rng)
                           for _ in range(n)])
    if pick < 0.7:
        names = [f"joint{i}" for i in range(1, 8)] + ["left_joint1", "nope", ""]
        return json.dumps({str(rng.choice(names)): float(rng.normal(0, 2)) for _ in range(n)})
    if pick < 0.8:
        return str(rng.choice(("[NaN]", "[Infinity, 0]", "[1e999]", "[" * 3000, "[true]", "[[1]]",
                               '{"joint1": "a"}', "1" + "0" * 5000, "[1,]", "0.5")))
    return str(rng.choice(JUNK))


def schedule_text(rng: np.random.Generator) -> str:
    entries = []
    for _ in range(int(rng.integers(0, 5))):
        t = rng.choice((repr(float(rng.uniform(0, 40))), repr(adversarial_float(rng, 10.0)), "x", ""))
        sep = ":" if rng.random() < 0.9 else ""
        entries.append(f"{t}{sep}{rng.choice(MODES)}")
    return ",".join(entries)


def string_value(rng: np.random.Generator, dest: str) -> str:
    """A value for a free-text option, by what the option means."""
    if dest in ("q", "q0", "q_target"):
        return angles_json(rng)
    if dest == "mode_schedule":
        return schedule_text(rng)
    if dest in ("controller", "law"):  # names, import paths (good, absent, not a law), junk
        return str(rng.choice(("computed_torque", "resolved_rate", "impedance", "laws_for_tests:JointPD",
                               "laws_for_tests:NotALaw", "no_such_module:Law", "os:path", "sliding", ":", "a:")))
    if dest == "controller_param":
        return str(rng.choice(("kp=2", "kp=-1", "kp", "=1", "kd=nan", "wn=3", "velocity_gain=1e9")))
    if dest in ("robot", "model"):
        if rng.random() < 0.9:
            return str(rng.choice(ROBOTS))
        return str(rng.choice((str(share_dir() / "urdf" / "planar_4link.urdf"), "no_such_robot",
                               "/nonexistent/x.urdf", "", "\x00")))
    if dest == "target":
        return json.dumps([float(rng.normal(0, 1)), adversarial_float(rng)]) if rng.random() < 0.5 \
            else str(rng.choice(("[0.5, 0.1]", "[1]", "[NaN, 0]", "{}", "[1e400, 0]", "x")))
    if dest == "joints":
        return str(rng.choice(("1,2", "2,3", "1,1", "0,2", "1,9", "1", "a,b", "1,2,3", "")))
    if dest == "fault":
        return str(rng.choice(("capture_dropout:5:0.5", "encoder_nan:1:0.1:joint2", "push:5:2:0.5,0,0",
                               "capture_dropout:nan:1", "bogus:1:1", "capture_dropout", "")))
    if dest == "via_testbed":
        return str(rng.choice(("planar_4link", "no_such_testbed")))
    if dest == "frame":
        return str(rng.choice(("ee_link", "left_ee", "base_link", "nope")))
    if dest == "ee":
        return str(rng.choice(("ee_link", "nope")))
    return str(rng.choice(JUNK))


def subparsers(parser: argparse.ArgumentParser, prefix=()) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every leaf subcommand (``plan reorient`` ...) with its parser."""
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += subparsers(sub, prefix + (name,)) or [(prefix + (name,), sub)]
    return out


def option_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction))]


def random_argv(rng: np.random.Generator, path: tuple[str, ...], actions) -> list[str]:
    """Options of ``path``'s parser drawn at random; half the vectors are mostly plausible
    (so that accepted sets are common too), half mostly adversarial."""
    argv = list(path)
    plausible = rng.random() < 0.5
    bad = 0.03 if plausible else 0.4
    for action in actions:
        if not action.option_strings:  # a positional (check MODEL, testbed CONFIG)
            if rng.random() < 0.95:
                argv.append(string_value(rng, action.dest))
            continue
        if not (action.required or rng.random() < (0.2 if plausible else 0.35)):
            continue
        if plausible and action.dest in NEEDS_CONTEXT and not action.required:
            continue
        option = action.option_strings[-1]
        for _ in range(1 if rng.random() < 0.9 else 2):
            if action.nargs == 0:
                argv.append(option)
            elif action.choices is not None:
                choice = "bogus" if rng.random() < bad else str(rng.choice(list(action.choices)))
                argv += value_tokens(rng, option, choice)
            elif isinstance(action.type, (Number, Whole)):
                argv += value_tokens(rng, option, number_text(rng, action.type, bad))
            else:
                argv += value_tokens(rng, option, string_value(rng, action.dest))
    if rng.random() < 0.05:  # an option with its value missing, or an unknown one
        argv.append(str(rng.choice(("--rate", "--bogus", "-x", "--q0"))))
    if rng.random() < 0.05:
        argv.insert(int(rng.integers(1, len(argv) + 1)), str(rng.choice(JUNK)))
    return argv


def value_tokens(rng: np.random.Generator, option: str, value: str) -> list[str]:
    """``--opt value`` or ``--opt=value`` (the only way argparse takes a value such as -1e-3)."""
    return [f"{option}={value}"] if rng.random() < 0.5 else [option, value]


def assert_accepted_set_is_valid(args: argparse.Namespace, actions) -> None:
    for action in actions:
        if isinstance(action.type, (Number, Whole)):
            value = getattr(args, action.dest)
            for x in value if isinstance(value, list) else [value]:
                if x is not None:
                    assert action.type.accepts(x), (action.dest, x)
                    assert math.isfinite(x), (action.dest, x)
    if getattr(args, "mode_schedule", None):
        times = [t for t, _ in parse_mode_schedule(args.mode_schedule)]
        assert all(math.isfinite(t) and t >= 0 for t in times)
        assert all(a < b for a, b in zip(times, times[1:]))
    if args.command == "sim" and args.duration is not None and not args.via_testbed:
        assert args.duration * args.rate * args.substeps <= MAX_PLANT_STEPS
        assert log_samples(args.duration, args.rate, args.log_rate) <= MAX_LOG_SAMPLES
    for dest, hard in (("q", False), ("q0", True), ("q_target", True)):
        text = getattr(args, dest, None)
        if text:
            ff = validation_robot(args)
            positions = parse_joint_positions(ff, text, dest)
            assert all(math.isfinite(x) for x in positions.values())
            if hard:
                assert limit_violations(ff, positions) == [], (dest, text)


def test_fuzz_cli_argument_vectors_refuse_in_one_line_or_give_a_valid_set():
    parser = build_parser()
    commands = subparsers(parser)
    assert {p[0] for p, _ in commands} == {"check", "gjm", "sim", "workspace", "plan", "testbed", "osi",
                                          "campaign", "replay", "controllers", "reactionless", "warm"}
    rng = fuzz_rng(salt=12)
    counts = {"accepted": 0, "refused": 0}
    failures = []
    for _ in range(fuzz_count()):
        path, sub = commands[int(rng.integers(len(commands)))]
        actions = option_actions(sub)
        argv = random_argv(rng, path, actions)
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                args = parse(argv, parser)
        except SystemExit as exc:
            lines = err.getvalue().splitlines()
            if exc.code != 2 or len(lines) != 1 or not lines[0].startswith("freeflyer"):
                failures.append((argv, f"exit {exc.code}, stderr {err.getvalue()!r}"))
            counts["refused"] += 1
        except Exception as exc:  # noqa: BLE001 - what this test is looking for
            failures.append((argv, f"{type(exc).__name__}: {exc}"))
        else:
            counts["accepted"] += 1
            try:
                assert_accepted_set_is_valid(args, actions)
            except AssertionError as exc:
                failures.append((argv, f"accepted but invalid: {exc}"))
            if any(not line.startswith("freeflyer ") or ": warning: " not in line
                   for line in err.getvalue().splitlines()):
                failures.append((argv, f"accepted with stray stderr {err.getvalue()!r}"))
        if out.getvalue():
            failures.append((argv, f"printed on stdout: {out.getvalue()!r}"))
    assert not failures, f"{len(failures)} failures, first: {failures[:5]}"
    # Both outcomes must be common, or the fuzz is not exercising the layer it claims to.
    n = sum(counts.values())
    assert counts["accepted"] > 0.1 * n and counts["refused"] > 0.1 * n, counts


@pytest.mark.parametrize("value", [repr(x) for x in ABSURD_FINITE] + ["nan", "inf", "-inf"])
def test_absurd_and_non_finite_rates_are_refused_naming_rate(value, capsys):
    with pytest.raises(SystemExit) as exc:
        parse(["sim", "--rate", value])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert err.startswith("freeflyer sim: error: argument --rate:") and err.count("\n") == 1, err
