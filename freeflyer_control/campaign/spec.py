"""A campaign spec (YAML): what to fly, how many runs, the dispersions, the pass criteria.

Everything is checked by :func:`load_spec` before any run: unknown keys, values outside what
``freeflyer sim`` accepts, non-physical dispersion ranges, criteria on metrics that do not exist.

Seeds. Run ``i`` draws from ``SeedSequence(seed, spawn_key=(i,))`` (what ``SeedSequence(seed).spawn``
gives its i-th child), and each dispersion kind from its own grandchild, keyed by a hash of the
kind's name (:func:`stream_key`): a run's values depend only on (seed, i, its dispersions), never
on the worker that flies it, on the other runs, or on the order of the kinds in the code.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from freeflyer_control.errors import ConfigError
from freeflyer_control.inputs.mappings import mapping, refuse_unknown, value_number, value_text, value_whole
from freeflyer_control.inputs.values import shown
from freeflyer_control.inputs.yaml_files import load_yaml_file

from .capture_runs import CAPTURE_KEYS, CAPTURE_METRICS, is_capture
from .dispersions import CAPTURE_RANGES, KINDS, LATENCIES, items, physical_ranges, range_problem
from .distributions import Distribution, parse_distribution

# The summary figures a run is judged by (numbers; timing and echoed settings left out so that
# rows are identical whatever machine flies them). test_campaign checks this against a real run.
METRICS = ("max_abs_linear_momentum", "max_abs_angular_momentum", "com_drift_m", "base_attitude_change_rad",
           "base_position_change_m", "rms_tracking_error", "max_tracking_error", "final_tracking_error",
           "max_abs_arm_torque_nm", "min_sigma", "max_abs_arm_torque_commanded_nm", "saturated_fraction")
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
    """A checked spec.

    Attributes:
        raw: the YAML mapping with its file paths made absolute (relative ones are relative to
            the spec's folder): what the workers fly.
        given: the YAML mapping as written (its hash identifies the spec, :meth:`digest`).
        files: every file the campaign reads (robot config, URDF, testbed config) -> its
            sha256: with the spec, the campaign's identity (a resume with one changed is refused).
    """

    raw: dict
    runs: int
    seed: int
    dispersions: dict[str, Distribution]
    criteria: dict[str, dict[str, float]]
    worst: int = 3
    batch: int | None = None
    source: str = ""
    robot: object = field(default=None, repr=False)
    given: dict = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    capture: bool = False  # maneuver: capture (campaign.capture_runs)

    @property
    def via_testbed(self) -> str | None:
        return self.raw.get("via_testbed")

    @property
    def metrics(self) -> tuple[str, ...]:
        if self.capture:
            return CAPTURE_METRICS
        return METRICS + (TESTBED_METRICS if self.via_testbed else ())

    def digest(self) -> str:
        """sha256 of the spec's content as written (key order and YAML layout do not matter)."""
        text = json.dumps(self.given or self.raw, sort_keys=True, separators=(",", ":"), default=str)
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
        ValueError: one line naming the file, the key, what is wrong and the fix.
    """
    path = Path(path)
    raw = load_yaml_file(path, "campaign spec")
    try:
        return parse_spec(raw, str(path), folder=path.parent)
    except ValueError as exc:  # name the file the user gave, whatever layer refused
        message = str(exc).removeprefix("campaign spec: ")
        raise ValueError(message if message.startswith(f"{path}: ") else f"{path}: {message}") from None


def parse_spec(raw, source: str = "spec", folder: Path | None = None) -> CampaignSpec:
    """Check a spec mapping (see :func:`load_spec`); relative file paths in it are relative to
    ``folder`` (the spec's; None: the working folder)."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{source}: a campaign spec is a mapping of keys (robot, runs, seed, dispersions, "
                         "criteria, ...); see docs/campaigns.md")
    given = dict(raw)
    capture = is_capture(given)
    try:
        refuse_unknown(given, sorted((CAPTURE_KEYS if capture else RUN_KEYS) | CAMPAIGN_KEYS), "campaign spec")
        raw = _absolute_paths(given, folder)
        runs = value_whole(raw.get("runs"), "campaign spec: runs", 1, MAX_RUNS) if "runs" in raw else _missing("runs")
        seed = value_whole(raw.get("seed", 0), "campaign spec: seed", 0, 2**63 - 1)
        worst = value_whole(raw.get("worst", 3), "campaign spec: worst", 0, 100)
        batch = value_whole(raw["batch"], "campaign spec: batch", 1, MAX_RUNS) if raw.get("batch") is not None \
            else None
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    if capture:
        from .capture_runs import check

        config, ff = check(raw)
        dispersions = _dispersions(raw.get("dispersions") or {}, raw, ff, config.duration or math.inf, CAPTURE_RANGES)
        criteria = _criteria(raw.get("criteria") or {}, CAPTURE_METRICS)
        return CampaignSpec(raw, runs, seed, dispersions, criteria, worst, batch, source, ff, given,
                            input_files({**raw, "robot": config.robot}), capture=True)
    config = base_config(raw)  # checks the run keys as freeflyer sim does
    ff, testbed = _robot(raw, config)
    _law_flies(config, ff)
    duration = _duration(config, ff)
    if raw.get("via_testbed"):
        _faults(raw.get("faults") or [], "faults", ff)
        _testbed_size(testbed, duration)
    ranges = physical_ranges(ff, _start(ff, config, raw), testbed.limits if testbed is not None else None)
    dispersions = _dispersions(raw.get("dispersions") or {}, raw, ff, duration, ranges)
    metrics = METRICS + (TESTBED_METRICS if raw.get("via_testbed") else ())
    criteria = _criteria(raw.get("criteria") or {}, metrics)
    return CampaignSpec(raw, runs, seed, dispersions, criteria, worst, batch, source, ff, given,
                        input_files(raw, testbed))


def _missing(key: str):
    raise ValueError(f"campaign spec: '{key}' is missing; give a whole number, e.g. {key}: 100")


def _absolute_paths(raw: dict, folder: Path | None) -> dict:
    """``raw`` with its robot, via_testbed and object file paths made absolute against ``folder``
    (as ROS launch files and most tools do: a spec names its files relative to itself)."""
    out = dict(raw)
    base = Path(folder) if folder is not None else Path.cwd()
    robot = out.get("robot")
    if isinstance(robot, str) and robot.endswith((".yaml", ".yml", ".urdf", ".xml")) and not Path(robot).is_absolute():
        out["robot"] = str((base / robot).absolute())
    for key in ("via_testbed", "object"):
        path = out.get(key)
        if isinstance(path, str) and path and not Path(path).is_absolute() and (base / path).is_file():
            out[key] = str((base / path).absolute())
    return out


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes (remembered while the file's stamp stays the same)."""
    from freeflyer_control.model.robots import file_stamp

    return _digest(str(path), file_stamp(path))


@functools.lru_cache(maxsize=64)
def _digest(path: str, stamp: tuple | None) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def input_files(raw: Mapping, testbed=None) -> dict[str, str]:
    """Every file a run of the spec ``raw`` reads -> its sha256: the robot config and its URDF
    (a bundled robot's too: a new release may change them), the testbed config and the object
    (a capture's target)."""
    from freeflyer_control.model.objects import object_source
    from freeflyer_control.model.robots import DEFAULT_ROBOT, robot_sources

    paths = [object_source(raw["object"])] if isinstance(raw.get("object"), str) else []
    if testbed is not None:
        paths.append(testbed.source)
        paths += robot_sources(testbed.robot_source)
    else:
        paths += robot_sources(str(raw.get("robot", DEFAULT_ROBOT)))
    return {str(Path(p).resolve()): file_digest(Path(p).resolve()) for p in paths if p is not None}


def base_config(raw: Mapping):
    """The SimConfig of the spec's run keys (no dispersion), checked as ``freeflyer sim`` checks them."""
    from freeflyer_control.sim.config import SimConfig, parse_mode_schedule
    from freeflyer_control.sim.limits import MAX_RATE_HZ, MAX_SUBSTEPS, MIN_RATE_HZ

    if raw.get("faults") and not raw.get("via_testbed"):
        raise ValueError("campaign spec: faults need via_testbed (the emulated testbed injects them); "
                         "add via_testbed: planar_4link or drop faults")
    schedule = raw.get("mode_schedule") or ()
    if isinstance(schedule, str):
        schedule = parse_mode_schedule(schedule, "mode_schedule")
    elif schedule:
        raise ValueError("campaign spec: mode_schedule is a string like \"0:floating,20:flying\"")
    kwargs = {}
    try:
        for key, attr in (("robot", "robot"), ("base", "base"), ("mode", "mode"),
                          ("maneuver", "maneuver"), ("base_actuation", "base_actuation")):
            if key in raw:
                kwargs[attr] = value_text(raw[key], f"campaign spec: {key}", 4096)
        for key, attr, lo in (("duration", "duration", 0.0), ("rate", "rate", MIN_RATE_HZ),
                              ("log_rate", "log_rate", 1e-3)):
            if key in raw:
                kwargs[attr] = value_number(raw[key], f"campaign spec: {key}", lo=lo, hi=None if key == "duration"
                                            else MAX_RATE_HZ, lo_open=key == "duration",
                                            unit="s" if key == "duration" else "Hz")
        if "substeps" in raw:
            kwargs["plant_substeps"] = value_whole(raw["substeps"], "campaign spec: substeps", 1, MAX_SUBSTEPS)
        if raw.get("ee") is not None:
            ee = [raw["ee"]] if isinstance(raw["ee"], str) else raw["ee"]
            if not isinstance(ee, list):
                raise ConfigError(f"campaign spec: ee must be a frame name or a list of them, got {shown(ee)}")
            kwargs["ee"] = [value_text(e, f"campaign spec: ee[{i}]", what="a frame name") for i, e in enumerate(ee)]
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    kwargs["controller"] = _law(raw)
    config = SimConfig(mode_schedule=list(schedule), **kwargs)
    _choices(config)
    config.validate()
    _engine(raw, config)
    return config


def _engine(raw: Mapping, config) -> None:
    """Refuse an ``engine`` the runs cannot take (``freeflyer sim --engine``'s choices)."""
    engine = raw.get("engine", "auto")
    if not isinstance(engine, str) or engine not in ENGINES:
        raise ValueError(f"campaign spec: engine must be one of {list(ENGINES)}, got {shown(engine)}")
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
            raise ValueError(f"campaign spec: {key} {shown(value)} is not one of {', '.join(allowed)}")


def _robot(raw: Mapping, config):
    """(the robot flown, the testbed config or None), shared read-only models (a worker's runs
    copy what they change)."""
    from freeflyer_control.model.robots import shared_robot

    tb = None
    if raw.get("via_testbed"):
        from freeflyer_control.hil.config import shared_testbed

        try:
            name = value_text(raw["via_testbed"], "campaign spec: via_testbed", 4096,
                              "a testbed config (.yaml or a bundled name)")
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        tb = shared_testbed(name)
        if "robot" in raw and raw["robot"] != tb.robot.name:
            raise ValueError(f"campaign spec: testbed {shown(raw['via_testbed'])} carries robot '{tb.robot.name}', "
                             f"not {shown(raw['robot'])}; drop robot or give a testbed config for it")
        ff = tb.robot
    else:
        ff = shared_robot(config.robot, base=config.base, end_effectors=config.ee)
    if raw.get("q0") is not None:
        from freeflyer_control.inputs.values import UsageError
        from freeflyer_control.model.joint_positions import joint_limit_problem, parse_joint_positions

        q0 = raw["q0"]
        q = parse_joint_positions(ff, q0 if isinstance(q0, str) else json.dumps(q0), "q0")
        problem = joint_limit_problem(ff, q, "q0")
        if problem:
            raise UsageError(f"{problem}; give angles inside the limits")
    return ff, tb


def _start(ff, config, raw: Mapping):
    """The state every run starts from before its dispersions (the maneuver's, q0's)."""
    from freeflyer_control.control.maneuvers import make_maneuver
    from freeflyer_control.model.joint_positions import parse_joint_positions
    from freeflyer_control.sim.config import initial_state

    if raw.get("q0") is not None:
        q0 = raw["q0"]
        config.initial_joint_positions = parse_joint_positions(ff, q0 if isinstance(q0, str) else json.dumps(q0),
                                                               "q0")
    state = initial_state(ff, config, make_maneuver(config.maneuver))
    config.initial_joint_positions = None
    return state


def _testbed_size(testbed, duration: float) -> None:
    """The emulated testbed's run size, bounded as ``freeflyer sim``'s is."""
    from freeflyer_control.hil.sim import testbed_size_problem

    problem = testbed_size_problem(testbed, duration, names={"duration": "duration"})
    if problem:
        raise ValueError(f"campaign spec: {problem}")


def _duration(config, ff) -> float:
    if config.duration is not None:
        return float(config.duration)
    from freeflyer_control.control.maneuvers import make_maneuver
    from freeflyer_control.physics.state import make_state

    maneuver = make_maneuver(config.maneuver)
    maneuver.start(ff, make_state(ff))
    return float(maneuver.duration)


def _faults(texts, where: str, ff) -> None:
    from freeflyer_control.hil.emulator import fault_problem, parse_fault

    if not isinstance(texts, list):
        raise ValueError(f"campaign spec: {where} is a list of KIND:START:DURATION strings")
    for text in texts:
        if text == "none" and where != "faults":
            continue
        if not isinstance(text, str):
            raise ValueError(f"campaign spec: {where}: {shown(text)} is not a KIND:START:DURATION text")
        try:
            problem = fault_problem(parse_fault(text), ff)
        except ValueError as exc:
            problem = str(exc)
        if problem:
            raise ValueError(f"campaign spec: {where}: {problem}")


def _dispersions(given, raw: Mapping, ff, duration: float, ranges: dict) -> dict[str, Distribution]:
    if not isinstance(given, Mapping):
        raise ValueError("campaign spec: dispersions is a mapping kind -> distribution")
    try:
        refuse_unknown(given, list(KINDS), "campaign spec: dispersions")
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    testbed = bool(raw.get("via_testbed"))
    capture = is_capture(raw)
    out = {}
    for name, value in given.items():
        where = f"dispersions.{name}"
        kind = KINDS[name]
        if capture != (kind.where == "capture"):
            theirs = ", ".join(k for k in KINDS if (KINDS[k].where == "capture") == capture)
            raise ValueError(f"campaign spec: {where} does not apply to {'a capture' if capture else 'this'} campaign; "
                             f"its kinds are {theirs}")
        if kind.per == "tilt_axis" and ff.base == "planar":
            raise ValueError(f"campaign spec: {where}: a planar target spins about z only; drop it")
        if kind.where == "sim" and testbed:
            raise ValueError(f"campaign spec: {where} acts on the pure simulation, not through via_testbed "
                             f"(the testbed flies the robot's own model and sensors); drop via_testbed or use "
                             f"the emulator's kinds ({', '.join(k for k in KINDS if KINDS[k].where == 'testbed')})")
        if kind.where == "testbed" and not testbed:
            raise ValueError(f"campaign spec: {where} is a setting of the emulated testbed; add via_testbed: "
                             "planar_4link or use joint_noise / base_position_noise / latency")
        dist = parse_distribution(value, where)
        if kind.check == "fault":
            _faults(list(dist.support()), where, ff)
        problem = range_problem(kind, dist.reach(), dist.describe(), ff, ranges)
        if problem:
            raise ValueError(f"campaign spec: {where} {problem}")
        if name in LATENCIES and max(dist.reach()) >= duration:
            raise ValueError(f"campaign spec: {where} reaches {max(dist.reach()):g} s, not shorter than the run "
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
    try:
        refuse_unknown(given, metrics, "campaign spec: criteria")
        for name, limits in given.items():
            where = f"campaign spec: criteria.{name}"
            limits = mapping(limits, where, ("min", "max"))
            if not limits:
                raise ConfigError(f"{where} takes {{max: x}}, {{min: x}} or both")
            for key, value in limits.items():
                value_number(value, f"{where}.{key}")
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    for name, limits in given.items():
        if "min" in limits and "max" in limits and limits["min"] > limits["max"]:
            raise ValueError(f"campaign spec: criteria.{name}: min {limits['min']} > max {limits['max']}; swap them")
        out[name] = {k: float(v) for k, v in limits.items()}
    return out
