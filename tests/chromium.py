"""One headless Chromium per test worker, driven over the DevTools protocol on a pipe.

``chromium --headless --dump-dom PAGE`` starts a whole browser for every page: about
1.3 s on the 2-core CI machine, and the suite opens a hundred-odd pages. Here one browser
is started on first use (``--remote-debugging-pipe``: messages on file descriptors 3 and
4, no port, no extra package) and every page opens in a browser context of its own
(nothing stored by one page is seen by the next, as with a fresh ``--user-data-dir``),
in a window of the size asked for; once loaded, its DOM is read as ``--dump-dom`` reads
it. A browser that died is started again on the next page.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MISSING = (
    "headless Chromium is not installed: apt-get install chromium "
    "(or run scripts/install-system-deps.sh)"
)
_SERIALIZE = (
    "(document.doctype ? new XMLSerializer().serializeToString(document.doctype) + '\\n' : '')"
    " + document.documentElement.outerHTML"
)
"""The page as ``--dump-dom`` prints it: its doctype on a line, then the DOM."""
_UNTIL = (
    "new Promise(done => { const check = () => (CONDITION) ? done(true) : setTimeout(check, 10);"
    " check(); })"
)
"""Resolves once CONDITION holds, looking every 10 ms."""
_TIMEOUT = 90.0
_SCRATCH = tempfile.gettempdir()
"""Where the browser's profile goes: the machine's temporary directory as this module was
imported, never the ``TMPDIR`` of whichever test happened to start the browser."""


class BrowserError(RuntimeError):
    """The browser refused a command or did not answer in time."""


class _Browser:
    def __init__(self, executable: str) -> None:
        self._profile = tempfile.mkdtemp(prefix="chromium-", dir=_SCRATCH)
        to_browser, self._in = _high(os.pipe())  # the browser reads its commands on fd 3
        self._out, from_browser = _high(os.pipe())  # and writes its answers on fd 4
        self._process = subprocess.Popen(
            [
                "bash",
                "-c",
                f'exec "$0" "$@" 3<&{to_browser} 4>&{from_browser}'
                f" {to_browser}<&- {from_browser}>&-",
                executable,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={self._profile}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            pass_fds=(to_browser, from_browser),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "TMPDIR": self._profile},
            start_new_session=True,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    def alive(self) -> bool:
        return self._process.poll() is None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._in)
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        with contextlib.suppress(OSError):
            os.close(self._out)
        shutil.rmtree(self._profile, ignore_errors=True)

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """The result of one command (of the page ``session`` if given)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._in, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + _TIMEOUT
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            self._events.append(answer)

    def wait_for(self, method: str, session: str) -> dict[str, Any]:
        """The first event ``method`` of the page ``session`` (kept or still to come)."""
        deadline = time.monotonic() + _TIMEOUT
        while True:
            for event in self._events:
                if event.get("method") == method and event.get("sessionId") == session:
                    self._events.remove(event)
                    return event
            self._events.append(self._read(deadline))

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            # poll, not select: a long-lived test worker has descriptors past select's 1024.
            poller = select.poll()
            poller.register(self._out, select.POLLIN)
            if left <= 0 or not poller.poll(left * 1000):
                raise BrowserError(f"Chromium did not answer within {_TIMEOUT:g} s")
            chunk = os.read(self._out, 1 << 20)
            if not chunk:
                raise BrowserError("Chromium closed its DevTools pipe (it died)")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def dom(self, url: str, window: tuple[int, int], until: str | None) -> str:
        context = self.send("Target.createBrowserContext")["browserContextId"]
        try:
            target = self.send("Target.createTarget", url="about:blank", browserContextId=context)
            session = self.send("Target.attachToTarget", targetId=target["targetId"], flatten=True)[
                "sessionId"
            ]
            self.send("Page.enable", session)
            self.send(
                "Emulation.setDeviceMetricsOverride",
                session,
                width=window[0],
                height=window[1],
                deviceScaleFactor=1,
                mobile=False,
            )
            navigated = self.send("Page.navigate", session, url=url)
            if navigated.get("errorText"):
                raise BrowserError(f"{url}: {navigated['errorText']}")
            self.wait_for("Page.loadEventFired", session)
            if until is not None:
                self._evaluate(session, _UNTIL.replace("CONDITION", until))
            value = self._evaluate(session, _SERIALIZE)
            self._events.clear()  # nothing waits across pages: none of them is wanted
            return str(value)
        finally:
            self.send("Target.disposeBrowserContext", browserContextId=context)

    def _evaluate(self, session: str, expression: str) -> Any:
        answer = self.send(
            "Runtime.evaluate",
            session,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in answer:
            raise BrowserError(f"{expression[:80]}: {answer['exceptionDetails']}")
        return answer["result"].get("value")


def _high(pipe: tuple[int, int]) -> tuple[int, int]:
    """The pipe's ends moved above 9: the shell moving them to 3 and 4 must not close
    an end that already was 3 or 4."""
    moved = tuple(fcntl.fcntl(end, fcntl.F_DUPFD_CLOEXEC, 10) for end in pipe)
    for end in pipe:
        os.close(end)
    return moved[0], moved[1]


_browser: _Browser | None = None


def dump_dom(
    page: Path | str,
    *,
    window: str | None = None,
    fragment: str = "",
    until: str | None = None,
) -> str:
    """The DOM of ``page`` (a file, or a URL) opened at ``#fragment`` if given, in a
    window of ``window`` ("WIDTH,HEIGHT") pixels (800 by 600 if not given, headless
    Chromium's own), once loaded and, if ``until`` is given, once that JavaScript
    condition holds (for a page's timers): what ``--dump-dom`` prints."""
    global _browser
    if CHROMIUM is None:
        raise BrowserError(MISSING)
    if _browser is None or not _browser.alive():
        if _browser is None:
            atexit.register(_close)
        else:
            _browser.close()
        _browser = _Browser(CHROMIUM)
    width, height = (int(n) for n in (window or "800,600").split(","))
    return _browser.dom(url_of(page) + (f"#{fragment}" if fragment else ""), (width, height), until)


def url_of(page: Path | str) -> str:
    return page.as_uri() if isinstance(page, Path) else page


def _close() -> None:
    global _browser
    if _browser is not None:
        _browser.close()
        _browser = None
