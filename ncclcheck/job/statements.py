"""What a line the job stated about its failure means, and its fix: the table in ``statements.toml``, read once.

A line the failing layer wrote (NCCL's WARN text, ``Last error:``, a CUDA error string, NCCL's error code, an
exception's message) names its mechanism in fixed words: NCCL's ``Call to ibv_reg_mr failed with error Cannot
allocate memory`` is a memory registration the locked-memory limit refused, whatever job printed it. The table maps
those words to their meaning, the verdict a line of them that stands alone implies, the action class and the fix, each
entry with the source that prints or defines the words. job/reasons.py words a quoted line with its meaning,
job/stated.py takes its verdict kind, and a cause (job/causes.py's Diagnosis) puts its fix before the cause's own, so
any log whose failing line is in the table gets its fix mechanism. A bad entry stops the import with one line naming
it, as a bad cause file does.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from ncclcheck.evidence.formats.nccl import PEER_GONE
from ncclcheck.evidence.formats.statedict import sharded
from ncclcheck.job.causedata import ACTIONS, tables
from ncclcheck.job.layers import Reading, layer_of

TABLE = Path(__file__).with_name("statements.toml")
# CUDA's documented errors (cudaGetErrorString's strings), one entry each after the table's own (job/cuda_errors.toml).
CUDA_TABLE = Path(__file__).with_name("cuda_errors.toml")
_CUDA_KEYS = {"name", "code", "string", "means", "kind", "class", "fix", "host"}  # and optional "cause", "older"
# The prefixes that print a CUDA error string: PyTorch's C10_CUDA_CHECK, NCCL's CUDACHECK (with the code since 2.x)
# and nccl-tests' CUDACHECK (job/cuda_errors.toml's header cites each); rccl-tests' HIPCHECK's is read as a "HIP error: "
# clue (evidence/formats/errors.py); CuPy's CUDARuntimeError words it after the error's name ("cudaErrorNoDevice: no
# CUDA-capable device is detected", cupy_backends/cuda/api/runtime.pyx).
_CUDA_SAID = r"(?:CUDA error: |HIP error: |Cuda failure (?:\d{1,4} )?'|Test CUDA failure \S{1,200} '|\bcudaError[A-Z]\w{1,40}: )"
_KEYS = {"id", "match", "means", "kind", "class", "fix", "source"}
_OPTIONAL = {"before", "host", "quote", "waiter", "shards"}
# The causes that say only that something failed, not how: a line's mechanism always says more, so its fix goes first.
GENERIC = frozenset({"stated_reason", "nccl_no_reason", "nccl_system_error"})
# The verdict kinds an entry may imply ('' leaves the rules' kind).
KINDS = frozenset({"", "setup_failure", "nccl_error"})
# A launcher's own refusal to start the job (DeepSpeed's runner, before any worker): no rank's failure.
KINDS = KINDS | {"launcher_failure"}
# A framework's word that one of its processes failed, which cannot say which or why: the evidence is incomplete.
KINDS = KINDS | {"incomplete_evidence"}


class StatementTableError(ValueError):
    """An entry of statements.toml that cannot be read: its message names the entry and the problem."""


@dataclass(frozen=True)
class Statement:
    """One mechanism a stated line names: its words (``pattern``), what they mean, the verdict they imply alone,
    what to do next and the fix, and the source of all that."""

    id: str
    pattern: re.Pattern[str]
    means: str
    kind: str
    action: str
    fix: tuple[str, ...]
    source: str
    before: frozenset[str] = frozenset()  # the causes whose own fix this one goes before (besides GENERIC's)
    cause: str = ""  # the cause of the catalogue a line of it is, where its layer has one (job/layers.toml)
    located: bool = False  # a layer's (job/layers.py): it says where under NCCL the failure is, not why
    host: bool = False  # the host's set-up (its driver, its modules), the same for every rank there: no rank's fault
    general: bool = False  # a CUDA error of no host's set-up (cuda_errors.toml): the layer NCCL printed it in says more
    defers: frozenset[str] = frozenset()  # the causes that read the same words with their own fix: it is not repeated
    quotes: bool = False  # the line names the variables to set and their values: its fix quotes them (`export ...`)
    waiter: bool = False  # the line is its process's wait for others that never came: the process is no culprit
    shards: bool = False  # the line names two shapes: where one is k times the other, its meaning says so (sharded state)

    def first_for(self, cause: str) -> bool:
        """Whether this fix goes before the cause's own: the cause says less than the line's mechanism."""
        return cause in GENERIC or cause in self.before


def _entry(i: int, raw: dict[str, Any], general: bool = False, defers: frozenset[str] = frozenset()) -> Statement:
    where = f"{TABLE.name}: entry {i + 1} ({raw.get('id', 'no id')})"
    if not _KEYS <= set(raw) <= _KEYS | _OPTIONAL:
        raise StatementTableError(f"{where}: keys {sorted((set(raw) ^ _KEYS) - _OPTIONAL)} missing or unknown")
    if raw["kind"] not in KINDS or raw["class"] not in ACTIONS:
        raise StatementTableError(f"{where}: kind {raw['kind']!r} or class {raw['class']!r} is none of the known")
    if not (isinstance(raw["fix"], list) and raw["fix"] and all(isinstance(f, str) and f for f in raw["fix"])):
        raise StatementTableError(f"{where}: fix must be a list of steps")
    try:
        pattern = re.compile(raw["match"])
    except re.error as e:
        raise StatementTableError(f"{where}: match does not compile: {e}") from None
    return Statement(raw["id"], pattern, raw["means"].strip(), raw["kind"], raw["class"],
                     tuple(f.strip() for f in raw["fix"]), raw["source"], frozenset(raw.get("before", ())),
                     host=raw.get("host", False) is True, general=general, defers=defers,
                     quotes=raw.get("quote", False) is True, waiter=raw.get("waiter", False) is True,
                     shards=raw.get("shards", False) is True)


def _cuda_entry(i: int, raw: dict[str, Any], path: Path = CUDA_TABLE) -> Statement:
    """One of CUDA's documented errors as a stated line's entry: its string after any prefix that prints it."""
    where = f"{path.name}: entry {i + 1} ({raw.get('name', 'no name')})"
    if not _CUDA_KEYS <= set(raw) <= _CUDA_KEYS | {"cause", "older"}:
        raise StatementTableError(
            f"{where}: keys {sorted((set(raw) ^ _CUDA_KEYS) - {'cause', 'older'})} missing or unknown")
    older = raw.get("older", [])
    if not (isinstance(raw["code"], int) and isinstance(raw["host"], bool) and raw["string"] and raw["fix"]
            and isinstance(older, list) and all(isinstance(o, str) and o for o in older)):
        raise StatementTableError(f"{where}: code, host, string, older or fix is not of its type")
    name, code = raw["name"], raw["code"]
    source = ("CUDA Runtime API, cudaError_t: "
              f"{name} = {code} (https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html)")
    words = "|".join(re.escape(w) for w in (raw["string"], *older))
    words = f"(?:{words})" if older else words
    return _entry(i, {"id": "cuda_" + name.removeprefix("cudaError"), "match": _CUDA_SAID + words,
                      "means": f"CUDA's {name} ({code}): {raw['means']}", "kind": raw["kind"],
                      "class": raw["class"], "fix": [raw["fix"]], "source": source, "host": raw["host"]},
                  general=not raw["host"], defers=frozenset({raw["cause"]} if "cause" in raw else ()))


def read_table(path: Path = TABLE, cuda: Path | None = CUDA_TABLE) -> tuple[Statement, ...]:
    """Every entry, in the file's order (the first that matches a line is the line's), then CUDA's errors (the
    table's own entries for a CUDA string say more, so they come first). The TOML is parsed once for each version of
    the file, as the catalogue's is (~5 ms of analyze-log's start-up on a 16-core host)."""
    entries = tuple(_entry(i, raw) for i, raw in enumerate(tables([path])[0]["line"]))
    if cuda is not None:
        entries += tuple(_cuda_entry(i, raw, cuda) for i, raw in enumerate(tables([cuda])[0]["error"]))
    ids = [s.id for s in entries]
    if len(set(ids)) != len(ids):
        raise StatementTableError(f"{path.name}: an id is used twice")
    return entries


STATEMENTS = read_table()


# An environment variable's name as programs word one (upper case, words joined by underscores: NCCL_P2P_DISABLE,
# HSA_NO_SCRATCH_RECLAIM), and a value to set it to, as a line names them: NAME=VALUE, the value bare or quoted and the
# whole in backticks where a message marks code (`NCCL_P2P_DISABLE="1"`), or "set [the environment variable] NAME to
# VALUE" where the value is a number or marked as code (a bare word after "to" is the sentence's, not a value).
# Bounded: linear on a hostile line.
_NAME = r"[A-Z][A-Z0-9]{0,40}(?:_[A-Z0-9]{1,40}){1,8}"
_VALUE = r"[\w.:,/+-]{1,80}"
_SETTING = re.compile(rf"(?<![\w$])`?(?P<name>{_NAME})`?[ ]?=[ ]?[\"'`]?(?P<value>{_VALUE})"
                      rf"|\b[Ss]et (?:the )?(?:environment )?(?:variable )?`?(?P<name2>{_NAME})`? to "
                      rf"(?:[`\"'](?P<value2>{_VALUE})|(?P<number>\d[\w.]{{0,40}}))")


def settings(text: str) -> tuple[tuple[str, str], ...]:
    """The variables a line says to set, each with its value, in the line's order (once each)."""
    out: dict[str, str] = {}
    for m in _SETTING.finditer(text):
        name, value = (m["name"], m["value"]) if m["name"] else (m["name2"], m["value2"] or m["number"])
        out.setdefault(name, value.rstrip(".,:"))
    return tuple((n, v) for n, v in out.items() if v)


# A variable a line tells the reader to set without a value ("please set the environment variable VLLM_NCCL_SO_PATH
# to point to the correct nccl library path", "Set VLLM_NCCL_SO_PATH to the correct path"): its name alone.
_TO_SET = re.compile(rf"(?<!\w)(?:[Pp]lease set|[Ss]et|must set|needs? to set)(?: the)?(?: environment)?(?: variables?)? "
                     rf"`?(?P<name>{_NAME})\b")


def setting_told(text: str) -> tuple[int, int] | None:
    """Where the line tells the reader to set a variable, from "please set" to the variable's name, or None."""
    m = _TO_SET.search(text)
    return m.span() if m else None


def _quoted(said: Statement, text: str) -> Statement:
    """The entry with the line's own settings in its first step, as an ``export`` line where it names their values,
    by name where it names only the variables."""
    pairs = settings(text)
    if not pairs:
        names = tuple(dict.fromkeys(m["name"] for m in _TO_SET.finditer(text)))
        if not names:
            return said
        step = (f"Set {', '.join(names)}, as the line itself says, in the environment of every process of the job "
                "(before the launcher, on every node; a launcher that starts processes over ssh, pdsh or in pods "
                "passes only the variables it is told to: DeepSpeed's .deepspeed_env, mpirun -x NAME), to the value "
                "the line or the program's documentation gives, or take the other way the line offers, and rerun.")
        return replace(said, fix=(step, *said.fix[1:]))
    line = "export " + " ".join(f"{n}={shlex.quote(v)}" for n, v in pairs)
    step = ("Set what the line itself says to set, in the environment of every process of the job (before the "
            "launcher, on every node; a launcher that starts processes over ssh, pdsh or in pods passes only the "
            "variables it is told to: DeepSpeed's .deepspeed_env, mpirun -x NAME), or take the other way the line "
            f"offers, and rerun: {line}")
    return replace(said, fix=(step, *said.fix[1:]))


def _sharded(said: Statement, text: str) -> Statement:
    """The entry's meaning with what the line's two shapes say, where both are flat and one is k times the other
    (evidence/formats/statedict.py): state sharded over ranks, saved by a job of another world size."""
    got = sharded(text)
    if got is None:
        return said
    k, ckpt, model, known = got
    if known:
        whose = (f"the checkpoint's {ckpt:,} elements are {k} times the model's {model:,}: saved by a job of "
                 f"{k} times fewer ranks than this one" if ckpt > model else
                 f"the model's {model:,} elements are {k} times the checkpoint's {ckpt:,}: saved by a job of "
                 f"{k} times more ranks than this one")
    else:
        whose = (f"one shape's {max(ckpt, model):,} elements are {k} times the other's {min(ckpt, model):,}: "
                 f"saved by a job whose world size differs from this one's {k} times")
    return replace(said, means=f"{said.means}; here {whose}, as a shard of ceil(numel / world size) elements a rank "
                               "(FSDP's flat parameters, ZeRO's partitions) is")


def told(text: str) -> Statement | None:
    """The mechanism a stated line names, or None where the table has none for its words; an entry whose line names
    the settings to make (``quote``) gives them, quoted, as its first step, and one whose line names two shapes
    (``shards``) says where one is a whole multiple of the other."""
    said = next((s for s in STATEMENTS if s.pattern.search(text)), None)
    if said is not None and said.shards:
        return _sharded(said, text)
    return _quoted(said, text) if said is not None and said.quotes else said


def placed_told(text: str, file: str | None = None) -> Statement | None:
    """:func:`told`, but a CUDA error of no host's set-up (an out-of-memory, an operation not supported) that NCCL
    printed from a layer job/layers.py knows is that layer's failure first: the layer says where, CUDA's string only
    what the call returned."""
    said = told(text)
    if said is not None and said.general and layer_of(text, file) is not None:
        return None
    return said


def first_told(texts: Iterable[str]) -> Statement | None:
    """The mechanism of the first of these lines the table knows."""
    return next((s for t in texts if (s := told(t)) is not None), None)


@cache
def _of_layer(reading: Reading) -> Statement:
    """The layer a line comes from as its mechanism: the layer's meaning, knob and isolating step."""
    layer, site = reading.layer, reading.site
    pattern = site.pattern if site is not None else layer.words.pattern if layer.words is not None else "$^"
    where = f"; the words: NCCL src/{site.where()}" if site is not None else ""
    return Statement(f"layer_{layer.id}", re.compile(pattern), f"{layer.means} (known by {reading.said()})", "",
                     layer.action, layer.fix, layer.source + where, cause=layer.cause, located=True)


def explained(text: str, file: str | None = None) -> Statement | None:
    """The mechanism a stated line names (:func:`told`), else the layer under NCCL it comes from (job/layers.py: the
    file NCCL printed, ``file``, NCCL's format, a plugin's prefix); None where neither says. A line saying that a peer
    went away is the peer's failure, whatever layer noticed it: no layer's knob fixes it."""
    if (said := placed_told(text, file)) is not None:
        return said
    if PEER_GONE.search(text) or (reading := layer_of(text, file)) is None:
        return None
    return _of_layer(reading)

