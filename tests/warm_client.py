"""Runs the ``onrecord`` console script as ``subprocess.run(..., capture_output=True,
text=True)`` does, in a child of the warm server (``tests/_warm_onrecord.py``) when that
child is the same as a fresh process, else in a fresh process.

One server per test worker, started on first use and ended with the worker. A test of
how ``onrecord`` starts or what it imports runs the script itself (``subprocess``), and
``ONRECORD_TESTS_EXEC=1`` sends every command to a fresh process, for a run of the suite
exactly as before.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import json
import locale
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

SCRIPT = Path(sys.executable).parent / "onrecord"
_SERVER_SCRIPT = Path(__file__).with_name("_warm_onrecord.py")


def run_onrecord(
    args: Sequence[str], *, env: Mapping[str, str], cwd: Path | None, timeout: float
) -> subprocess.CompletedProcess[str]:
    """``onrecord ARGS`` with ``env`` in ``cwd``: its exit code and what it printed."""
    argv = [str(SCRIPT), *args]
    server = None if _needs_fresh_process(env) else _Server.get()
    done = (
        None
        if server is None
        else server.run(argv, env=env, cwd=cwd or Path.cwd(), timeout=timeout)
    )
    if done is None:
        if server is not None:  # it failed: say so once, and start every command afresh
            _Server.fail("it did not answer")
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd, env=env
        )
    return done


def _needs_fresh_process(env: Mapping[str, str]) -> bool:
    """Whether Python would start differently from the server with ``env``."""
    if env.get("ONRECORD_TESTS_EXEC", os.environ.get("ONRECORD_TESTS_EXEC")):
        return True
    for key in {*env, *_BASE_ENV}:
        starts_python = key.startswith("PYTHON") and key not in _READ_LATER
        if (starts_python or key.startswith("LC_") or key in ("LANG", "LANGUAGE")) and env.get(
            key
        ) != _BASE_ENV.get(key):
            return True
    entries = [Path(entry) for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    return any(
        (entry / name).exists()
        for entry in entries
        for name in ("sitecustomize.py", "usercustomize.py")
    )


_READ_LATER = frozenset({"PYTHONPATH", "PYTHONBREAKPOINT"})
"""``PYTHON*`` variables read after start-up: the path (the child sets ``sys.path`` from
it) and ``breakpoint()``'s hook (which Ray sets in the tests' own process)."""
_BASE_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
"""The environment the suite started with (this module is imported while the tests are
collected, before any test changes it): the server's, and what a command's environment
is compared with."""


class _Server:
    """One of this worker's two warm servers, taken in turn: each child has its server's
    hash seed (``str`` hashes, hence set order), so two commands in a row get two seeds,
    as two fresh processes do, and a test that a command's output does not depend on
    them can still fail."""

    _servers: ClassVar[list[_Server | None]] = [None, None]
    _turn = 0
    _failed = False

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="orw-", dir=_short_tmp())
        self.path = os.path.join(self.folder, "s")
        self.pid = os.getpid()
        # Pipes, as the tests give the commands: the server's sys.stdout and sys.stderr
        # become the children's, and a text stream keeps what it found at its start
        # (whether it can seek, for one).
        self.process = subprocess.Popen(
            [sys.executable, str(_SERVER_SCRIPT), self.path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.folder,
            env=_BASE_ENV,
        )
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        if self.process.stdout.readline() != b"ready\n":
            self.process.kill()
            raise RuntimeError(self.process.stderr.read().decode(errors="replace"))
        atexit.register(self.stop)

    @classmethod
    def get(cls) -> _Server | None:
        """The server whose turn it is (started if need be), or None if none can run."""
        if cls._failed:
            return None
        turn = cls._turn = (cls._turn + 1) % len(cls._servers)
        server = cls._servers[turn]
        if server is not None and server.pid == os.getpid() and server.process.poll() is None:
            return server
        try:
            cls._servers[turn] = server = cls()
        except (OSError, RuntimeError) as error:
            cls.fail(str(error))
            return None
        return server

    @classmethod
    def fail(cls, why: str) -> None:
        """No warm server for this worker from now on."""
        cls._failed = True
        for server in cls._servers:
            if server is not None:
                server.stop()
        cls._servers = [None, None]
        print(f"warm onrecord unavailable, commands start afresh: {why}", file=sys.stderr)

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            assert self.process.stdin is not None
            self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)

    def run(
        self, argv: list[str], *, env: Mapping[str, str], cwd: Path, timeout: float
    ) -> subprocess.CompletedProcess[str] | None:
        """The command's run, or None if the server could not start it (then nothing
        of it ran)."""
        deadline = time.monotonic() + timeout
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            request = {"argv": argv, "env": dict(env), "cwd": str(cwd)}
            answers = connection.makefile("rb")
            try:
                try:
                    connection.connect(self.path)
                    _send(connection, request, out_write, err_write)
                finally:  # the child holds them now (or nobody will)
                    os.close(out_write)
                    os.close(err_write)
                pid = int(answers.readline().split()[1])
            except (OSError, ValueError, IndexError):
                os.close(out_read)
                os.close(err_read)
                return None
            try:
                output = _read_both(out_read, err_read, deadline)
            except subprocess.TimeoutExpired as expired:
                os.kill(pid, signal.SIGKILL)
                answers.readline()
                raise subprocess.TimeoutExpired(
                    argv, timeout, expired.output, expired.stderr
                ) from None
            connection.settimeout(max(deadline - time.monotonic(), 0.1))
            ended = answers.readline().split()
            if len(ended) != 2:  # the server died while the command ran
                raise RuntimeError(f"the warm server ended during {argv[1:]}: no exit code")
            code = int(ended[1])
        return subprocess.CompletedProcess(argv, code, _text(output[0]), _text(output[1]))


def _send(connection: socket.socket, request: dict[str, object], out: int, err: int) -> None:
    message = json.dumps(request).encode() + b"\n"
    stdin = 0 if _is_open(0) else os.open(os.devnull, os.O_RDONLY)
    fds = array.array("i", [stdin, out, err])
    sent = connection.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
    connection.sendall(message[sent:])
    if stdin != 0:
        os.close(stdin)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _read_both(out: int, err: int, deadline: float) -> tuple[bytes, bytes]:
    """Everything written to the two pipes until both are closed (by the command and
    every process it started), as ``communicate`` reads them."""
    chunks: dict[int, list[bytes]] = {out: [], err: []}
    with selectors.DefaultSelector() as selector:
        for fd in chunks:
            selector.register(fd, selectors.EVENT_READ)
        try:
            while selector.get_map():
                left = deadline - time.monotonic()
                events = selector.select(left) if left > 0 else []
                if not events:
                    raise subprocess.TimeoutExpired(
                        "onrecord", 0, b"".join(chunks[out]), b"".join(chunks[err])
                    )
                for key, _ in events:
                    data = os.read(key.fd, 1 << 16)
                    if data:
                        chunks[key.fd].append(data)
                    else:
                        selector.unregister(key.fd)
        finally:
            os.close(out)
            os.close(err)
    return b"".join(chunks[out]), b"".join(chunks[err])


def _text(data: bytes) -> str:
    """As ``text=True`` decodes: the locale's encoding, universal newlines."""
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


def _short_tmp() -> str:
    """A Unix socket's path must fit in 108 bytes."""
    return "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
