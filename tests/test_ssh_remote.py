"""A real network remote: OpenSSH's sshd on 127.0.0.1, `dvc push` over ssh://, pull elsewhere,
and two hosts exchanging datasets through it with `rtstudy data import`.

The server runs as this test's own process, with a temporary host key, a
temporary client key and a temporary folder as the remote; it listens on the
loopback address only and is stopped, with everything it used, at the end.
The data is the smoke study the run measures once (conftest.py's ``measured_project``).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from helpers import (BIN, MAKE, MEASURING, copy_project, files, free_port, git_repository,
                     make_env, publish, sh)

from rtstudy import data
from rtstudy.machine import sysdeps
from rtstudy.measure.process import end_process

pytestmark = pytest.mark.server

SSHD = sysdeps.which("sshd")
# `git status --porcelain` codes of an unmerged path.
CONFLICTS = {"DD", "AU", "UD", "UA", "DU", "AA", "UU"}



@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A running sshd on 127.0.0.1: ``(port, client key, HOME with known_hosts, remote folder)``."""
    if SSHD is None:
        pytest.skip(sysdeps.advice(sysdeps.detect(), "sshd", root=os.geteuid() == 0)
                    + " (`make test` installs it as root)")
    if os.geteuid() != 0:
        pytest.skip("sshd logs in only as the user it runs as; this test logs in as root")
    base = tmp_path_factory.mktemp("ssh")
    home, store = base / "home", base / "remote"
    (home / ".ssh").mkdir(parents=True)
    store.mkdir()
    for name in ("host_key", "client_key"):
        sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", base / name], base, os.environ)
    port = free_port()
    (base / "authorized_keys").write_text((base / "client_key.pub").read_text())
    host_pub = (base / "host_key.pub").read_text().split()[:2]
    (home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{port} {' '.join(host_pub)}\n")
    config = base / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {base / 'host_key'}",
        f"AuthorizedKeysFile {base / 'authorized_keys'}", f"PidFile {base / 'sshd.pid'}",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
        "PermitRootLogin prohibit-password", "StrictModes no", "Subsystem sftp internal-sftp",
        ""]))
    # sshd refuses to start without its privilege-separation folder, which the service
    # manager creates when it starts the packaged daemon; create it only if missing.
    privsep = Path("/run/sshd")
    made_privsep = not privsep.exists()
    privsep.mkdir(mode=0o755, exist_ok=True)
    log = open(base / "sshd.log", "w")
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    # Another process may have taken the free port first: say so plainly.
                    pytest.fail(f"sshd did not start on port {port}: "
                                f"{(base / 'sshd.log').read_text()}")
                time.sleep(0.1)
        yield port, base / "client_key", home, store
    finally:
        end_process(proc)
        log.close()
        if made_privsep:
            shutil.rmtree(privsep, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)


def test_a_dataset_goes_over_ssh_to_another_clone(server, measured_project, tmp_path):
    port, key, home, store = server
    src, env, _ = measured_project
    origin, clone = tmp_path / "origin", tmp_path / "clone"
    env = dict(copy_project(src, origin), HOME=str(home))
    url = f"ssh://root@127.0.0.1:{port}{store}"
    # The steps of docs/sharing-data.md for a real server; --local keeps the key out of git.
    sh([BIN / "dvc", "remote", "add", "--local", "-d", "server", url], origin, env)
    sh([BIN / "dvc", "remote", "modify", "--local", "server", "keyfile", key], origin, env)
    publish(origin, env, "measured here, shared over ssh")
    pushed = [p for p in store.rglob("*") if p.is_file()]
    assert pushed, "nothing reached the server"

    sh(["git", "clone", "-q", origin, clone], tmp_path, env)
    env = dict(env, RTSTUDY_ROOT=str(clone))
    sh([BIN / "dvc", "remote", "add", "--local", "-d", "server", url], clone, env)
    sh([BIN / "dvc", "remote", "modify", "--local", "server", "keyfile", key], clone, env)
    sh([*MAKE, "pull"], clone, make_env(env))
    cells = list((clone / "data" / "raw").glob("*/*/smoke/*/cell.json"))
    assert len(cells) == len(list((origin / "data" / "raw").glob("*/*/smoke/*/cell.json")))
    # What a clone renders from pulled data is tests/test_sharing.py's: the same files here.
    assert files(clone / "data" / "raw").keys() == files(origin / "data" / "raw").keys()


def add_server(dest: Path, env: dict, url: str, key: Path) -> None:
    """The steps of docs/sharing-data.md: the shared remote as default, the key in config.local."""
    sh([BIN / "dvc", "remote", "add", "--local", "-d", "server", url], dest, env)
    sh([BIN / "dvc", "remote", "modify", "--local", "server", "keyfile", key], dest, env)


def test_two_hosts_exchange_datasets_through_ssh_with_data_import(server, measured_project,
                                                                  checkout_copy, tmp_path):
    """Colleague A (this host) and colleague B (another hostname, so another host id) each
    measure and push to one SSH remote; B imports A's data by A's git repository, A imports
    B's from the remote alone; each then holds both hosts, neither dvc.lock conflicts, and
    A's report shows both."""
    port, key, home, store = server
    src, env, _ = measured_project
    url = f"ssh://root@127.0.0.1:{port}{store}"
    a = tmp_path / "a"
    a_env = dict(copy_project(src, a), HOME=str(home))
    add_server(a, a_env, url, key)
    publish(a, a_env, "A: measured")

    # B: a fresh checkout measuring E3 at smoke size under a hostname of its own (a UTS
    # namespace): the study sees another host, with its own host id.
    b, b_env = checkout_copy("colleague-b")
    b_env = dict(b_env, HOME=str(home))
    git_repository(b, b_env, "B")
    sh([BIN / "rtstudy", "params", "use", "smoke"], b, b_env)
    add_server(b, b_env, url, key)
    with MEASURING:  # only while B measures: the rest of this test may run beside a measurement
        sh(["unshare", "--uts", "sh", "-c", f"hostname colleague-b && exec {BIN / 'dvc'} repro "
            "e3_overhead"], b, b_env, timeout=900)
    sh([*MAKE, "push"], b, make_env(b_env))
    sh(["git", "add", "-A"], b, b_env)
    sh(["git", "commit", "-qm", "B: measured"], b, b_env)

    a_hosts = set(data.hosts("smoke", root=a / "data")["host_id"])
    b_hosts = set(data.hosts("smoke", root=b / "data")["host_id"])
    assert a_hosts and b_hosts and not a_hosts & b_hosts, (a_hosts, b_hosts)

    # B imports A by A's repository (a clone of it: A's dvc.lock, none of A's data), the data
    # coming over SSH from B's own remote; A imports B's from the remote alone.
    a_repo = tmp_path / "a-repo"
    sh(["git", "clone", "-q", a, a_repo], tmp_path, a_env)
    imports = {b: [a_repo, "--remote", "server"], a: ["remote:server"]}
    for dest, dest_env in ((b, b_env), (a, a_env)):
        lock = (dest / "dvc.lock").read_text()
        sh([BIN / "rtstudy", "data", "import", *imports[dest]], dest, dest_env)
        assert (dest / "dvc.lock").read_text() == lock, "importing changed dvc.lock"
        status = sh(["git", "status", "--porcelain"], dest, dest_env).stdout
        assert not [line for line in status.splitlines() if line[:2] in CONFLICTS], status
        sh(["git", "add", "data/imported"], dest, dest_env)
        sh(["git", "commit", "-qm", "imported a colleague's data"], dest, dest_env)
        assert set(data.hosts("smoke", root=dest / "data")["host_id"]) == a_hosts | b_hosts
    # The imported datasets reach the report (rendered once: both imports file their
    # datasets the same way, under data/imported/).
    sh([BIN / "rtstudy", "report"], a, a_env, timeout=900)
    html = (a / "report" / "report.html").read_text()
    for host_id in a_hosts | b_hosts:
        assert host_id in html, f"host {host_id} is not in A's report"
