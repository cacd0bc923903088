"""Command-line wiring only: options in, core functions called, renderers out, exit codes."""

from __future__ import annotations

import json
from enum import IntEnum
from typing import Annotated, Optional

import typer

from ncclcheck import __version__
from ncclcheck.analyze import analyze
from ncclcheck.console import console, err_console
from ncclcheck.model import FileScan, VerdictKind
from ncclcheck.reader import InputError, resolve
from ncclcheck.render_json import analysis_json
from ncclcheck.render_report import report
from ncclcheck.transfer import DTYPE_BYTES


class Exit(IntEnum):
    """Documented exit codes."""

    OK = 0  # nothing wrong found
    FOUND = 1  # a collective failure (or lint error) was found
    USAGE = 2  # bad command line (also Typer/Click's own code)
    NO_INPUT = 3  # no readable input at all


app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    help="Diagnose NCCL collective timeouts: which collective hung, which rank caused it, what to change.",
)


def _version(value: bool) -> None:
    if value:
        console.print(f"ncclcheck {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Diagnose NCCL collective timeouts."""


def warn(message: str) -> None:
    """One line on stderr, never markup-interpreted."""
    err_console.print(f"ncclcheck: {message}", markup=False, highlight=False, soft_wrap=True)


@app.command("analyze-log")
def analyze_log(
    paths: Annotated[list[str], typer.Argument(metavar="PATH...", show_default=False,
                                               help="Log files, directories (recursive), globs, or - for stdin. "
                                                    "Plain text, .gz, .bz2 or .xz.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the machine-readable result (schema_version 1).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the verdict.")] = False,
    dtype: Annotated[str, typer.Option(help="Element type assumed for size arithmetic (the log does not say).")]
    = "float32",
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", min=1,
                                                help="Worker processes for large inputs (default: CPU count).")] = None,
) -> None:
    """Read every rank's logs and say which collective hung, which rank caused it, and why.

    Exit codes: 0 nothing wrong found, 1 a collective failure found, 2 usage error, 3 no readable input.

    Example: ncclcheck analyze-log logs/ --json
    """
    if dtype not in DTYPE_BYTES:
        raise typer.BadParameter(f"unknown dtype {dtype!r}; one of: {', '.join(DTYPE_BYTES)}", param_hint="--dtype")

    def bad(exc: InputError) -> None:
        warn(f"{exc.name}: {exc.message}")

    sources = resolve(paths, bad)
    total = sum(s.size() for s in sources)
    progress = None
    if err_console.is_terminal and total >= 64 << 20:
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

        progress = Progress(TextColumn("reading"), BarColumn(), DownloadColumn(), console=err_console, transient=True)
        task = progress.add_task("read", total=total)

    def done(scan: FileScan) -> None:
        for p in scan.problems:
            warn(f"{p.file}: {p.message}")
        if progress is not None:
            progress.advance(task, scan.bytes_read)

    if progress is not None:
        with progress:
            result = analyze(sources, dtype, done, jobs)
    else:
        result = analyze(sources, dtype, done, jobs)
    if not result.scans:
        warn("no readable input")
        raise typer.Exit(Exit.NO_INPUT)
    if as_json:
        typer.echo(json.dumps(analysis_json(result), indent=2))
    else:
        console.print(report(result, quiet))
    raise typer.Exit(Exit.OK if result.verdict.kind is VerdictKind.NO_FAILURE else Exit.FOUND)


def main() -> None:
    """Console-script entry point."""
    app(prog_name="ncclcheck")
