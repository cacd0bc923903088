"""Which layer under NCCL's collectives a WARN line comes from, and the setting and run that isolate that layer.

NCCL prints ``file.cc:LINE NCCL WARN <text>`` (src/include/debug.h: the WARN macro passes ``__FILE__`` and
``__LINE__``), so the printed file names the layer that failed: misc/socket.cc and bootstrap.cc its sockets and
bootstrap, transport/net_ib/ and misc/ibvwrap.cc InfiniBand/RoCE verbs, transport/nvls.cc NVLink SHARP, graph/ the
topology (job/layers.toml lists them, with each layer's knob and isolating step). A text without that header
(PyTorch's ``Last error:``, ncclGetLastError's copy of the last WARN; a paste) is found by its format string instead:
job/warn_sites.json holds every WARN format of NCCL's releases 2.3 on as a bounded regex with the files that print
it, derived from NCCL's source by tools/nccl_warn_sites.py. A network plugin prints through NCCL's logger under its
own function's name (aws-ofi-nccl's ``register_rail_mr_buffer:617 NCCL WARN NET/OFI ...``): its lines are known by
the prefix every line of it carries.

The order of the readings is their authority: the printed file (NCCL says where), a plugin's prefix where the text
begins with it (NCCL never prints it), then NCCL's format (its words, where the file is not printed), then a
plugin's words elsewhere in the text. A file no layer names (include/checks.h's CUDACHECK, whose
``__FILE__`` is the caller's in older releases) and a format printed by files of several layers say nothing here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ncclcheck.job.causedata import ACTIONS, tables

TABLE = Path(__file__).with_name("layers.toml")
SITES = Path(__file__).with_name("warn_sites.json")
_KEYS = {"id", "name", "means", "class", "fix", "source"}
_OPTIONAL = {"files", "words", "cause"}
# A path as NCCL prints it: relative to src/ in its own build ("misc/socket.cc"), absolute in some others.
_UNDER_SRC = re.compile(r"^(?:.*/)?src/")


class LayerTableError(ValueError):
    """An entry of layers.toml that cannot be read: its message names the entry and the problem."""


@dataclass(frozen=True)
class Layer:
    """One layer under NCCL's collectives: the files of NCCL (or a plugin's words) that are it, what its failure
    means, what to do next and the fix (its knob and the run that isolates it)."""

    id: str
    name: str
    files: tuple[re.Pattern[str], ...]
    words: re.Pattern[str] | None
    means: str
    action: str
    fix: tuple[str, ...]
    source: str
    cause: str = ""  # the cause of the catalogue a failure of this layer is, where the catalogue has one


@dataclass(frozen=True)
class Site:
    """One WARN format of NCCL: its first line, as a bounded regex, the literal run it must hold, the files that
    print it (file -> line, in the newest release that has it) and the first and last release it is in."""

    format: str
    pattern: str
    key: str
    files: tuple[tuple[str, int], ...]
    first: str
    last: str

    def where(self) -> str:
        """``misc/socket.cc:485, NCCL 2.16.5 to 2.23.4``: the first of its files, and the releases that print it."""
        path, line = self.files[0]
        return f"{path}:{line}, NCCL {self.first} to {self.last}"


@dataclass(frozen=True)
class Reading:
    """A line's layer and how it was known: "printed file", "format" (of the ``site``) or "plugin"."""

    layer: Layer
    how: str
    site: Site | None = None

    def said(self) -> str:
        """How the layer was known, for the report."""
        if self.how == "format" and self.site is not None:
            return f"the words of NCCL's WARN in {self.site.where()}"
        return "the file NCCL printed" if self.how == "printed file" else "the plugin's own prefix"


def _layer(i: int, raw: dict[str, Any]) -> Layer:
    where = f"{TABLE.name}: entry {i + 1} ({raw.get('id', 'no id')})"
    extra = set(raw) - _KEYS - _OPTIONAL
    if _KEYS - set(raw) or extra or ("files" in raw) == ("words" in raw):
        raise LayerTableError(f"{where}: keys missing or unknown, or not one of files and words")
    if raw["class"] not in ACTIONS:
        raise LayerTableError(f"{where}: class {raw['class']!r} is none of the known")
    try:
        files = tuple(re.compile(f) for f in raw.get("files", ()))
        words = re.compile(raw["words"]) if "words" in raw else None
    except re.error as e:
        raise LayerTableError(f"{where}: a pattern does not compile: {e}") from None
    return Layer(raw["id"], raw["name"], files, words, raw["means"].strip(), raw["class"],
                 tuple(f.strip() for f in raw["fix"]), raw["source"], raw.get("cause", ""))


def read_layers(path: Path = TABLE) -> tuple[Layer, ...]:
    """Every layer, in the file's order (the first whose files match a path is the path's)."""
    return tuple(_layer(i, raw) for i, raw in enumerate(tables([path])[0]["layer"]))


LAYERS = read_layers()
_BY_FILE = tuple(x for x in LAYERS if x.files)
_BY_WORDS = tuple(x for x in LAYERS if x.words is not None)


@cache
def sites() -> tuple[Site, ...]:
    """NCCL's WARN formats (job/warn_sites.json), read on the first line that needs them: most inputs never do."""
    data = json.loads(SITES.read_text())
    return tuple(Site(s["format"], s["pattern"], s["key"], tuple(s["files"].items()), s["first"], s["last"])
                 for s in data["sites"])


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def file_layer(path: str) -> Layer | None:
    """The layer of a source file of NCCL as a WARN line prints it (``transport/net_ib/p2p.cc``), or None."""
    rel = _UNDER_SRC.sub("", path)
    return next((x for x in _BY_FILE if any(f.search(rel) for f in x.files)), None)


def site_of(text: str) -> tuple[Site, Layer] | None:
    """NCCL's WARN format whose words the text holds, with its layer: the one with the longest literal run among
    those whose files are of one layer (a format printed by files of several layers names none; a file of no layer,
    such as 2.29's os/linux.cc where the socket layer's calls moved, counts for none)."""
    found = []
    for s in sites():
        if s.key in text and _compiled(s.pattern).search(text):
            # a file no layer names (an OS abstraction, a header's macro) leaves the others' layer standing
            layers = {file_layer(f) for f, _ in s.files} - {None}
            if len(layers) == 1 and (layer := layers.pop()) is not None:
                found.append((s, layer))
    return max(found, key=lambda x: len(x[0].key), default=None)


def layer_of(text: str, file: str | None = None) -> Reading | None:
    """The layer a line of NCCL's (its WARN text; ``file``: the source file its header printed, where it did) or of
    a network plugin comes from, and how that was known; None where neither says."""
    if file is not None and (layer := file_layer(file)) is not None:
        return Reading(layer, "printed file")
    plugin = next((x for x in _BY_WORDS if x.words is not None and x.words.search(text)), None)
    # a text that begins with a plugin's prefix is the plugin's, whatever NCCL format its words also hold
    # (aws-ofi-nccl's "NET/OFI Failed to open device property file ..." is not NCCL's gdrwrap "Failed to open %s")
    if plugin is not None and plugin.words is not None and plugin.words.match(text):
        return Reading(plugin, "plugin")
    if (at := site_of(text)) is not None:
        return Reading(at[1], "format", at[0])
    return Reading(plugin, "plugin") if plugin is not None else None
