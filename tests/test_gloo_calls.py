"""gloo's timeouts name no op: the traceback above each does (evidence/formats/pycall.py, job/calls.py)."""

from __future__ import annotations

from conftest import DATA, run

GLOO = DATA / "real_gloo"


def test_gloo_timeout_takes_its_op_and_line_from_the_traceback():
    """A real 4-rank gloo all_reduce hang (torchrun, CPU): ranks 0-1 and 3 time out in `dist.all_reduce(t)`."""
    a = run(GLOO / "allreduce")
    for r in (0, 1, 3):
        s = a.job.rank(r)
        assert s is not None and s.stuck is not None
        assert s.stuck.op == "ALLREDUCE"
        assert s.stuck.frame is not None and (s.stuck.frame.file, s.stuck.frame.line) == ("/tmp/gl/hang.py", 14)


def test_ddp_backward_is_its_gradient_all_reduce(tmp_path):
    """A gloo timeout raised inside autograd's backward, with no collective frame of its own: DDP's all_reduce."""
    log = tmp_path / "console.log"
    log.write_text(
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/work/train.py", line 31, in <module>\n'
        "[rank1]:     loss.backward()\n"
        '[rank1]:   File "/usr/lib/python3/site-packages/torch/_tensor.py", line 626, in backward\n'
        "[rank1]:     torch.autograd.backward(\n"
        '[rank1]:   File "/usr/lib/python3/site-packages/torch/autograd/graph.py", line 823, in _engine_run_backward\n'
        "[rank1]:     return Variable._execution_engine.run_backward(\n"
        "[rank1]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting "
        "1800000ms for recv operation to complete\n")
    s = run(log).job.rank(1)
    assert s is not None and s.stuck is not None
    assert (s.stuck.op, s.stuck.frame.file, s.stuck.frame.line) == ("ALLREDUCE", "/work/train.py", 31)


def test_a_traceback_elsewhere_names_no_op(tmp_path):
    """A traceback that never entered a collective gives the timeout no op."""
    log = tmp_path / "console.log"
    log.write_text(
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/work/train.py", line 12, in <module>\n'
        '[rank0]:   File "/usr/lib/python3/site-packages/torch/nn/modules/module.py", line 1775, in _call_impl\n'
        "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting "
        "1800000ms for recv operation to complete\n")
    s = run(log).job.rank(0)
    assert s is not None and s.stuck is not None and s.stuck.op is None
