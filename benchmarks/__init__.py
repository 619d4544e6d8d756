"""Benchmarks: each script prints figures as ratios against a baseline measured in the
same run. ``python -m benchmarks`` runs them all."""
