"""The local Ray cluster the Ray tests start, as a user's own code would: two CPUs, no
dashboard, and this interpreter's ``sys.path`` for the workers (so they import the test
helpers by path). Ray is imported inside: the module is imported without the extra."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def local_ray_cluster(**env_vars: str) -> Iterator[str]:
    """Start and connect a 2-CPU local cluster whose workers get ``env_vars``; yields its
    GCS address (for other drivers) and shuts it down after."""
    import ray

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(sys.path), **env_vars}},
    )
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()
