"""The output folder of ``freeflyer sim --out``: checked and made ready before any simulating.

A folder that cannot be made or written to is refused up front (it used to fail with a
traceback after the whole run). A folder holding the outputs of an earlier run is refused
unless ``--overwrite`` is given, and then exactly those outputs are removed first, so that no
file of the earlier run (a plot this run does not draw, a ``run.mcap`` this install cannot
write) can pass as this run's. Refusing, rather than clearing silently, because an earlier
run's results may be the only copy of a long run; the refusal costs nothing, coming before
any work. Other files in the folder are left alone.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from freeflyer_control.errors import FreeFlyerError
from freeflyer_control.sim.output import OUTPUT_FILES
from freeflyer_control.sim.plots import PLOT_FILES
from freeflyer_control.sim.replay import REPLAY_HTML
from freeflyer_control.sim.run_record import RUN_JSON

RUN_FILES = OUTPUT_FILES + PLOT_FILES + (RUN_JSON, REPLAY_HTML)


class OutputFolderError(FreeFlyerError):
    """``--out`` cannot take this run's outputs; the message names it and the fix."""


def earlier_outputs(out: Path) -> list[str]:
    """Names of the files of a run (``RUN_FILES``, in that order) present in ``out``."""
    return [name for name in RUN_FILES if (out / name).is_file()]


def prepare_output_folder(text: str, *, overwrite: bool) -> Path:
    """The folder ``--out text``, created if missing, writable, holding no earlier run's
    outputs (removed with ``overwrite``; else refused).

    Raises:
        OutputFolderError: it is empty, a file, lies under a file, cannot be created or written to,
            or holds an earlier run's outputs and ``overwrite`` is False.
    """
    if not text:  # an unset shell variable (--out "$DIR"), which Path would take as "."
        raise OutputFolderError("--out is empty: give a folder (it is created if missing)")
    out = Path(text)
    if out.exists() and not out.is_dir():
        raise OutputFolderError(f"--out {text} is a file, not a folder: give a folder (it is created if missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        parent = next((p for p in out.parents if p.exists() and not p.is_dir()), out.parent)
        raise OutputFolderError(f"--out {text} lies under {parent}, which is a file, not a folder: "
                                f"give a folder elsewhere") from None
    except OSError as exc:
        raise OutputFolderError(f"--out {text}: cannot create the folder ({exc.strerror}): "
                                f"give a folder you can write to") from None
    found = earlier_outputs(out)
    if found and not overwrite:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise OutputFolderError(f"--out {text} holds the outputs of an earlier run ({shown}): "
                                f"add --overwrite to replace them, or give another folder")
    try:
        for name in found:
            (out / name).unlink()
        # Creating a file is the only test of writing that holds for every user and file system.
        with tempfile.TemporaryFile(dir=out, prefix=".freeflyer-"):
            pass
    except OSError as exc:
        raise OutputFolderError(f"--out {text}: cannot write in the folder ({exc.strerror}): "
                                f"give a folder you can write to") from None
    return out
