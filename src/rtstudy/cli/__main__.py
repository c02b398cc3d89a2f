"""``python -m rtstudy.cli``: the ``rtstudy`` command, run by module name."""
from __future__ import annotations

from rtstudy.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
