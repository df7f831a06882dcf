"""Fuzz: the testbed config reader (``parse_yaml`` + ``parse_testbed_config``) on spoiled examples.

The bundled testbed config, spoiled as people and tools spoil YAML (fuzz_support.spoil,
yaml_text). Claims, for every input: the reader returns a config or refuses with a ConfigError
in one line (no other exception); an accepted config keeps every safety limit inside its
physical range (a limit of 1e300 m/s would never trip), every rate and timeout finite and
sensible, every encoder offset finite, and its emulator settings readable. Both outcomes common.
"""

from __future__ import annotations

import numpy as np
import yaml
from fuzz_support import fuzz_reader, fuzz_rng

from freeflyer_control.errors import ConfigError
from freeflyer_control.hil import config as hc
from freeflyer_control.hil.emulator_settings import EmulatorSettings
from freeflyer_control.inputs.yaml_files import parse_yaml
from freeflyer_control.model import load_robot
from freeflyer_control.resources import share_dir

EXAMPLE = share_dir() / "config" / "testbeds" / "planar_4link.yaml"
GOOD = yaml.safe_load(EXAMPLE.read_text())


def assert_safe(tb) -> None:
    lim = tb.limits
    for rng, value in ((hc.BASE_SPEED, lim.base_speed), (hc.BASE_RATE, lim.base_rate),
                       (hc.BASE_RADIUS, lim.base_radius), (hc.MARGIN, lim.margin), (hc.RATE, tb.rate),
                       (hc.TIMEOUT, tb.command_timeout), (hc.TIMEOUT, tb.capture.timeout),
                       (hc.TIMEOUT, tb.encoders.timeout), (hc.RATE, tb.capture.rate), (hc.RATE, tb.encoders.rate),
                       (hc.LATENCY, tb.capture.latency), (hc.POSITION_JUMP, tb.capture.max_position_jump)):
        assert rng.contains(value), (rng, value)
    assert all(hc.TABLE.contains(x) for x in lim.table) and lim.table[0] < lim.table[1] and lim.table[2] < lim.table[3]
    for values in (lim.joint_speed, lim.joint_lower, lim.joint_upper, lim.wheel_speed):
        assert np.all(np.isfinite(values))
    assert np.all(lim.joint_speed > 0) and np.all(lim.joint_lower < lim.joint_upper)
    assert all(hc.ENCODER_OFFSET.contains(c.offset) and c.sign in (1.0, -1.0) for c in tb.encoders.channels)
    EmulatorSettings.from_mapping(tb.emulator)


def test_fuzz_testbed_config_reader_keeps_every_limit_physical_or_refuses_in_one_line():
    robot = load_robot("planar_4link")
    fuzz_reader(fuzz_rng(salt=31), [GOOD],
                lambda text: hc.parse_testbed_config(parse_yaml(text, str(EXAMPLE), "testbed config"), source=EXAMPLE,
                                                     robot=robot),
                lambda tb, _: assert_safe(tb), refused=ConfigError)
