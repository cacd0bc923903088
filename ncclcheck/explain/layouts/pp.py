"""Pipeline parallelism (torch.distributed.pipelining): what one stage sends the next, and what it sends back.

Rules from torch/distributed/pipelining/stage.py and schedules.py (torch 2.13). Stages exchange point-to-point
sends and receives only, never collectives. Every microbatch's forward sends each stage's output to the next stage
(PipelineStage.get_fwd_send_ops) and its backward sends the gradient of each received input back
(get_bwd_send_ops): the same shape both ways, microbatch x seq x hidden for a decoder cut between layers. The
schedules (ScheduleGPipe, Schedule1F1B) change only the order, not the sizes. The batch is split by
torch.tensor_split along dim 0 (microbatch.py split_args_kwargs_into_chunks), so the microbatches are
ceil(B / M) or floor(B / M) rows. Before the first step the stages agree on shapes: a warm-up vote, one int32 from
each stage to the next and the result back (_warmup_forward_vote, _warmup_backward_result), then, where the stage
was built without example inputs and outputs, the tensor metadata each way through send_object_list
(_send_meta/_recv_meta): one int64 size per object, then the pickled object as that many uint8 bytes. NCCL stages
also open each neighbour's communicator with a one-element float32 send and receive
(_get_init_p2p_neighbors_ops).
"""

from __future__ import annotations

from ncclcheck.explain.layouts.base import Setting, Shape
from ncclcheck.explain.ops import P2P


def microbatch_rows(batch: int, microbatches: int) -> list[int]:
    """The distinct row counts torch.tensor_split gives when cutting ``batch`` rows into ``microbatches`` parts."""
    if microbatches < 1 or microbatches > batch:
        return []
    return sorted({-(-batch // microbatches), batch // microbatches} - {0}, reverse=True)


def shapes(s: Setting) -> list[Shape]:
    m = s.model
    out: list[Shape] = []
    stages = f" between {s.pipeline[0]} stages" if s.pipeline and s.pipeline[0] else ""
    if m.batch and m.seq and m.hidden:
        split = s.pipeline[1] if s.pipeline and s.pipeline[1] else None
        counts = [split] if split else [k for k in range(1, m.batch + 1) if m.batch % k == 0]
        seen: set[int] = set()
        for k in counts:
            for rows in microbatch_rows(m.batch, k):
                if rows in seen:
                    continue
                seen.add(rows)
                how = (f"--microbatches {k}: {m.batch} rows cut into microbatches of {rows}" if split else
                       f"if the batch of {m.batch} is cut into {k} microbatch{'es' if k > 1 else ''}")
                out.append(Shape("pp_activation", P2P, rows * m.seq * m.hidden, None,
                                 f"pipeline activation microbatch×seq×hidden = {rows}×{m.seq}×{m.hidden}{stages}: a "
                                 f"stage's output sent forward, or its gradient sent back ({how})", 0 if split else 1))
    out.append(Shape("pp_metadata", P2P, 1, None,
                     f"pipeline set-up{stages}: the warm-up vote (one int32), send_object_list's size of the pickled "
                     "stage metadata (one int64) or, under NCCL, the one-element float32 that opens a neighbour's "
                     "communicator", 0))
    return out


def payload(n: int, dtype: str) -> Shape | None:
    """A uint8 send or receive of ``n`` elements: send_object_list's pickled payload, whatever its length."""
    if dtype != "uint8" or n < 2:  # a byte tensor between stages is the pickled metadata itself
        return None
    return Shape("pp_metadata", P2P, n, None,
                 f"pipeline set-up: send_object_list's pickled stage metadata, {n} bytes (one uint8 each; the length "
                 "depends on the pickled shapes, not on the model's size)", 1)
