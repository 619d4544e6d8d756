"""Integrations with other frameworks; each is a subpackage (``onrecord.integrations.gymnasium``)."""

__all__: list[str] = []
