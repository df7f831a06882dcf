"""The campaign folder's journal: one JSON line per finished run, appended as results arrive.

It makes a campaign resumable: a re-run reads which runs are recorded and flies only the others.
The folder also holds the spec (``spec.yaml``) and its digest (``campaign.json``); a folder
holding another spec's campaign is refused, so results of two specs never mix.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

JOURNAL = "journal.jsonl"


class Journal:
    """Append-only record of the rows of ``spec`` in ``out`` (created if missing)."""

    def __init__(self, out: Path, spec):
        self.out = Path(out)
        self.path = self.out / JOURNAL
        self.out.mkdir(parents=True, exist_ok=True)
        meta = self.out / "campaign.json"
        if meta.exists():
            recorded = json.loads(meta.read_text()).get("spec_sha256")
            if recorded != spec.digest():
                raise ValueError(f"{self.out} holds a campaign of another spec (sha256 {str(recorded)[:12]}, see its "
                                 f"spec.yaml), not of {spec.source} ({spec.digest()[:12]}); give another --out")
        else:
            (self.out / "spec.yaml").write_text(yaml.safe_dump(spec.raw, sort_keys=False))
            meta.write_text(json.dumps({"spec_sha256": spec.digest(), "source": spec.source}, indent=2) + "\n")
        self.rows: dict[int, dict] = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:  # a line cut by a crash mid-write: that run is flown again
                    continue
                self.rows.setdefault(int(row["run"]), row)
        self._file = None

    def record(self, rows: list[dict]) -> int:
        """Append the rows of runs not yet recorded (a redone run is never counted twice);
        returns how many were new. Flushed to disk before returning."""
        new = [r for r in rows if int(r["run"]) not in self.rows]
        if not new:
            return 0
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
            self._file.close()
            self._file = None


def _plain(value):
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"cannot record {type(value).__name__} in the journal")
