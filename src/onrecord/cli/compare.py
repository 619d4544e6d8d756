"""``onrecord compare A B``: paired comparison of two reports."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from onrecord._canonical import atomic_write_bytes
from onrecord._compare_notes import one_sided_measures_note
from onrecord.cli._app import refusal
from onrecord.cli._bundle import named
from onrecord.cli._ci_files import (
    CiOutput,
    ci_output,
    record_output,
    refuse_inputs,
    refuse_same_file,
    stderr_notice,
)
from onrecord.cli._decisions import comparison_record
from onrecord.cli._lines import print_sentence
from onrecord.cli._markdown import compare_markdown, refused_markdown, text
from onrecord.cli._output_path import output_path
from onrecord.cli._refused_section import refused_section
from onrecord.cli._render import emit, literal, make_console, render_comparison
from onrecord.compare import ComparedSource, Comparison, compare_sources, load_source
from onrecord.errors import ComparisonRefused, OnrecordError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``compare`` subcommand."""
    parser = subparsers.add_parser(
        "compare",
        help="paired comparison of two reports (McNemar, bootstrap)",
        description="Pair trials by case and repeat; exact McNemar p-value per check and a "
        "paired bootstrap interval per measure. Refuses (exit 3) when the locks differ or "
        "a run directory is missing planned episodes.",
    )
    parser.add_argument(
        "report_a", metavar="A", help="report file, run directory or RUN/regrades/NAME"
    )
    parser.add_argument("report_b", metavar="B")
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="also save the comparison as JSON (with schema and digest: `onrecord verify` "
        "reads it; FILE '-': stdout, instead of the tables)",
    )
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="also write a self-contained HTML page "
        "(written even when the comparison is refused, exit 3, with the reasons or the error)",
    )
    parser.add_argument(
        "--markdown",
        metavar="FILE",
        help='also append a Markdown summary to FILE, e.g. "$GITHUB_STEP_SUMMARY" '
        "(appended also when the comparison is refused, exit 3, with the reasons or the "
        "error; FILE '-': stdout, instead of the tables)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Compare and print. A and B are report files, run directories or regrade
    directories; an incomplete run is refused, naming its missing episodes."""
    html = output_path(args.html, "--html") if args.html is not None else None
    json = record_output(args.json, "--json")
    markdown = ci_output(args.markdown, "--markdown", ".md")
    outputs = (("--html", html), ("--json", json), ("--markdown", markdown))
    refuse_same_file(outputs)
    # Before anything is written: a refusal's page or summary replaced or appended to
    # the very input it could not read.
    refuse_inputs(outputs, (("A", args.report_a), ("B", args.report_b)), "an input being compared")
    # With a document on stdout, stdout carries nothing else.
    on_stdout = any(item is not None and item.to_stdout for item in (json, markdown))
    notice = stderr_notice if on_stdout else emit
    try:
        source_a, source_b = _loaded(args.report_a), _loaded(args.report_b)
    except (OnrecordError, OSError) as exc:
        # A or B that cannot be read at all (missing, damaged, an interrupted run, a saved
        # episode) is refused too, and the CI summary and page say why, as gate's do:
        # the job's summary was empty. The outputs were checked above: this is the input.
        _write_unread(html, markdown, refusal(exc), args.report_a, args.report_b, notice)
        raise
    try:
        comparison = compare_sources(source_a, source_b)
    except ComparisonRefused as exc:
        # Refused is a finding a CI summary, and the page, should show.
        if html is not None:
            _write_html(source_a, source_b, exc, html, notice)
        if markdown is not None:
            markdown.append(refused_markdown(args.report_a, args.report_b, exc.reasons))
        raise
    if html is not None:
        _write_html(source_a, source_b, comparison, html, notice)
    if json is not None:  # before printing: a closed stdout must not lose the file
        json.replace(comparison_record(comparison))  # `onrecord verify` reads it
    labels = _labels(args.report_a, source_a.label, args.report_b, source_b.label)
    one_sided = one_sided_measures_note(source_a.report.trials, source_b.report.trials)
    if markdown is not None:
        markdown.append(compare_markdown(comparison, *labels, note=one_sided))
    if on_stdout:
        return 0
    console = make_console()
    render_comparison(console, comparison, labels=labels)
    if one_sided:
        print_sentence(console, f"[yellow]note:[/] {literal(one_sided)}")
    return 0


def _loaded(given: str) -> ComparedSource:
    """A or B read, as ``gate`` and ``verify`` read it: a record whose digest matches but
    whose fields do not (a trial's ``source`` a string, a run's ``check_versions``) is a
    "malformed record", exit 3. Its KeyError or ValueError escaped as a traceback and
    exit 1, which a CI job reads as "reject"."""
    return named(Path(given), lambda: load_source(given))


def _write_html(
    a: ComparedSource,
    b: ComparedSource,
    outcome: Comparison | ComparisonRefused,
    html: Path,
    notice: Callable[[str], None],
) -> None:
    """The page of what was compared here: the sources read and the comparison made
    once, for the terminal, the JSON, the summary and the page alike."""
    from onrecord.html import render_comparison_page
    from onrecord.html._compare import loaded_comparison_data

    page = render_comparison_page(loaded_comparison_data(a, b, outcome))
    notice(f"wrote {atomic_write_bytes(html, page.encode())}")


def _write_unread(
    html: Path | None,
    markdown: CiOutput | None,
    message: str,
    a: str,
    b: str,
    notice: Callable[[str], None],
) -> None:
    """The page and summary of a comparison refused for ``message``, an input it could
    not read; one that cannot be written is said on stderr, and the refusal stays the
    error the command exits with."""
    if html is not None:
        try:
            _write_page(a, b, html, message, notice)
        except OSError as exc:
            print(f"onrecord compare: --html: {refusal(exc)}", file=sys.stderr)
    if markdown is not None:
        subject = f"A: {text(a)} · B: {text(b)} · nothing was compared"
        try:
            markdown.append(refused_section("compare", subject, message))
        except OSError as exc:
            print(f"onrecord compare: --markdown: {refusal(exc)}", file=sys.stderr)


def _write_page(a: str, b: str, html: Path, message: str, notice: Callable[[str], None]) -> None:
    from onrecord.html._compare import failed_comparison_page

    atomic_write_bytes(html, failed_comparison_page(a, b, message).encode())
    notice(f"wrote {html}")


def _labels(source_a: str, label_a: str, source_b: str, label_b: str) -> tuple[str, str]:
    """A's and B's labels, told apart by their folder when equal (``runs/v1/report.json``
    against ``runs/v2/report.json`` read "report.json" twice), as the HTML page does."""
    if label_a == label_b and Path(source_a).resolve() != Path(source_b).resolve():
        return (
            f"{label_a} in {Path(source_a).resolve().parent.name}/",
            f"{label_b} in {Path(source_b).resolve().parent.name}/",
        )
    return label_a, label_b
