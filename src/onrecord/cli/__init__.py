"""The ``onrecord`` command line."""
