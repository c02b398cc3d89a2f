"""Look at an HTML page the way a reader does: in headless Chromium.

Drives Debian's ``chromium`` over the DevTools protocol (a websocket on
localhost): loads the page, collects console errors and uncaught exceptions,
checks that every image decoded, and takes a screenshot of the first screen.
The report's test and ``benchmarks/report_time.py`` use it.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import websocket  # websocket-client

from rtstudy import sysdeps
from rtstudy.process import end_process

# Every image in the page: how many, and which did not decode (empty src or no pixels).
_IMAGES_JS = """JSON.stringify({
  total: document.images.length,
  broken: Array.from(document.images)
    .filter(i => !(i.complete && i.naturalWidth > 0))
    .map(i => (i.currentSrc || i.src || '').slice(0, 80))
})"""


class BrowserError(RuntimeError):
    """Chromium is missing or did not answer."""


@dataclass
class PageCheck:
    """What a reader's browser saw: images, console errors, the first screen."""

    title: str
    images: int
    broken_images: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    screenshot: Path | None = None


def find_chromium() -> str:
    """The chromium executable; raises :class:`BrowserError` naming the fix if absent."""
    path = sysdeps.which("chromium")  # or chromium-browser, google-chrome
    if path:
        return path
    raise BrowserError(sysdeps.advice(sysdeps.detect(), "chromium", root=os.geteuid() == 0)
                       + " (`make test` installs it as root where a package has it)")


class _DevTools:
    """A minimal DevTools client: numbered commands, events collected while waiting."""

    def __init__(self, url: str, timeout_s: float):
        self.ws = websocket.create_connection(url, timeout=timeout_s, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict] = []

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise BrowserError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_for(self, method: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not any(e.get("method") == method for e in self.events):
            if time.monotonic() > deadline:
                raise BrowserError(f"no {method} within {timeout_s:.0f} s")
            self.events.append(json.loads(self.ws.recv()))

    def close(self) -> None:
        self.ws.close()


def _console_errors(events: list[dict]) -> list[str]:
    errors = []
    for e in events:
        method, p = e.get("method"), e.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p["args"]))
        elif method == "Runtime.exceptionThrown":
            errors.append(p["exceptionDetails"].get("text", "uncaught exception"))
        elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
            errors.append(f"{p['entry'].get('text', '')} {p['entry'].get('url', '')}".strip())
    return errors


def check_page(html: Path, screenshot: Path | None = None, width: int = 1366, height: int = 768,
               timeout_s: float = 60.0) -> PageCheck:
    """Open ``html`` in headless Chromium and report what a reader would see.

    Parameters
    ----------
    html : Path
        The page to open (a local file).
    screenshot : Path, optional
        Where to write a PNG of the first screen (``width`` × ``height`` px).
    width, height : int
        The window in CSS pixels; the default is a common laptop screen.
    timeout_s : float
        Bound on Chromium's start and on the page load, in seconds.

    Returns
    -------
    PageCheck
    """
    html = Path(html).resolve()
    if not html.is_file():
        raise FileNotFoundError(f"{html}: no such page (render it with `make report`)")
    profile = Path(tempfile.mkdtemp(prefix="rtstudy-chromium-"))
    # Chromium's sandbox refuses to run as root (how the study runs real-time work);
    # any other user keeps it.
    no_sandbox = ["--no-sandbox"] if os.geteuid() == 0 else []
    proc = subprocess.Popen(
        [find_chromium(), "--headless", *no_sandbox, "--disable-gpu", "--no-first-run",
         "--disable-extensions", "--remote-debugging-address=127.0.0.1",
         "--remote-debugging-port=0", f"--user-data-dir={profile}",
         f"--window-size={width},{height}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout_s
        while not (port_file.is_file() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise BrowserError(f"chromium did not start (exit status {proc.poll()})")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout_s) as r:
            pages = [t for t in json.load(r) if t.get("type") == "page"]
        tools = _DevTools(pages[0]["webSocketDebuggerUrl"], timeout_s)
        try:
            for domain in ("Page", "Runtime", "Log"):
                tools.call(f"{domain}.enable")
            tools.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                       deviceScaleFactor=1, mobile=False)
            tools.call("Page.navigate", url=html.as_uri())
            tools.wait_for("Page.loadEventFired", timeout_s)
            images = json.loads(tools.call("Runtime.evaluate", expression=_IMAGES_JS,
                                           returnByValue=True)["result"]["value"])
            title = tools.call("Runtime.evaluate", expression="document.title",
                               returnByValue=True)["result"]["value"]
            if screenshot is not None:
                shot = tools.call("Page.captureScreenshot", format="png")
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                screenshot.write_bytes(base64.b64decode(shot["data"]))
            return PageCheck(title=title, images=images["total"], broken_images=images["broken"],
                             console_errors=_console_errors(tools.events), screenshot=screenshot)
        finally:
            tools.close()
    finally:
        end_process(proc)
        shutil.rmtree(profile, ignore_errors=True)
