"""Every script in examples/ runs, at a short duration, and shows what it says it shows."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _example(name: str):
    """The example's module, loaded from its file, with examples/ importable (as when run there)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_example_is_run_by_this_file():
    here = Path(__file__).read_text()
    for script in EXAMPLES.glob("*.py"):
        assert f'_example("{script.stem}")' in here, f"{script.name} is not run by the test suite"


def test_a_joint_space_law_of_ones_own_flies_in_flying_mode():
    s = _example("joint_space_law").main(["--duration", "4"])
    assert s["law_fault"] is None and s["controller"] == "saturated_joint_pd"
    # Wilde's 0.1 rad/s ramps with a 2 rad/s law: the lag is a few mrad.
    assert s["rms_tracking_error"] < 0.02


def test_the_reactionless_law_keeps_the_base_still_where_the_naive_one_turns_it():
    """5 s of the Wilde maneuver's joint rates from the ready pose: the naive computed torque
    turns the base by over 0.2 rad (tens of degrees over the whole maneuver); the same rates
    projected on the reaction null space turn it by less than a micro-radian (round-off and the
    zero-order hold of the torques over each period, corrected by the base velocity feedback)."""
    out = _example("reactionless").main(["--duration", "5"])
    assert out["naive"]["base_attitude_change_rad"] > 0.2
    assert out["reactionless"]["base_attitude_change_rad"] < 1e-6
    assert out["reactionless"]["law_fault"] is None


def test_the_law_runs_in_a_campaign_from_python():
    rows = _example("campaign_of_my_law").main(["--runs", "2", "--duration", "2"])
    assert [r["status"] for r in rows] == ["ok", "ok"] and all(r["passed"] for r in rows)


def test_a_reinforcement_learning_loop_runs_on_the_environment():
    pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install 'freeflyer_control[gym]')")
    returns = _example("random_agent").main(["--episodes", "2", "--steps", "20"])
    assert len(returns) == 2 and all(math.isfinite(r) for r in returns)
