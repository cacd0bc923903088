"""oneCCL's own error lines: Intel's collective library (the XPU backend's ``xccl``/``ccl`` under PyTorch, vLLM and
DeepSpeed on Intel GPUs and CPUs) states its failures in two fixed forms, each release's read here.

* Its logger (src/common/log/log.hpp, LOG_ERROR; log.cpp's write_prefix puts ``YYYY:MM:DD-HH:MM:SS:(TID) `` first)
  writes an error to stderr as ``|CCL_ERROR| <file>:<line> <function>: <message>`` since 2021.6, ``|ERROR| <file>:
  <line> <function>: <message>`` in 2021.4-2021.5 and ``|ERROR| <file>:<line>  <function> <message>`` in
  2021.1-2021.3. Its warnings (``|CCL_WARN|``, ``|WARN|``) and the levels under them say nothing failed and are not
  read. CCL_FATAL is LOG_ERROR then std::terminate: the same line.
* Its exception, ccl::exception (include/oneapi/ccl/exception.hpp), words every ``what()`` as ``oneCCL: <info>``;
  CCL_THROW (log.hpp) makes the info ``<file>:<line> <function>: EXCEPTION: <message>`` since 2021.4 and
  ``<file>:<function>:<line>: EXCEPTION: <message>`` before, and a few set-up checks throw a bare message (2021.1's
  ``failed to initialize CCL``). It reaches the log through C++'s terminate handler (``what():  oneCCL: ...``) or a
  binding's Python exception (``RuntimeError: oneCCL: ...``), whose own sources read the line too.

Each is a :class:`Clue` of the kind ``ccl`` of the line's process, its words from the file (or the message) on: the
library's stated reason, whose mechanism job/statements.toml names where it knows the words (its transport layer, ATL,
failing at set-up; libfabric offering its OFI transport no provider).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

_SITE = r"[\w.+-]{1,120}\.(?:cpp|hpp|cc|c|h):\d{1,7}"
# The logger's error level, 2021.6 on (a paste may lose the tag's opening bar) and 2021.1-2021.5, with the site.
LOG = re.compile(r"CCL_ERROR\|[ \t]{0,2}(?P<said>" + _SITE + r"[ \t]{1,2}\S.{0,400})")
OLD_LOG = re.compile(r"\|ERROR\|[ \t]{1,2}(?P<said>" + _SITE + r"[ \t]{1,2}\S.{0,400})")
# ccl::exception's what(): CCL_THROW's site and EXCEPTION (either order of line and function), or a bare message that
# states a failure (bounded: linear on a hostile line).
EXCEPTION = re.compile(r"\boneCCL: (?P<said>[\w.+-]{1,120}\.(?:cpp|hpp|cc|c|h):[\w:~<> ]{1,200}?: EXCEPTION: .{0,400}"
                       r"|[^\n]{0,200}?\b(?:fail|error|invalid|cannot|unable|unimplemented|not supported)[^\n]{0,400})")
WORDS = ("CCL_ERROR|", "|ERROR|", "oneCCL: ")
_ANYONE = Who()  # the line's process: the parser puts the clue on it


class Lines:
    """One input's oneCCL error lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        m = None
        if "CCL_ERROR|" in text:
            m = LOG.search(text)
        elif "|ERROR|" in text:
            m = OLD_LOG.search(text)
        elif "oneCCL: " in text:
            m = EXCEPTION.search(text)
        return (Clue(_ANYONE, "ccl", m["said"].strip(), loc),) if m else ()


FORMAT = Format(
    name="oneCCL",
    words=WORDS,
    make=Lines,
    patterns=(LOG, OLD_LOG, EXCEPTION),
    samples=(
        Sample("  CCL_ERROR| atl_ofi_helper.cpp:1118 fi_getinfo error: ret -61, providers 0",
               "tests/data/public_threads/327-llmd-2270-xpu-pod-crash-loop-at-transport-init.log:2",
               (Clue(_ANYONE, "ccl", "atl_ofi_helper.cpp:1118 fi_getinfo error: ret -61, providers 0", AT),)),
        Sample("2021:12:01-08:00:00:(12345) |ERROR| atl_ofi_helper.cpp:903 atl_ofi_get_prov_list: fi_getinfo error, "
               "prov_name psm3", "oneCCL 2021.5 src/atl/ofi/atl_ofi_helper.cpp (LOG_ERROR's |ERROR| tag, 2021.4-2021.5)",
               (Clue(_ANYONE, "ccl", "atl_ofi_helper.cpp:903 atl_ofi_get_prov_list: fi_getinfo error, prov_name psm3",
                     AT),)),
        Sample("  oneCCL: atl_ofi_comm.cpp:232 init_transport: EXCEPTION: failed to initialize ATL",
               "tests/data/public_threads/327-llmd-2270-xpu-pod-crash-loop-at-transport-init.log:1",
               (Clue(_ANYONE, "ccl", "atl_ofi_comm.cpp:232 init_transport: EXCEPTION: failed to initialize ATL",
                     AT),)),
        Sample("  what():  oneCCL: failed to initialize CCL",
               "oneCCL 2021.1 src/ccl_cpp_environment.cpp (CCL_CHECK_AND_THROW's bare message) after terminate",
               (Clue(_ANYONE, "ccl", "failed to initialize CCL", AT),)),
    ),
)
