"""Fuzz: the campaign spec reader (``parse_yaml`` + ``parse_spec``) on spoiled specs.

Specs of the pure simulation and of the emulated testbed, with dispersions of every kind and
criteria, spoiled as people and tools spoil YAML (fuzz_support.spoil, yaml_text). Claims, for
every input: the reader returns a spec or refuses with a ValueError in one line (no other
exception); an accepted spec flies only physical runs: every dispersion reaches only values
inside its physical range (re-checked here), the run count, seed and criteria are in range,
and a run's draw is finite. Both outcomes common.
"""

from __future__ import annotations

import math

from fuzz_support import fuzz_reader, fuzz_rng

from freeflyer_control.campaign.dispersions import KINDS, physical_ranges, range_problem
from freeflyer_control.campaign.spec import MAX_RUNS, _start, base_config, parse_spec
from freeflyer_control.hil.config import shared_testbed
from freeflyer_control.inputs.yaml_files import parse_yaml

PURE = {
    "robot": "planar_4link", "maneuver": "wilde", "mode": "floating", "controller": "computed_torque",
    "duration": 1.0, "rate": 100.0, "runs": 20, "seed": 7, "worst": 2,
    "dispersions": {
        "mass_error": {"uniform": [-0.1, 0.1]}, "com_error": {"normal": [0.0, 0.01], "min": -0.05, "max": 0.05},
        "joint_noise": {"normal": [0.0, 0.001], "min": 0.0}, "latency": {"choice": [0.0, 0.01], "p": [0.5, 0.5]},
        "initial_joint": {"uniform": [-0.2, 0.2]}, "initial_base_velocity": 0.01, "initial_base_yaw": 0.3,
        "thruster_scale": {"uniform": [-0.2, 0.2]}, "thruster_failure": {"choice": ["none", "t1"]},
    },
    "criteria": {"rms_tracking_error": {"max": 0.05}, "saturated_fraction": {"max": 0.5, "min": 0.0}},
}
TESTBED = {
    "via_testbed": "planar_4link", "maneuver": "wilde", "duration": 1.0, "runs": 10,
    "faults": ["capture_dropout:0.5:0.1"],
    "dispersions": {"capture_latency": {"uniform": [0.0, 0.01]}, "capture_dropout_rate": 0.05,
                    "initial_base_position": {"uniform": [-0.1, 0.1]}, "fault": {"choice": ["none",
                                                                                           "encoder_nan:0.2:0.1:joint2"]}},
    "criteria": {"testbed_trip_count": {"max": 0}},
}
GOOD = (PURE, TESTBED)


def assert_flies_physical_runs(spec) -> None:
    assert 1 <= spec.runs <= MAX_RUNS and 0 <= spec.seed < 2**63
    limits = shared_testbed(spec.via_testbed).limits if spec.via_testbed else None
    ranges = physical_ranges(spec.robot, _start(spec.robot, base_config(spec.raw), spec.raw), limits)
    for name, dist in spec.dispersions.items():
        assert range_problem(KINDS[name], dist.reach(), dist.describe(), spec.robot, ranges) is None, name
    for limits in spec.criteria.values():
        assert all(math.isfinite(x) for x in limits.values())
    draw = spec.flat(spec.draw(0))
    assert all(math.isfinite(v) for v in draw.values() if isinstance(v, float)), draw


def check(spec, accepted: int) -> None:
    assert 1 <= spec.runs <= MAX_RUNS
    if accepted % 10 == 1:  # re-deriving the ranges costs as much as the parse
        assert_flies_physical_runs(spec)


def test_fuzz_campaign_spec_reader_accepts_physical_campaigns_or_refuses_in_one_line():
    # ValueError: ConfigError, ModelError and UsageError among them
    fuzz_reader(fuzz_rng(salt=32), list(GOOD),
                lambda text: parse_spec(parse_yaml(text, "fuzz.yaml", "campaign spec"), "fuzz.yaml"), check)
