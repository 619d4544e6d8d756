"""The Ray executor's cluster: connecting to it, refusing one it cannot run on, and
saying why a run waits on it."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
from collections.abc import Iterator
from typing import Any

from onrecord.errors import InputError

__all__ = [
    "check_connected",
    "connect",
    "first_line",
    "require_cpus",
    "through_client",
    "waiting_message",
]

_CONNECT_TIMEOUT = 10.0
_CLIENT_PORT = "10001"
"""Ray Client's default port (``ray://host``)."""


def connect(ray: Any, address: str | None, runtime_env: dict[str, Any] | None) -> None:
    """``ray.init``, with its failures as bad input naming the address (exit 3)."""
    target, source = _target(address)
    where = f"connect to the Ray cluster at {target}" if target else "start or find a Ray cluster"
    if target:
        # Ray retries an address where nothing answers for about 13 minutes (20 tries of
        # 40 s), printing log lines: a plain TCP connection tells at once.
        _check_reachable(target, source)
    try:
        with _warnings_for_tasks_only(runtime_env) as tasks_env:
            ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=False,
                runtime_env=tasks_env,
            )
    except Exception as exc:
        # Ray raises ConnectionError (an OSError, which the CLI would report as "a
        # file"), ValueError, RuntimeError...: name the cluster and the usual causes.
        hint = (
            "; is the address right and the cluster up? (a cluster started with token "
            "authentication needs RAY_AUTH_MODE=token and its token here too)"
            if target
            else ""
        )
        raise InputError(f"could not {where}: {first_line(exc)}{hint}") from exc


@contextlib.contextmanager
def _warnings_for_tasks_only(runtime_env: dict[str, Any] | None) -> Iterator[Any]:
    """The ``runtime_env`` to start Ray with, while Ray's own processes are started
    without the caller's ``PYTHONWARNINGS``, which their tasks get instead.

    Ray's processes inherit the driver's environment, and with ``PYTHONWARNINGS=error``
    (a CI job's strict setting, meant for its own code) a deprecation warning in Ray's
    dashboard process ended it: a local cluster never started, and the run failed after
    30 s with "The current node timed out during startup"."""
    warnings = os.environ.pop("PYTHONWARNINGS", None)
    if warnings is None:
        yield runtime_env
        return
    tasks_env = dict(runtime_env or {})
    tasks_env["env_vars"] = {"PYTHONWARNINGS": warnings, **(tasks_env.get("env_vars") or {})}
    try:
        yield tasks_env
    finally:
        os.environ["PYTHONWARNINGS"] = warnings


def _target(address: str | None) -> tuple[str | None, str]:
    """The ``host:port`` (or ``ray://``) address ``ray.init(address)`` will connect to,
    if known, and where it came from; None when it starts a local cluster or resolves
    the address itself (``auto``, ``local``, other ``scheme://`` clients)."""
    if address is not None:
        return (None if address in ("auto", "local") else address), "the given address"
    if environ := os.environ.get("RAY_ADDRESS"):
        return (None if environ in ("auto", "local") else environ), "RAY_ADDRESS"
    try:  # the address a `ray start --head` on this machine left behind for ray.init()
        from ray._private.utils import read_ray_address

        last = read_ray_address()
    except Exception:  # Ray's private helper moved: Ray will find it (or not) itself
        return None, ""
    return (last or None), "left by the last `ray start` on this machine; `ray stop` clears it"


def _endpoint(address: str) -> tuple[str, str, int] | None:
    """``(kind, host, port)`` of ``host:port`` (kind ``gcs``) or ``ray://host[:port]``
    (kind ``ray``); None for another form (another client's URL, a typo)."""
    scheme, sep, rest = address.partition("://")
    if sep and scheme != "ray":
        return None
    hostport = rest if sep else address
    host, colon, port = hostport.rpartition(":")
    if not colon and sep:  # ray://host: Ray Client's default port
        host, port = hostport, _CLIENT_PORT
    host = host.strip("[]")  # [::1]:6379
    if not host or not port.isdigit():
        return None
    return ("ray" if sep else "gcs"), host, int(port)


def _check_reachable(target: str, source: str) -> None:
    scheme, sep, _ = target.partition("://")
    if sep and scheme != "ray":
        return  # another Ray client (its own URL format): let Ray connect
    endpoint = _endpoint(target)
    if endpoint is None:
        raise InputError(
            f"the Ray address {target!r} ({source}) is not host:port or ray://host:port"
        )
    _, host, port = endpoint
    try:
        socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InputError(
            f"no Ray cluster answers at {target} ({source}): {reason}; is the address "
            "right, the cluster up and its port reachable from here?"
        ) from exc


# -- a Ray this process had connected before ------------------------------------------


def check_connected(ray: Any, address: str | None) -> None:
    """Ray was connected in this process before the executor was made: refuse an
    ``address`` naming another cluster (it used to be ignored, the run going to the
    connected one). No address, or one naming the connected cluster, is fine."""
    if address is None:
        return
    requested, source = address, "the given address"
    if address == "auto":  # the cluster RAY_ADDRESS or the last `ray start` names
        target, source = _target(None)
        if target is None:
            return
        requested = target
    gcs, client = _connected(ray)
    if gcs is None and client is None:
        return  # Ray cannot tell where it is connected: as before
    if address == "local":  # a cluster on this machine
        have = _endpoint(gcs) if gcs is not None else None
        same = have is None or _is_local(have[1])
    else:
        same = _same_cluster(requested, gcs, client)
    if not same:
        current = f"ray://{client}" if client else gcs
        shown = address if requested == address else f"{address}, i.e. {requested} ({source})"
        raise InputError(
            f"Ray is already connected in this process to the cluster at {current}, not to "
            f"the one at {shown} this Ray executor was asked for (ray.init was called "
            "before, by your code or an executor not closed): call ray.shutdown() first "
            f"to run on {requested}, or leave the address out to run on the connected cluster"
        )


def through_client(ray: Any) -> bool:
    """Whether Ray is connected through Ray Client (``ray://``)."""
    try:
        return bool(ray.util.client.ray.is_connected())
    except Exception:  # no Ray Client in this Ray
        return False


def _connected(ray: Any) -> tuple[str | None, str | None]:
    """The GCS address of the cluster Ray is connected to and, through Ray Client, the
    client address (``host:port``); None where Ray cannot tell."""
    gcs = client = None
    try:
        gcs = str(ray.get_runtime_context().gcs_address) or None
    except Exception:
        gcs = None
    try:
        if through_client(ray):
            # Ray keeps the address a Ray Client connected to only privately.
            client = str(ray.util.client.ray.get_context().client_worker._conn_str) or None
    except Exception:
        client = None
    return gcs, client


def _same_cluster(requested: str, gcs: str | None, client: str | None) -> bool:
    want = _endpoint(requested)
    if want is None:
        return True  # another client's URL: nothing to compare it with
    kind, host, port = want
    if kind == "ray" and client is not None:
        have = _endpoint(f"ray://{client}")
        return have is None or (have[2] == port and _same_host(have[1], host))
    have = _endpoint(gcs) if gcs is not None else None
    if have is None:
        return True
    if kind == "ray":  # a driver's connection: Ray Client is served by the head node
        return _same_host(have[1], host)
    return have[2] == port and _same_host(have[1], host)


def _same_host(first: str, second: str) -> bool:
    """Whether two host names or IPs are one machine (127.0.0.1 and this machine's IP
    are: Ray reports the node's IP for a cluster reached at localhost)."""
    if first.lower() == second.lower():
        return True
    ones, others = _ips(first), _ips(second)
    if ones & others:
        return True
    return bool(ones and others) and all(map(_is_local, ones | others))


def _ips(host: str) -> set[str]:
    try:
        return {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return set()


def _is_local(host: str) -> bool:
    """Whether ``host`` (an IP, or a name) is this machine: a loopback address or one a
    socket can bind to."""
    for ip in _ips(host) if not _is_ip(host) else {host}:
        try:
            if ipaddress.ip_address(ip.split("%")[0]).is_loopback:
                continue
            family = socket.AF_INET6 if ":" in ip else socket.AF_INET
            with socket.socket(family) as probe:
                probe.bind((ip, 0))
        except (OSError, ValueError):
            return False
    return True


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    return True


# -- CPUs ------------------------------------------------------------------------------


def require_cpus(ray: Any) -> int:
    """The cluster's CPUs; a cluster without any is refused: each episode's task needs
    one, so the run would wait for one forever, silently."""
    cpus = float(ray.cluster_resources().get("CPU", 0))
    if cpus >= 1:
        return int(cpus)
    raise InputError(
        f"the Ray cluster at {_where(ray)} has no CPUs (ray.cluster_resources() lists "
        f"{cpus:g}), and each episode's task needs one, so the run would wait forever: "
        "start its nodes with CPUs (ray start --num-cpus N, not 0) or add a worker node; "
        "a cluster that adds nodes on demand (autoscaling from zero workers) must have "
        "one up first (ray.autoscaler.sdk.request_resources(num_cpus=1))"
    )


def waiting_message(
    ray: Any, waiting: int, seconds: float, *, started_known: bool = True
) -> str | None:
    """Why none of the ``waiting`` tasks of a run has started for ``seconds``: what the
    cluster lacks, from its resources now. Without ``started_known`` (Ray Client does
    not say when a task starts) it is that none finished: a word only when no CPU is
    free (the run's own long episodes may hold them), else None."""
    if not started_known:
        head = f"no Ray task of this run has finished in {seconds:.0f} s"
    elif waiting == 1:
        head = f"this run's Ray task (1 CPU) has not started in {seconds:.0f} s"
    else:
        head = f"none of this run's {waiting} Ray tasks (1 CPU each) has started in {seconds:.0f} s"
    try:
        cpus = float(ray.cluster_resources().get("CPU", 0))
        free = float(ray.available_resources().get("CPU", 0))
    except Exception as exc:
        return f"{head}; the cluster's resources cannot be read ({first_line(exc)}): is it up?"
    if cpus < 1:
        return (
            f"{head}: the Ray cluster at {_where(ray)} has no CPUs now (its nodes with "
            "CPUs left?); the run waits until a node with CPUs joins"
        )
    taken = "its only CPU is" if cpus == 1 else f"all {cpus:g} of its CPUs are"
    if not started_known:
        if free >= 1:
            return None
        return (
            f"{head} and {taken} in use on the Ray cluster at {_where(ray)}: by this "
            "run's episodes if they take that long, else by other jobs (`ray status` "
            "lists them), and then the run waits for free CPUs"
        )
    if free < 1:
        return (
            f"{head}: waiting for free CPUs: {taken} in use by other jobs on the Ray "
            f"cluster at {_where(ray)} (`ray status` lists them); episodes start as CPUs "
            "free up"
        )
    return (
        f"{head}, although {free:g} of the cluster's {cpus:g} CPUs are free: Ray may still "
        "be starting workers or setting up the tasks' runtime_env (a pip or conda "
        "environment can take minutes)"
    )


def _where(ray: Any) -> str:
    gcs, client = _connected(ray)
    return f"ray://{client}" if client else gcs or "(unknown address)"


def first_line(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` in one line; Ray's multi-line messages (a remote
    traceback) also give their last line, where the cause is."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0] if lines else ""
    if len(lines) > 1:
        text += f" ... {lines[-1]}"
    return f"{type(exc).__name__}: {text}"
