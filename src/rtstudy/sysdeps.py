"""Debian packages the study needs besides Python: installed when we may, explained when we may not.

``make setup`` runs this. It installs ``rt-tests`` (cyclictest), ``stress-ng``
and ``chromium`` with apt when running as root; otherwise it only says what
needs them and how to install them. It never fails the setup.
"""
from __future__ import annotations

import os
import shutil
import subprocess

# tool on PATH -> (Debian package, what needs it)
PACKAGES = {
    "cyclictest": ("rt-tests", "the platform latency floor of E2 and E4"),
    "stress-ng": ("stress-ng", "the loaded platform floor of E4 (cyclictest under stress-ng)"),
    "chromium": ("chromium", "the report's browser check in `make test` (headless screenshot)"),
}


def missing() -> dict[str, str]:
    """Debian packages whose tool is not on PATH, with what needs them."""
    return {pkg: why for tool, (pkg, why) in PACKAGES.items() if shutil.which(tool) is None}


def main() -> int:
    need = missing()
    if not need:
        return 0
    can_apt = os.geteuid() == 0 and shutil.which("apt-get") is not None
    if can_apt:
        print(f"Installing {' '.join(need)} with apt-get ...", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        ok = subprocess.run(["apt-get", "update", "-qq"], env=env).returncode == 0 and \
            subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *need],
                           env=env, stdout=subprocess.DEVNULL).returncode == 0
        need = missing()
        if ok and not need:
            return 0
        print("apt-get could not install everything; see its messages above.")
    for pkg, why in need.items():
        print(f"NOTE: {pkg} is not installed; {why} needs it: sudo apt-get install {pkg}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
