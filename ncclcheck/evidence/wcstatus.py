"""rdma-core's work-completion statuses: the number and words a program prints for a transfer the NIC completed
with an error, whoever prints it (NCCL's net_ib, a network plugin's own verbs code, uccl, a benchmark).

Every RDMA program polls its completion queue (ibv_poll_cq) and finds each work completion's ``status``, an ``enum
ibv_wc_status`` (rdma-core libibverbs/verbs.h), worded by ``ibv_wc_status_str`` (libibverbs/enum_strs.c). A line
that prints both, ``status=12(transport retry counter exceeded)``, is a completion error of the verbs layer under
NCCL, whatever program printed it: the number and its words agree only there. The catalogue reads such a line as an
InfiniBand/RoCE transport error (job/catalogue/ib_error.toml) and the table of stated lines words each status
(job/statements.toml, ``ib_wc_*``).

UCX (openucx/ucx) prints the words alone. Its verbs transports word the status with ``ibv_wc_status_str``: rc_verbs'
``send completion with error: %s`` (src/uct/ib/rc/verbs/rc_verbs_iface.c, 1.2 on; `` qpn 0x%x wrid 0x%lx vendor_err
0x%x`` after it from 1.8, in brackets from 1.12), ib_iface's ``%s completion[%d] with error on %s/%p: %s, vendor_err
0x%x wr_id 0x%lx`` (src/uct/ib/base/ib_iface.h, 1.3 on; 1.2's ``Receive completion with error: %s``), dc_verbs'
``Send completion with error on qp 0x%x: %s syndrome 0x%x``, the XRQ's ``Receive completion with error on XRQ: %s``
and ud_verbs' ``Send completion (wr_id=0x%0X with error: %s``. Its mlx5 transports read the CQE's syndrome
themselves and word it in their own words (src/uct/ib/mlx5/ib_mlx5_log.c ``uct_ib_mlx5_completion_with_err``):
``Local protection error on mlx5_0:1/IB (synd 0x4 vend 0x51 hw_synd 0/0)`` (1.8 on), ``Local protection (synd 0x4
vend 0x51 hw_synd 0/0) opcode RDMA_WRITE`` (1.5) or ``Error on QP 0x1a wqe[12]: Local protection (synd 0x4 vend
0x51) opcode SEND`` (1.2-1.4); each syndrome is the status rdma-core's mlx5 provider maps it to
(providers/mlx5/cq.c ``mlx5_handle_error_cqe``). That provider's own ``mlx5: HOST: got completion with error:``
(before its dump of the CQE, providers/mlx5/cq.c) names no status.
"""

from __future__ import annotations

import re

# enum ibv_wc_status (libibverbs/verbs.h) -> (its name, ibv_wc_status_str's words, libibverbs/enum_strs.c)
WC_STATUS = {
    0: ("IBV_WC_SUCCESS", "success"),
    1: ("IBV_WC_LOC_LEN_ERR", "local length error"),
    2: ("IBV_WC_LOC_QP_OP_ERR", "local QP operation error"),
    3: ("IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error"),
    4: ("IBV_WC_LOC_PROT_ERR", "local protection error"),
    5: ("IBV_WC_WR_FLUSH_ERR", "Work Request Flushed Error"),
    6: ("IBV_WC_MW_BIND_ERR", "memory management operation error"),
    7: ("IBV_WC_BAD_RESP_ERR", "bad response error"),
    8: ("IBV_WC_LOC_ACCESS_ERR", "local access error"),
    9: ("IBV_WC_REM_INV_REQ_ERR", "remote invalid request error"),
    10: ("IBV_WC_REM_ACCESS_ERR", "remote access error"),
    11: ("IBV_WC_REM_OP_ERR", "remote operation error"),
    12: ("IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded"),
    13: ("IBV_WC_RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"),
    14: ("IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation error"),
    15: ("IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"),
    16: ("IBV_WC_REM_ABORT_ERR", "aborted error"),
    17: ("IBV_WC_INV_EECN_ERR", "invalid EE context number"),
    18: ("IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"),
    19: ("IBV_WC_FATAL_ERR", "fatal error"),
    20: ("IBV_WC_RESP_TIMEOUT_ERR", "response timeout error"),
    21: ("IBV_WC_GENERAL_ERR", "general error"),
}
# "status=<n>(<words>)": the number and the words in brackets, as a program prints ibv_wc_status_str beside it.
STATUS = re.compile(r"\bstatus=(?P<n>\d{1,2})\((?P<words>[A-Za-z ]{4,40})\)")
# UCX's verbs transports: a completion "with error" (on a device, a QP or the XRQ), then ibv_wc_status_str's words.
VERBS = re.compile(r"completion(?:\[\d{1,4}\])? (?:\(wr_id=0x[0-9A-Fa-f]{1,16} )?with error(?: on [^:\n]{1,200})?: "
                   r"(?P<words>[A-Za-z][A-Za-z -]{3,40})")
# UCX's mlx5 transports: the syndrome in UCX's words before its "(synd 0x.. vend 0x..": the words end the text before it.
MLX5 = re.compile(r"(?P<words>[A-Za-z][A-Za-z -]{2,60}?) (?:on \S{1,80} )?\(synd 0x[0-9a-f]{1,2} vend 0x[0-9a-f]{1,4}")
# ib_mlx5_log.c's words for each CQE syndrome (" error" after most from 1.8), as the status they stand for.
MLX5_WORDS = {"local length": 1, "local qp operation": 2, "local protection": 4,
              "wr flushed because qp in error state": 5, "memory window bind": 6, "bad response": 7, "local access": 8,
              "invalid request": 9, "remote access": 10, "remote qp": 11, "remote operation": 11,
              "transport retry count exceeded": 12, "receive-no-ready retry count exceeded": 13,
              "remote side aborted": 16, "generic": 21}
# rdma-core's mlx5 provider before its dump of a CQE with an error (providers/mlx5/cq.c): no status, but a completion
# that failed on that host's NIC.
MLX5_CQE_DUMP = "got completion with error"
# Where a line says one of these (errors.py's clue gate): a completion with an error in any form above.
GATE = (r"\bstatus=\d{1,2}\([A-Za-z ]{4,40}\)|completion(?:\[\d{1,4}\])? (?:\(wr_id=0x[0-9A-Fa-f]{1,16} )?with error"
        r"|\(synd 0x[0-9a-f]{1,2} vend 0x|" + MLX5_CQE_DUMP)
_BY_WORDS = sorted(((words.lower(), n) for n, (_, words) in WC_STATUS.items() if n), key=lambda w: -len(w[0]))
_MLX5_BY_LENGTH = sorted(MLX5_WORDS.items(), key=lambda w: -len(w[0]))


def completion_error(text: str) -> tuple[int, str] | None:
    """The status (number, enum name) of a work completion that failed, where the line prints rdma-core's number
    and its own words for it, or UCX's words alone (ibv_wc_status_str's, or its mlx5 transports' for the CQE's
    syndrome); None for a success or a line whose words are no status's."""
    if "status=" in text and (m := STATUS.search(text)) is not None:
        n = int(m["n"])
        name, words = WC_STATUS.get(n, ("", ""))
        return (n, name) if n and words.lower() == m["words"].lower() else None
    if "with error" in text and (m := VERBS.search(text)) is not None:
        said = m["words"].lower()
        n = next((n for words, n in _BY_WORDS if said.startswith(words)), 0)
        return (n, WC_STATUS[n][0]) if n else None
    if "(synd 0x" in text and (m := MLX5.search(text)) is not None:
        said = m["words"].lower().removesuffix(" error")
        n = next((n for words, n in _MLX5_BY_LENGTH if said.endswith(words)), 0)
        return (n, WC_STATUS[n][0]) if n else None
    return None
