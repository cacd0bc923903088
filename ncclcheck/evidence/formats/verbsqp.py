"""A program's report that creating an RDMA queue pair failed: the verbs call and the errno it set.

A program that moves data over RDMA itself (an RDMA manager of a framework, a transfer engine, a test) creates its
queue pairs (QPs) through rdma-core's libibverbs, ``ibv_create_qp`` and ``ibv_create_qp_ex``, or a vendor's
direct-verbs extension (``mlx5dv_create_qp``, ``efadv_create_qp_ex``). Each returns NULL and sets errno where the
device's provider refuses the request, and the caller reports it with that errno's words: C's ``perror`` (``<its
words>: Operation not supported``), ``strerror``, or Rust's io::Error (``Invalid argument (os error 22)``). rdma-core's
providers say which requests they refuse (providers/efa/verbs.c: ``efa_create_qp`` and ``efa_create_qp_ex`` create UD
QPs only and set EOPNOTSUPP for any other type, reliable connected (RC) among them; SRD QPs only through
``efadv_create_qp_ex``; providers/mlx5/verbs.c: ``mlx5dv_create_qp`` sets EOPNOTSUPP on a device that is not an mlx5
one); EINVAL is an attribute the provider's checks refuse.

A line that names a QP's creation, by the call's name or in words (``create ... queue pair``), and one of those
errno's words, is a :class:`Clue` of the kind ``rdma_qp`` of the line's process: the call and the error as printed.
NCCL's own failed verbs calls (``Call to ibv_create_qp failed with error ...``) are read as NCCL's lines
(evidence/formats/nccl.py) and not here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

# errno's words as strerror prints them (glibc), with Rust's "(os error N)" after them where it prints one.
_ERRNO = (r"(?:Operation not supported|Invalid argument|Cannot allocate memory|Operation not permitted"
          r"|Permission denied|No such device|Function not implemented)(?: \(os error \d{1,3}\))?")
CREATE = re.compile(
    r"(?P<said>(?:\b(?:ibv_create_qp(?:_ex)?|mlx5dv_create_qp|efadv_create_qp(?:_ex)?)\b"
    r"|[Cc]reate (?:an? )?(?:extended )?queue pair)[^\n]{0,240}?" + _ERRNO + ")")
WORDS = ("create_qp", "queue pair")


class Lines:
    """One input's reports of a queue pair's creation that failed, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "Call to " in text:  # NCCL's own wrapper's words: its source reads them
            return ()
        if (m := CREATE.search(text)) is None:
            return ()
        return (Clue(Who(), "rdma_qp", m["said"].strip(), loc),)


FORMAT = Format(
    name="verbs queue pairs",
    words=WORDS,
    make=Lines,
    patterns=(CREATE,),
    samples=(
        Sample("failed to create extended queue pair (QP): Operation not supported",
               "perror after mlx5dv_create_qp (rdma-core providers/mlx5/verbs.c: EOPNOTSUPP on a device that is not "
               "mlx5), as meta-pytorch/monarch's rdmaxcel prints it",
               (Clue(Who(), "rdma_qp", "create extended queue pair (QP): Operation not supported", AT),)),
        Sample("ibv_create_qp_ex failed: Operation not supported",
               "a caller's strerror after ibv_create_qp_ex for an RC QP on EFA (rdma-core providers/efa/verbs.c, "
               "efa_create_qp_ex: UD only, EOPNOTSUPP)",
               (Clue(Who(), "rdma_qp", "ibv_create_qp_ex failed: Operation not supported", AT),)),
        Sample("could not create loopback QP for device rdmap79s0: failed to create queue pair (QP): Invalid argument "
               "(os error 22)", "Rust's io::Error of errno after ibv_create_qp (its Display: '<strerror> (os error N)')",
               (Clue(Who(), "rdma_qp", "create queue pair (QP): Invalid argument (os error 22)", AT),)),
    ),
)
