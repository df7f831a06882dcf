"""Where the package's data (urdf/, config/) lives, installed or in a source checkout.

Looked up in this order: the ament index (a colcon / ROS install), ``<prefix>/share`` of the
running Python (a pip install puts ``data_files`` there), then the source tree beside this
package (an editable install or a plain checkout).
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

PACKAGE = "freeflyer_control"


def _candidates() -> list[Path]:
    found = []
    try:  # ROS installs; ament_index_python is pure Python but only present with ROS
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        try:
            found.append(Path(get_package_share_directory(PACKAGE)))
        except PackageNotFoundError:
            pass
    except ImportError:
        pass
    found.append(Path(sys.prefix) / "share" / PACKAGE)
    found.append(Path(__file__).resolve().parent.parent)
    return found


@lru_cache(maxsize=None)
def share_dir() -> Path:
    """The folder that holds ``urdf/`` and ``config/`` (raises if none does)."""
    for path in _candidates():
        if (path / "urdf").is_dir() and (path / "config" / "robots").is_dir():
            return path
    raise FileNotFoundError(
        f"cannot find the {PACKAGE} data folders (urdf/, config/robots/); looked in: "
        + ", ".join(str(p) for p in _candidates())
    )
