"""System tools the study needs besides Python, by distribution: installed only when the user
asks, explained otherwise.

``make sysdeps`` (``python -m rtstudy.machine.sysdeps --for study --install``) installs what the
measurements use (cyclictest, stress-ng, perf; debootstrap: the Debian 13 root of Holoscan 5.0);
``make sysdeps FOR=test`` adds chromium and sshd (only tests use them). ``make study`` and ``make
test`` only check (``--for study`` / ``--for test``): where a tool is missing they ask on a
terminal, and otherwise say what is missing, what it costs and the command that installs it.
``make study`` then stops before anything is measured (``SYSDEPS=skip`` goes on without,
``SYSDEPS=install`` installs without asking); ``make test`` goes on, and the tests that need a
missing tool skip. Installing system packages is never a side effect.

The distribution comes from os-release's ``ID`` and ``ID_LIKE``
(:func:`platform.freedesktop_os_release`): Debian, Ubuntu, or the RHEL family (RHEL, CentOS,
Rocky, AlmaLinux, Fedora). As root it installs each missing tool's packages one package at a
time, so that one name the archive lacks does not stop the others.

It leaves no service running or enabled that was not before. apt starts a package's services
from its maintainer scripts unless ``policy-rc.d`` (Debian's hook that vetoes service starts)
says no: where the host has none, one is put in place for the install and removed after. A
package's scripts also enable its units for the next boot (Debian's openssh-server enables
``ssh.service``; an RPM applies its presets): every unit enabled by the install is disabled
again (:func:`disable_new`), and what was installed and disabled is recorded in
:data:`RECORD`.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

POLICY_RC_D = Path("/usr/sbin/policy-rc.d")
# What the last install did: packages installed, units disabled again (outside every checkout,
# as the SDK roots are: it describes the machine).
RECORD = Path("/var/lib/rtstudy/sysdeps.json")
# The user's answer for scripts and CI, where nobody can be asked: `make study SYSDEPS=skip`.
CONSENT_ENV = "SYSDEPS"
CONSENTS = ("install", "skip")
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


def enabled_units(root: Path = Path("/")) -> set[str]:
    """The systemd units enabled for boot under ``root`` (a whole system, or a copy of its
    ``etc`` and ``lib`` for a test): what ``systemctl list-unit-files --state=enabled`` lists.
    Empty where there is no systemctl. Works whether or not systemd is running."""
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        return set()
    out = subprocess.run([systemctl, f"--root={root}", "list-unit-files", "--state=enabled",
                          "--no-legend", "--no-pager"], capture_output=True, text=True)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def disable_new(before: set[str], root: Path = Path("/")) -> list[str]:
    """Disable every unit enabled under ``root`` since ``before`` (:func:`enabled_units`); the
    units disabled. ``systemctl disable`` also turns a SysV script's start links into stop
    links (Debian's ``/etc/init.d/ssh``)."""
    new = sorted(enabled_units(root) - before)
    for unit in new:
        subprocess.run(["systemctl", f"--root={root}", "--no-reload", "disable", unit],
                       capture_output=True)
    return new


def _run(cmd: list[str]) -> int:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # The manager's progress is noise on a terminal; its errors (stderr) say why a package failed.
    return subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL).returncode


def install_missing(tools: tuple[Tool, ...], distro: Distro) -> list[str]:
    """Install ``tools`` (root, a known package manager): one package at a time, no service
    started, every unit the install enabled disabled again, all of it recorded in
    :data:`RECORD`. The tools still missing."""
    before = enabled_units()
    with no_service_starts() if distro.manager == "apt-get" else contextlib.nullcontext():
        missing = install(tools, distro, _run)
    disabled = disable_new(before)
    for unit in disabled:
        print(f"Disabled again: {unit} (its package's install enabled it for the next boot; "
              "the study starts no service, and its tests run their own sshd)", flush=True)
    record = {"utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "tools": [t.name for t in tools], "still_missing": missing,
              "units_disabled_again": disabled}
    with contextlib.suppress(OSError):
        RECORD.parent.mkdir(parents=True, exist_ok=True)
        RECORD.write_text(json.dumps(record, indent=2) + "\n")
    return missing


def _ask(question: str) -> bool:
    """Ask on the terminal; False where there is none to ask on."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return False
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:
        return False


def main(argv: list[str] | None = None) -> int:
    """Check (default) or ``--install`` the tools ``--for study`` or ``--for test`` needs.

    Exit 0 when nothing is missing, after an install, for ``--for test`` (its tests skip), or
    with ``SYSDEPS=skip``; 2 when ``make study`` would measure without a tool nobody agreed to
    go without, or when ``--install`` cannot install (not root, no package manager).
    """
    parser = argparse.ArgumentParser(prog="python -m rtstudy.machine.sysdeps",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--for", dest="purpose", choices=("study", "test"), default="study",
                        help="study: what the measurements use; test: that and what only tests use")
    parser.add_argument("--install", action="store_true",
                        help="install what is missing (as root; `make sysdeps`), else only check")
    args = parser.parse_args(argv)
    consent = os.environ.get(CONSENT_ENV, "")
    if consent and consent not in CONSENTS:
        print(f"rtstudy: {CONSENT_ENV}={consent!r} is not one of {', '.join(CONSENTS)}",
              file=sys.stderr)
        return 2
    tools = tuple(t for t in tools_for(args.purpose) if which(t.name) is None)
    if not tools:
        if args.install:
            print(f"Every system tool `make {args.purpose}` uses is installed.")
        return 0
    distro = detect()
    root = os.geteuid() == 0
    can = root and bool(distro.manager) and shutil.which(distro.manager or "") is not None
    names = ", ".join(t.name for t in tools)
    command = ("make sysdeps" + (" FOR=test" if args.purpose == "test" else "")
               + ("" if root else " (as root)"))
    if can and (args.install or consent == "install" or _ask(
            f"Missing system tools: {names}. Install them now with {distro.manager} (no "
            "service is started or enabled)? [y/N] ")):
        tools = tuple(t for t in tools if t.name in install_missing(tools, distro))
        if not tools:
            return 0
    for tool in tools:
        print(f"NOTE: {advice(distro, tool.name, root=root)}")
    if args.install:
        print(f"rtstudy: cannot install {', '.join(t.name for t in tools)} here"
              + ("" if root else ": run `sudo make sysdeps`") + ".", file=sys.stderr)
        return 2
    if args.purpose == "test" or consent == "skip":
        return 0
    print(f"rtstudy: make study stops here, before measuring anything: {names} missing. "
          f"Install them with `{command}`, or measure without them (each stage then says what "
          f"it cannot do): `make study {CONSENT_ENV}=skip`.", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
