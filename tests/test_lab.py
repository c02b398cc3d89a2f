"""`make lab`: JupyterLab on 127.0.0.1 with a token, running a notebook on the rtstudy kernel.

The server is started through the Makefile target on a free port with a known
token (``JUPYTER_TOKEN``), its kernel process writes into a temporary copy of
the project (``RTSTUDY_ROOT``), and E3's notebook runs cell by cell through the
server's websocket, as JupyterLab itself would run it. E3 at smoke size takes
about 15 s.
"""
from __future__ import annotations

import asyncio
import json
import secrets
import subprocess
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from helpers import end_group, free_port, wait_for_lab
from rtstudy import paths
from rtstudy.sdks import sdkroot

pytestmark = pytest.mark.server

STAMP = ".venv/.rtstudy-installed"
START_TIMEOUT_S = 90
CELL_TIMEOUT_S = 180



def listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, as in /proc/net/tcp*) with a socket listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, _, hex_port = fields[1].partition(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: TCP_LISTEN
                found.add(address)
    return found


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Report a redirect (to the login page, say) as its status instead of following it."""

    def redirect_request(self, *args, **kwargs):
        return None


class Lab:
    """A running ``make lab`` and how to talk to it."""

    def __init__(self, proc: subprocess.Popen, port: int, token: str, log: Path, project: Path):
        self.proc, self.port, self.token, self.log, self.project = proc, port, token, log, project
        self.base = f"http://127.0.0.1:{port}"

    def request(self, method: str, path: str, body: dict | None = None, token: str | None = None):
        """``(status, parsed JSON or None)``; never follows a redirect to the login page.

        ``token`` defaults to the server's; ``""`` sends no token at all.
        """
        token = self.token if token is None else token
        headers = {"Authorization": f"token {token}"} if token else {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(req, timeout=30) as resp:
                text = resp.read().decode()
                return resp.status, json.loads(text) if text else None
        except urllib.error.HTTPError as exc:
            return exc.code, None


@pytest.fixture(scope="module")
def lab(checkout_copy, tmp_path_factory):
    """``make lab`` on a free port, its kernels writing into a temporary project copy.

    The process group is terminated on teardown, whatever the test did.
    """
    dest, env = checkout_copy("lab-project")
    jupyter_home = tmp_path_factory.mktemp("jupyter")
    port, token = free_port(), secrets.token_urlsafe(24)
    env.update(JUPYTER_TOKEN=token,
               # No user configuration may weaken the server under test.
               JUPYTER_CONFIG_DIR=str(jupyter_home / "config"),
               JUPYTER_RUNTIME_DIR=str(jupyter_home / "runtime"))
    # Started from an outer `make test`, make's own variables would leak into this make.
    for name in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(name, None)
    log = jupyter_home / "lab.log"
    with open(log, "w") as out:
        # -o: the venv is set up; do not let an out-of-date stamp reinstall it mid-test.
        proc = subprocess.Popen(["make", "--no-print-directory", "-o", STAMP, "lab",
                                 f"LAB_PORT={port}"],
                                cwd=paths.root(), env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    server = Lab(proc, port, token, log, dest)
    try:
        wait_for_lab(proc, log, port, token, START_TIMEOUT_S)
        yield server
    finally:
        end_group(proc)


def test_lab_listens_on_localhost_only_and_prints_the_url_with_the_token(lab):
    addresses = listening_addresses(lab.port)
    # 0100007F is 127.0.0.1 in /proc/net/tcp's byte order; no wildcard, no IPv6 socket.
    assert addresses == {"0100007F"}, addresses
    assert f"http://127.0.0.1:{lab.port}/lab?token={lab.token}" in lab.log.read_text()


def test_the_root_url_opens_explore(lab):
    """The server's root URL, with the token, leads to explore.ipynb (``make lab`` prints
    that URL first)."""
    req = urllib.request.Request(f"{lab.base}/?token={lab.token}")
    try:
        with urllib.request.build_opener(_NoRedirect).open(req, timeout=30) as resp:
            status, location = resp.status, resp.headers.get("Location", "")
    except urllib.error.HTTPError as exc:
        status, location = exc.code, exc.headers.get("Location", "")
    assert 300 <= status < 400 and location.split("?")[0].endswith(
        "/lab/tree/notebooks/explore.ipynb"), (status, location)
    assert f"http://127.0.0.1:{lab.port}/lab/tree/notebooks/explore.ipynb?token={lab.token}" \
        in lab.log.read_text()


def test_lab_requires_the_token(lab):
    assert lab.request("GET", "/api/status")[0] == 200
    status, _ = lab.request("GET", "/api/status", token="")
    assert status in (401, 403) or 300 <= status < 400, status
    assert lab.request("GET", "/api/kernelspecs", token="wrong-" + lab.token)[0] in (401, 403)


def test_lab_offers_the_rtstudy_kernel(lab):
    status, specs = lab.request("GET", "/api/kernelspecs")
    assert status == 200
    assert "rtstudy" in specs["kernelspecs"]
    assert specs["default"] == "rtstudy"


async def execute_cells(lab: Lab, kernel_id: str, cells: list[str]) -> list[dict]:
    """Send each cell as an execute_request on the kernel's websocket; return the replies.

    The server's default (legacy) websocket protocol carries each Jupyter
    message as one JSON text frame with a ``channel`` key.
    """
    session = uuid.uuid4().hex
    url = f"ws://127.0.0.1:{lab.port}/api/kernels/{kernel_id}/channels?session_id={session}"
    conn = await asyncio.wait_for(websocket_connect(HTTPRequest(
        url, headers={"Authorization": f"token {lab.token}"})), timeout=30)
    replies = []
    try:
        for code in cells:
            msg_id = uuid.uuid4().hex
            conn.write_message(json.dumps({
                "channel": "shell",
                "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": session,
                           "username": "test", "version": "5.3", "date": ""},
                "parent_header": {}, "metadata": {}, "buffers": [],
                "content": {"code": code, "silent": False, "store_history": True,
                            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
            }))
            while True:
                raw = await asyncio.wait_for(conn.read_message(), timeout=CELL_TIMEOUT_S)
                assert raw is not None, "the kernel's websocket closed"
                msg = json.loads(raw)
                if (msg.get("msg_type") == "execute_reply"
                        and msg["parent_header"].get("msg_id") == msg_id):
                    replies.append(msg["content"])
                    break
    finally:
        conn.close()
    return replies


def test_a_notebook_runs_on_the_rtstudy_kernel_through_the_server(lab):
    notebook = json.loads((lab.project / "notebooks" / "experiment.ipynb").read_text())
    # Holoscan imports in the kernel's first cell, before anything of the study's ran.
    cells = ["import holoscan"] + ["".join(c["source"]) for c in notebook["cells"]
                                   if c["cell_type"] == "code"]
    # Kernel working directory: notebooks/, as when JupyterLab opens the notebook.
    status, kernel = lab.request("POST", "/api/kernels", {"name": "rtstudy", "path": "notebooks"})
    assert status == 201, status
    try:
        assert kernel["name"] == "rtstudy"
        replies = asyncio.run(execute_cells(lab, kernel["id"], cells))
    finally:
        lab.request("DELETE", f"/api/kernels/{kernel['id']}")
    failed = [(i, r.get("ename"), r.get("evalue")) for i, r in enumerate(replies)
              if r["status"] != "ok"]
    assert len(replies) == len(cells) and not failed, failed
    # The notebook's default profile is smoke and its data went to RTSTUDY_ROOT's copy.
    # One dataset per Holoscan version E3 runs on here (params.yaml sdk: 4.6 in the venv, 5.0
    # in its root where this host can build it), each plan measured whole.
    plans = list((lab.project / "data" / "raw" / "e3_overhead").glob("*/smoke/plan.json"))
    assert len(plans) == (1 if sdkroot.problems() else 2)
    for plan in plans:
        planned = {c["cell_id"] for c in json.loads(plan.read_text())["cells"]}
        assert planned and all((plan.parent / cid / "cell.json").is_file() for cid in planned)
