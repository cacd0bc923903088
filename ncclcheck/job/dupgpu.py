"""NCCL's line that two ranks of one communicator share a GPU, in every form NCCL has printed, and whose ranks they are.

NCCL checks at a communicator's set-up that no two of its ranks on one host use the same GPU (src/init.cc). From
2.5.6 it printed ``Duplicate GPU detected : rank <me> and rank <peer> both on CUDA device <busId>`` (the bus id as
NCCL's integer, in hex: ``%x`` in 2.5.6, ``%lx`` later; 53000 is PCI 0000:53:00.0, int64ToBusId in
src/misc/utils.cc) and returned ncclInvalidUsage; a paste often keeps the sentence without its opening (``rank 27
and rank 19 both on CUDA device 53000``) or cuts the bus id off. From 2.30 the check is ncclCheckMultiRank:
``Multiple ranks detected using the same GPU on this node. Set NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this
configuration.``, naming no rank (its INFO line ``Detected ranks <a> and <b> sharing GPU with bus <busId> on this
node`` does, with NCCL_DEBUG=INFO). evidence/formats/nccl.py reads the two ranks and the bus once, into the
``nccl`` field of the error or clue that keeps the line, whichever form it was (a WARN, a Last error, an exception).

The two ranks are ranks of the failing communicator, not of the job: a sub-group's, or a framework's own
communicator (Ray's worker groups, a serving engine's weight-sync group), numbers its ranks from 0. The rule: they
are taken as the job's (global) culprit ranks only where the communicator is known to be the world, that is where
a line states the world's size exactly, both ranks fall inside it and the inputs show no process group but the
default one (whose ranks are the global ranks). Anywhere else the report names them as the communicator's ranks
and names no global culprit; nor is the rank whose prefix the line carries the culprit: it is one of the ranks that
share the GPU, and which of them picked the wrong device (or whether every process did) is not in its line.

Each rank that shares its GPU prints its own line, naming itself and the first other rank on that GPU (the check's
loop over the communicator's ranks), so a line's two ranks are one pair of those that share it, not the only pair.
Where every process of the world states the same device (Accelerate's state, one ``Device: cuda:0`` a process,
PartialState.__repr__ in src/accelerate/state.py), every rank shares one GPU: the launch started more processes than
the GPUs they see, or gave them all one, and no rank is the culprit (:func:`one_device`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ncclcheck.evidence.types import NcclWords

if TYPE_CHECKING:  # job/model.py imports job/causes.py, which words this line from here
    from ncclcheck.job.model import Job


def pair_words(said: NcclWords) -> str:
    """``ranks 19 and 27 of the failing communicator share one GPU (PCI 0000:53:00.0)``, from the two ranks and the
    bus NCCL's duplicate-GPU line names (read into its event's ``nccl`` field by evidence/formats/nccl.py); empty
    where it names no pair."""
    if said.shared is None:
        return ""
    a, b = sorted(said.shared)
    on = f" (PCI {said.bus})" if said.bus else " (the line's bus id is cut off)"
    return f"ranks {a} and {b} of the failing communicator share one GPU{on}"


def is_world(job: Job, ranks: tuple[int, ...]) -> bool:
    """Whether a communicator's ranks are the job's: a line states the world's size exactly, the ranks fall inside
    it, and the inputs show no process group but the default one."""
    stated = job.world_stated
    if stated is None or not stated.exact or job.world is None or not all(0 <= r < job.world for r in ranks):
        return False
    return all(g.id.desc in (None, "default_pg") and g.id.id in (None, "0") for g in job.groups)


def one_device(job: Job) -> str | None:
    """The device every process of the world states: the blocks of as many processes as the world has ranks (two
    or more, each its ``Process index``) and one device among them all; None otherwise."""
    devices = {f.value for f in job.facts.devices if f.key == "accelerate_device"}
    processes = {f.value for f in job.facts.devices if f.key == "accelerate_process"}
    world = job.world
    return next(iter(devices)) if len(devices) == 1 and world is not None and len(processes) >= max(world, 2) else None


def launch_words(job: Job) -> str:
    """Why no rank is the culprit where every process states one device; empty where they do not."""
    device = one_device(job)
    if device is None:
        return ""
    at = next(f.loc for f in job.facts.devices if f.key == "accelerate_device")
    return (f" Every process of the job states the same device (Accelerate's 'Device: {device}' in each of the "
            f"{job.world} processes' state, {at}): the launch started more processes than the GPUs they see, or "
            "gave them all one GPU, so every rank shares it and no rank is the culprit: start one process per GPU "
            "(`--num_processes` / `--nproc_per_node` no more than the GPUs, CUDA_VISIBLE_DEVICES, `--gpu_ids`).")


def culprits(job: Job, said: NcclWords | None) -> list[int]:
    """The job's culprit ranks a duplicate-GPU line names (``said``, its NCCL words): its two ranks where the
    communicator is known to be the world (:func:`is_world`) and not every process states one device
    (:func:`one_device`), else none."""
    ranks = tuple(sorted(set(said.shared))) if said is not None and said.shared is not None else ()
    return list(ranks) if ranks and is_world(job, ranks) and one_device(job) is None else []
