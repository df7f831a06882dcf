"""``report.html``: a campaign's results on one self-contained page that opens from disk.

The pass rate with its 95 % Wilson interval and the criteria, the metrics' percentiles, the
plots :func:`freeflyer_control.campaign.report.write_plots` drew (embedded as data URIs, so the
page loads nothing), and the worst runs, each linked to its folder and its replay
(``worst/run_NNNNN/replay.html``, relative links: the results folder can be moved whole).
Written from what the campaign wrote (summary, rows, plots, worst folders); nothing is flown again.
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path

from .spec import CampaignSpec

REPORT_HTML = "report.html"

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1100px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; } td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f2f2f2; } td.left, th.left { text-align: left; }
.rate { font-size: 20px; font-weight: 600; } .pass { color: #176f2c; } .fail { color: #a31515; }
figure { display: inline-block; margin: 6px; } figcaption { font-size: 12px; color: #555; }
img { max-width: 520px; border: 1px solid #ddd; }
"""


def _number(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "&ndash;"
    if isinstance(value, float):
        return f"{value:.4g}"
    return html.escape(str(value))


def _image(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(path.name)}</figcaption></figure>")


def _criteria(spec: CampaignSpec) -> str:
    parts = []
    for metric, limits in spec.criteria.items():
        for key, value in limits.items():
            parts.append(f"{metric} {'&le;' if key == 'max' else '&ge;'} {value:g}")
    return ", ".join(parts) or "none (every completed run passes)"


def render(spec: CampaignSpec, rows: dict[int, dict], summary: dict, out: Path, worst: list[int],
           plots: list[Path]) -> str:
    """The page (see the module docstring)."""
    rate, (lo, hi) = summary["pass_rate"], summary["pass_rate_ci95"]
    judged = summary["runs_completed"] + summary["runs_failed"]
    what = ", ".join(f"{k} {spec.raw[k]}" for k in ("robot", "maneuver", "mode", "controller", "via_testbed")
                     if spec.raw.get(k) is not None)
    rate_text = ("no run judged yet" if rate is None else
                 f"{rate:.1%} passed ({summary['runs_passed']} of {judged}); 95 % Wilson interval "
                 f"{lo:.1%} .. {hi:.1%}")
    body = [f"<h1>Campaign: {html.escape(what)}</h1>",
            f"<p>{summary['runs_total']} runs (seed {spec.seed}): {summary['runs_completed']} completed, "
            f"{summary['runs_failed']} failed (raised), {summary['runs_missing']} missing. "
            f"Spec sha256 <code>{summary['spec_sha256'][:16]}</code>.</p>",
            f'<p class="rate">{rate_text}</p>',
            f"<p>Criteria: {_criteria(spec)}. A run that raised counts as not passing. The Wilson score "
            "interval stays inside [0, 1] and holds for few runs and rates near 0 or 1.</p>"]

    body.append("<h2>Metrics over the completed runs</h2><table><tr><th class=left>metric</th>"
                "<th>p5</th><th>p50</th><th>p95</th><th>max</th></tr>")
    for metric, p in summary["metrics"].items():
        cells = "".join(f"<td>{_number(p[k]) if p else '&ndash;'}</td>" for k in ("p5", "p50", "p95", "max"))
        body.append(f"<tr><td class=left>{html.escape(metric)}</td>{cells}</tr>")
    body.append("</table>")

    body.append("<h2>Worst runs</h2>")
    if worst:
        shown = list(spec.criteria) or ["rms_tracking_error"]
        body.append("<table><tr><th>run</th><th class=left>verdict</th>"
                    + "".join(f"<th>{html.escape(m)}</th>" for m in shown)
                    + "<th class=left>replay</th><th class=left>folder</th></tr>")
        for run in worst:
            row = rows[run]
            folder = f"worst/run_{run:05d}"
            replay = out / folder / "replay.html"
            link = (f'<a href="{folder}/replay.html">replay.html</a>' if replay.is_file()
                    else "none (install the 'replay' extra)")
            verdict = '<span class="pass">passed</span>' if row.get("passed") else '<span class="fail">failed</span>'
            body.append(f"<tr><td>{run}</td><td class=left>{verdict}</td>"
                        + "".join(f"<td>{_number(row.get(m))}</td>" for m in shown)
                        + f'<td class=left>{link}</td><td class=left><a href="{folder}/">{folder}/</a></td></tr>')
        body.append("</table><p>Each worst run was flown again alone; its folder holds what "
                    "<code>freeflyer sim</code> writes (time series, summary, plots, MCAP, replay).</p>")
    else:
        body.append("<p>No worst runs were kept (<code>worst: 0</code>, or no run completed).</p>")

    body.append("<h2>Histograms and influences</h2>")
    body.append("".join(_image(p) for p in plots) if plots else
                "<p>No plots (<code>--no-plots</code>, or matplotlib is not installed).</p>")
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>Campaign report</title>"
            f"<style>{_STYLE}</style></head><body>{''.join(body)}</body></html>\n")


def write_report(spec: CampaignSpec, rows: dict[int, dict], summary: dict, out: Path, worst: list[int],
                 plots: list[Path]) -> Path:
    """``out/report.html``; ``worst``: the worst runs' indices (their folders under ``out/worst``);
    ``plots``: the PNG files to embed."""
    path = Path(out) / REPORT_HTML
    path.write_text(render(spec, rows, summary, Path(out), worst, [p for p in plots if p.suffix == ".png"]),
                    encoding="utf-8")
    return path
