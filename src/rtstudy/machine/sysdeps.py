"""System tools the study needs besides Python, by distribution: installed when we may, explained
when we may not.

``make study`` runs ``python -m rtstudy.machine.sysdeps --for study`` (cyclictest, stress-ng, perf:
the measurements use them; debootstrap: the Debian 13 root of Holoscan 5.0); ``make test`` runs
``--for test``, which adds chromium and sshd (only tests use them). The distribution comes from
os-release's ``ID`` and ``ID_LIKE`` (:func:`platform.freedesktop_os_release`): Debian, Ubuntu,
or the RHEL family (RHEL, CentOS, Rocky, AlmaLinux, Fedora). As root it installs each missing
tool's packages one package at a time, so that one name the archive lacks does not stop the
others; otherwise, or on another distribution, it prints the command to run. Either way it says
exactly what each missing tool costs (:data:`TOOLS`) and it never fails the set-up.

It never starts a service. apt starts a package's services from its maintainer scripts unless
``policy-rc.d`` (Debian's hook that vetoes service starts) says no: where the host has none, one
is put in place for the install and removed after, so installing ``openssh-server`` leaves no SSH
daemon listening. An RPM's scriptlets only apply systemd presets (enable, never start), so dnf
and yum need nothing.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

POLICY_RC_D = Path("/usr/sbin/policy-rc.d")
# apt-get waits this long (s) for another apt or dpkg to finish instead of failing at once.
APT_LOCK_TIMEOUT_S = 300


@dataclass(frozen=True)
class Tool:
    """An executable the study or its tests run, and what is lost without it.

    Attributes
    ----------
    name : str
        The executable.
    use : str
        ``study`` (a measurement uses it) or ``test`` (only tests do).
    without : str
        What is lost without it, in sentences: the measurement, what the study does
        then, and the parameters that decide it.
    aliases : tuple of str
        Other executables that do the same job (``chromium-browser``, ``google-chrome``).
    probe : tuple of str
        Arguments with which the tool must exit 0 to count as installed: Ubuntu's
        ``/usr/bin/perf`` is a wrapper that fails unless the running kernel's own
        ``linux-tools`` package is installed.
    """

    name: str
    use: str
    without: str
    aliases: tuple[str, ...] = ()
    probe: tuple[str, ...] = ()


# What each tool costs when missing, as the code behaves: E4's plan refuses to start without a
# tool its parameters name (host_problems); E2's floor (floor.py) and its process placement
# (apps/loads.py) fail their cells, which fails the sweep; E2's plan takes traces only where perf
# runs (plan.tracing); the tests that need chromium or sshd skip.
TOOLS = (
    Tool("cyclictest", "study",
         "E2's and E4's platform floor (rt-tests) is lost. E4 refuses to start while its "
         "floor_tools name cyclictest or cyclicdeadline, and E2's floor cells fail (and with "
         "them its stage) while E2's floor is true; with E4's floor_tools: [] and E2's floor: "
         "false in params.yaml the study runs without a floor."),
    Tool("stress-ng", "study",
         "the load outside the app is lost. E4 refuses to start while its loads list stress, "
         "and E2's cells with stress-ng beside them fail (load placement process, and the floor "
         "above load factor 0)."),
    Tool("perf", "study",
         "E2's kernel scheduler traces are lost: E2 plans no traced run, the study runs, and the "
         "report's E2 section says its dataset has no trace (no attribution of a frame's delay).",
         probe=("--version",)),
    Tool("debootstrap", "study",
         "Holoscan versions whose wheels need a newer glibc than the host's (5.0.0 needs 2.39) "
         "are lost: the Debian 13 root they run in cannot be built, each measuring stage says "
         "so and measures the other versions of params.yaml's sdk group."),
    Tool("chromium", "test",
         "only `make test`'s browser check of the report is lost (tests/test_report.py skips).",
         aliases=("chromium-browser", "google-chrome")),
    Tool("sshd", "test",
         "only `make test`'s DVC round trip over SSH is lost (tests/test_ssh_remote.py skips)."),
)

# The packages that give each tool, per distribution family: choices tried in order, each a list
# of packages installed one at a time; the first choice after which the tool runs ends the search.
# Names from each distribution's package index: packages.debian.org (bookworm),
# packages.ubuntu.com (jammy, noble), packages.fedoraproject.org and RHEL 9's AppStream
# (rt-tests is `realtime-tests` on Fedora and RHEL 8+, `rt-tests` before), chromium from EPEL on
# RHEL and its rebuilds. "{release}" is the running kernel (uname -r): Ubuntu's perf comes per
# kernel; linux-tools-generic is the fallback for a kernel the archive no longer lists, and runs
# once the newest generic kernel is booted.
PACKAGES: dict[str, dict[str, list[list[str]]]] = {
    "debian": {"cyclictest": [["rt-tests"]], "stress-ng": [["stress-ng"]],
               "perf": [["linux-perf"]], "chromium": [["chromium"]],
               "sshd": [["openssh-server"]], "debootstrap": [["debootstrap"]]},
    "ubuntu": {"cyclictest": [["rt-tests"]], "stress-ng": [["stress-ng"]],
               "perf": [["linux-tools-common", "linux-tools-{release}"],
                        ["linux-tools-common", "linux-tools-generic"]],
               # Ubuntu ships chromium as a snap only since 19.10: its chromium-browser deb
               # installs the snap and needs a running snapd (containers and CI have none).
               # We install no snap (HINTS says how).
               "chromium": [],
               "sshd": [["openssh-server"]], "debootstrap": [["debootstrap"]]},
    "rhel": {"cyclictest": [["realtime-tests"], ["rt-tests"]], "stress-ng": [["stress-ng"]],
             "perf": [["perf"]], "chromium": [["chromium"]], "sshd": [["openssh-server"]],
             "debootstrap": [["debootstrap"]]},
}
# What to do where the packages above are not enough.
HINTS = {
    ("ubuntu", "chromium"): "Ubuntu packages chromium as a snap: sudo snap install chromium",
    ("ubuntu", "perf"): "Ubuntu's perf runs only with the running kernel's linux-tools package; "
                        "for a kernel Ubuntu does not package (Jetson, WSL, a cloud image) build "
                        "perf from that kernel's source",
    ("rhel", "debootstrap"): "on RHEL and its rebuilds debootstrap comes from EPEL: sudo dnf "
                             "install epel-release, then the command above",
    ("rhel", "chromium"): "on RHEL, CentOS, Rocky and AlmaLinux chromium comes from EPEL: "
                          "sudo dnf install epel-release (RHEL: "
                          "https://docs.fedoraproject.org/en-US/epel/), then the command above",
}
FAMILIES = {"ubuntu": "ubuntu", "debian": "debian", "rhel": "rhel", "centos": "rhel",
            "rocky": "rhel", "almalinux": "rhel", "fedora": "rhel"}


@dataclass(frozen=True)
class Distro:
    """The host's distribution as os-release(5) names it.

    Attributes
    ----------
    family : str or None
        ``debian``, ``ubuntu``, ``rhel`` (the whole RHEL family, Fedora included), or None.
    name : str
        ``PRETTY_NAME`` (or ``ID``), for messages.
    manager : str or None
        ``apt-get``, ``dnf``, ``yum`` (RHEL and CentOS 7), or None for an unknown family.
    """

    family: str | None
    name: str
    manager: str | None


def detect(fields: Mapping[str, str] | None = None) -> Distro:
    """The distribution that os-release(5) ``fields`` describe (default: this host's, as
    :func:`platform.freedesktop_os_release` reads them; none where the host has no such file).

    ``ID`` decides, else the first of ``ID_LIKE`` we know (Linux Mint's ``ubuntu debian`` is
    Ubuntu, Pop!_OS is Ubuntu, Oracle Linux's ``fedora`` the RHEL family).
    """
    if fields is None:
        try:
            fields = platform.freedesktop_os_release()
        except OSError:
            fields = {}
    ids = [fields.get("ID", "").lower(), *fields.get("ID_LIKE", "").lower().split()]
    family = next((FAMILIES[i] for i in ids if i in FAMILIES), None)
    manager = {"debian": "apt-get", "ubuntu": "apt-get", "rhel": "dnf"}.get(family)
    version = fields.get("VERSION_ID", "").split(".")[0]
    # dnf replaced yum in RHEL 8 and Fedora 22; RHEL 7 and its rebuilds have yum only.
    if family == "rhel" and ids[0] != "fedora" and version.isdigit() and int(version) < 8:
        manager = "yum"
    return Distro(family, fields.get("PRETTY_NAME") or fields.get("ID") or "unknown", manager)


def tools_for(purpose: str) -> tuple[Tool, ...]:
    """The tools ``make study`` (``study``) or ``make test`` (``test``: every tool) needs."""
    if purpose not in ("study", "test"):
        raise ValueError(f"purpose must be 'study' or 'test', got {purpose!r}")
    return tuple(t for t in TOOLS if purpose == "test" or t.use == "study")


def _tool(name: str) -> Tool:
    return next((t for t in TOOLS if t.name == name), Tool(name, "", ""))


def which(tool: str) -> str | None:
    """The path of ``tool`` (or of one of its aliases) if it is installed and runs, else None.

    The sbin folders a non-root PATH may lack are searched too (``sshd``). A tool with
    a probe (:attr:`Tool.probe`) counts only if the probe exits 0.
    """
    t = _tool(tool)
    for name in (t.name, *t.aliases):
        path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
        if path is None:
            continue
        if not t.probe:
            return path
        try:
            ok = subprocess.run([path, *t.probe], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, timeout=30).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            return path
    return None


def packages(distro: Distro, tool: str, release: str | None = None) -> list[list[str]]:
    """The package choices that give ``tool`` on ``distro`` (:data:`PACKAGES`); [] if none."""
    release = release or platform.release()
    return [[p.format(release=release) for p in choice]
            for choice in PACKAGES.get(distro.family or "", {}).get(tool, [])]


def install_command(distro: Distro, package: str) -> list[str]:
    """The package manager's non-interactive command that installs ``package``."""
    if distro.manager == "apt-get":
        return ["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                "-o", f"DPkg::Lock::Timeout={APT_LOCK_TIMEOUT_S}", package]
    if distro.manager in ("dnf", "yum"):
        return [distro.manager, "install", "-y", "-q", package]
    raise ValueError(f"{distro.name}: no package manager known to this study")


def advice(distro: Distro, tool: str, release: str | None = None, root: bool = False) -> str:
    """One line for a missing ``tool``: what is lost, and the command that installs it here.

    Parameters
    ----------
    distro : Distro
        The host's distribution (:func:`detect`).
    tool : str
        A name of :data:`TOOLS`.
    release : str, optional
        The running kernel (``uname -r``); default this host's.
    root : bool
        Whether the reader is root (no ``sudo`` in the command).
    """
    t = _tool(tool)
    choices = packages(distro, tool, release)
    sudo = "" if root else "sudo "
    if choices and distro.manager:
        how = f"{sudo}{distro.manager} install {' '.join(choices[0])}"
    elif distro.family is None:
        known = [(fam, packages(Distro(fam, fam, None), tool, release)) for fam in PACKAGES]
        how = (f"{distro.name} is not a distribution this study knows; use your package manager "
               "(the package is " + ", ".join(f"{' '.join(c[0])} on {fam}" for fam, c in known if c)
               + ")")
    else:
        how = ""
    hint = HINTS.get((distro.family, tool), "")
    fix = "; ".join(x for x in (how, hint) if x)
    return f"{t.name} is missing: {t.without} Install: {fix}"


def install(tools: tuple[Tool, ...], distro: Distro, run: Callable[[list[str]], int],
            works: Callable[[str], bool] = lambda tool: which(tool) is not None,
            release: str | None = None) -> list[str]:
    """Install each missing tool's packages one package at a time; the tools still missing.

    Parameters
    ----------
    tools : tuple of Tool
        What to install (:func:`tools_for`).
    distro : Distro
        The host's distribution, with a package manager (:func:`detect`).
    run : callable
        Runs a command, returns its exit code (the package manager's messages reach
        the terminal).
    works : callable
        Whether a tool is installed and runs (:func:`which`).
    release : str, optional
        The running kernel (``uname -r``); default this host's.

    Returns
    -------
    list of str
        The names of the tools that are still missing afterwards.
    """
    need = [t.name for t in tools if not works(t.name)]
    if need and distro.manager == "apt-get":
        # A fresh host (or container) has no package lists; stale ones name removed versions.
        run(["apt-get", "update", "-qq", "-o", f"DPkg::Lock::Timeout={APT_LOCK_TIMEOUT_S}"])
    for tool in need:
        for choice in packages(distro, tool, release):
            for package in choice:
                print(f"Installing {package} ({tool}) with {distro.manager} ...", flush=True)
                if run(install_command(distro, package)) != 0:
                    break  # this choice cannot be completed: try the next
            if works(tool):
                break
    return [tool for tool in need if not works(tool)]


@contextlib.contextmanager
def no_service_starts():
    """Veto service starts while apt installs, unless the host already has a policy-rc.d."""
    if POLICY_RC_D.exists():
        yield
        return
    POLICY_RC_D.write_text("#!/bin/sh\n# rtstudy sysdeps: no service starts during its install\nexit 101\n")
    POLICY_RC_D.chmod(0o755)
    try:
        yield
    finally:
        POLICY_RC_D.unlink(missing_ok=True)


def _run(cmd: list[str]) -> int:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # The manager's progress is noise on a terminal; its errors (stderr) say why a package failed.
    return subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL).returncode


def main(argv: list[str] | None = None) -> int:
    """Install (as root) or explain the tools ``--for study`` or ``--for test`` needs; exit 0."""
    parser = argparse.ArgumentParser(prog="python -m rtstudy.machine.sysdeps",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--for", dest="purpose", choices=("study", "test"), default="study",
                        help="study: what the measurements use; test: that and what only tests use")
    args = parser.parse_args(argv)
    tools = tools_for(args.purpose)
    missing = [t.name for t in tools if which(t.name) is None]
    if not missing:
        return 0
    distro = detect()
    root = os.geteuid() == 0
    if root and distro.manager and shutil.which(distro.manager):
        with no_service_starts() if distro.manager == "apt-get" else contextlib.nullcontext():
            missing = install(tuple(t for t in tools if t.name in missing), distro, _run)
    for tool in missing:
        print(f"NOTE: {advice(distro, tool, root=root)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
