"""Look at a page the way a reader does: in headless Chromium.

Drives Debian's ``chromium`` over the DevTools protocol (a websocket on
localhost). :func:`check_page` loads an HTML file, collects console errors and
uncaught exceptions, checks that every image decoded, and takes a screenshot of
the first screen (the report's test and ``benchmarks/report_time.py``);
:class:`Browser` does the steps one by one on any URL, for a page that has to be
worked first (JupyterLab running a notebook, in ``tests/test_explore.py``).
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
from typing import Any

import websocket  # websocket-client

from rtstudy.machine import sysdeps
from rtstudy.measure.process import end_process

# Every image in the page: how many, and which did not decode (empty src or no pixels).
_IMAGES_JS = """JSON.stringify({
  total: document.images.length,
  broken: Array.from(document.images)
    .filter(i => !(i.complete && i.naturalWidth > 0))
    .map(i => (i.currentSrc || i.src || '').slice(0, 80))
})"""


# The words a reader sees without scrolling: every text node with a box in the first screen
# (a closed <details>'s body has none).
_FIRST_SCREEN_JS = """(() => {
  const out = [], walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const range = document.createRange(); range.selectNodeContents(node);
    if (Array.from(range.getClientRects()).some(r => r.top < innerHeight && r.bottom > 0
                                                  && r.width > 0))
      out.push(node.textContent);
  }
  return out.join(" ").replace(/\\s+/g, " ");
})()"""


class BrowserError(RuntimeError):
    """Chromium is missing or did not answer."""


@dataclass
class PageCheck:
    """What a reader's browser saw: images, console errors, the page's height and the first
    screen (its words, and a picture where asked), all in CSS pixels of the window."""

    title: str
    images: int
    broken_images: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    screenshot: Path | None = None
    height: int = 0
    first_screen: str = ""


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

    def call(self, method: str, **params) -> dict[str, Any]:
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


class Browser:
    """Headless Chromium with one page, driven step by step; a context manager.

    Parameters
    ----------
    width, height : int
        The window in CSS pixels.
    timeout_s : float
        Bound on Chromium's start, on a page load and on one DevTools command, in seconds.

    Examples
    --------
    >>> with Browser() as page:                                    # doctest: +SKIP
    ...     page.open("http://127.0.0.1:8888/lab?token=...")
    ...     page.wait_until("document.querySelector('.jp-Notebook') !== null", 60)
    ...     page.screenshot(Path("lab.png"))
    """

    def __init__(self, width: int = 1366, height: int = 768, timeout_s: float = 60.0):
        self.width, self.height, self.timeout_s = width, height, timeout_s
        self._profile: Path | None = None
        self._proc: subprocess.Popen | None = None
        self._tools: _DevTools | None = None

    def __enter__(self) -> "Browser":
        self._profile = Path(tempfile.mkdtemp(prefix="rtstudy-chromium-"))
        # Chromium's sandbox refuses to run as root (how the study runs real-time work);
        # any other user keeps it.
        no_sandbox = ["--no-sandbox"] if os.geteuid() == 0 else []
        self._proc = subprocess.Popen(
            [find_chromium(), "--headless", *no_sandbox, "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", f"--user-data-dir={self._profile}",
             f"--window-size={self.width},{self.height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            port_file = self._profile / "DevToolsActivePort"
            deadline = time.monotonic() + self.timeout_s
            while not (port_file.is_file() and port_file.read_text().strip()):
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    raise BrowserError(f"chromium did not start (exit status {self._proc.poll()})")
                time.sleep(0.1)
            port = int(port_file.read_text().split()[0])
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list",
                                        timeout=self.timeout_s) as r:
                pages = [t for t in json.load(r) if t.get("type") == "page"]
            self._tools = _DevTools(pages[0]["webSocketDebuggerUrl"], self.timeout_s)
            for domain in ("Page", "Runtime", "Log"):
                self._tools.call(f"{domain}.enable")
            self._tools.call("Emulation.setDeviceMetricsOverride", width=self.width,
                             height=self.height, deviceScaleFactor=1, mobile=False)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self._tools is not None:
            self._tools.close()
            self._tools = None
        if self._proc is not None:
            end_process(self._proc)
            self._proc = None
        if self._profile is not None:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = None

    def open(self, url: str) -> None:
        """Load ``url`` and wait for its load event."""
        tools = self._tools
        tools.events = [e for e in tools.events if e.get("method") != "Page.loadEventFired"]
        tools.call("Page.navigate", url=url)
        tools.wait_for("Page.loadEventFired", self.timeout_s)

    def evaluate(self, expression: str):
        """The value of a JavaScript ``expression`` in the page (JSON-able values only)."""
        result = self._tools.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            thrown = details.get("exception", {}).get("description", details["text"])
            raise BrowserError(f"{expression[:80]!r} threw: {thrown}")
        return result["result"].get("value")

    def wait_until(self, expression: str, timeout_s: float, poll_s: float = 0.5):
        """Evaluate ``expression`` until it is truthy; return that value.

        Raises
        ------
        BrowserError
            Still falsy (or throwing) after ``timeout_s`` seconds; the message has the last
            value or error.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                value, last = self.evaluate(expression), None
            except BrowserError as exc:
                value, last = None, exc
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"after {timeout_s:.0f} s, {expression[:120]!r} is still "
                                   f"{last or repr(value)}")
            time.sleep(poll_s)

    def screenshot(self, path: Path) -> Path:
        """Write a PNG of what the window shows to ``path``."""
        shot = self._tools.call("Page.captureScreenshot", format="png")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries since Chromium started."""
        return _console_errors(self._tools.events)


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
        With the page's ``height`` (its collapsed parts closed) and the words of its
        ``first_screen``.
    """
    html = Path(html).resolve()
    if not html.is_file():
        raise FileNotFoundError(f"{html}: no such page (render it with `make report`)")
    with Browser(width, height, timeout_s) as page:
        page.open(html.as_uri())
        images = json.loads(page.evaluate(_IMAGES_JS))
        title = page.evaluate("document.title")
        if screenshot is not None:
            page.screenshot(screenshot)
        return PageCheck(title=title, images=images["total"], broken_images=images["broken"],
                         console_errors=page.console_errors(), screenshot=screenshot,
                         height=int(page.evaluate("document.documentElement.scrollHeight")),
                         first_screen=page.evaluate(_FIRST_SCREEN_JS))


if __name__ == "__main__":  # python -m rtstudy.report.browser PAGE [PNG]: `make screenshots`
    import sys

    if not 2 <= len(sys.argv) <= 3:
        sys.exit("usage: python -m rtstudy.report.browser PAGE.html [FIRST_SCREEN.png]")
    check = check_page(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) == 3 else None)
    print(f"{sys.argv[1]}: {check.images} images ({len(check.broken_images)} broken), "
          f"{len(check.console_errors)} console errors, {check.height} px high "
          f"({check.height / 768:.1f} screens of 768 px)"
          + (f"; first screen: {check.screenshot}" if check.screenshot else ""))
    sys.exit(1 if check.broken_images or check.console_errors else 0)
