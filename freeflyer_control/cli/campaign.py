"""``freeflyer campaign``: a Monte-Carlo campaign of dispersed closed-loop runs (see docs/campaigns.md).

Everything that can be refused is refused before a worker starts: the spec (and every file it
names), the scheduler address's form, the output folder (a file, a path under a file, an
unwritable place, a folder holding outputs that are not this campaign's), a missing Dask or
matplotlib. While it runs, Ctrl-C and SIGTERM end it with one line (its rows are on disk; the
same command continues it), and so does a full disk.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
from pathlib import Path

from freeflyer_control.cli.options import EXIT_INTERRUPTED, EXIT_WRITE_FAILED, WRITE_ERRORS, warn
from freeflyer_control.inputs.values import UsageError, Whole

EXIT_TERMINATED = 128 + signal.SIGTERM


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("campaign", help="Monte-Carlo campaign: many dispersed runs, statistics, plots")
    p.add_argument("spec", metavar="SPEC.yaml", help="campaign spec (see docs/campaigns.md)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="results folder; re-running with the same DIR continues an interrupted campaign")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the outputs already in --out (another campaign's, a freeflyer sim run's, or "
                        "this campaign's own: it starts over); refused without it")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=WORKERS, metavar="N",
                       help="local worker processes (default: the CPU count; at most one per run left and as "
                            "many as the memory holds, about 300 MB each)")
    where.add_argument("--scheduler", metavar="tcp://HOST:8786", help="a running Dask scheduler to send the runs to")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots and the worst runs' plots")
    p.add_argument("--no-replay", action="store_true", help="skip the worst runs' replay.html")
    p.set_defaults(run=run, validate=validate)


WORKERS = Whole(1, 4096, what="worker processes")
MATPLOTLIB_MISSING = ("matplotlib is not installed, so no plots will be written (the tables, the summary and "
                      "the worst runs are): pip install matplotlib, or install this package with its 'pypi' "
                      "extra; --no-plots skips the plots without this warning")


def validate(args: argparse.Namespace) -> None:
    """The spec is read and checked in full (nothing runs), the scheduler address's form, the
    output folder, and that the engine (and, for plots, matplotlib) is installed."""
    import importlib.util

    from freeflyer_control.campaign.engine import scheduler_address
    from freeflyer_control.campaign.journal import folder_problem
    from freeflyer_control.campaign.spec import load_spec
    from freeflyer_control.cli.outdir import output_path_problem
    from freeflyer_control.sim.plots import matplotlib_missing

    if importlib.util.find_spec("distributed") is None:
        raise UsageError("campaigns run on Dask distributed, which is not installed: "
                         "pip install 'freeflyer_control[campaign]'")
    if args.scheduler is not None:
        scheduler_address(args.scheduler)
    problem = output_path_problem(args.out)
    if problem:
        raise UsageError(problem)
    args.campaign_spec = load_spec(args.spec)
    problem = folder_problem(Path(args.out), args.campaign_spec, args.overwrite)
    if problem:
        raise UsageError(problem)
    if not args.no_plots and matplotlib_missing() is not None:
        warn("campaign", MATPLOTLIB_MISSING)
        args.no_plots = True


def replay_command(spec_path: str, run: int, out: str) -> str:
    """The ``freeflyer sim`` command that flies run ``run`` alone (same summary as in the campaign)."""
    return shlex.join(["freeflyer", "sim", "--campaign", spec_path, "--run", str(run), "--out", out])


class Terminated(BaseException):
    """SIGTERM arrived: end the campaign as Ctrl-C does (a BaseException, as KeyboardInterrupt
    is: no ``except Exception`` on the way may take it for a failed task)."""


def _raise_terminated(signum, frame):
    raise Terminated()


def run(args: argparse.Namespace) -> int:
    from freeflyer_control.campaign.journal import Journal

    spec = args.campaign_spec
    out = Path(args.out)
    journal = Journal(out, spec, overwrite=args.overwrite)
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        return _fly_and_report(args, spec, out, journal)
    except (KeyboardInterrupt, Terminated) as exc:
        journal.close()
        why, code = ("interrupted", EXIT_INTERRUPTED) if isinstance(exc, KeyboardInterrupt) else \
            ("terminated", EXIT_TERMINATED)
        print(f"\n{why}: {len(journal.rows)} of {spec.runs} runs are recorded in {out}/; "
              "run the same command to continue")
        return code
    except OSError as exc:
        if exc.errno not in WRITE_ERRORS:
            raise
        journal.close()
        where = f" {exc.filename}" if exc.filename else f" in {out}"
        print(f"freeflyer campaign: error: cannot write{where}: {exc.strerror}; {len(journal.rows)} of "
              f"{spec.runs} runs are recorded in {out}/{_JOURNAL_NOTE}: free some space and run the same command "
              "to continue", file=sys.stderr)
        return EXIT_WRITE_FAILED
    finally:
        journal.close()
        signal.signal(signal.SIGTERM, previous)


_JOURNAL_NOTE = " (the journal is written and flushed a row at a time)"


def _fly_and_report(args, spec, out: Path, journal) -> int:
    from freeflyer_control.campaign import report
    from freeflyer_control.campaign.engine import CampaignProgress, run_campaign
    from freeflyer_control.campaign.report_html import write_report
    from freeflyer_control.cli.common import replay_wanted

    replay = replay_wanted(args, "campaign") if spec.worst else False
    before = len(journal.rows)
    if before:
        print(f"resuming: {before} of {spec.runs} runs already in {out}/")
    outcome = run_campaign(spec, journal, scheduler=args.scheduler, workers=args.workers,
                           progress=CampaignProgress())
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
