"""The ``freeflyer`` console script: Ctrl-C while the command loads ends as Ctrl-C during a run.

Loading the command line takes about a second (NumPy, SciPy, Pinocchio); a Ctrl-C then would
otherwise print the interpreter's traceback of whatever import it landed in. This module imports
nothing heavy, so the only window left is the interpreter's own start.
"""

from __future__ import annotations

import sys
from typing import Sequence

from freeflyer_control.cli.options import EXIT_INTERRUPTED


def main(argv: Sequence[str] | None = None) -> int:
    try:
        from freeflyer_control.cli.main import main as run
    except KeyboardInterrupt:
        print("freeflyer: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
