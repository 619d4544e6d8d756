"""Integrations with other frameworks, one subpackage each
(``onrecord.integrations.gymnasium``)."""

__all__: list[str] = []
