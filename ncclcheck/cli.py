"""Command-line wiring only: options in, core functions called, renderers out, exit codes."""

from __future__ import annotations

import json
from enum import Enum, IntEnum
from typing import Annotated, NoReturn, Optional

import typer

from ncclcheck import __version__
from ncclcheck.console import console, err_console
from ncclcheck.evidence.reader import InputError, resolve
from ncclcheck.evidence.types import FileScan
from ncclcheck.job.analyze import analyze
from ncclcheck.job.model import VerdictKind
from ncclcheck.render.json_out import analysis_json
from ncclcheck.render.report import report
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


def _check_dtype(dtype: str) -> None:
    if dtype not in DTYPE_BYTES:
        usage_error(f"unknown dtype {dtype!r}; one of: {', '.join(DTYPE_BYTES)}")


def usage_error(message: str) -> NoReturn:
    """A bad or conflicting option: one line on stderr, exit code 2."""
    warn(f"error: {message}")
    raise typer.Exit(Exit.USAGE)


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
    _check_dtype(dtype)

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


def _count(value: Optional[str], flag: str) -> Optional[int]:
    from ncclcheck.explain.core import ExplainError, parse_count

    if value is None:
        return None
    try:
        return parse_count(value)
    except ExplainError as exc:
        usage_error(f"{flag}: {exc}")


@app.command("explain")
def explain_cmd(
    numel: Annotated[Optional[str], typer.Option(help="Element count to explain: 467019003, 467,019,003 or 4.67e8.")]
    = None,
    numel_out: Annotated[Optional[str], typer.Option(help="NumelOut of the same collective.")] = None,
    op: Annotated[Optional[str], typer.Option(help="OpType: ALLREDUCE, _ALLGATHER_BASE, _REDUCE_SCATTER_BASE, ...")]
    = None,
    log: Annotated[Optional[list[str]], typer.Option(help="Take every distinct (OpType, NumelIn, NumelOut) from "
                                                          "watchdog lines in this log (repeatable).")] = None,
    model: Annotated[Optional[str], typer.Option(help="Preset: qwen2.5-7b, qwen2.5-vl-7b, llama-3-8b, llama-3-70b, "
                                                      "mistral-7b.")] = None,
    config: Annotated[Optional[str], typer.Option(help="A Hugging Face config.json (text_config for VL models).")]
    = None,
    batch: Annotated[Optional[int], typer.Option(min=1, help="Micro-batch size B.")] = None,
    seq: Annotated[Optional[int], typer.Option(min=1, help="Sequence length S.")] = None,
    hidden: Annotated[Optional[int], typer.Option(min=1, help="Hidden size H.")] = None,
    layers: Annotated[Optional[int], typer.Option(min=1, help="Decoder layers L.")] = None,
    vocab: Annotated[Optional[int], typer.Option(min=1, help="Vocabulary size V.")] = None,
    heads: Annotated[Optional[int], typer.Option(min=1, help="Attention heads.")] = None,
    kv_heads: Annotated[Optional[int], typer.Option(min=1, help="Key/value heads (GQA).")] = None,
    head_dim: Annotated[Optional[int], typer.Option(min=1, help="Head dimension.")] = None,
    intermediate: Annotated[Optional[int], typer.Option(min=1, help="MLP intermediate size.")] = None,
    world_size: Annotated[Optional[int], typer.Option(min=1, help="Ranks in the process group.")] = None,
    tp: Annotated[Optional[int], typer.Option(min=1, help="Tensor-parallel degree.")] = None,
    dtype: Annotated[str, typer.Option(help="Element type for bytes and times.")] = "float32",
    as_json: Annotated[bool, typer.Option("--json", help="Print the machine-readable result (schema_version 1).")]
    = False,
) -> None:
    """Say what tensor an element count is, and what it is not: exact matches only.

    Without --numel or --log: the table of what the model's common tensors weigh.
    Exit codes: 0 done, 2 bad or conflicting input.

    Example: ncclcheck explain --model qwen2.5-7b --batch 8 --seq 2048 --world-size 8 --numel 466119168
    """
    from ncclcheck.explain.core import PRESETS, ExplainError, Model, explain, merge, model_from_config, size_table
    from ncclcheck.render.explain import explain_json, explanation_view, sizes_view

    _check_dtype(dtype)
    if model and config:
        usage_error("give --model or --config, not both")
    if numel and log:
        usage_error("give --numel or --log, not both")
    if model and model.lower() not in PRESETS:
        usage_error(f"unknown model {model!r}; one of: {', '.join(PRESETS)}")
    try:
        base = PRESETS[model.lower()] if model else (model_from_config(config) if config else Model())
    except ExplainError as exc:
        usage_error(str(exc))
    shape = merge(base, batch=batch, seq=seq, hidden=hidden, layers=layers, vocab=vocab, heads=heads,
                  kv_heads=kv_heads, head_dim=head_dim, intermediate=intermediate, world_size=world_size, tp=tp)
    triples: list[tuple[Optional[str], int, Optional[int]]] = []
    n = _count(numel, "--numel")
    if n is not None:
        triples.append((op.upper() if op else None, n, _count(numel_out, "--numel-out")))
    if log:
        sources = resolve(list(log), lambda exc: warn(f"{exc.name}: {exc.message}"))
        result = analyze(sources, dtype, lambda scan: [warn(f"{p.file}: {p.message}") for p in scan.problems])
        for r in result.records:
            if r.numel_in and (r.op_type, r.numel_in, r.numel_out) not in triples:
                triples.append((r.op_type, r.numel_in, r.numel_out))
        if not triples:
            warn("no watchdog line with NumelIn found in " + ", ".join(log))
            raise typer.Exit(Exit.USAGE)
    explanations = [explain(n_in, shape, n_out, o, dtype) for o, n_in, n_out in triples]
    sizes = size_table(shape, ("float32", "bfloat16")) if not triples else []
    if as_json:
        typer.echo(json.dumps(explain_json(shape, explanations, sizes), indent=2))
        return
    if not triples and not sizes:
        warn("nothing to show: give --numel/--log, or the model shape (--batch --seq --hidden or --model/--config)")
        raise typer.Exit(Exit.USAGE)
    for e in explanations:
        console.print(explanation_view(e))
    if sizes:
        console.print(sizes_view(sizes))


@app.command("bench", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def bench_cmd(
    ctx: typer.Context,
    nproc: Annotated[int, typer.Option("--nproc", min=1, help="Processes (GPUs) on this host.")] = 1,
) -> None:
    """Launch `torchrun --nproc-per-node N -m ncclcheck.bench ...` on this host; other options go to the benchmark.

    Example: ncclcheck bench --nproc 2 --size 5e8 --chunks 1e8,1e7,1e6
    """
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("torch") is None:
        usage_error("the benchmark needs torch: pip install 'ncclcheck[bench]'")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc), "-m", "ncclcheck.bench",
           *ctx.args]
    raise typer.Exit(subprocess.call(cmd))


class ProbeFormat(str, Enum):
    """Output formats of probe."""

    human = "human"
    shell = "shell"
    json = "json"


@app.command("probe")
def probe_cmd(
    files: Annotated[Optional[list[str]], typer.Argument(metavar="[NODE.json...]", show_default=False,
                                                         help="With --compare: saved `probe --format json` outputs.")]
    = None,
    fmt: Annotated[ProbeFormat, typer.Option("--format", "-f", help="human report, shell export lines, or JSON.")]
    = ProbeFormat.human,
    debug: Annotated[bool, typer.Option("--debug", help="Also recommend the variables for the next run of a failing "
                                                        "job (NCCL_DEBUG, flight recorder, desync debug).")] = False,
    compare: Annotated[bool, typer.Option("--compare", help="Compare saved probes of several nodes instead.")] = False,
) -> None:
    """Inspect this host's network, RDMA, GPUs and NCCL/PyTorch environment; lint it; print what to set.

    Read-only. Exit codes: 0 no error found (or, with --compare, no difference), 1 error-level findings (or
    differences between nodes), 2 usage error.

    Example: ncclcheck probe --format json > $(hostname).json; ncclcheck probe --compare node*.json
    """
    from ncclcheck.probe.host import collect, this_host
    from ncclcheck.probe.lint import lint, recommend
    from ncclcheck.render.probe import compare as compare_nodes
    from ncclcheck.render.probe import compare_view, probe_json, report, shell

    if compare:
        if not files or len(files) < 2:
            usage_error("--compare needs at least two saved probe JSON files")
        docs = []
        for f in files:
            try:
                with open(f, encoding="utf-8") as fh:
                    doc = json.load(fh)
            except OSError as exc:
                usage_error(f"{f}: {exc.strerror or exc}")
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                usage_error(f"{f}: not valid JSON ({exc})")
            if not isinstance(doc, dict) or "probe" not in doc:
                usage_error(f"{f}: not the output of `ncclcheck probe --format json`")
            docs.append((doc["probe"].get("hostname") or f, doc))
        labels = [label for label, _ in docs]
        if len(set(labels)) < len(labels):
            labels = list(files)
            docs = [(f, d) for f, (_, d) in zip(files, docs, strict=True)]
        diffs = compare_nodes(docs)
        if fmt is ProbeFormat.json:
            typer.echo(json.dumps({"schema_version": 1, "nodes": labels,
                                   "differences": [{"aspect": a, "values": v} for a, v in diffs]}, indent=2))
        else:
            console.print(compare_view(diffs, labels))
        raise typer.Exit(Exit.FOUND if diffs else Exit.OK)
    if files:
        usage_error("node files are only read with --compare")
    p = collect(this_host())
    findings = lint(p)
    recs = recommend(p, debug)
    if fmt is ProbeFormat.json:
        typer.echo(json.dumps(probe_json(p, findings, recs), indent=2))
    elif fmt is ProbeFormat.shell:
        typer.echo(shell(recs), nl=False)
    else:
        console.print(report(p, findings, recs))
    raise typer.Exit(Exit.FOUND if any(f.severity.value == "error" for f in findings) else Exit.OK)


@app.command("snapshot")
def snapshot_cmd(
    pid: Annotated[Optional[int], typer.Option("--pid", help="A rank's pid, or its launcher's: picks the job when "
                                                            "several run here.")] = None,
    native: Annotated[bool, typer.Option("--native", help="Also C/C++ frames (py-spy pauses each rank for a "
                                                          "moment to unwind them).")] = False,
    timeout: Annotated[float, typer.Option(min=0.5, help="Seconds py-spy may take per rank.")] = 5.0,
    dump_wait: Annotated[float, typer.Option(min=0, help="Seconds to wait for flight-recorder dumps after "
                                                         "writing to the dump pipes.")] = 8.0,
    no_dumps: Annotated[bool, typer.Option("--no-dumps", help="Do not write to the ranks' dump pipes.")] = False,
    out: Annotated[Optional[str], typer.Option("--out", "-o", help="Also write everything to this archive "
                                                                   "(snapshot-<host>.tar.gz) for analyze-log.")]
    = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the machine-readable result (schema_version 1).")]
    = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the verdict.")] = False,
    all_threads: Annotated[bool, typer.Option("--all-threads", help="Print every thread, not only the main one.")]
    = False,
) -> None:
    """Diagnose a running (hanging) job from this node: every rank's stack, dumps on demand, one verdict.

    Finds the job's rank processes (RANK/WORLD_SIZE in their environment), takes their Python stacks
    with py-spy (pip install 'ncclcheck[live]'), asks for flight-recorder dumps where the job set up
    the dump pipe, reads GPU use and lints each rank's NCCL settings. Never stops or signals the job.

    Exit codes: 0 no rank waits in a collective, 1 a hang found, 2 usage error (several jobs: give
    --pid), 3 no job found or nothing could be read from it.

    Example: ncclcheck snapshot --out snapshot-$(hostname).tar.gz
    """
    import os

    from ncclcheck.render.snapshot import report as snapshot_report
    from ncclcheck.render.snapshot import snapshot_json
    from ncclcheck.snapshot import archive, collect, procs, pyspy, verdict
    from ncclcheck.snapshot.settings import lint_ranks

    found, denied, parents = procs.scan()
    d = procs.find_jobs(found, procs.ancestors(os.getpid(), parents), denied, parents)
    for note in d.notes:
        warn(note)
    jobs = procs.candidates(d, pid, parents)
    if len(jobs) > 1:
        for j in jobs:
            warn(f"pid {j.ranks[0].pid}: {j.label}, ranks {verdict.ranks_text(r.rank for r in j.ranks)}")
        usage_error(f"{len(jobs)} jobs run " + (f"below pid {pid}" if pid is not None else "here")
                    + "; pick one with --pid RANK_PID")
    if not jobs:
        where = f" holding pid {pid}" if pid is not None else ""
        hidden = f" ({d.unreadable} processes could not be read: run as the job's user or root)" if d.unreadable else ""
        warn(f"no job{where} found on this node: no process has RANK and WORLD_SIZE or LOCAL_RANK in its "
             f"environment{hidden}")
        raise typer.Exit(Exit.NO_INPUT)
    job = jobs[0]
    warn(f"{job.label}: ranks {verdict.ranks_text(r.rank for r in job.ranks)} here "
         f"(pids {', '.join(str(r.pid) for r in job.ranks)})")
    exe = pyspy.find_py_spy()
    snap = collect.take(job, exe, native, timeout, dump_wait, not no_dumps, lint=lint_ranks)
    for r in snap.ranks:
        if r.stack_error and not r.ptrace_refused:
            warn(f"rank {r.proc.rank} (pid {r.proc.pid}): {r.stack_error}")
    for problem in snap.problems:
        warn(problem)
    result = verdict.decide(archive.snapshot_scans(snap), job.world_size, collect.source_of(snap.sources))
    if out:
        try:
            archive.write(out, snap, {"verdict": snapshot_json(snap, result)["verdict"]})
        except OSError as exc:
            warn(f"{out}: cannot write the archive: {exc.strerror or exc}")
        else:
            warn(f"wrote {out}")
    if as_json:
        typer.echo(json.dumps(snapshot_json(snap, result), indent=2))
    else:
        console.print(snapshot_report(snap, result, quiet, all_threads), crop=False)  # frames and exports: one line
    if result.kind == verdict.UNKNOWN:
        raise typer.Exit(Exit.NO_INPUT)
    raise typer.Exit(Exit.OK if result.kind == verdict.NO_HANG else Exit.FOUND)


def main() -> None:
    """Console-script entry point."""
    app(prog_name="ncclcheck")
