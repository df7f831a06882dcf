"""The campaign folder's journal: one JSON line per finished run, appended as results arrive.

It makes a campaign resumable: a re-run reads which runs are recorded and flies only the others.
The folder also holds the spec (``spec.yaml``) and the campaign's identity (``campaign.json``:
the spec's digest and the sha256 of every file the runs read, robot config, URDF, testbed
config), written with the first row. A folder holding another spec's campaign, or this spec's
flown with files that have changed since, is refused naming what differs, so results of two
specs or two robots never mix. One campaign at a time writes in a folder (a lock held while it
runs: two on one ``--out`` would both fly every run).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from pathlib import Path

import yaml

from freeflyer_control.inputs.values import shown, shown_path

JOURNAL = "journal.jsonl"
META = "campaign.json"
LOCK = ".campaign.lock"
# What a campaign writes in its folder (report.py: tables, summary, plots/, worst/).
CAMPAIGN_FILES = (META, "spec.yaml", JOURNAL, "runs.csv", "runs.parquet", "summary.json")
CAMPAIGN_FOLDERS = ("plots", "worst")


class CampaignFolderError(ValueError):
    """The folder cannot take this campaign; the message names it, why, and the fix."""


def read_meta(out: Path) -> dict | None:
    """The folder's ``campaign.json`` (None without one); refused when it is not a campaign's."""
    meta = Path(out) / META
    if not meta.exists():
        return None
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        data = exc
    if not isinstance(data, dict) or not isinstance(data.get("spec_sha256"), str):
        raise CampaignFolderError(f"{meta} is not a campaign's record ({shown(data)}); it was edited or "
                                  "belongs to something else: give another --out, or add --overwrite to start over")
    return data


def identity_problem(out: Path, meta: dict, spec) -> str | None:
    """Why the campaign recorded in ``out`` (its ``meta``) is not ``spec`` flown on the same
    files (None: it is, and may be resumed)."""
    recorded = meta.get("spec_sha256")
    if recorded != spec.digest():
        return (f"{out} holds a campaign of another spec (sha256 {str(recorded)[:12]}, see its spec.yaml), not of "
                f"{spec.source} ({spec.digest()[:12]})")
    files = meta.get("files")
    if not isinstance(files, dict):
        return None  # a campaign from before the files were recorded: nothing to compare
    for path in sorted(set(files) | set(spec.files)):
        before, now = files.get(path), spec.files.get(path)
        if before != now:
            what = "is no longer read" if now is None else "was not read before" if before is None else \
                f"has changed since the campaign began (sha256 {str(before)[:12]} -> {now[:12]})"
            return (f"{out} holds runs of this spec flown with other files: {shown_path(path)} {what}; its runs "
                    "would mix with those flown before")
    return None


def earlier_outputs(out: Path) -> list[str]:
    """The names in ``out`` a campaign (or a ``freeflyer sim`` run) would write over."""
    from freeflyer_control.sim.output import OUTPUT_FILES
    from freeflyer_control.sim.plots import PLOT_FILES

    names = [n for n in dict.fromkeys(CAMPAIGN_FILES + OUTPUT_FILES + PLOT_FILES) if (out / n).is_file()]
    return names + [f"{n}/" for n in CAMPAIGN_FOLDERS if (out / n).is_dir()]


def folder_problem(out: Path, spec, overwrite: bool) -> str | None:
    """Why ``out`` cannot take ``spec``'s campaign (None: it is new, empty, this campaign's to
    resume, or ``overwrite`` lets its outputs be replaced). Creates nothing."""
    out = Path(out)
    if not out.is_dir() or overwrite:
        return None
    meta = read_meta(out)
    if meta is not None:
        problem = identity_problem(out, meta, spec)
        return f"{problem}: give another --out, or add --overwrite to start over" if problem else None
    found = earlier_outputs(out)
    if found:
        listed = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        return (f"--out {out} holds outputs that are not this campaign's ({listed}): add --overwrite to replace "
                "them, or give another folder")
    return None


def remove_outputs(out: Path) -> None:
    """Delete what :func:`earlier_outputs` lists (``--overwrite``); other files stay."""
    for name in earlier_outputs(out):
        target = out / name.rstrip("/")
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()


class Journal:
    """Append-only record of the rows of ``spec`` in ``out`` (created if missing), holding the
    folder's lock until :meth:`close`; ``overwrite``: the outputs already there are removed first
    (:func:`remove_outputs`), once the lock is held.

    Raises:
        CampaignFolderError: another campaign runs in ``out``; ``out`` holds another campaign
            (another spec, or changed files); a journal line that is not a run's record.
    """

    def __init__(self, out: Path, spec, *, overwrite: bool = False):
        self.out = Path(out)
        self.path = self.out / JOURNAL
        self.spec = spec
        self.out.mkdir(parents=True, exist_ok=True)
        self._lock = _lock(self.out)
        try:
            if overwrite:  # under the lock: never another running campaign's files
                remove_outputs(self.out)
            meta = read_meta(self.out)
            problem = identity_problem(self.out, meta, spec) if meta is not None else None
            if problem:
                raise CampaignFolderError(f"{problem}; give another --out")
            self._identified = meta is not None and isinstance(meta.get("files"), dict)
            self.rows: dict[int, dict] = self._read_rows()
        except BaseException:
            self._unlock()
            raise
        self._file = None

    def _read_rows(self) -> dict[int, dict]:
        rows: dict[int, dict] = {}
        if not self.path.exists():
            return rows
        with open(self.path, "rb") as f:
            for number, raw in enumerate(f, 1):
                try:
                    row = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError):  # a line cut by a crash: flown again
                    continue
                run = row.get("run") if isinstance(row, dict) else None
                if isinstance(run, bool) or not isinstance(run, int) or not 0 <= run < self.spec.runs:
                    raise CampaignFolderError(
                        f"{self.path}, line {number}: not a run's record ({shown(raw.decode('utf-8', 'replace'))}); "
                        "the journal was edited or belongs to another campaign: remove the line, or give another --out")
                rows.setdefault(run, row)
        return rows

    def _identify(self) -> None:
        """Write the spec and the campaign's identity: with the first row, so that a campaign
        that never flew (a refused scheduler) leaves nothing that would refuse another spec."""
        (self.out / "spec.yaml").write_text(yaml.safe_dump(self.spec.given or self.spec.raw, sort_keys=False))
        meta = {"spec_sha256": self.spec.digest(), "source": self.spec.source, "files": self.spec.files}
        (self.out / META).write_text(json.dumps(meta, indent=2) + "\n")
        self._identified = True

    def record(self, rows: list[dict]) -> int:
        """Append the rows of runs not yet recorded (a redone run is never counted twice);
        returns how many were new. Flushed to disk before returning."""
        new = [r for r in rows if int(r["run"]) not in self.rows]
        if not new:
            return 0
        if not self._identified:
            self._identify()
        if self._file is None:
            self._file = open(self.path, "a", encoding="utf-8")
            if self._file.tell() and not self.path.read_bytes().endswith(b"\n"):
                self._file.write("\n")  # after a cut line, start a fresh one
        for row in new:
            self.rows[int(row["run"])] = row
            self._file.write(json.dumps(row, default=_plain) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        return len(new)

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            finally:
                self._file = None
        self._unlock()

    def _unlock(self) -> None:
        if self._lock is not None:
            self._lock.close()  # closing the descriptor releases the lock
            self._lock = None


def _lock(out: Path):
    """The folder's lock (an open file holding an exclusive flock), or CampaignFolderError when
    another process holds it."""
    handle = open(out / LOCK, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise CampaignFolderError(f"another campaign is running in {out} (process {shown(holder, 20)}): wait for "
                                  "it to end, or give another --out") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def _plain(value):
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"cannot record {type(value).__name__} in the journal")
