"""``freeflyer campaign``: a Monte-Carlo campaign of dispersed closed-loop runs (see docs/campaigns.md)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from freeflyer_control.inputs.values import UsageError, Whole


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("campaign", help="Monte-Carlo campaign: many dispersed runs, statistics, plots")
    p.add_argument("spec", metavar="SPEC.yaml", help="campaign spec (see docs/campaigns.md)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="results folder; re-running with the same DIR continues an interrupted campaign")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=WORKERS, metavar="N", help="local worker processes (default: the CPU count)")
    where.add_argument("--scheduler", metavar="tcp://HOST:8786", help="a running Dask scheduler to send the runs to")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots and the worst runs' plots")
    p.add_argument("--no-replay", action="store_true", help="skip the worst runs' replay.html")
    p.set_defaults(run=run, validate=validate)


WORKERS = Whole(1, 4096, what="worker processes")


def validate(args: argparse.Namespace) -> None:
    """The spec is read and checked in full (nothing runs), the scheduler address's form, and
    that the engine is installed."""
    import importlib.util

    from freeflyer_control.campaign.spec import load_spec

    if importlib.util.find_spec("distributed") is None:
        raise UsageError("campaigns run on Dask distributed, which is not installed: "
                         "pip install 'freeflyer_control[campaign]'")
    if args.scheduler is not None and "://" not in args.scheduler:
        raise UsageError(f"--scheduler {args.scheduler!r}: give the address as tcp://HOST:PORT (the scheduler "
                         "prints it at start, port 8786 by default)")
    args.campaign_spec = load_spec(args.spec)


def replay_command(spec_path: str, run: int, out: str) -> str:
    """The ``freeflyer sim`` command that flies run ``run`` alone (same summary as in the campaign)."""
    return shlex.join(["freeflyer", "sim", "--campaign", spec_path, "--run", str(run), "--out", out])


def run(args: argparse.Namespace) -> int:
    from freeflyer_control.campaign import report
    from freeflyer_control.campaign.engine import CampaignProgress, run_campaign
    from freeflyer_control.campaign.report_html import write_report
    from freeflyer_control.cli.common import replay_wanted
    from freeflyer_control.campaign.journal import Journal

    spec = args.campaign_spec
    out = Path(args.out)
    replay = replay_wanted(args, "campaign") if spec.worst else False
    journal = Journal(out, spec)
    before = len(journal.rows)
    if before:
        print(f"resuming: {before} of {spec.runs} runs already in {out}/")
    try:
        outcome = run_campaign(spec, journal, scheduler=args.scheduler, workers=args.workers,
                               progress=CampaignProgress())
    except KeyboardInterrupt:
        journal.close()
        print(f"\ninterrupted: {len(journal.rows)} of {spec.runs} runs are recorded in {out}/; "
              "run the same command to continue")
        return 130
    journal.close()
    rows = journal.rows
    files = report.write_tables(spec, rows, out)
    summary = report.write_summary(spec, rows, out)
    files.append(out / "summary.json")
    plots = [] if args.no_plots else report.write_plots(spec, rows, out)
    files += plots
    worst = report.write_worst(spec, rows, out, plots=not args.no_plots, replay=replay)
    files.append(write_report(spec, rows, summary, out, report.worst_runs(spec, rows, spec.worst), plots))
    rate = summary["pass_rate"]
    lo, hi = summary["pass_rate_ci95"]
    print(f"{spec.runs} runs: {summary['runs_completed']} completed, {summary['runs_failed']} failed, "
          f"{summary['runs_missing']} missing")
    if rate is not None:
        print(f"  pass rate {rate:.1%} (95 % CI {lo:.1%} .. {hi:.1%}) on "
              f"{', '.join(spec.criteria) or 'no criteria'}")
    if outcome.flown:
        per_run = outcome.compute_s / outcome.flown
        overhead = max(0.0, outcome.wall_s * outcome.workers - outcome.compute_s) / outcome.flown
        print(f"  flew {outcome.flown} runs on {outcome.workers} workers in {outcome.wall_s:.1f} s "
              f"({outcome.tasks} tasks; {per_run:.3g} s per run, overhead {overhead:.3g} s per run)")
    if outcome.lost:
        print(f"  {len(outcome.lost)} runs were lost with their workers; run the same command to fly them")
    for run_id in report.worst_runs(spec, rows, spec.worst)[:1]:
        print(f"  worst run {run_id}, flown alone: {replay_command(args.spec, run_id, f'run_{run_id}')}")
    print(f"  any run I alone: {replay_command(args.spec, 0, 'run_I').replace(' 0 ', ' I ')}")
    print(f"  report: {(out / 'report.html').resolve()}")
    print(f"wrote {len(files)} files and {len(worst)} worst-run folders to {out.resolve()}/")
    return 0 if not outcome.lost else 1
