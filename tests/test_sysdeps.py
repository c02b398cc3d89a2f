"""System tools by distribution: detection, package names, one-package-at-a-time installs, what a
missing tool costs (and the report's words for it), and the split between `make study` and
`make test`. The package manager cannot be swapped for a real one here: the installs are tested
with a runner that records commands; the Debian names are checked against this host's apt."""
from __future__ import annotations

import json
import os
import platform
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from rtstudy import params, paths
from rtstudy.data.io import Dataset
from rtstudy.experiments.e2_rt_threads.measuring import plan as e2_plan
from rtstudy.experiments.e2_rt_threads.report import section as e2_section
from rtstudy.experiments.e4_host import section as e4_section
from rtstudy.machine import sysdeps
from rtstudy.measure.harness import write_plan
from rtstudy.report.section import render

# os-release(5) as each distribution ships it (the fields that matter), as
# platform.freedesktop_os_release reads them: unquoted.
OS_RELEASE = {
    "debian12": {"PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)", "NAME": "Debian GNU/Linux",
                 "VERSION_ID": "12", "VERSION_CODENAME": "bookworm", "ID": "debian"},
    "ubuntu2204": {"PRETTY_NAME": "Ubuntu 22.04.4 LTS", "NAME": "Ubuntu", "VERSION_ID": "22.04",
                   "ID": "ubuntu", "ID_LIKE": "debian", "UBUNTU_CODENAME": "jammy"},
    "ubuntu2404": {"PRETTY_NAME": "Ubuntu 24.04.1 LTS", "NAME": "Ubuntu", "VERSION_ID": "24.04",
                   "ID": "ubuntu", "ID_LIKE": "debian", "UBUNTU_CODENAME": "noble"},
    "mint21": {"NAME": "Linux Mint", "VERSION_ID": "21.3", "ID": "linuxmint",
               "ID_LIKE": "ubuntu debian", "PRETTY_NAME": "Linux Mint 21.3"},
    "rhel9": {"NAME": "Red Hat Enterprise Linux", "VERSION": "9.4 (Plow)", "ID": "rhel",
              "ID_LIKE": "fedora", "VERSION_ID": "9.4",
              "PRETTY_NAME": "Red Hat Enterprise Linux 9.4 (Plow)"},
    "rocky9": {"NAME": "Rocky Linux", "ID": "rocky", "ID_LIKE": "rhel centos fedora",
               "VERSION_ID": "9.3", "PRETTY_NAME": "Rocky Linux 9.3 (Blue Onyx)"},
    "centos7": {"NAME": "CentOS Linux", "VERSION": "7 (Core)", "ID": "centos",
                "ID_LIKE": "rhel fedora", "VERSION_ID": "7",
                "PRETTY_NAME": "CentOS Linux 7 (Core)"},
    "fedora40": {"NAME": "Fedora Linux", "VERSION": "40 (Workstation Edition)", "ID": "fedora",
                 "VERSION_ID": "40", "PRETTY_NAME": "Fedora Linux 40 (Workstation Edition)"},
    "arch": {"NAME": "Arch Linux", "PRETTY_NAME": "Arch Linux", "ID": "arch",
             "BUILD_ID": "rolling"},
    "empty": {},
}
EXPECTED = {
    "debian12": ("debian", "apt-get"), "ubuntu2204": ("ubuntu", "apt-get"),
    "ubuntu2404": ("ubuntu", "apt-get"), "mint21": ("ubuntu", "apt-get"),
    "rhel9": ("rhel", "dnf"), "rocky9": ("rhel", "dnf"), "centos7": ("rhel", "yum"),
    "fedora40": ("rhel", "dnf"), "arch": (None, None), "empty": (None, None),
}
KERNEL = "6.8.0-45-generic"


@pytest.mark.parametrize("name", OS_RELEASE)
def test_the_distribution_and_its_package_manager_come_from_os_release(name):
    d = sysdeps.detect(OS_RELEASE[name])
    assert (d.family, d.manager) == EXPECTED[name]
    assert d.name == OS_RELEASE[name].get("PRETTY_NAME", "unknown")


def test_this_hosts_distribution_is_what_the_standard_library_reads(monkeypatch):
    try:
        fields = platform.freedesktop_os_release()
    except OSError:
        pytest.skip("this host has no os-release file")
    assert sysdeps.detect() == sysdeps.detect(fields)
    assert sysdeps.detect().name == fields["PRETTY_NAME"] and '"' not in fields["PRETTY_NAME"]

    def missing():
        raise OSError("no os-release")

    monkeypatch.setattr(platform, "freedesktop_os_release", missing)
    assert sysdeps.detect() == sysdeps.Distro(None, "unknown", None)


def test_each_family_names_its_own_packages():
    names = {fam: {t.name: sysdeps.packages(sysdeps.Distro(fam, fam, None), t.name, KERNEL)
                   for t in sysdeps.TOOLS} for fam in ("debian", "ubuntu", "rhel")}
    assert names["debian"] == {"cyclictest": [["rt-tests"]], "stress-ng": [["stress-ng"]],
                               "perf": [["linux-perf"]], "chromium": [["chromium"]],
                               "sshd": [["openssh-server"]], "debootstrap": [["debootstrap"]]}
    # Ubuntu's perf is per kernel; its chromium is a snap, which the set-up does not install.
    assert names["ubuntu"]["perf"] == [["linux-tools-common", f"linux-tools-{KERNEL}"],
                                       ["linux-tools-common", "linux-tools-generic"]]
    assert names["ubuntu"]["chromium"] == []
    assert names["rhel"]["cyclictest"] == [["realtime-tests"], ["rt-tests"]]
    assert names["rhel"]["perf"] == [["perf"]] and names["rhel"]["chromium"] == [["chromium"]]
    assert sysdeps.packages(sysdeps.detect(OS_RELEASE["arch"]), "perf", KERNEL) == []


class FakeArchive:
    """A package manager's decisions without its effects: which packages exist, which tools
    they give (``package -> tool``), and every command it was asked to run."""

    def __init__(self, gives: dict[str, str], needs: dict[str, set[str]] | None = None):
        self.gives, self.needs = gives, needs or {}
        self.installed: set[str] = set()
        self.commands: list[list[str]] = []

    def run(self, cmd: list[str]) -> int:
        self.commands.append(cmd)
        if cmd[1] == "update":
            return 0
        package = cmd[-1]
        if package not in self.gives:
            return 100  # apt-get's exit code for "Unable to locate package"
        self.installed.add(package)
        return 0

    def works(self, tool: str) -> bool:
        # A tool runs once every package it needs is installed (Ubuntu's perf: two).
        given = {p for p in self.installed if self.gives[p] == tool}
        return bool(given) and self.needs.get(tool, set()) <= self.installed

    def installs(self) -> list[str]:
        return [c[-1] for c in self.commands if c[1] == "install"]


def test_packages_install_one_at_a_time_and_a_missing_name_sinks_only_its_tool(capsys):
    ubuntu = sysdeps.detect(OS_RELEASE["ubuntu2404"])
    # The archive lacks this kernel's tools (a kernel it no longer lists) and has no rt-tests.
    archive = FakeArchive({"stress-ng": "stress-ng", "linux-tools-common": "perf",
                           "linux-tools-generic": "perf", "openssh-server": "sshd",
                           "debootstrap": "debootstrap"},
                          needs={"perf": {"linux-tools-generic"}})
    left = sysdeps.install(sysdeps.tools_for("test"), ubuntu, archive.run, archive.works, KERNEL)
    assert archive.commands[0][:2] == ["apt-get", "update"]  # the lists first, once
    assert sum(c[1] == "update" for c in archive.commands) == 1
    for cmd in archive.commands[1:]:
        assert cmd[:2] == ["apt-get", "install"] and "-y" in cmd
        assert not [a for a in cmd[2:-1] if not a.startswith("-") and "=" not in a]  # one package
    assert archive.installs() == ["rt-tests", "stress-ng", "linux-tools-common",
                                  f"linux-tools-{KERNEL}", "linux-tools-common",
                                  "linux-tools-generic", "debootstrap", "openssh-server"]
    assert left == ["cyclictest", "chromium"]
    assert "Installing stress-ng (stress-ng) with apt-get" in capsys.readouterr().out


def test_the_first_choice_that_works_ends_the_search_and_dnf_needs_no_update():
    rhel = sysdeps.detect(OS_RELEASE["rhel9"])
    archive = FakeArchive({"realtime-tests": "cyclictest", "rt-tests": "cyclictest"})
    assert sysdeps.install(sysdeps.tools_for("study")[:1], rhel, archive.run, archive.works) == []
    assert archive.commands == [["dnf", "install", "-y", "-q", "realtime-tests"]]
    centos7 = sysdeps.detect(OS_RELEASE["centos7"])
    old = FakeArchive({"rt-tests": "cyclictest"})  # RHEL 7's name
    assert sysdeps.install(sysdeps.tools_for("study")[:1], centos7, old.run, old.works) == []
    assert old.commands == [["yum", "install", "-y", "-q", "realtime-tests"],
                            ["yum", "install", "-y", "-q", "rt-tests"]]


def test_nothing_is_installed_when_every_tool_works():
    archive = FakeArchive({})
    assert sysdeps.install(sysdeps.tools_for("test"), sysdeps.detect(OS_RELEASE["debian12"]),
                           archive.run, lambda tool: True) == []
    assert archive.commands == []


def test_make_study_asks_for_the_measurements_tools_and_make_test_for_all():
    assert [t.name for t in sysdeps.tools_for("study")] == ["cyclictest", "stress-ng", "perf",
                                                            "debootstrap"]
    assert [t.name for t in sysdeps.tools_for("test")] == ["cyclictest", "stress-ng", "perf",
                                                           "debootstrap", "chromium", "sshd"]
    assert {t.name for t in sysdeps.TOOLS if t.use == "test"} == {"chromium", "sshd"}
    with pytest.raises(ValueError, match="'study' or 'test', got 'all'"):
        sysdeps.tools_for("all")
    # What make runs (-n: print the commands, run none).
    for target, purpose in (("study", "study"), ("setup", "study"), ("test", "test")):
        out = subprocess.run(["make", "-n", target], cwd=paths.checkout(), capture_output=True,
                             text=True).stdout
        assert re.findall(r"rtstudy\.machine\.sysdeps --for (\w+)", out) == [purpose], target


@pytest.mark.parametrize("name, command", [
    ("debian12", "sudo apt-get install linux-perf"),
    ("ubuntu2204", f"sudo apt-get install linux-tools-common linux-tools-{KERNEL}"),
    ("fedora40", "sudo dnf install perf"),
])
def test_a_missing_tool_says_what_is_lost_and_this_distributions_command(name, command):
    text = sysdeps.advice(sysdeps.detect(OS_RELEASE[name]), "perf", KERNEL)
    assert text.startswith("perf is missing: E2's kernel scheduler traces are lost: E2 plans no "
                           "traced run, the study runs")
    assert text.endswith(command) or f"Install: {command};" in text
    assert "sudo" not in sysdeps.advice(sysdeps.detect(OS_RELEASE[name]), "perf", KERNEL, root=True)


def test_the_words_for_tools_without_a_package_name_the_way():
    ubuntu = sysdeps.advice(sysdeps.detect(OS_RELEASE["ubuntu2404"]), "chromium")
    assert "only `make test`'s browser check" in ubuntu and "sudo snap install chromium" in ubuntu
    rhel = sysdeps.advice(sysdeps.detect(OS_RELEASE["rhel9"]), "chromium")
    assert "sudo dnf install chromium" in rhel and "EPEL" in rhel
    unknown = sysdeps.advice(sysdeps.detect(OS_RELEASE["arch"]), "cyclictest", KERNEL)
    assert "Arch Linux is not a distribution this study knows" in unknown
    assert "rt-tests on debian" in unknown and "realtime-tests on rhel" in unknown
    floor = sysdeps.advice(sysdeps.detect(OS_RELEASE["debian12"]), "cyclictest")
    assert "E4 refuses to start while its floor_tools name cyclictest" in floor
    assert "E2's floor cells fail" in floor


def _executable(folder: Path, name: str, exit_code: int) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\nexit {exit_code}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_a_perf_that_does_not_run_is_missing_and_e2_plans_no_trace(tmp_path, monkeypatch,
                                                                    fingerprint, context):
    cfg = params.stage_config("e2_rt_threads", "smoke")
    assert cfg["trace_seconds"] > 0
    # Ubuntu's /usr/bin/perf without this kernel's linux-tools: on PATH, exits 2.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _executable(bin_dir, "perf", 2)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert sysdeps.which("perf") is None
    cells = e2_plan.plan(cfg, fingerprint, {})
    assert cells and not [c for c in cells if c.config.get("trace_s")]
    # The report's words come from the data: the plan recorded beside the cells.
    write_plan(tmp_path, cells, context, cfg["order_seed"])
    ds = Dataset(tmp_path, {"traces": pd.DataFrame()})
    traces = e2_section.traced_runs(ds)
    assert traces == {"planned": 0, "measured": 0, "unavailable": 0, "conditions": [],
                      "reasons": []}
    text = render(e2_section.FOLDER, "no_trace", cfg=cfg, traces=traces)
    assert "its plan holds no traced run" in text and "had no working perf" in text
    _executable(bin_dir, "perf", 0)
    assert sysdeps.which("perf") == str(bin_dir / "perf")
    assert [c for c in e2_plan.plan(cfg, fingerprint, {}) if c.config.get("trace_s")]


NONE_LOST = {"unavailable": 0, "conditions": [], "reasons": []}
LOST = {"unavailable": 2, "conditions": ["SCHED_FIFO-lf3-native-busy_poll-trace"],
        "reasons": ["perf script could not read the trace back (exit 255): incompatible file "
                    "format"]}


@pytest.mark.parametrize("trace_seconds, traces, words", [
    (0, {"planned": 0, "measured": 0, **NONE_LOST}, "`e2_rt_threads.trace_seconds` is 0"),
    (0.5, {"planned": 3, "measured": 1, **NONE_LOST}, "2 of its 3 traced runs are not measured yet"),
    (0.5, {"planned": 3, "measured": 3, **LOST}, "2 of its 3 traced runs have no trace: perf "
     "script could not read the trace back (exit 255): incompatible file format"),
])
def test_the_other_reasons_for_no_trace(trace_seconds, traces, words):
    cfg = {**params.stage_config("e2_rt_threads", "smoke"), "trace_seconds": trace_seconds}
    assert words in render(e2_section.FOLDER, "no_trace", cfg=cfg, traces=traces)


def test_traced_runs_without_their_trace_are_named_with_why_and_how_to_get_them():
    text = render(e2_section.FOLDER, "traces_missing", traces={"planned": 3, "measured": 3,
                                                                **LOST})
    assert text.startswith("2 of E2's 3 traced runs have no scheduler trace "
                           "(SCHED_FIFO-lf3-native-busy_poll)")
    assert "incompatible file format" in text and "run `make study`" in text


def test_e4_words_name_the_floor_and_loads_the_data_holds():
    caption = render(e4_section.FOLDER, "caption_floor", floor_loads=["idle", "stress"])
    assert caption.endswith("idle and under stress-ng (µs)")
    assert render(e4_section.FOLDER, "caption_floor", floor_loads=[]).endswith("not measured (µs)")


def test_no_service_starts_while_apt_installs(tmp_path, monkeypatch):
    hook = tmp_path / "policy-rc.d"
    monkeypatch.setattr(sysdeps, "POLICY_RC_D", hook)
    with sysdeps.no_service_starts():
        assert subprocess.run([str(hook)]).returncode == 101  # invoke-rc.d: "action forbidden"
    assert not hook.exists()
    hook.write_text("#!/bin/sh\nexit 0\n")  # the host's own policy stays as it is
    with sysdeps.no_service_starts():
        pass
    assert hook.read_text() == "#!/bin/sh\nexit 0\n"


def _apt_lists() -> bool:
    return any(Path("/var/lib/apt/lists").glob("*_Packages*"))


@pytest.mark.skipif(sysdeps.detect().family != "debian" or shutil.which("apt-cache") is None
                    or not _apt_lists(), reason="needs a Debian host with apt lists "
                    "(`apt-get update`)")
@pytest.mark.pipeline  # asks apt: slow for make test-fast
@pytest.mark.parametrize("tool", [t.name for t in sysdeps.TOOLS])
def test_the_debian_names_exist_in_this_hosts_archive(tool):
    for choice in sysdeps.packages(sysdeps.detect(), tool):
        for package in choice:
            out = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True,
                                 env=dict(os.environ, LC_ALL="C")).stdout
            candidate = re.search(r"Candidate: (\S+)", out)
            assert candidate and candidate.group(1) != "(none)", f"{package}: {out!r}"


def _only_missing(monkeypatch, missing: set[str]) -> list[list[str]]:
    """Every tool installed but ``missing``; the install commands that would run, recorded."""
    monkeypatch.setattr(sysdeps, "which", lambda tool: None if tool in missing else f"/x/{tool}")
    ran: list[list[str]] = []
    monkeypatch.setattr(sysdeps, "install_missing", lambda tools, distro: ran.append(
        [t.name for t in tools]) or [])
    return ran


@pytest.mark.parametrize("purpose, consent, code", [
    ("study", "", 2), ("study", "skip", 0), ("test", "", 0)])
def test_make_study_and_make_test_install_nothing_unasked(monkeypatch, capsys, purpose, consent,
                                                         code):
    """Without a terminal nobody can be asked: nothing is installed; `make study` stops before
    measuring with both ways on, `make test` goes on (its tests skip)."""
    ran = _only_missing(monkeypatch, {"perf"})
    monkeypatch.setenv(sysdeps.CONSENT_ENV, consent)
    assert sysdeps.main(["--for", purpose]) == code
    assert ran == []
    out = capsys.readouterr()
    assert "perf is missing: E2's kernel scheduler traces are lost" in out.out
    if code:
        assert "make study stops here, before measuring anything: perf missing" in out.err
        assert "make sysdeps" in out.err and "make study SYSDEPS=skip" in out.err


def test_an_install_is_asked_for_or_agreed_to(monkeypatch):
    if os.geteuid() != 0 or sysdeps.detect().manager is None:
        pytest.skip("installs only as root, with a package manager this study knows")
    ran = _only_missing(monkeypatch, {"perf"})
    monkeypatch.delenv(sysdeps.CONSENT_ENV, raising=False)
    assert sysdeps.main(["--for", "study", "--install"]) == 0  # make sysdeps
    monkeypatch.setenv(sysdeps.CONSENT_ENV, "install")
    assert sysdeps.main(["--for", "study"]) == 0
    monkeypatch.setenv(sysdeps.CONSENT_ENV, "no")
    assert sysdeps.main(["--for", "study"]) == 2
    assert ran == [["perf"], ["perf"]]


def _unit_root(tmp_path: Path) -> Path:
    """A copy of a system's unit folders with one service that wants to start at boot."""
    root = tmp_path / "sys"
    (root / "etc/systemd/system").mkdir(parents=True)
    units = root / "lib/systemd/system"
    units.mkdir(parents=True)
    (units / "rtstudy-probe.service").write_text(
        "[Unit]\nDescription=a unit a package enables\n[Service]\nExecStart=/bin/true\n"
        "[Install]\nWantedBy=multi-user.target\n")
    return root


@pytest.mark.skipif(shutil.which("systemctl") is None, reason="no systemctl")
def test_a_unit_an_install_enabled_is_disabled_again_and_one_enabled_before_stays(tmp_path):
    root = _unit_root(tmp_path)
    before = sysdeps.enabled_units(root)
    assert "rtstudy-probe.service" not in before
    # What a package's install script does (Debian's openssh-server: ssh.service).
    subprocess.run(["systemctl", f"--root={root}", "enable", "rtstudy-probe.service"],
                   check=True, capture_output=True)
    assert "rtstudy-probe.service" in sysdeps.enabled_units(root)
    assert sysdeps.disable_new(before, root) == ["rtstudy-probe.service"]
    assert "rtstudy-probe.service" not in sysdeps.enabled_units(root)
    assert not list((root / "etc/systemd/system").rglob("rtstudy-probe.service"))
    # Enabled before the install (the user's own choice): left as it is.
    subprocess.run(["systemctl", f"--root={root}", "enable", "rtstudy-probe.service"],
                   check=True, capture_output=True)
    assert sysdeps.disable_new(sysdeps.enabled_units(root), root) == []
    assert "rtstudy-probe.service" in sysdeps.enabled_units(root)


@pytest.mark.skipif(not sysdeps.RECORD.is_file(), reason="`make sysdeps` never installed here")
def test_the_units_the_last_install_enabled_are_not_enabled_now():
    """On this machine, for real: what `make sysdeps` installed (openssh-server, in CI) left no
    unit enabled for the next boot."""
    record = json.loads(sysdeps.RECORD.read_text())
    enabled = sysdeps.enabled_units()
    assert not set(record["units_disabled_again"]) & enabled
    if "sshd" in record["tools"] and "sshd" not in record["still_missing"]:
        assert not {u for u in enabled if u.startswith(("ssh.", "sshd."))}, enabled
