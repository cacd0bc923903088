"""Command-line wiring only: options in, core functions called, renderers out, exit codes.

Start-up matters (``--help`` and shell completion run this module): at import time it loads Typer and, of its
own, only the constants its help states (ncclcheck/schemas.py, the default dtype); each command imports the core and
the renderers it needs when it runs.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from enum import Enum, IntEnum
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import click
import typer

from ncclcheck import __version__, schemas
from ncclcheck.transfer import DEFAULT_DTYPE

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ncclcheck.evidence.reader import Source
    from ncclcheck.evidence.types import FileScan, InputProblem
    from ncclcheck.job.verdict import TensorOf


class Exit(IntEnum):
    """Documented exit codes."""

    OK = 0  # nothing wrong found
    FOUND = 1  # a collective failure (or lint error) was found
    USAGE = 2  # bad command line (also Typer/Click's own code)
    NO_INPUT = 3  # no readable input at all, or every input was empty


app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Diagnose NCCL collective timeouts: which collective hung, which rank caused it, what to change.",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ncclcheck {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Diagnose NCCL collective timeouts."""


def warn(message: str) -> None:
    """One line on stderr, never markup-interpreted."""
    from ncclcheck.console import err_console

    err_console.print(f"ncclcheck: {message}", markup=False, highlight=False, soft_wrap=True)


def _may_be_terminal() -> bool:
    """Whether Rich could take stderr for a terminal (a TTY, or ``FORCE_COLOR`` / ``TTY_COMPATIBLE=1`` set): where
    not, its console (~50 ms of imports, before the workers are forked) is not imported to ask."""
    if os.environ.get("FORCE_COLOR") or os.environ.get("TTY_COMPATIBLE") == "1":
        return True
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except ValueError:  # closed
        return False


def _check_dtype(dtype: str) -> None:
    from ncclcheck.transfer import DTYPE_BYTES

    if dtype not in DTYPE_BYTES:
        usage_error(f"unknown dtype {dtype!r}; one of: {', '.join(DTYPE_BYTES)}")


def usage_error(message: str) -> NoReturn:
    """A bad or conflicting option: one line on stderr, exit code 2."""
    warn(f"error: {message}")
    raise typer.Exit(Exit.USAGE)


def _complete_dtypes(incomplete: str) -> list[str]:
    from ncclcheck.transfer import DTYPE_BYTES

    return [d for d in DTYPE_BYTES if d.startswith(incomplete)]


def _complete_models(incomplete: str) -> list[str]:
    from ncclcheck.explain.models import PRESETS

    return [m for m in PRESETS if m.startswith(incomplete)]


def _complete_strategies(incomplete: str) -> list[str]:
    from ncclcheck.explain.ops import STRATEGIES

    return [x for x in STRATEGIES if x.startswith(incomplete)]


WRAP_POLICY_HELP = ("Your FSDP auto-wrap policy as written: transformer_auto_wrap_policy(transformer_layer_cls="
                    "{LlamaDecoderLayer}), ModuleWrapPolicy({Block}), fsdp_transformer_layer_cls_to_wrap: A,B, or the "
                    "Accelerate YAML / Trainer fsdp_config JSON that holds it (read, never run).")
# Inputs from which on analyze-log shows its progress on a terminal: 64 MiB take about a second to read, and so do
# about this many per-rank files (each file costs its open and a parser of its own).
MANY_FILES = 1000

# How the model was trained, taken alike by explain and by analyze-log --config (explain.adapt.as_trained).
FindUnusedOption = Annotated[bool, typer.Option("--find-unused-parameters", help="The job built DDP with "
                                                                                 "find_unused_parameters=True.")]
BlockClassOption = Annotated[Optional[list[str]], typer.Option("--block-class", help="A class your FSDP wrap policy "
                                                                                     "wraps (repeatable).")]
WrapPolicyOption = Annotated[Optional[str], typer.Option("--wrap-policy", help=WRAP_POLICY_HELP)]
FrozenOption = Annotated[Optional[list[str]], typer.Option("--frozen", help="Parameters that get no gradient, as a "
                                                                            "glob on their names (repeatable).")]
AdapterOption = Annotated[Optional[str], typer.Option(help="A PEFT LoRA adapter_config.json (or its folder); one "
                                                           "beside --config is read without it.")]


@app.command("analyze-log")
def analyze_log(
    paths: Annotated[list[str], typer.Argument(metavar="PATH...", show_default=False,
                                               help="Log files, directories (recursive), globs, or - for stdin. "
                                                    "Plain text, .gz, .bz2 or .xz.")],
    as_json: Annotated[bool, typer.Option("--json", help=f"Print the machine-readable result (schema_version "
                                                         f"{schemas.ANALYZE_LOG}).")] = False,
    per_rank: Annotated[bool, typer.Option("--per-rank", help="With --json: every record, rank, edge and event one "
                                                              "by one (kilobytes per rank) besides the classes.")]
    = False,
    evidence_out: Annotated[Optional[str], typer.Option(
        "--evidence-out", metavar="FILE",
        help="Only read the inputs and write their evidence to FILE (.json or .json.gz), for a later "
             "`analyze-log` of every node's evidence files together.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the verdict.")] = False,
    dtype: Annotated[str, typer.Option(help="Element type assumed for size arithmetic (the log does not say).",
                                       autocompletion=_complete_dtypes)]
    = DEFAULT_DTYPE,
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", min=1,
                                                help="Worker processes for large inputs (default: CPU count).")] = None,
    html: Annotated[Optional[str], typer.Option("--html", metavar="FILE",
                                                help="Also write the incident report as one self-contained HTML page.")]
    = None,
    trace: Annotated[Optional[str], typer.Option("--trace", metavar="FILE",
                                                 help="Also write the timeline as a Chrome trace (Perfetto, "
                                                      "chrome://tracing).")] = None,
    config: Annotated[Optional[str], typer.Option(help="The model's config.json: name the hung collective's tensor "
                                                       "(as explain --config does).")] = None,
    checkpoint: Annotated[Optional[str], typer.Option(help="The model's safetensors checkpoint, for the same.")]
    = None,
    module: Annotated[Optional[str], typer.Option("--module", help="pkg.module:factory of your own model, for the "
                                                                   "same.")] = None,
    trust_remote_code: Annotated[bool, typer.Option("--trust-remote-code", help="Let --config run the model code "
                                                                                "beside config.json.")] = False,
    bucket_cap_mb: Annotated[Optional[float], typer.Option(min=0.001, help="DDP's bucket_cap_mb, if the job set "
                                                                           "it.")] = None,
    mesh: Annotated[Optional[str], typer.Option(help="HSDP's 2-D mesh, REPLICAxSHARD, for the same.")] = None,
    find_unused: FindUnusedOption = False,
    block_class: BlockClassOption = None,
    wrap_policy: WrapPolicyOption = None,
    frozen: FrozenOption = None,
    adapter: AdapterOption = None,
    attempt: Annotated[str, typer.Option("--attempt", metavar="N|last|all", help="Which attempt of a job torchrun "
                                         "restarted to analyse: its number, the last (default), or all of them.")]
    = "last",
) -> None:
    """Read every rank's logs and say which collective hung, which rank caused it, and why.

    Exit codes: 0 nothing wrong found, 1 a collective failure found, 2 usage error, 3 no readable or non-empty input.

    Example: ncclcheck analyze-log logs/ --json
    """
    from ncclcheck.evidence.reader import InputError, resolve
    from ncclcheck.evidence.types import InputProblem
    from ncclcheck.job.analyze import analyze  # the deciding side is imported while the workers read
    from ncclcheck.job.attempts import AttemptError

    _check_dtype(dtype)
    which: int | str = int(attempt) if attempt.isdigit() else attempt
    if which not in ("last", "all") and not isinstance(which, int):
        usage_error(f"--attempt {attempt}: give an attempt's number, last or all")
    if evidence_out is not None and (as_json or html or trace or quiet):
        usage_error("--evidence-out writes the evidence only; give --json, --html, --trace or --quiet to the run "
                    "that reads the evidence files")
    if per_rank and not as_json:
        usage_error("--per-rank adds detail to --json; give both")
    for out in (html, trace, evidence_out):
        if out is not None:
            _check_writable(out)

    unreadable: list[InputProblem] = []

    def bad(exc: InputError) -> None:
        warn(f"{exc.name}: {exc.message}")
        unreadable.append(InputProblem(exc.name, exc.message, fatal=True))

    tensor_of = _tensor_of(config, checkpoint, module, trust_remote_code, dtype, bucket_cap_mb, mesh, find_unused,
                           block_class or (), wrap_policy, frozen or (), adapter)
    sources = resolve(paths, bad)
    total = sum(s.size() for s in sources)
    progress = None
    if (total >= 64 << 20 or len(sources) >= MANY_FILES) and _may_be_terminal():
        from ncclcheck.console import err_console

        if err_console.is_terminal:
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

            progress = Progress(TextColumn("reading"), BarColumn(), DownloadColumn(), console=err_console,
                                transient=True)
            task = progress.add_task("read", total=total)

    def done(scan: FileScan) -> None:
        for p in scan.problems:
            warn(f"{p.file}: {p.message}")
        if progress is not None:
            progress.advance(task, scan.bytes_read)

    if evidence_out is not None:
        _evidence(evidence_out, sources, done, jobs, unreadable)
    try:
        if progress is not None:
            with progress:
                result = analyze(sources, dtype, done, jobs, unreadable, tensor_of, which)
        else:
            result = analyze(sources, dtype, done, jobs, unreadable, tensor_of, which)
    except AttemptError as exc:
        usage_error(str(exc))
    from ncclcheck.job.model import VerdictKind
    from ncclcheck.render.json_out import analysis_json

    if not any(s.bytes_read or s.dump is not None or s.live for s in result.scans):
        warn("no log lines: every input was empty" if result.scans else "no readable input")
        if as_json:  # a script reading stdout always gets an object: the problems, and no verdict
            from ncclcheck.render.json_out import no_input_json

            typer.echo(json.dumps(no_input_json(result), indent=2))
        raise typer.Exit(Exit.NO_INPUT)
    if html is not None:
        from ncclcheck.render.html import report_html

        _write(html, report_html(result))
    if trace is not None:
        from ncclcheck.render.trace import trace_json

        _write(trace, json.dumps(trace_json(result)))
    if as_json:
        typer.echo(json.dumps(analysis_json(result, per_rank), indent=2))
    else:
        from ncclcheck.console import console
        from ncclcheck.render.report import report  # Rich's, imported only where a report is printed

        for each in result.attempts or (result,):
            if result.attempts:
                console.print(f"attempt {each.attempt} of {each.attempt_count}", style="bold", crop=False)
            console.print(report(each, quiet), crop=False)
    raise typer.Exit(Exit.OK if result.verdict.kind is VerdictKind.NO_FAILURE else Exit.FOUND)


def _evidence(path: str, sources: list[Source], done: Callable[[FileScan], None], jobs: Optional[int],
              unreadable: list[InputProblem]) -> NoReturn:
    """``analyze-log --evidence-out``: read this node's inputs, write their evidence, decide nothing."""
    from ncclcheck.evidence import bundle
    from ncclcheck.job.analyze import read_all

    scans, unopened = read_all(sources, done, jobs)
    if not any(s.bytes_read or s.dump is not None or s.live for s in scans):
        warn("no log lines: every input was empty" if scans else "no readable input")
        raise typer.Exit(Exit.NO_INPUT)
    _write(path, bundle.dumps(scans, [*unreadable, *unopened], path.endswith(".gz")))
    ranks = {r for s in scans for r in s.ranks_seen}
    warn(f"evidence of {len(scans)} input(s), {len(ranks)} rank(s)")
    raise typer.Exit(Exit.OK)


def _check_writable(path: str) -> None:
    """Fail on an output file that cannot be written before spending minutes on the analysis."""
    import os

    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        usage_error(f"{path}: is a directory")
    if not os.path.isdir(folder):
        usage_error(f"{path}: no such directory: {folder}")
    if not os.access(folder, os.W_OK | os.X_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        usage_error(f"{path}: not writable")


def _write(path: str, text: str | bytes) -> None:
    """Write a whole file or nothing: a temporary file beside it, renamed over it."""
    import os
    import tempfile

    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".ncclcheck-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(text.encode() if isinstance(text, str) else text)
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(tmp, 0o666 & ~mask)  # as open() would have made it, not mkstemp's 0600
            os.replace(tmp, path)
        except OSError:
            os.unlink(tmp)
            raise
    except OSError as exc:
        usage_error(f"{path}: cannot write ({exc.strerror or exc})")
    warn(f"wrote {path}")


def _tensor_of(config: Optional[str], checkpoint: Optional[str], module: Optional[str], trust_remote_code: bool,
               dtype: str, bucket_cap_mb: Optional[float], mesh: Optional[str] = None, find_unused: bool = False,
               block_class: Sequence[str] = (), wrap_policy: Optional[str] = None, frozen: Sequence[str] = (),
               adapter: Optional[str] = None) -> TensorOf | None:
    """analyze-log's namer of the hung collective's tensor, from the model the user gave and how they train it, as
    explain takes them (None: no model given)."""
    training = (mesh, find_unused, block_class, wrap_policy, frozen, adapter)
    if not (config or checkpoint or module):
        if any(training):
            usage_error("--mesh, --find-unused-parameters, --block-class, --wrap-policy, --frozen and --adapter "
                        "describe the model: give --config, --checkpoint or --module too")
        return None
    from ncclcheck.explain.adapt import as_trained, parse_mesh
    from ncclcheck.explain.counts import ExplainError
    from ncclcheck.explain.finding import tensor_finder
    from ncclcheck.explain.models import Model
    from ncclcheck.explain.source import load
    from ncclcheck.explain.table import builtin_table

    try:
        grid = parse_mesh(mesh) if mesh else None
        loaded = load(Model(), config, checkpoint, module, trust_remote_code)
        for w in loaded.warnings:
            warn(w)
        table = as_trained(loaded.table or builtin_table(loaded.model), config, frozen, adapter, block_class,
                           wrap_policy)
    except ExplainError as exc:
        usage_error(str(exc))
    return tensor_finder(loaded.model, table, dtype, bucket_cap_mb, grid, find_unused)


def _count(value: Optional[str], flag: str) -> Optional[int]:
    from ncclcheck.explain.counts import ExplainError, parse_count

    if value is None:
        return None
    try:
        return parse_count(value)
    except ExplainError as exc:
        usage_error(f"{flag}: {exc}")


@app.command("explain")
def explain_cmd(
    numel: Annotated[Optional[str], typer.Option(help="Element count to explain: 467019003 or 467,019,003; 4.67e8 "
                                                      "means exactly 467,000,000.")] = None,
    numel_out: Annotated[Optional[str], typer.Option(help="NumelOut of the same collective.")] = None,
    op: Annotated[Optional[str], typer.Option(help="OpType (ALLREDUCE, _ALLGATHER_BASE, _REDUCE_SCATTER_BASE, ...) or "
                                                   "a flight-recorder name (nccl:all_reduce).")] = None,
    log: Annotated[Optional[list[str]], typer.Option(help="Take every distinct (OpType, NumelIn, NumelOut) from "
                                                          "watchdog lines in this log (repeatable).")] = None,
    model: Annotated[Optional[str], typer.Option(autocompletion=_complete_models,
                                                 help="Preset: qwen2.5-7b, qwen2.5-vl-7b, qwen3-8b, qwen3-30b-a3b, "
                                                      "llama-3-8b, llama-3-70b, mistral-7b, mixtral-8x7b, "
                                                      "deepseek-v3.")] = None,
    config: Annotated[Optional[str], typer.Option(help="A Hugging Face config.json (or its folder). With transformers "
                                                       "installed (the [hf] extra) its model is built on the meta "
                                                       "device and its own parameters are used.")] = None,
    checkpoint: Annotated[Optional[str], typer.Option(help="A safetensors checkpoint folder (or file): parameter names, "
                                                           "shapes and dtypes from its headers, no weights read.")]
    = None,
    module: Annotated[Optional[str], typer.Option("--module", help="Your own model: pkg.module:factory, a function "
                                                                   "returning a torch module, called on the meta "
                                                                   "device.")] = None,
    trust_remote_code: Annotated[bool, typer.Option("--trust-remote-code", help="Let --config run the model code "
                                                                                "beside config.json (auto_map).")]
    = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Build the table from --config again instead of "
                                                              "reading it from the cache (~/.cache/ncclcheck; "
                                                              "NCCLCHECK_NO_CACHE=1 does the same).")] = False,
    bucket_cap_mb: Annotated[Optional[float], typer.Option(min=0.001, help="DDP's bucket_cap_mb, if your job set it "
                                                                           "(default 25, with a 1 MiB first "
                                                                           "bucket).")] = None,
    strategy: Annotated[Optional[str], typer.Option("--strategy", "--parallel", autocompletion=_complete_strategies,
                                                    help="Only this strategy's layouts: ddp, zero1, zero2, zero3, "
                                                         "fsdp, fsdp2, tp, pp, or several joined by + (tp+fsdp2) "
                                                         "(default: whatever the op allows).")]
    = None,
    stages: Annotated[Optional[int], typer.Option(min=1, help="Pipeline stages (torch.distributed.pipelining).")]
    = None,
    microbatches: Annotated[Optional[int], typer.Option(min=1, help="Pipeline microbatches: --batch is cut into "
                                                                   "this many.")] = None,
    reduce_bucket_size: Annotated[Optional[int], typer.Option(min=1, help="DeepSpeed's reduce_bucket_size in "
                                                                         "elements, if the job set it (default "
                                                                         "5e8).")] = None,
    mesh: Annotated[Optional[str], typer.Option(help="HSDP's 2-D mesh, REPLICAxSHARD (2x4: 2 replicas of 4-rank "
                                                     "shard groups).")] = None,
    find_unused: FindUnusedOption = False,
    block_class: BlockClassOption = None,
    wrap_policy: WrapPolicyOption = None,
    frozen: FrozenOption = None,
    adapter: AdapterOption = None,
    batch: Annotated[Optional[int], typer.Option(min=1, help="Micro-batch size B.")] = None,
    seq: Annotated[Optional[int], typer.Option(min=1, help="Sequence length S.")] = None,
    hidden: Annotated[Optional[int], typer.Option(min=1, help="Hidden size H.")] = None,
    layers: Annotated[Optional[int], typer.Option(min=1, help="Decoder layers L.")] = None,
    vocab: Annotated[Optional[int], typer.Option(min=1, help="Vocabulary size V.")] = None,
    heads: Annotated[Optional[int], typer.Option(min=1, help="Attention heads.")] = None,
    kv_heads: Annotated[Optional[int], typer.Option(min=1, help="Key/value heads (GQA).")] = None,
    head_dim: Annotated[Optional[int], typer.Option(min=1, help="Head dimension.")] = None,
    intermediate: Annotated[Optional[int], typer.Option(min=1, help="MLP intermediate size.")] = None,
    num_labels: Annotated[Optional[int], typer.Option(min=1, help="A classification head of this many labels "
                                                                  "replaces the LM head.")] = None,
    head_bias: Annotated[bool, typer.Option("--head-bias", help="The classification head has a bias.")] = False,
    world_size: Annotated[Optional[int], typer.Option(min=1, help="Ranks in the process group.")] = None,
    tp: Annotated[Optional[int], typer.Option(min=1, help="Tensor-parallel degree.")] = None,
    dtype: Annotated[Optional[str], typer.Option(help=f"Element type for bytes and times (default: the config's "
                                                      f"torch_dtype, else {DEFAULT_DTYPE}).",
                                                 autocompletion=_complete_dtypes)] = None,
    as_json: Annotated[bool, typer.Option("--json", help=f"Print the machine-readable result (schema_version "
                                                         f"{schemas.EXPLAIN}).")]
    = False,
) -> None:
    """Say what tensor an element count is, and what it is not: exact, op-aware matches only.

    Without --numel or --log: the table of what the model's common tensors weigh.
    Exit codes: 0 done, 2 bad or conflicting input, or nothing to explain.

    Example: ncclcheck explain --model qwen2.5-7b --world-size 8 --numel 29132224
    """
    from ncclcheck.console import console
    from ncclcheck.explain.adapt import as_trained, parse_mesh
    from ncclcheck.explain.core import explain, size_table
    from ncclcheck.explain.counts import MAX_NUMEL, ExplainError
    from ncclcheck.explain.models import PRESETS, Model, merge
    from ncclcheck.explain.ops import STRATEGIES, known_strategy
    from ncclcheck.explain.source import load
    from ncclcheck.explain.table import builtin_table
    from ncclcheck.render.explain import explain_json, explanation_view, sizes_view

    if dtype is not None:
        _check_dtype(dtype)
    if model and (config or checkpoint or module):
        usage_error("give --model, or --config / --checkpoint / --module, not both")
    if numel and log:
        usage_error("give --numel or --log, not both")
    if model and model.lower() not in PRESETS:
        usage_error(f"unknown model {model!r}; one of: {', '.join(PRESETS)}")
    if strategy and not known_strategy(strategy.lower()):
        usage_error(f"unknown strategy {strategy!r}; one of: {', '.join(STRATEGIES)}, or several joined by +")
    try:
        loaded = load(PRESETS[model.lower()] if model else Model(), config, checkpoint, module, trust_remote_code,
                      use_cache=not no_cache)
        grid = parse_mesh(mesh) if mesh else None
    except ExplainError as exc:
        usage_error(str(exc))
    for w in loaded.warnings:
        warn(w)
    shape = merge(loaded.model, batch=batch, seq=seq, hidden=hidden, layers=layers, vocab=vocab, heads=heads,
                  kv_heads=kv_heads, head_dim=head_dim, intermediate=intermediate, world_size=world_size, tp=tp,
                  num_labels=num_labels, head_bias=head_bias or None)
    dtype_from = "--dtype" if dtype else "config" if shape.dtype else "default"
    dtype = dtype or shape.dtype or DEFAULT_DTYPE
    # (op, NumelIn, NumelOut, ranks): with --log, each record's own group's size where the logs state it.
    triples: list[tuple[Optional[str], int, Optional[int], Optional[int]]] = []
    n = _count(numel, "--numel")
    if n is not None:
        triples.append((op, n, _count(numel_out, "--numel-out"), world_size))
    elif numel_out is not None:
        usage_error("--numel-out needs --numel")
    if log:
        from ncclcheck.evidence.reader import resolve
        from ncclcheck.job.analyze import analyze
        from ncclcheck.job.build import group_key

        unreadable: list[str] = []
        sources = resolve(list(log), lambda exc: unreadable.append(f"{exc.name}: {exc.message}"))
        if not sources:
            usage_error("; ".join(unreadable) or "no readable --log input")
        for line in unreadable:
            warn(line)

        def problems(scan: FileScan) -> None:
            for p in scan.problems:
                warn(f"{p.file}: {p.message}")

        result = analyze(sources, dtype, problems)
        pg_sizes = {group_key(g.id): g.size for g in result.job.groups if g.size}
        overridden: set[int] = set()
        for r in result.records:
            ranks = pg_sizes.get(group_key(r.pg)) or world_size  # the group's own size, as the logs state it
            if not r.numel_in or (r.op_type, r.numel_in, r.numel_out, ranks) in triples:
                continue
            if max(r.numel_in, r.numel_out or 0) > MAX_NUMEL:
                warn(f"{r.loc}: NumelIn={r.numel_in} is more than any tensor can have (at most "
                     "2^63 - 1): a corrupted line, skipped")
                continue
            if world_size and ranks is not None and ranks != world_size and ranks not in overridden:
                overridden.add(ranks)
                warn(f"the logs say a group of {ranks} ranks ran some of these collectives: they are explained and "
                     f"timed over {ranks}, not --world-size {world_size}")
            triples.append((r.op_type, r.numel_in, r.numel_out, ranks))
        if not triples:
            usage_error("no watchdog line with NumelIn found in " + ", ".join(log))
    strat = strategy.lower() if strategy else None
    try:
        table = as_trained(loaded.table or builtin_table(shape), config, frozen or (), adapter, block_class or (),
                           wrap_policy)
    except ExplainError as exc:
        usage_error(str(exc))
    explanations = [explain(n_in, merge(shape, world_size=ranks), n_out, o, dtype, strat, table, bucket_cap_mb,
                            grid, find_unused, dtype_from=dtype_from,
                            pipeline=(stages, microbatches) if stages or microbatches else None,
                            reduce_bucket_size=reduce_bucket_size)
                    for o, n_in, n_out, ranks in triples]
    gather_world, sizes = size_table(shape, ("float32", "bfloat16"), table) if not triples else (None, [])
    if not triples and not sizes:
        usage_error("nothing to show: give --numel/--log, or the model shape (--batch --seq --hidden or "
                    "--model/--config)")
    if as_json:
        typer.echo(json.dumps(explain_json(shape, explanations, sizes, gather_world, table), indent=2))
        return
    for e in explanations:
        console.print(explanation_view(e))
    if sizes and gather_world is not None:  # the table is built only without triples, and then with its world
        console.print(sizes_view(sizes, gather_world, shape.world_size is not None))


class _BenchChoice(click.Choice[str]):
    """One of the benchmark's value lists (``DTYPES``, ``OPS``, ...), read from its config when help, completion or
    parsing first needs it: importing the CLI loads none of the benchmark."""

    def __init__(self, name: str) -> None:  # click.Choice's own __init__ would store the list now
        self._name = name
        self.case_sensitive = True

    @property
    def choices(self) -> list[str]:  # type: ignore[override]
        from ncclcheck.bench import config

        return list(getattr(config, self._name))


_SWEEP = "Sweep (--sweep)"
_LAUNCHER = "ncclcheck bench only"


_BENCH_EPILOG = ("Exit codes: 0 done, 1 run failed (peer lost, wrong values), 2 bad options, no torch or not enough "
                 "memory, 3 busbw below --min-busbw. Under torchrun any non-zero code becomes torchrun's 1; ncclcheck "
                 "bench passes the benchmark's own code through.")


@app.command("bench", epilog=_BENCH_EPILOG)
def bench_cmd(
    ctx: typer.Context,
    nproc: Annotated[Optional[int], typer.Option(
        "--nproc", min=1, metavar="N", rich_help_panel=_LAUNCHER, show_default=False,
        help="Processes (GPUs) on this host (default 1): runs torchrun --nproc-per-node N -m ncclcheck.bench with "
             "the other options.")] = None,
    size: Annotated[Optional[str], typer.Option(
        "--size", metavar="N", show_default=False,
        help="Elements per rank: 5e8, 500000000 (default 5e8 with NCCL, 1e7 with gloo on CPU).")] = None,
    nbytes: Annotated[Optional[str], typer.Option(
        "--bytes", metavar="SIZE", show_default=False,
        help="Bytes per rank instead of --size: 2GB (1e9 B) or 2GiB (2^30 B).")] = None,
    dtype: Annotated[str, typer.Option(
        "--dtype", click_type=_BenchChoice("DTYPES"),
        help="Element type; sizes in elements are multiplied by its bytes.")] = "float32",
    chunks: Annotated[Optional[str], typer.Option(
        "--chunks", metavar="N,N,...", show_default=False,
        help="Chunk sizes in elements, comma-separated ('' for none; default 1e8,1e7,1e6 with NCCL, 1e6,1e5 with "
             "gloo). The unchunked transfer is always measured.")] = None,
    sweep: Annotated[Optional[str], typer.Option(
        "--sweep", metavar="MIN:MAX[:FACTOR]", rich_help_panel=_SWEEP, show_default=False,
        help="Size sweep in bytes, like nccl-tests -b/-e/-f: 8:2G:4 (K/M/G are binary; factor 2 if left out).")]
    = None,
    graph: Annotated[str, typer.Option(
        "--graph", click_type=_BenchChoice("GRAPHS"), rich_help_panel=_SWEEP,
        help="on: time replays of a CUDA graph holding the --iters all_reduces, as nccl-tests -G 1; off: the calls "
             "queued while the GPU waits, timed by CUDA events.")] = "off",
    min_busbw: Annotated[Optional[float], typer.Option(
        "--min-busbw", metavar="GB/S", rich_help_panel=_SWEEP, show_default=False,
        help="Exit 3 when busbw at the largest size is below this (fleet acceptance).")] = None,
    plot: Annotated[Optional[str], typer.Option(
        "--plot", metavar="FILE.svg", rich_help_panel=_SWEEP, show_default=False,
        help="Write the busbw curve as SVG.")] = None,
    html: Annotated[Optional[str], typer.Option(
        "--html", metavar="FILE.html", rich_help_panel=_SWEEP, show_default=False,
        help="Write the curve and the table as one self-contained page.")] = None,
    iters: Annotated[Optional[int], typer.Option(
        "--iters", show_default=False, help="Timed transfers per mode or size (default 10; sweep 20).")] = None,
    warmup: Annotated[Optional[int], typer.Option(
        "--warmup", show_default=False, help="Untimed transfers per mode or size (default 3; sweep 5).")] = None,
    op: Annotated[str, typer.Option(
        "--op", click_type=_BenchChoice("OPS"),
        help="The collective to time; busbw uses that op's factor, as nccl-tests does.")] = "all_reduce",
    backend: Annotated[str, typer.Option(
        "--backend", click_type=_BenchChoice("BACKENDS"), help="auto: nccl with CUDA, gloo on CPU.")] = "auto",
    timeout: Annotated[float, typer.Option("--timeout", metavar="S", help="Process-group timeout in seconds.")]
    = 120.0,
    sync_per_chunk: Annotated[bool, typer.Option(
        "--sync-per-chunk", help="Synchronise after every chunk (what changes the watchdog's view).")] = False,
    check: Annotated[bool, typer.Option(
        "--check", help="Verify the reduced values (in a sweep, at every size).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of the tables.")] = False,
    output: Annotated[Optional[str], typer.Option(
        "--output", metavar="FILE", show_default=False, help="Also write the JSON result to this file.")] = None,
    from_log: Annotated[Optional[str], typer.Option(
        "--from-log", metavar="LOG", show_default=False,
        help="Replay the OpType and NumelIn of the watchdog line in this log.")] = None,
    exit_early_rank: Annotated[Optional[int], typer.Option(
        "--exit-early-rank", hidden=True, help="Testing aid: this rank leaves after a barrier.")] = None,
) -> None:
    """Benchmark all_reduce (or another collective) on this host's GPUs: unchunked vs chunked, or a size sweep
    beside nccl-tests.

    `ncclcheck bench --nproc N ...` starts torchrun --nproc-per-node N -m ncclcheck.bench ...; under torchrun (or
    `python -m ncclcheck.bench`) the same options run the benchmark in that process.

    Example: ncclcheck bench --nproc 2 --sweep 8:2G:4 --min-busbw 300
    """
    import os
    import sys

    from ncclcheck.bench.config import ConfigError, make_config

    here = bool(ctx.obj and ctx.obj.get("here"))
    try:
        if here and nproc is not None:
            raise ConfigError("--nproc starts torchrun and belongs to ncclcheck bench; under torchrun, "
                              "--nproc-per-node says how many processes")
        cfg = make_config(size=size, nbytes=nbytes, dtype=dtype, chunks=chunks, sweep=sweep, graph=graph,
                          min_busbw=min_busbw, plot=plot, html=html, iters=iters, warmup=warmup, op=op,
                          backend=backend, timeout=timeout, sync_per_chunk=sync_per_chunk, check=check,
                          json=as_json, output=output, from_log=from_log, exit_early_rank=exit_early_rank)
    except ConfigError as exc:
        if here:
            from ncclcheck.bench.rank import refuse

            raise typer.Exit(refuse(str(exc))) from None
        usage_error(str(exc))  # exit 2 here, before torchrun would turn it into its own exit 1
    if here:
        from ncclcheck.bench.rank import run

        raise typer.Exit(run(cfg))
    import importlib.util
    import subprocess
    import tempfile

    from ncclcheck.bench.rank import STATUS_ENV

    if importlib.util.find_spec("torch") is None:
        usage_error("the benchmark needs torch: pip install 'ncclcheck[bench]'")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc or 1), "-m",
           "ncclcheck.bench", *_given(ctx, leave_out={"nproc"})]
    from ncclcheck.bench.launch import without_torchrun_report

    with tempfile.TemporaryDirectory() as tmp:
        status = os.path.join(tmp, "status")
        with subprocess.Popen(cmd, env={**os.environ, STATUS_ENV: status}, stderr=subprocess.PIPE, text=True,
                              errors="replace", bufsize=1) as proc:
            assert proc.stderr is not None
            for line in without_torchrun_report(proc.stderr, lambda: os.path.exists(status)):
                sys.stderr.write(line)
                sys.stderr.flush()
        rc = proc.returncode
        try:  # rank 0's own exit code (torchrun reports any failure as 1)
            with open(status, encoding="utf-8") as f:
                rc = int(f.read())
        except (OSError, ValueError):
            pass
    raise typer.Exit(rc)


def _given(ctx: click.Context, leave_out: set[str]) -> list[str]:
    """The options given on the command line, written out again for torchrun's workers."""
    from click.core import ParameterSource

    args: list[str] = []
    for p in ctx.command.params:
        if not isinstance(p, click.Option) or p.name is None or p.name in leave_out:
            continue
        if ctx.get_parameter_source(p.name) is not ParameterSource.COMMANDLINE:
            continue
        value = ctx.params[p.name]
        if p.is_flag:
            args += [p.opts[0]] if value else []
        else:
            args += [p.opts[0], str(value)]
    return args


def bench_here(argv: list[str]) -> int:
    """``python -m ncclcheck.bench`` (what torchrun starts on every rank): the bench command's options, run in this
    process; returns the exit code."""
    here = typer.Typer(add_completion=False, pretty_exceptions_show_locals=False,
                       context_settings={"help_option_names": ["-h", "--help"]})
    here.command(epilog=_BENCH_EPILOG)(bench_cmd)
    try:
        here(argv, prog_name="torchrun --nproc-per-node N -m ncclcheck.bench", obj={"here": True})
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


@app.command("bench-compare", epilog="Exit codes: 0 done, 2 an input that cannot be read or no size in common.")
def bench_compare_cmd(
    sweep: Annotated[str, typer.Argument(metavar="SWEEP.json", help="The JSON a --sweep run wrote with --output.")],
    nccl_tests: Annotated[str, typer.Argument(metavar="ALL_REDUCE_PERF.txt", help="nccl-tests all_reduce_perf's "
                                              "standard output (any version).")],
    plot: Annotated[Optional[str], typer.Option(
        "--plot", metavar="FILE.svg", show_default=False, help="Also write both busbw curves as SVG.")] = None,
) -> None:
    """Set a bench sweep beside nccl-tests' all_reduce_perf, size by size (the in-place columns: ours is in place).

    Example: ncclcheck bench-compare sweep.json perf.txt --plot c.svg
    """
    from ncclcheck.bench.compare import CompareError, compare_files, table
    from ncclcheck.console import console

    if plot:
        _check_writable(plot)
    try:
        compared = compare_files(sweep, nccl_tests)
    except CompareError as exc:
        usage_error(str(exc))
    console.print(table(compared.matches, console.width))
    if plot:
        _write(plot, compared.plot())


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
    fmt: Annotated[ProbeFormat, typer.Option("--format", "-f", help=f"human report, shell export lines, or JSON (schema_version "
                                                               f"{schemas.PROBE}).")]
    = ProbeFormat.human,
    debug: Annotated[bool, typer.Option("--debug", help="Also recommend the variables for the next run of a failing "
                                                        "job (NCCL_DEBUG, flight recorder, desync debug).")] = False,
    compare: Annotated[bool, typer.Option("--compare", help="Compare saved probes of several hosts instead: what must "
                                                            "agree across the job, grouped by value, the odd hosts "
                                                            "named.")] = False,
) -> None:
    """Inspect this host's network, RDMA, GPUs and NCCL/PyTorch environment; lint it; print what to set.

    Read-only. Exit codes: 0 no error found (or, with --compare, every aspect agrees), 1 error-level findings (or
    an aspect differs between hosts, or a host's driver is older than its CUDA runtime), 2 usage error (with
    --compare also a file that could not be read: the others are still compared).

    Example: ncclcheck probe --format json > $(hostname).json

    Then, with every node's file: ncclcheck probe --compare node*.json
    """
    from ncclcheck.console import console
    from ncclcheck.probe.host import collect, this_host
    from ncclcheck.probe.lint import lint, recommend
    from ncclcheck.probe.nodes import compare as compare_nodes
    from ncclcheck.probe.nodes import labels
    from ncclcheck.render.probe import compare_json, compare_view, probe_json, report, shell

    if compare:
        if not files or len(files) < 2:
            usage_error("--compare needs at least two saved probe JSON files")
        # A file that cannot be read is named on stderr and left out; the others are still compared.
        read: list[tuple[str, dict[str, Any]]] = []
        for f in files:
            try:
                with open(f, encoding="utf-8") as fh:
                    doc = json.load(fh)
            except OSError as exc:
                warn(f"error: {f}: {exc.strerror or exc}")
                continue
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                warn(f"error: {f}: not valid JSON ({exc})")
                continue
            if not isinstance(doc, dict) or not isinstance(doc.get("probe"), dict):
                warn(f"error: {f}: not the output of `ncclcheck probe --format json`")
                continue
            read.append((f, doc))
        if len(read) < 2:
            usage_error(f"--compare needs at least two readable probe JSON files ({len(read)} of {len(files)} read)")
        names, docs = [f for f, _ in read], [d for _, d in read]
        result = compare_nodes(list(zip(labels(names, docs), docs, strict=True)))
        if fmt is ProbeFormat.json:
            typer.echo(json.dumps(compare_json(result), indent=2))
        else:
            console.print(compare_view(result), crop=False)
        if len(read) < len(files):
            raise typer.Exit(Exit.USAGE)
        raise typer.Exit(Exit.FOUND if result.differs else Exit.OK)
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
        console.print(report(p, findings, recs), crop=False)
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
    as_json: Annotated[bool, typer.Option("--json", help=f"Print the machine-readable result (schema_version "
                                                         f"{schemas.SNAPSHOT}).")]
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
    --pid; an --out that cannot be written, checked before anything is collected), 3 no job found or
    nothing could be read from it.

    Example: ncclcheck snapshot --out snapshot-$(hostname).tar.gz
    """
    import os

    from ncclcheck.console import console
    from ncclcheck.job.analyze import analyze_scans
    from ncclcheck.job.live import UNKNOWN
    from ncclcheck.job.model import VerdictKind
    from ncclcheck.ranks import compact
    from ncclcheck.render.snapshot import report as snapshot_report
    from ncclcheck.render.snapshot import snapshot_json
    from ncclcheck.snapshot import archive, collect, procs, pyspy
    from ncclcheck.snapshot.settings import lint_ranks

    if out is not None:
        _check_writable(out)  # before the minutes of collection: a script must tell a failed write from a hang
    found, denied, parents = procs.scan()
    d = procs.find_jobs(found, procs.ancestors(os.getpid(), parents), denied, parents)
    for note in d.notes:
        warn(note)
    jobs = procs.candidates(d, pid, parents)
    if len(jobs) > 1:
        for j in jobs:
            warn(f"pid {j.ranks[0].pid}: {j.label}, ranks {compact(r.rank for r in j.ranks)}")
        usage_error(f"{len(jobs)} jobs run " + (f"below pid {pid}" if pid is not None else "here")
                    + "; pick one with --pid RANK_PID")
    if not jobs:
        where = f" holding pid {pid}" if pid is not None else ""
        advice = ("even as root: another PID namespace or a hardened /proc" if os.geteuid() == 0
                  else "run as the job's user or root")
        hidden = f" ({d.unreadable} processes could not be read: {advice})" if d.unreadable else ""
        warn(f"no job{where} found on this node: no process has RANK and WORLD_SIZE or LOCAL_RANK in its "
             f"environment{hidden}")
        raise typer.Exit(Exit.NO_INPUT)
    job = jobs[0]
    warn(f"{job.label}: ranks {compact(r.rank for r in job.ranks)} here "
         f"(pids {', '.join(str(r.pid) for r in job.ranks)})")
    exe = pyspy.find_py_spy()
    snap = collect.take(job, exe, native, timeout, dump_wait, not no_dumps, lint=lint_ranks)
    for r in snap.ranks:
        if r.stack_error and not r.ptrace_refused:
            warn(f"rank {r.proc.rank} (pid {r.proc.pid}): {r.stack_error}")
    for problem in snap.problems:
        warn(problem)
    result = analyze_scans(archive.snapshot_scans(snap))  # the one verdict engine, over the live evidence
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
    if all(p.state == UNKNOWN for p in result.job.live):
        raise typer.Exit(Exit.NO_INPUT)  # no stack and no dump could be read: nothing was decided
    raise typer.Exit(Exit.OK if result.verdict.kind is VerdictKind.NO_FAILURE else Exit.FOUND)


def main() -> None:
    """Console-script entry point.

    The cyclic garbage collector is off for the run: analysing a large job builds millions of small objects
    without cycles, once, and then exits; the collector's passes over them cost a quarter of the time. At the end
    every object is frozen: the interpreter's exit still collects once, even with the collector off, and walking
    the modules, the catalogue and the results took 0.1-0.2 s of a 0.5 s analysis (a 2-core VM). The patterns the
    commands' modules compile at import come from the cache folder (ncclcheck/startcache.py).
    """
    from ncclcheck import startcache

    gc.disable()
    startcache.install()
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--install-completion":
        _install_completion(args[1])
    try:
        app(prog_name="ncclcheck")
    finally:
        startcache.keep()
        gc.freeze()


SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")


def _install_completion(shell: str) -> None:
    """``--install-completion fish``: Typer's flag installs for the shell it detects and would ignore the name given;
    the shell named is the one installed for."""
    from typer._completion_shared import install  # typer < 0.20, as pinned

    if shell not in SHELLS:
        warn(f"error: --install-completion {shell}: one of {', '.join(SHELLS)}")
        raise SystemExit(Exit.USAGE)
    name, path = install(shell=shell, prog_name="ncclcheck")
    typer.echo(f"{name} completion installed in {path}")
    typer.echo("Completion will take effect once you restart the terminal")
    raise SystemExit(0)
