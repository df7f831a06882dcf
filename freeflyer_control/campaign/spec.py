"""A campaign spec (YAML): what to fly, how many runs, the dispersions, the pass criteria.

Everything is checked by :func:`load_spec` before any run: unknown keys, values outside what
``freeflyer sim`` accepts, non-physical dispersion ranges, criteria on metrics that do not exist.

Seeds. Run ``i`` draws from ``SeedSequence(seed, spawn_key=(i,))`` (what ``SeedSequence(seed).spawn``
gives its i-th child), and each dispersion kind from its own grandchild, keyed by a hash of the
kind's name (:func:`stream_key`): a run's values depend only on (seed, i, its dispersions), never
on the worker that flies it, on the other runs, or on the order of the kinds in the code.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from .dispersions import KINDS, LATENCIES, items, range_problem
from .distributions import Distribution, parse_distribution

# The summary figures a run is judged by (numbers; timing and echoed settings left out so that
# rows are identical whatever machine flies them). test_campaign checks this against a real run.
METRICS = ("max_abs_linear_momentum", "max_abs_angular_momentum", "com_drift_m", "base_attitude_change_rad",
           "base_position_change_m", "rms_tracking_error", "max_tracking_error", "final_tracking_error",
           "max_abs_arm_torque_nm", "min_sigma")
TESTBED_METRICS = ("estimation_error_base_position_m", "estimation_error_joints_rad", "testbed_safe_ticks",
                   "testbed_trip_count")

RUN_KEYS = {"robot", "base", "ee", "mode", "mode_schedule", "controller", "controller_params", "maneuver",
            "duration", "rate", "substeps", "base_actuation", "log_rate", "q0", "via_testbed", "faults", "engine"}
ENGINES = {"auto": None, "python": False, "compiled": True}  # engine -> run_simulation's ``fast``
CAMPAIGN_KEYS = {"runs", "seed", "dispersions", "criteria", "worst", "batch"}
MAX_RUNS = 1_000_000


def stream_key(name: str) -> int:
    """The spawn key of the random stream called ``name`` in every run (32 bits of its sha256)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")


@dataclass
class CampaignSpec:
    """A checked spec. ``raw``: the YAML mapping as given (its hash identifies the campaign)."""

    raw: dict
    runs: int
    seed: int
    dispersions: dict[str, Distribution]
    criteria: dict[str, dict[str, float]]
    worst: int = 3
    batch: int | None = None
    source: str = ""
    robot: object = field(default=None, repr=False)

    @property
    def via_testbed(self) -> str | None:
        return self.raw.get("via_testbed")

    @property
    def metrics(self) -> tuple[str, ...]:
        return METRICS + (TESTBED_METRICS if self.via_testbed else ())

    def digest(self) -> str:
        """sha256 of the spec's content (key order and YAML layout do not matter)."""
        text = json.dumps(self.raw, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def columns(self) -> list[str]:
        """The dispersed-value columns, in spec order."""
        out = []
        for name in self.dispersions:
            per = KINDS[name].per
            if per is None or per.endswith("_name"):
                out.append(name)
            else:
                out += [f"{name}[{item}]" for item in items(self.robot, per)]
        return out

    def draw(self, run: int) -> dict:
        """Run ``run``'s dispersed values: kind -> value, or {item: value} for per-item kinds."""
        values = {}
        for name, dist in self.dispersions.items():
            rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(run, stream_key(name))))
            per = KINDS[name].per
            if per is None or per.endswith("_name"):
                values[name] = dist.draw(rng)
            else:
                names = items(self.robot, per)
                values[name] = dict(zip(names, dist.draw(rng, len(names))))
        return values

    def run_seed(self, run: int) -> int:
        """The seed of run ``run``'s own noise (sensors, emulator), shown in runs.csv."""
        return int(np.random.SeedSequence(self.seed, spawn_key=(run, stream_key("run noise"))).generate_state(1)[0])

    def flat(self, values: dict) -> dict:
        """``values`` as columns (see :meth:`columns`)."""
        out = {}
        for name, v in values.items():
            if isinstance(v, dict):
                out.update({f"{name}[{k}]": x for k, x in v.items()})
            else:
                out[name] = v
        return out


def load_spec(path: str | Path) -> CampaignSpec:
    """Read and check the spec at ``path``.

    Raises:
        ValueError: one line naming the key, what is wrong and the fix.
    """
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ValueError(f"cannot read campaign spec {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"{path}: not valid YAML{where}; check the indentation and colons") from None
    try:
        return parse_spec(raw, str(path))
    except ValueError as exc:  # name the file the user gave, whatever layer refused
        message = str(exc).removeprefix("campaign spec: ")
        raise ValueError(message if message.startswith(f"{path}: ") else f"{path}: {message}") from None


def parse_spec(raw, source: str = "spec") -> CampaignSpec:
    """Check a spec mapping (see :func:`load_spec`)."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{source}: a campaign spec is a mapping of keys (robot, runs, seed, dispersions, "
                         "criteria, ...); see docs/campaigns.md")
    raw = dict(raw)
    known = RUN_KEYS | CAMPAIGN_KEYS
    for key in raw:
        if key not in known:
            raise ValueError(f"{source}: unknown key '{key}'; the keys are {', '.join(sorted(known))}")
    runs = _whole(raw.get("runs"), "runs", 1, MAX_RUNS, required=True)
    seed = _whole(raw.get("seed", 0), "seed", 0, 2**63 - 1)
    worst = _whole(raw.get("worst", 3), "worst", 0, 100)
    batch = _whole(raw["batch"], "batch", 1, MAX_RUNS) if raw.get("batch") is not None else None
    config = base_config(raw)  # checks the run keys as freeflyer sim does
    ff = _robot(raw, config)
    _law_flies(config, ff)
    duration = _duration(config, ff)
    if raw.get("via_testbed"):
        _faults(raw.get("faults") or [], "faults")
    dispersions = _dispersions(raw.get("dispersions") or {}, raw, ff, duration)
    metrics = METRICS + (TESTBED_METRICS if raw.get("via_testbed") else ())
    criteria = _criteria(raw.get("criteria") or {}, metrics)
    return CampaignSpec(raw, runs, seed, dispersions, criteria, worst, batch, source, ff)


def _whole(value, key: str, lo: int, hi: int, required: bool = False) -> int:
    if value is None and required:
        raise ValueError(f"campaign spec: '{key}' is missing; give a whole number, e.g. {key}: 100")
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"campaign spec: {key} must be a whole number in [{lo}, {hi}], got {value!r}")
    return value


def base_config(raw: Mapping):
    """The SimConfig of the spec's run keys (no dispersion), checked as ``freeflyer sim`` checks them."""
    from freeflyer_control.sim.config import SimConfig, parse_mode_schedule

    if raw.get("faults") and not raw.get("via_testbed"):
        raise ValueError("campaign spec: faults need via_testbed (the emulated testbed injects them); "
                         "add via_testbed: planar_4link or drop faults")
    schedule = raw.get("mode_schedule") or ()
    if isinstance(schedule, str):
        schedule = parse_mode_schedule(schedule, "mode_schedule")
    elif schedule:
        raise ValueError("campaign spec: mode_schedule is a string like \"0:floating,20:flying\"")
    kwargs = {}
    for key, attr in (("robot", "robot"), ("base", "base"), ("mode", "mode"),
                      ("maneuver", "maneuver"), ("base_actuation", "base_actuation")):
        if key in raw:
            if not isinstance(raw[key], str):
                raise ValueError(f"campaign spec: {key} must be a name, got {raw[key]!r}")
            kwargs[attr] = raw[key]
    for key, attr in (("duration", "duration"), ("rate", "rate"), ("log_rate", "log_rate")):
        if key in raw:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"campaign spec: {key} must be a number, got {value!r}")
            kwargs[attr] = float(value)
    if "substeps" in raw:
        kwargs["plant_substeps"] = _whole(raw["substeps"], "substeps", 1, 1000)
    if raw.get("ee") is not None:
        kwargs["ee"] = [raw["ee"]] if isinstance(raw["ee"], str) else list(raw["ee"])
    kwargs["controller"] = _law(raw)
    config = SimConfig(mode_schedule=list(schedule), **kwargs)
    _choices(config)
    config.validate()
    _engine(raw, config)
    return config


def _engine(raw: Mapping, config) -> None:
    """Refuse an ``engine`` the runs cannot take (``freeflyer sim --engine``'s choices)."""
    engine = raw.get("engine", "auto")
    if engine not in ENGINES:
        raise ValueError(f"campaign spec: engine must be one of {list(ENGINES)}, got {engine!r}")
    if engine != "compiled":
        return
    if raw.get("via_testbed"):
        raise ValueError("campaign spec: engine: compiled flies pure simulations; runs via_testbed go through "
                         "the emulated testbed's own loop: drop engine or via_testbed")
    from freeflyer_control.sim import fast

    if not fast.available():
        raise ValueError("campaign spec: engine: compiled needs numba: pip install 'freeflyer_control[pypi]'")
    import dataclasses

    from freeflyer_control.campaign.dispersions import RunPerturbation
    from freeflyer_control.sim.fast.runner import not_covered

    compiled = config.compiled_controller
    if compiled is None:
        raise ValueError(f"campaign spec: engine: compiled does not cover controller {config.controller_name} "
                         "(computed_torque and resolved_rate at their default parameters are compiled); "
                         "use engine: auto (the Python engine flies it)")
    # every dispersion kind takes the same path: any perturbation stands for them
    reason = not_covered(dataclasses.replace(config, controller=compiled, perturbation=RunPerturbation({}, 0)))
    if reason:
        raise ValueError(f"campaign spec: engine: compiled does not cover these runs: {reason}; "
                         "use engine: auto (the Python engine flies them)")


def _law(raw: Mapping):
    """A fresh law object of the spec's ``controller`` (a name or an import path, as
    ``--controller`` takes) with its ``controller_params`` (a mapping, checked against the law's
    declaration): every run gets its own, so no state crosses runs."""
    from freeflyer_control.laws import make_law

    name = raw.get("controller", "computed_torque")
    if not isinstance(name, str):
        raise ValueError(f"campaign spec: controller must be a name or an import path module:Class, got {name!r}")
    params = raw.get("controller_params") or {}
    if not isinstance(params, Mapping):
        raise ValueError("campaign spec: controller_params is a mapping name -> value, e.g. {kp: 2.0}")
    try:
        return make_law(name, {str(k): v for k, v in params.items()})
    except ValueError as exc:
        raise ValueError(f"campaign spec: controller: {exc}") from None


def _law_flies(config, ff) -> None:
    """Refuse a law that cannot fly the spec's maneuver on its robot (before any run)."""
    from freeflyer_control.control.maneuvers import make_maneuver

    refusal = config.controller.refuses(ff, make_maneuver(config.maneuver))
    if refusal:
        raise ValueError(f"campaign spec: controller {config.controller_name}: {refusal}")


def _choices(config) -> None:
    from freeflyer_control.control.effort import BASE_ACTUATION
    from freeflyer_control.control.maneuvers import MANEUVERS
    from freeflyer_control.physics.modes import Mode

    for key, value, allowed in (("mode", config.mode, [m.value for m in Mode]),
                                ("maneuver", config.maneuver, MANEUVERS),
                                ("base_actuation", config.base_actuation, BASE_ACTUATION)):
        if value not in allowed:
            raise ValueError(f"campaign spec: {key} '{value}' is not one of {', '.join(allowed)}")


def _robot(raw: Mapping, config):
    from freeflyer_control.model import load_robot

    if raw.get("via_testbed"):
        from freeflyer_control.hil.config import load_testbed_config

        tb = load_testbed_config(str(raw["via_testbed"]))
        if "robot" in raw and raw["robot"] != tb.robot.name:
            raise ValueError(f"campaign spec: testbed '{raw['via_testbed']}' carries robot '{tb.robot.name}', "
                             f"not '{raw['robot']}'; drop robot or give a testbed config for it")
        ff = tb.robot
    else:
        ff = load_robot(config.robot, base=config.base, end_effectors=config.ee)
    if raw.get("q0") is not None:
        from freeflyer_control.inputs.values import UsageError
        from freeflyer_control.model.joint_positions import joint_limit_problem, parse_joint_positions

        q0 = raw["q0"]
        q = parse_joint_positions(ff, q0 if isinstance(q0, str) else json.dumps(q0), "q0")
        problem = joint_limit_problem(ff, q, "q0")
        if problem:
            raise UsageError(f"{problem}; give angles inside the limits")
    return ff


def _duration(config, ff) -> float:
    if config.duration is not None:
        return float(config.duration)
    from freeflyer_control.control.maneuvers import make_maneuver
    from freeflyer_control.physics.state import make_state

    maneuver = make_maneuver(config.maneuver)
    maneuver.start(ff, make_state(ff))
    return float(maneuver.duration)


def _faults(texts, where: str) -> None:
    from freeflyer_control.hil.emulator import parse_fault

    if not isinstance(texts, list):
        raise ValueError(f"campaign spec: {where} is a list of KIND:START:DURATION strings")
    for text in texts:
        if text == "none" and where != "faults":
            continue
        try:
            parse_fault(str(text))
        except ValueError as exc:
            raise ValueError(f"campaign spec: {where}: {exc}") from None


def _dispersions(given, raw: Mapping, ff, duration: float) -> dict[str, Distribution]:
    if not isinstance(given, Mapping):
        raise ValueError("campaign spec: dispersions is a mapping kind -> distribution")
    testbed = bool(raw.get("via_testbed"))
    out = {}
    for name, value in given.items():
        where = f"dispersions.{name}"
        kind = KINDS.get(name)
        if kind is None:
            raise ValueError(f"campaign spec: unknown dispersion '{name}'; the kinds are {', '.join(KINDS)}")
        if kind.where == "sim" and testbed:
            raise ValueError(f"campaign spec: {where} acts on the pure simulation, not through via_testbed "
                             f"(the testbed flies the robot's own model and sensors); drop via_testbed or use "
                             f"the emulator's kinds ({', '.join(k for k in KINDS if KINDS[k].where == 'testbed')})")
        if kind.where == "testbed" and not testbed:
            raise ValueError(f"campaign spec: {where} is a setting of the emulated testbed; add via_testbed: "
                             "planar_4link or use joint_noise / base_position_noise / latency")
        dist = parse_distribution(value, where)
        if kind.check == "fault":
            _faults(list(dist.support()), where)
        problem = range_problem(kind, dist.support(), dist.describe(), ff)
        if problem:
            raise ValueError(f"campaign spec: {where} {problem}")
        if name in LATENCIES and max(dist.support()) >= duration:
            raise ValueError(f"campaign spec: {where} reaches {max(dist.support()):g} s, not shorter than the run "
                             f"({duration:g} s); give latencies well below the duration")
        if name.startswith("thruster_") and (raw.get("base_actuation") == "ideal" or not ff.thrusters):
            raise ValueError(f"campaign spec: {where} needs thrusters pushing the base; set base_actuation: "
                             "thrusters on a robot that has them")
        out[name] = dist
    return out


def _criteria(given, metrics: tuple[str, ...]) -> dict[str, dict[str, float]]:
    if not isinstance(given, Mapping):
        raise ValueError("campaign spec: criteria is a mapping metric -> {max: x} and/or {min: x}")
    out = {}
    for name, limits in given.items():
        if name not in metrics:
            raise ValueError(f"campaign spec: criteria.{name}: no such metric; the metrics are {', '.join(metrics)}")
        if not isinstance(limits, Mapping) or not limits or set(limits) - {"min", "max"}:
            raise ValueError(f"campaign spec: criteria.{name} takes {{max: x}}, {{min: x}} or both, got {limits!r}")
        for key, value in limits.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"campaign spec: criteria.{name}.{key} must be a finite number, got {value!r}")
        if "min" in limits and "max" in limits and limits["min"] > limits["max"]:
            raise ValueError(f"campaign spec: criteria.{name}: min {limits['min']} > max {limits['max']}; swap them")
        out[name] = {k: float(v) for k, v in limits.items()}
    return out
