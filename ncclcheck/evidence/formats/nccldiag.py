"""NCCL's own diagnostics: the ``NCCL DIAG`` lines of ``NCCL_RUN_DIAGNOSTICS=1`` / ``NCCL_RUN_RAS_DIAGNOSTICS=1``
at init, and of ``ncclras -D`` (the RAS client's ``DIAGNOSTICS`` command) on a live job (NCCL 2.31 and later).

Each line is ``host:pid NCCL DIAG [TAG] check: sentence``, printed whatever NCCL_DEBUG says: ``[OK]`` is a check that
passed (GPU inventory, driver and CUDA versions, ECC, NVLink, ``NCCL_*`` settings compared across ranks, Xid/SXid,
paths, P2P between every GPU pair), ``[INFO]`` one that did not pass or could not run; a line without a tag heads or
closes the report. Which ``[INFO]`` sentences state a fault is read from the format strings of NCCL 2.32.3's
``src/ras/diagnostics*.cc`` and ``misc/diagnostics`` (libnccl.so.2 of nvidia-nccl-cu13 2.32.3; the NVIDIA/nccl
mirror's ``dev`` branch, 2.31.0, predates them): the P2P check's failed pair ("only 1/2 GPU-to-GPU peer accesses
passed verification", a write or read mismatch, a peer-memory import that failed), a check that gathered fewer
ranks than the communicator has (a rank that no longer answers), an Xid or SXid found in the kernel log, rdma_topo
failing on named ranks, a rank's network bandwidth far off the median. A passed check is a fact of the line's
process; a fault is a clue in NCCL's own words, quoted whole. An ``NCCL_*`` setting that differs across ranks
("NCCL environment: mismatch across 2 ranks ... for NCCL_PROTO", then each value with its ranks) is a fact, not a
fault: recorded, NCCL_BUFFSIZE on one rank alone ran (diag_env/), NCCL_PROTO=Simple on one rank alone hung the
first small collective on both ranks (diag_env_proto/); what it meant is the verdict's to join with the failure.
Recorded: tests/data/gpu/nccl232/.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Clue, Fact, Loc, Said, Who

DIAG = re.compile(r"NCCL DIAG (?:\[(?P<tag>OK|INFO)\] *)?(?P<text>\S.*)")
FAULT = re.compile(
    r"NCCL DIAG \[INFO\] *(?P<fault>"
    r"p2p: (?:only \d+/\d+ GPU-to-GPU peer accesses passed"
    r"|(?:write|read) mismatch|peer-memory import failed|destination buffer unavailable|local CUDA setup failed"
    r"|topology check failed|launch/check failed|setup failed on rank)"
    r"|[^:]{1,40}: diagnostics incomplete, gathered \d+/\d+ ranks"
    r"|S?Xid \d+ detected"
    r"|rdma_topo check: failed on rank"
    r"|net bw: \S+ rank \d+ .{0,80}off median"
    r"|Paths: could not locate the rank's own GPU).*")
DIFFERS = re.compile(r"mismatch across \d{1,9} ranks in comm 0x[0-9a-f]{1,16} for NCCL_\w{1,64}")
# A setting that differs across ranks, and each of its values with the ranks that have it.
VALUE = re.compile(r"NCCL_\w{1,64}=\S{0,256} on rank\(s\) \{[\d,\s-]{0,4096}\}")
ANYONE = Who()  # the line's process: the parser puts it on a fact


class Lines:
    """One input's ``NCCL DIAG`` lines (each read on its own)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "NCCL DIAG" not in text:
            return ()
        if m := FAULT.search(text):
            return (Clue(ANYONE, "nccl", m[0].rstrip(), loc),)
        if (m := DIAG.search(text)) and m["tag"] == "OK":
            return (Fact(ANYONE, "nccl_diag_ok", m["text"].rstrip(), loc),)
        if m and m["tag"] == "INFO" and (v := DIFFERS.search(m["text"]) or VALUE.search(m["text"])):
            return (Fact(ANYONE, "nccl_diag_setting", v[0], loc),)
        return ()


_DIAG = "tests/data/gpu/nccl232/diag/console.log"
_DEAD = "tests/data/gpu/nccl232/hang/ras/diagnostics_dead.txt"
_P2P_FAIL = "vm:1415 NCCL DIAG [INFO] p2p: only 1/2 GPU-to-GPU peer accesses passed verification"
FORMAT = Format(
    name="NCCL diagnostics",
    words=("NCCL DIAG",),
    make=Lines,
    patterns=(DIAG, FAULT),
    behind=(
        # a DIAG INFO line's text
        Behind((DIAG,), (DIFFERS, VALUE)),
    ),
    samples=(
        Sample("[default0]:vm:1415 NCCL DIAG [OK]   NVLink: 18 links per GPU, all active at consistent speed across 2 "
               "ranks in comm 0xd70a41d7ab711654", f"{_DIAG}:117",
               (Fact(ANYONE, "nccl_diag_ok", "NVLink: 18 links per GPU, all active at consistent speed across 2 ranks "
                     "in comm 0xd70a41d7ab711654", AT),)),
        Sample("vm:1407 NCCL DIAG [INFO] NVLink: diagnostics incomplete, gathered 1/2 ranks in comm "
               "0x2b902544309b73fa/0xb38e5149a245af92/0x7d4c242d2557f3c3", f"{_DEAD}:5",
               (Clue(ANYONE, "nccl", "NCCL DIAG [INFO] NVLink: diagnostics incomplete, gathered 1/2 ranks in comm "
                     "0x2b902544309b73fa/0xb38e5149a245af92/0x7d4c242d2557f3c3", AT),)),
        Sample("[default0]:vm:836 NCCL DIAG [INFO] NCCL environment: mismatch across 2 ranks in comm 0x40c336bd9ae3adc8 "
               "for NCCL_PROTO", "tests/data/gpu/nccl232/diag_env_proto/console.log:138",
               (Fact(ANYONE, "nccl_diag_setting", "mismatch across 2 ranks in comm 0x40c336bd9ae3adc8 for NCCL_PROTO",
                     AT),)),
        Sample("[default0]:vm:836 NCCL DIAG [INFO] NCCL environment: NCCL_PROTO=Simple on rank(s) {1}",
               "tests/data/gpu/nccl232/diag_env_proto/console.log:140",
               (Fact(ANYONE, "nccl_diag_setting", "NCCL_PROTO=Simple on rank(s) {1}", AT),)),
        Sample(_P2P_FAIL, "NCCL 2.32.3's format \"%sp2p: only %llu/%llu GPU-to-GPU peer accesses passed verification\"",
               (Clue(ANYONE, "nccl", _P2P_FAIL[len("vm:1415 "):], AT),)),
    ),
)
