"""What the common NVIDIA Xid codes mean and who acts on them, in this project's words.

Read from NVIDIA's Xid catalogue (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html: each code's
description and its resolution bucket) for the codes a distributed training job meets most; a code not listed
here is named by its number with the catalogue to look it up in.
"""

from __future__ import annotations

CATALOGUE_URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
USER, RESTART, OPERATOR = "the job", "restart the job", "the node's operators"

# code: (what happened, who acts, what to do)
XIDS: dict[int, tuple[str, str, str]] = {
    13: ("a graphics engine exception (a kernel faulted: an out-of-range access or an illegal instruction)", USER,
         "most often the application: rerun with CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer; if it repeats on one "
         "GPU only, report it"),
    31: ("a GPU memory page fault (a kernel touched memory it does not own)", USER,
         "most often the application or a library (an illegal address); if it follows the node, a driver or "
         "hardware fault"),
    43: ("the GPU stopped processing (a user application's fault ended its channel)", RESTART,
         "restart the job; the GPU itself is fine"),
    45: ("preemptive clean-up after a previous error (a process was killed or failed)", RESTART,
         "a consequence, not a cause: look for the error before it"),
    48: ("a double-bit ECC error in GPU memory", OPERATOR,
         "drain the node and reset the GPU; repeated ones mean replacing it"),
    61: ("an internal micro-controller breakpoint", OPERATOR, "reset the GPU; report it if it repeats"),
    62: ("an internal micro-controller halt", OPERATOR, "reset the GPU; report it if it repeats"),
    63: ("an ECC page retirement or row remapping was recorded", OPERATOR,
         "reset the GPU when convenient so the remapping takes effect"),
    64: ("an ECC page retirement or row remapping failed", OPERATOR, "drain the node and have the GPU replaced"),
    74: ("an NVLink error", OPERATOR,
         "drain the node; reset the GPUs, and have the link or board checked if it repeats"),
    79: ("the GPU has fallen off the bus (it stopped answering on PCIe)", OPERATOR,
         "a hardware or power fault: drain the node, reboot it, and have it checked before it rejoins"),
    92: ("a high rate of single-bit ECC errors", OPERATOR, "watch it; drain and check the GPU if it keeps rising"),
    94: ("a contained ECC error (one application was affected)", RESTART,
         "restart the job; reset the GPU when it is free"),
    95: ("an uncontained ECC error", OPERATOR, "drain the node and reset the GPU before it runs anything again"),
    119: ("a GSP (the GPU's firmware processor) call timed out", OPERATOR,
          "reset the GPU; a newer driver fixes several causes; report it if it repeats"),
    120: ("a GSP (the GPU's firmware processor) error", OPERATOR,
          "reset the GPU; a newer driver fixes several causes; report it if it repeats"),
}


# Codes that record a fault the GPU corrected or will correct at its next reset: a note for the operators, not why a
# process died.
NOT_FATAL = {63, 92}


def fatal(code: int) -> bool:
    """Whether an Xid can be why a process on that GPU died (an unknown code is taken as one)."""
    return code not in NOT_FATAL


def meaning(code: int) -> str:
    """What an Xid says and what to do: ``the GPU has fallen off the bus (…); for the node's operators: …``."""
    known = XIDS.get(code)
    if known is None:
        return f"a code this tool does not know: look it up in NVIDIA's Xid catalogue ({CATALOGUE_URL})"
    what, who, do = known
    return f"{what}; {do}" if who == RESTART else f"{what}; for {who}: {do}"
