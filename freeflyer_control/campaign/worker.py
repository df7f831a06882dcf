"""One campaign run, and a batch of them: what a worker process executes.

A run is a pure function of (spec, run index): :func:`run_config` rebuilds its SimConfig (with a
law object of its own, made from the spec's ``controller`` and ``controller_params``), and
:func:`fly` returns its row (dispersed values, metrics, pass/fail, or the error it raised: a
diverged plant or a failed law ends the run and fails the row).
"""

from __future__ import annotations

import json
import math
import traceback
from dataclasses import replace

from .dispersions import EMULATOR_KINDS, RunPerturbation
from .spec import ENGINES, CampaignSpec, base_config


def run_config(spec: CampaignSpec, run: int):
    """(SimConfig, emulator settings or None, faults, drawn values) of run ``run``."""
    values = spec.draw(run)
    config = base_config(spec.raw)
    if spec.raw.get("q0") is not None:
        from freeflyer_control.model.joint_positions import parse_joint_positions

        q0 = spec.raw["q0"]
        config.initial_joint_positions = parse_joint_positions(
            spec.robot, q0 if isinstance(q0, str) else json.dumps(q0), "q0")
    config.perturbation = RunPerturbation(values, spec.run_seed(run))
    settings, faults = None, []
    if spec.via_testbed:
        from freeflyer_control.hil.emulator import parse_fault
        from freeflyer_control.hil.emulator_settings import EmulatorSettings

        from freeflyer_control.hil.config import load_testbed_config

        tb = load_testbed_config(spec.via_testbed)
        settings = EmulatorSettings.from_mapping(tb.emulator)
        drawn = {k: values[k] for k in EMULATOR_KINDS if k in values}
        settings = replace(settings, **drawn) if drawn else settings
        texts = list(spec.raw.get("faults") or [])
        if values.get("fault") not in (None, "none"):
            texts.append(values["fault"])
        faults = [parse_fault(str(t)) for t in texts]
    return config, settings, faults, values


def simulate(spec: CampaignSpec, run: int, *, progress=None, stream=None):
    """Fly run ``run``; returns the SimResult (the same one ``freeflyer sim --campaign`` writes,
    passing its progress bar and streamed timeseries)."""
    config, settings, faults, _ = run_config(spec, run)
    if spec.via_testbed:
        from freeflyer_control.hil.sim import run_via_testbed

        return run_via_testbed(config, spec.via_testbed, faults=faults, settings=settings,
                               seed=spec.run_seed(run), progress=progress, stream=stream)
    from freeflyer_control.sim.runner import run_simulation

    return run_simulation(config, fast=ENGINES[spec.raw.get("engine", "auto")], progress=progress, stream=stream)


def metrics_of(spec: CampaignSpec, summary: dict) -> dict[str, float]:
    """The campaign's metrics from a run's summary (None -> NaN)."""
    summary = dict(summary)
    summary["testbed_trip_count"] = len(summary.get("testbed_trips", []))
    return {m: float("nan") if summary.get(m) is None else float(summary[m]) for m in spec.metrics}


def verdict(spec: CampaignSpec, metrics: dict[str, float]) -> bool:
    """Every criterion met (a NaN metric meets none)."""
    for name, limits in spec.criteria.items():
        x = metrics[name]
        if math.isnan(x) or ("max" in limits and x > limits["max"]) or ("min" in limits and x < limits["min"]):
            return False
    return True


def fly(spec: CampaignSpec, run: int) -> dict:
    """Run ``run``'s row; a run that raises, or whose plant diverges, gives a row with status
    failed and the error (its metrics, where a diverged run has them, are kept)."""
    row = {"run": run, "seed": spec.run_seed(run)}
    try:
        values = spec.draw(run)
        row.update(spec.flat(values))
        result = simulate(spec, run)
    except Exception as exc:  # noqa: BLE001 - recorded, the campaign goes on
        last = traceback.extract_tb(exc.__traceback__)[-1]
        row.update(status="failed", passed=False,
                   error=f"{type(exc).__name__}: {' '.join(str(exc).split())} ({last.filename.rsplit('/', 1)[-1]}:{last.lineno})")
        return row
    metrics = metrics_of(spec, result.summary)
    row.update(metrics)
    diverged = result.summary.get("plant_diverged")
    if diverged:  # the simulation stopped early: its figures cover part of the run only
        row.update(status="failed", passed=False, error=f"PlantDiverged: {diverged}")
        return row
    law_fault = result.summary.get("law_fault")
    if law_fault:  # the law was stopped (control.law_guard): the run ended there
        row.update(status="failed", passed=False, error=f"LawFault: {law_fault}")
        return row
    row.update(status="ok", passed=verdict(spec, metrics), error="")
    return row


def fly_batch(spec: CampaignSpec, runs: list[int]) -> list[dict]:
    """Rows of ``runs``, flown one after the other in this process."""
    return [fly(spec, run) for run in runs]
