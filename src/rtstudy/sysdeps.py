"""Debian packages the study needs besides Python: installed when we may, explained when we may not.

``make setup`` runs this. It installs ``rt-tests`` (cyclictest), ``stress-ng``,
``linux-perf``, ``chromium`` and ``openssh-server`` with apt when running as root; otherwise it
only says what needs them and how to install them. It never fails the setup,
and it never starts a service: where the host has no ``policy-rc.d`` (the
Debian hook that vetoes service starts during installs), one is put in place
for the install and removed after, so installing ``openssh-server`` does not
leave an SSH daemon listening.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

# tool on PATH -> (Debian package, what needs it)
PACKAGES = {
    "cyclictest": ("rt-tests", "the platform latency floor of E2 and E4"),
    "stress-ng": ("stress-ng", "the loaded platform floor of E4 (cyclictest under stress-ng)"),
    "chromium": ("chromium", "the report's browser check in `make test` (headless screenshot)"),
    "sshd": ("openssh-server", "the DVC network-remote round trip in `make test` (sshd on 127.0.0.1)"),
    "perf": ("linux-perf", "E2's kernel scheduler trace (the attribution of a frame's delay)"),
}
POLICY_RC_D = Path("/usr/sbin/policy-rc.d")


def which(tool: str) -> str | None:
    """``tool`` on PATH, or in the sbin folders a non-root PATH may lack."""
    return shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")


def missing() -> dict[str, str]:
    """Debian packages whose tool is not installed, with what needs them."""
    return {pkg: why for tool, (pkg, why) in PACKAGES.items() if which(tool) is None}


@contextlib.contextmanager
def no_service_starts():
    """Veto service starts while packages install, unless the host already does."""
    if POLICY_RC_D.exists():
        yield
        return
    POLICY_RC_D.write_text("#!/bin/sh\n# rtstudy sysdeps: no service starts during its install\nexit 101\n")
    POLICY_RC_D.chmod(0o755)
    try:
        yield
    finally:
        POLICY_RC_D.unlink(missing_ok=True)


def main() -> int:
    need = missing()
    if not need:
        return 0
    can_apt = os.geteuid() == 0 and shutil.which("apt-get") is not None
    if can_apt:
        print(f"Installing {' '.join(need)} with apt-get ...", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        with no_service_starts():
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
