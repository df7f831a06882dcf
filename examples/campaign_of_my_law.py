#!/usr/bin/env python3
"""The reactionless law of ``reactionless.py`` in a Monte-Carlo campaign, from Python.

A campaign spec is a mapping (the YAML of ``freeflyer campaign`` as a dict): the law by its
import path, its parameters under ``controller_params``, dispersions of the controller's model
and of the start. Each run is a pure function of (spec, run index); :func:`fly` flies one in
this process and returns its row (no Dask needed; ``freeflyer campaign spec.yaml`` runs the same
spec on a local pool or a cluster, where the law's module must be importable on every worker).

Run: python examples/campaign_of_my_law.py [--runs N] [--duration S]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from freeflyer_control.campaign.spec import parse_spec
from freeflyer_control.campaign.worker import fly

sys.path.insert(0, str(Path(__file__).resolve().parent))  # reactionless.py, by import path


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--duration", type=float, default=10.0)
    args = ap.parse_args(argv)
    spec = parse_spec({
        "robot": "planar_4link", "maneuver": "wilde", "mode": "floating", "duration": args.duration,
        "q0": {"joint1": 0.8, "joint2": -0.8, "joint3": -0.8, "joint4": 0.8},
        "controller": "reactionless:Reactionless", "controller_params": {"k": 20.0},
        "runs": args.runs, "seed": 1,
        "dispersions": {"mass_error": {"uniform": [-0.05, 0.05]}, "initial_joint": {"uniform": [-0.05, 0.05]}},
        "criteria": {"base_attitude_change_rad": {"max": 0.01}},
    }, "campaign_of_my_law")
    rows = [fly(spec, run) for run in range(spec.runs)]
    for row in rows:
        print(f"run {row['run']}: {row['status']}, base attitude change {row['base_attitude_change_rad']:.3g} rad, "
              f"{'pass' if row['passed'] else 'FAIL'}")
    print(f"{sum(r['passed'] for r in rows)} of {len(rows)} runs kept the base within 0.01 rad "
          "(the controller's model off by up to 5 % per body)")
    return rows


if __name__ == "__main__":
    main()
