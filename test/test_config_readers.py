"""Every config reader refuses the same bad YAML the same way (issue 20, classes 2, 13, 14, 15, 18).

The readers: robot config, object config, testbed config, campaign spec. Each is given the same
kinds of bad text, written into a copy of a good file: a boolean where a number belongs, an
exponent YAML reads as text, an unknown key (a typo of a known one), a key given twice, a file
that is not text, and values outside their physical range. Each must refuse in one line
naming the file or key, what is wrong and the fix; none may accept the value.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from freeflyer_control.campaign.spec import load_spec
from freeflyer_control.errors import ConfigError, ModelError
from freeflyer_control.hil.config import load_testbed_config
from freeflyer_control.inputs.mappings import exponent_advice, value_number
from freeflyer_control.model import load_model
from freeflyer_control.model.config import load_robot_config
from freeflyer_control.model.objects import load_object
from freeflyer_control.resources import share_dir

SHARE = share_dir()
SPEC = "runs: 4\nrobot: planar_4link\nmaneuver: wilde\nduration: 0.2\ndispersions:\n  joint_noise: 0.001\n"


def robot_text() -> str:
    text = (SHARE / "config" / "robots" / "planar_4link.yaml").read_text()
    return text.replace("urdf: ../../urdf/planar_4link.urdf", f"urdf: {SHARE / 'urdf' / 'planar_4link.urdf'}")


READERS = {
    # name: (good text, loader, a numeric key line to spoil, an unknown-key spoiler (old, new, nearest))
    "robot config": (robot_text, load_robot_config, ("    max_force: 0.6", "    max_force: {}"),
                     ("reaction_wheels:", "reaction_wheel:", "reaction_wheels")),
    "object config": (lambda: (SHARE / "config" / "objects" / "planar_box.yaml").read_text(), load_object,
                      ("mass: 1.0", "mass: {}"), ("    rpy: [0, 0, -0.7854]", "    rot: [0, 0, -0.7854]", "rpy")),
    "testbed config": (lambda: (SHARE / "config" / "testbeds" / "planar_4link.yaml").read_text(),
                       load_testbed_config, ("  base_speed: 0.15", "  base_speed: {}"),
                       ("  margin: 0.10", "  margn: 0.10", "margin")),
    "campaign spec": (lambda: SPEC, load_spec, ("duration: 0.2", "duration: {}"),
                      ("maneuver: wilde", "manuver: wilde", "maneuver")),
}


def write(tmp_path: Path, text: str, name: str = "cfg.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def refusal(reader: str, tmp_path: Path, text: str) -> str:
    _, load, _, _ = READERS[reader]
    with pytest.raises((ConfigError, ModelError, ValueError)) as exc:
        load(write(tmp_path, text))
    message = str(exc.value)
    assert "\n" not in message and message.strip(), message
    return message


def spoiled(reader: str, value: str) -> str:
    good, _, (line, template), _ = READERS[reader]
    text = good()
    assert line in text, (reader, line)
    return text.replace(line, template.format(value), 1)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_loads_its_good_file(reader, tmp_path):
    good, load, _, _ = READERS[reader]
    load(write(tmp_path, good()))


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("word", ["true", "yes", "on"])
def test_every_reader_refuses_a_boolean_where_a_number_belongs(reader, word, tmp_path):
    # YAML 1.1 reads true, yes and on as a boolean, which Python takes as 1 without a word.
    message = refusal(reader, tmp_path, spoiled(reader, word))
    assert "must be a number" in message and "got the boolean true" in message, message


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("text, fixed", [("1e-3", "1.0e-3"), ("1.5e2", "1.5e+2")])
def test_every_reader_explains_yamls_exponent_form(reader, text, fixed, tmp_path):
    message = refusal(reader, tmp_path, spoiled(reader, text))
    assert f"got the text '{text}'" in message and f"write {fixed}" in message, message


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_refuses_an_unknown_key_naming_the_nearest_known_one(reader, tmp_path):
    good, _, _, (old, new, nearest) = READERS[reader]
    text = good()
    assert old in text
    message = refusal(reader, tmp_path, text.replace(old, new, 1))
    typo = new.strip().split(":")[0]
    assert f"unknown key '{typo}'; did you mean '{nearest}'?" in message, message


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_refuses_a_key_given_twice_naming_the_lines(reader, tmp_path):
    good, _, (line, _), _ = READERS[reader]
    text = good()
    message = refusal(reader, tmp_path, text.replace(line, f"{line}\n{line}", 1))
    key = line.strip().split(":")[0]
    assert re.search(rf"line \d+: key '{key}' is given twice \(lines \d+ and \d+\)", message), message
    assert "cfg.yaml" in message


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_names_a_file_that_is_not_text(reader, tmp_path):
    path = tmp_path / "cfg.yaml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    with pytest.raises((ConfigError, ValueError)) as exc:
        READERS[reader][1](path)
    assert str(path) in str(exc.value) and "is not a text file (byte 0x89 at offset 0)" in str(exc.value)


def test_exponent_advice_writes_what_yaml_reads_as_a_number():
    for text in ("1e-3", "-2E6", ".5e3", "1.0e3", "1e+300"):
        fixed = exponent_advice(text).rsplit("write ", 1)[1]
        assert isinstance(yaml.safe_load(f"x: {fixed}")["x"], float), (text, fixed)
        assert float(fixed) == float(text)
    assert exponent_advice("abc") == exponent_advice(3) == ""
    assert exponent_advice("1.0e-3") == "; it is quoted: write the number without quotes"


# --- class 2: every safety limit of a testbed has a physical range, with the reason --------------

TESTBED_LIMITS = [
    ("limits", "base_speed", "m/s", "refuses base odometry faster than 5 m/s as implausible"),
    ("limits", "base_rate", "rad/s", "refuses base odometry turning faster than 10 rad/s"),
    ("limits", "joint_speed", "rad/s", "no arm joint turns at 100 rad/s"),
    ("limits", "wheel_speed", "", "a fraction of each wheel's max_speed"),
    ("limits", "base_radius", "m", "no air-bearing base is wider than 10 m"),
    ("limits", "margin", "m", "leaves no table"),
    ("limits", "joint_range_margin", "rad", "leaves no joint range"),
    ("", "command_timeout", "s", "a watchdog slower than a second"),
    ("capture", "timeout", "s", "a watchdog slower than a second"),
    ("encoders", "timeout", "s", "a watchdog slower than a second"),
    ("capture", "latency", "s", "a second late is broken"),
    ("capture", "max_position_jump", "m", "lets any glitch through"),
    ("", "rate", "Hz", "no ROS timer keeps up"),
]


@pytest.mark.parametrize("section, key, unit, why", TESTBED_LIMITS, ids=[f"{s}.{k}" for s, k, _, _ in TESTBED_LIMITS])
@pytest.mark.parametrize("value", [1.0e300, 1e6])
def test_a_testbed_safety_limit_beyond_its_physical_range_is_refused_with_the_range_and_why(
        section, key, unit, why, value, tmp_path):
    data = yaml.safe_load((SHARE / "config" / "testbeds" / "planar_4link.yaml").read_text())
    (data[section] if section else data)[key] = value
    path = write(tmp_path, yaml.safe_dump(data), "testbed.yaml")
    with pytest.raises(ConfigError) as exc:
        load_testbed_config(path)
    message = str(exc.value)
    path_in_file = f"{section}.{key}" if section else key
    assert f"{path_in_file} must be a number in " in message and why in message and f"got {value:g}" in message
    assert unit in message


def test_the_table_is_a_place_not_the_world(tmp_path):
    data = yaml.safe_load((SHARE / "config" / "testbeds" / "planar_4link.yaml").read_text())
    data["limits"]["table"]["x"] = [-1e300, 1e300]
    with pytest.raises(ConfigError, match=r"limits\.table\.x\[0\] must be a number in \[-100, 100\] m \(the largest "
                                          r"air-bearing floors are tens of metres"):
        load_testbed_config(write(tmp_path, yaml.safe_dump(data), "testbed.yaml"))


# --- class 18: non-physical model values, refused with the physical range --------------------

def urdf_text() -> str:
    return (SHARE / "urdf" / "planar_4link.urdf").read_text()


@pytest.mark.parametrize("edit, words", [
    (lambda t: re.sub(r'<mass value="[^"]+"', '<mass value="1e300"', t, count=1), "beyond 1e+06 kg"),
    (lambda t: re.sub(r'velocity="[^"]+"', 'velocity="0"', t, count=1), "says it cannot move"),
    (lambda t: re.sub(r'(<joint name="joint1".*?<origin xyz=")[^"]+"', r'\g<1>1e300 0 0"', t, count=1,
                      flags=re.DOTALL),
     "beyond +-1000 (no robot is a kilometre across"),
    (lambda t: re.sub(r'ixx="[^"]+"', 'ixx="1e300"', t, count=1), None),
])
def test_a_urdf_with_non_physical_values_is_refused_naming_the_file_and_the_part(edit, words, tmp_path):
    text = edit(urdf_text())
    assert text != urdf_text()
    path = write(tmp_path, text, "robot.urdf")
    with pytest.raises(ModelError) as exc:
        load_model(path, base="planar")
    message = str(exc.value)
    assert str(path) in message and "raise the rate" not in message
    assert words is None or words in message, message


@pytest.mark.parametrize("key, value, words", [
    ("mass", 1e300, "mass must be a number in [0.001, 100000] kg"),
    ("mass", 1e-300, "mass must be a number in [0.001, 100000] kg"),
    ("inertia", [[1e300, 0, 0], [0, 1e300, 0], [0, 0, 1e300]], "inertia[0][0] must be a number in"),
    ("inertia", [[1e6, 0, 0], [0, 1e6, 0], [0, 0, 1e6]], "radii of gyration"),
])
def test_an_object_with_non_physical_mass_or_inertia_is_refused(key, value, words, tmp_path):
    data = yaml.safe_load((SHARE / "config" / "objects" / "planar_box.yaml").read_text())
    data[key] = value
    with pytest.raises(ConfigError) as exc:
        load_object(write(tmp_path, yaml.safe_dump(data), "box.yaml"))
    assert words in str(exc.value) and "raise the rate" not in str(exc.value)


def test_an_encoder_offset_of_1e300_is_refused_with_the_reason(tmp_path):
    data = yaml.safe_load((SHARE / "config" / "testbeds" / "planar_4link.yaml").read_text())
    data["encoders"]["joints"]["joint1"]["offset"] = 1e300
    with pytest.raises(ConfigError, match=r"encoders\.joints\.joint1\.offset must be a number in \[-1e\+06, 1e\+06\] rad "
                                          r"\(160 000 turns"):
        load_testbed_config(write(tmp_path, yaml.safe_dump(data), "testbed.yaml"))


def test_value_number_gives_the_reason_only_for_a_finite_value_out_of_range():
    with pytest.raises(ConfigError, match=r"^x must be a number in \[0, 1\] m \(why\), got 2$"):
        value_number(2.0, "x", lo=0, hi=1, unit="m", why="why")
    with pytest.raises(ConfigError, match=r"^x must be a number in \[0, 1\] m, got nan$"):
        value_number(np.nan, "x", lo=0, hi=1, unit="m", why="why")
