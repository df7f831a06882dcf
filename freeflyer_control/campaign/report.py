"""A campaign's results: runs.csv, runs.parquet, summary.json, plots, and the worst runs re-flown
(with their replays); report.html, the page of all of it, is :mod:`.report_html`'s.

Statistics: ``pass_rate`` is passed / (completed + failed) -- a run that raised counts as not
passing -- with the Wilson score interval at 95 % (z = 1.959964), which stays inside [0, 1] and
is sound for small counts and rates near 0 or 1, where the normal approximation is not.
Percentiles (5, 50, 95, max) are over the completed runs, NaN values (a metric a run does not
define) left out.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from .spec import CampaignSpec

Z95 = 1.959963984540054


def wilson_interval(passed: int, n: int, z: float = Z95) -> tuple[float, float]:
    """95 % Wilson score interval of a proportion passed / n ((0, 1) when n = 0)."""
    if n == 0:
        return (0.0, 1.0)
    p = passed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def table(spec: CampaignSpec, rows: dict[int, dict]) -> tuple[list[str], list[dict]]:
    """(column names, rows sorted by run): identity, dispersed values, metrics, verdict, error."""
    columns = ["run", "seed", "status", "passed"] + spec.columns() + list(spec.metrics) + ["error"]
    ordered = [{c: rows[i].get(c) for c in columns} for i in sorted(rows)]
    return columns, ordered


def write_tables(spec: CampaignSpec, rows: dict[int, dict], out: Path) -> list[Path]:
    """runs.csv (floats as Python's shortest round-trip repr) and runs.parquet (if pyarrow is there)."""
    columns, ordered = table(spec, rows)
    csv_path = out / "runs.csv"
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for row in ordered:
            writer.writerow(["" if row[c] is None else row[c] for c in columns])
    written = [csv_path]
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return written
    data = {}
    for c in columns:
        values = [row[c] for row in ordered]
        if c in spec.metrics or all(isinstance(v, float) for v in values if v is not None):
            data[c] = pa.array([float("nan") if v is None else float(v) for v in values], pa.float64())
        else:
            data[c] = pa.array(values)
    pq.write_table(pa.table(data), out / "runs.parquet")
    return written + [out / "runs.parquet"]


def summarize(spec: CampaignSpec, rows: dict[int, dict]) -> dict:
    """summary.json's content."""
    done = [r for r in rows.values() if r["status"] == "ok"]
    failed = [r for r in rows.values() if r["status"] == "failed"]
    judged = len(done) + len(failed)
    passed = sum(1 for r in done if r["passed"])
    lo, hi = wilson_interval(passed, judged)
    percentiles = {}
    for m in spec.metrics:
        x = np.array([r[m] for r in done], dtype=float)
        x = x[~np.isnan(x)]
        percentiles[m] = ({"p5": float(np.percentile(x, 5)), "p50": float(np.percentile(x, 50)),
                           "p95": float(np.percentile(x, 95)), "max": float(x.max())} if x.size else None)
    return {
        "spec_sha256": spec.digest(),
        "runs_total": spec.runs,
        "runs_completed": len(done),
        "runs_failed": len(failed),
        "runs_missing": spec.runs - judged,
        "runs_passed": passed,
        "pass_rate": passed / judged if judged else None,
        "pass_rate_ci95": [lo, hi],
        "criteria": spec.criteria,
        "metrics": percentiles,
    }


def strongest_driver(spec: CampaignSpec, rows: list[dict], metric: str) -> tuple[str, float] | None:
    """The numeric dispersed column with the largest |Spearman rank correlation| with ``metric``
    over the completed runs, and that correlation (None: no column varies with it)."""
    from scipy.stats import spearmanr

    best = None
    y = np.array([r[metric] for r in rows], dtype=float)
    for c in spec.columns():
        x = np.array([r[c] if isinstance(r[c], (int, float)) else np.nan for r in rows], dtype=float)
        ok = ~(np.isnan(x) | np.isnan(y))
        if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
            continue
        rho = float(spearmanr(x[ok], y[ok]).statistic)
        if np.isfinite(rho) and (best is None or abs(rho) > abs(best[1])):
            best = (c, rho)
    return best


def write_plots(spec: CampaignSpec, rows: dict[int, dict], out: Path) -> list[Path]:
    """plots/<metric>_hist.png (with the criterion's limits) and plots/<metric>_vs_<dispersion>.png."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = out / "plots"
    folder.mkdir(exist_ok=True)
    done = [rows[i] for i in sorted(rows) if rows[i]["status"] == "ok"]
    written = []
    for m in spec.metrics:
        y = np.array([r[m] for r in done], dtype=float)
        if not np.isfinite(y).any():
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.hist(y[np.isfinite(y)], bins=min(30, max(5, len(y) // 5)), color="tab:blue", alpha=0.8)
        for key, value in spec.criteria.get(m, {}).items():
            ax.axvline(value, color="tab:red", linestyle="--", label=f"criterion {key} {value:g}")
        if m in spec.criteria:
            ax.legend()
        ax.set_xlabel(m)
        ax.set_ylabel("runs")
        ax.set_title(f"{m} over {len(y)} runs")
        path = folder / f"{m}_hist.png"
        fig.savefig(path, dpi=90, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
        driver = strongest_driver(spec, done, m)
        if driver is None:
            continue
        column, rho = driver
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.scatter([r[column] for r in done], y, s=10)
        ax.set_xlabel(column)
        ax.set_ylabel(m)
        ax.set_title(f"{m} vs {column} (Spearman {rho:+.2f})")
        name = column.replace("[", "_").replace("]", "").replace(".", "_")
        path = folder / f"{m}_vs_{name}.png"
        fig.savefig(path, dpi=90, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def worst_runs(spec: CampaignSpec, rows: dict[int, dict], count: int) -> list[int]:
    """The ``count`` worst completed runs: failing ones first, then by how close (or past) their
    criteria limits they are (largest of metric / max and min / metric); without criteria, by
    rms_tracking_error."""
    def badness(row):
        if not spec.criteria:
            return (0, row.get("rms_tracking_error") or 0.0)
        worst = -math.inf
        for m, limits in spec.criteria.items():
            x = row[m]
            if x is None or math.isnan(x):
                return (1, math.inf)
            if "max" in limits:
                worst = max(worst, x / limits["max"] if limits["max"] else x)
            if "min" in limits:
                worst = max(worst, limits["min"] / x if x else math.inf)
        return (0 if row["passed"] else 1, worst)

    done = [r for r in rows.values() if r["status"] == "ok"]
    done.sort(key=lambda r: (badness(r), -r["run"]), reverse=True)
    return [r["run"] for r in done[:count]]


def write_worst(spec: CampaignSpec, rows: dict[int, dict], out: Path, plots: bool = True,
                replay: bool = False) -> list[Path]:
    """Re-fly the worst runs in this process and write their full outputs to worst/run_NNNNN/
    (with ``replay``, replay.html too: the caller checks that the viewer is installed)."""
    from freeflyer_control.sim.writers import write_outputs

    from .worker import simulate

    folders = []
    for run in worst_runs(spec, rows, spec.worst):
        folder = out / "worst" / f"run_{run:05d}"
        result = simulate(spec, run)
        write_outputs(result, folder, replay=replay)
        if plots:
            from freeflyer_control.sim.plots import write_plots as sim_plots

            sim_plots(result, folder)
        folders.append(folder)
    return folders


def write_summary(spec: CampaignSpec, rows: dict[int, dict], out: Path) -> dict:
    summary = summarize(spec, rows)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
