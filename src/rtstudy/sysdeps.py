"""Debian packages some experiments need: installed when we may, explained when we may not.

``make setup`` runs this. It installs ``rt-tests`` (cyclictest) and
``stress-ng`` with apt when running as root; otherwise it only says which
experiments need them and how to install them. It never fails the setup.
"""
from __future__ import annotations

import os
import shutil
import subprocess

PACKAGES = {"cyclictest": "rt-tests", "stress-ng": "stress-ng"}
NEEDED_BY = "the platform latency floor of E2 and E4 (cyclictest under stress-ng load)"


def missing() -> list[str]:
    return sorted({pkg for tool, pkg in PACKAGES.items() if shutil.which(tool) is None})


def main() -> int:
    need = missing()
    if not need:
        return 0
    can_apt = os.geteuid() == 0 and shutil.which("apt-get") is not None
    if can_apt:
        print(f"Installing {' '.join(need)} with apt-get (needed by {NEEDED_BY}) ...", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        ok = subprocess.run(["apt-get", "update", "-qq"], env=env).returncode == 0 and \
            subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *need],
                           env=env).returncode == 0
        if ok and not missing():
            return 0
        print("apt-get could not install them; see its messages above.")
    print(f"NOTE: {' '.join(need)} not installed. E3 runs without them; {NEEDED_BY} needs them:\n"
          f"      sudo apt-get install {' '.join(need)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
