"""``replay.html``: a finished run in 3-D, in any browser, from its own records (docs/replay.md).

Output code of ``sim`` (and, through it, of ``campaign``): it reads a run folder
(:mod:`freeflyer_control.sim.run_record`), computes what to draw (:mod:`.scene`) and writes one
self-contained page (:mod:`.page`). The viewer it inlines comes from the optional ``meshcat``
package (the ``replay`` extra); nothing here is imported by the nodes.
"""

from __future__ import annotations

from pathlib import Path

REPLAY_HTML = "replay.html"


def replay_missing() -> str | None:
    """Why no replay can be written (one line with the fix), or None when it can."""
    from .page import viewer_missing

    return viewer_missing()


def write_replay(run_dir, out=None) -> Path:
    """Write the replay of the run in ``run_dir`` to ``out`` (default ``run_dir/replay.html``).

    Raises:
        RunRecordError: the folder holds no readable run.
        FileNotFoundError: the viewer (meshcat) is not installed.
    """
    from freeflyer_control.sim.run_record import read_run

    from .page import render
    from .scene import build_scene

    missing = replay_missing()
    if missing:
        raise FileNotFoundError(missing)
    records = read_run(run_dir)
    path = Path(out) if out is not None else Path(run_dir) / REPLAY_HTML
    tmp = path.with_name(path.name + ".part")
    try:
        tmp.write_text(render(build_scene(records)), encoding="utf-8")
        tmp.replace(path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path
