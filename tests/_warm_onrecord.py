"""A warm ``onrecord`` for the tests' command runs: a process that has imported what
every command imports, and forks a child for each command line sent to it.

The suite runs the real ``onrecord`` command some 1,700 times (verify, show, gate, run,
...), and each one spent ~0.15 s of CPU importing Python, rich and onrecord before
doing ~0.05 s of work: a fifth of the suite's CPU on two cores. A child forked from
this server skips that, and is still a real process: it gets the test's pipes as its
stdin, stdout and stderr, its working directory, its environment and its command line,
runs the console script's own code as ``__main__``, and exits (or dies of a signal) as
the command would, with its own exit code.

What a fork cannot give is left to a fresh process (``tests/cli_process.py`` decides):
an environment that changes how Python starts (``PYTHON*`` variables other than
``PYTHONPATH``, the locale, a ``sitecustomize`` on the path), and every test of what
the command imports or how it starts, which runs the script itself. Nothing imported
here changes what a command does: NumPy, Gymnasium, asyncio and SQLite, which
onrecord's code asks about or needs the first import of, are not imported.

Run as ``python tests/_warm_onrecord.py SOCKET``; it ends when its stdin closes (the
test worker that started it ended). Standalone on purpose: nothing of the tests is
imported into the commands' processes.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import select
import signal
import socket
import sys
import types

# What the console script and the commands that the tests run most import (the rest
# each command imports itself, as a fresh process would).
WARM = (
    "onrecord.cli.main",
    "onrecord.cli._parser",
    "onrecord.cli.verify",
    "onrecord.cli.show",
    "onrecord.cli.gate",
    "onrecord.cli.compare",
    "onrecord.cli.report",
    "onrecord.cli.regrade",
    "onrecord.cli.run",
)
COLD = ("numpy", "gymnasium", "asyncio", "sqlite3")
"""Imported by some commands only, and asked about by onrecord (``onrecord._loaded``) or
changing what it does once loaded: a command must import them itself."""
_MAX_FDS = 3


def main(socket_path: str) -> dict[str, object] | None:
    """Serve until the worker goes; in a forked child, the request to become."""
    for name in WARM:
        __import__(name)
    warm = [name for name in COLD if name in sys.modules]
    if warm:  # a change to onrecord's imports: the children would not be faithful
        raise SystemExit(f"the warm onrecord imported {warm}; leave them to the commands")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    os.close(os.pidfd_open(os.getpid()))  # how children are waited for (Linux 5.3): or no "ready"
    print("ready", flush=True)
    return _serve(listener)


def _serve(listener: socket.socket) -> dict[str, object] | None:
    children: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, connection)
    while True:
        ready, _, _ = select.select([0, listener.fileno(), *children], [], [])
        if 0 in ready and not os.read(0, 4096):
            return None  # the test worker ended
        for pidfd in [fd for fd in ready if fd in children]:
            pid, connection = children.pop(pidfd)
            os.close(pidfd)
            code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            _answer(connection, f"exit {code}\n")
            connection.close()
        if listener.fileno() not in ready:
            continue
        connection, _ = listener.accept()
        message, descriptors = _receive(connection)
        pid = os.fork()
        if pid == 0:  # the child: leave the server behind
            listener.close()
            connection.close()
            for pidfd, (_, other) in children.items():
                os.close(pidfd)
                other.close()
            return {**json.loads(message), "fds": descriptors}
        for fd in descriptors:
            os.close(fd)
        _answer(connection, f"pid {pid}\n")
        children[os.pidfd_open(pid)] = (pid, connection)


def _receive(connection: socket.socket) -> tuple[bytes, list[int]]:
    chunks: list[bytes] = []
    descriptors: list[int] = []
    while not chunks or not chunks[-1].endswith(b"\n"):
        fds = array.array("i")
        data, ancillary, _, _ = connection.recvmsg(
            1 << 20, socket.CMSG_LEN(_MAX_FDS * fds.itemsize)
        )
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
                descriptors.extend(fds)
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks), descriptors


def _answer(connection: socket.socket, line: str) -> None:
    with contextlib.suppress(OSError):  # the test gave up waiting (a timeout)
        connection.sendall(line.encode())


def become(request: dict[str, object]) -> types.CodeType:
    """Make this forked child the command's process; the console script's code to run."""
    stdin, stdout, stderr = request["fds"]  # type: ignore[misc]
    for target, fd in ((0, stdin), (1, stdout), (2, stderr)):
        os.dup2(fd, target)
    for fd in {stdin, stdout, stderr} - {0, 1, 2}:
        os.close(fd)
    os.chdir(str(request["cwd"]))
    os.environ.clear()
    os.environ.update(request["env"])  # type: ignore[arg-type]
    if "tempfile" in sys.modules:  # it caches TMPDIR on first use
        sys.modules["tempfile"].tempdir = None
    argv = [str(word) for word in request["argv"]]  # type: ignore[attr-defined]
    sys.argv = argv
    sys.path[:] = [os.path.dirname(argv[0]), *_python_path(), *_BASE_PATH]
    signal.signal(signal.SIGINT, signal.default_int_handler)
    script = types.ModuleType("__main__")
    script.__file__ = argv[0]
    sys.modules["__main__"] = script
    with open(argv[0], encoding="utf-8") as source:
        return compile(source.read(), argv[0], "exec")


def _python_path() -> list[str]:
    """``PYTHONPATH``'s entries as Python puts them on ``sys.path``: absolute, in order,
    each once (none for an empty or unset one)."""
    words = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    return list(dict.fromkeys(os.path.abspath(word) for word in words if word))


# The path a fresh interpreter has past the script's folder and PYTHONPATH (the server
# is started without PYTHONPATH, so its own is exactly that).
_BASE_PATH = list(sys.path[1:])


if __name__ == "__main__":
    _request = main(sys.argv[1])
    if _request is None:
        raise SystemExit(0)
    _code = become(_request)
    del _request
    exec(_code, sys.modules["__main__"].__dict__)  # the console script itself
