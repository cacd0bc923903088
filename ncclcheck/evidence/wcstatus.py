"""rdma-core's work-completion statuses: the number and words a program prints for a transfer the NIC completed
with an error, whoever prints it (NCCL's net_ib, a network plugin's own verbs code, uccl, a benchmark).

Every RDMA program polls its completion queue (ibv_poll_cq) and finds each work completion's ``status``, an ``enum
ibv_wc_status`` (rdma-core libibverbs/verbs.h), worded by ``ibv_wc_status_str`` (libibverbs/enum_strs.c). A line
that prints both, ``status=12(transport retry counter exceeded)``, is a completion error of the verbs layer under
NCCL, whatever program printed it: the number and its words agree only there. The catalogue reads such a line as an
InfiniBand/RoCE transport error (job/catalogue/ib_error.toml) and the table of stated lines words each status
(job/statements.toml, ``ib_wc_*``).
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


def completion_error(text: str) -> tuple[int, str] | None:
    """The status (number, enum name) of a work completion that failed, where the line prints rdma-core's number
    and its own words for it; None for a success or a line whose words are not that number's."""
    m = STATUS.search(text)
    if m is None:
        return None
    n = int(m["n"])
    name, words = WC_STATUS.get(n, ("", ""))
    return (n, name) if n and words.lower() == m["words"].lower() else None
