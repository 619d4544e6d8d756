"""Output directories that list every file they hold (a ``worldmodel run``, ``ledger
run`` or saved tool-world episode's ``manifest.json``): a file added inside one makes
``onrecord verify`` (and ``worldmodel analyze --replay``) refuse the directory, so no
command or API writes a report, comparison or decision there."""

from __future__ import annotations

from pathlib import Path

import orjson

from onrecord.errors import InputError

__all__ = ["listed_folder", "refuse_inside_listed_folder"]


def refuse_inside_listed_folder(output: Path, label: str = "") -> None:
    """Raise ``InputError`` when ``output`` is inside a directory whose onrecord manifest
    lists its files; ``label`` names the option the path came from (``--html``)."""
    folder = listed_folder(output)
    if folder is not None:
        named = f"{label} {output}" if label else str(output)
        raise InputError(
            f"{named} is inside {folder}, whose manifest.json lists every file it holds: "
            "a file written there would make it fail verification; write it elsewhere, to "
            "a path outside that directory (on the command line: -o FILE, --html FILE, …)"
        )


def listed_folder(output: Path) -> Path | None:
    """The nearest folder above ``output`` holding an onrecord ``manifest.json``."""
    for folder in output.absolute().parents:
        manifest = folder / "manifest.json"
        if manifest.is_file() and _is_onrecord_manifest(manifest):
            return folder
    return None


def _is_onrecord_manifest(path: Path) -> bool:
    try:
        schema = orjson.loads(path.read_bytes()).get("schema", "")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return False
    return isinstance(schema, str) and schema.startswith("onrecord.")
