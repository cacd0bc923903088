"""A native crash's backtrace read frame by frame, and the library it struck in named (job/crashsite.py).

Every line is written from the format string of the handler that prints it: UCX's (openucx/ucx src/ucs/debug/
debug.c: ``Caught signal %d (%s: %s%s)`` after ``[host:pid:thread:tid]``, ``==== backtrace (tid:%7d) ====``, frames
``"%2d  %s"`` of glibc's backtrace_symbols or ``"%2d 0x%016lx %s()  %s:%u"`` with BFD), glog's (src/signalhandler.cc:
``*** SIGSEGV (@0x0) received by PID ...; stack trace: ***``, ``PC: @ <addr> <symbol>``, ``    @ <addr> <symbol>``),
CPython 3.14's faulthandler (Python/traceback.c: ``  Binary file "<path>", at <symbol>+0x<off> [0x<addr>]``) and
Open MPI's (opal/util/stacktrace.c: ``[host:pid] [ n] `` before glibc's backtrace_symbols_fd); NCCL's version and
settings lines are src/init.cc's and src/misc/param.cc's.
"""

from __future__ import annotations

from conftest import DATA, run, run_text, thread_log

from ncclcheck.evidence.formats.backtrace import family, frame

UCX_HEAD = "[node1:12345:0:12350] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x48)"
UCX_BT = "==== backtrace (tid:  12350) ===="
UCX_HANDLER = (" 0  /usr/lib/libucs.so.0(ucs_handle_error+0x2d4) [0x7fedc925c274]",
               " 1  /usr/lib/libucs.so.0(+0x2d44c) [0x7fedc925c44c]")
NCCL_VERSION = "node1:12345:12345 [0] NCCL INFO NCCL version 2.27.7+cuda12.4"
RAS_SET = "node1:12345:12345 [0] NCCL INFO NCCL_RAS_ENABLE set by environment to 1"


def _found(text: str, code: str):
    v = run_text(text).verdict
    return next((f for f in v.findings if f.code == code), None), v


def test_each_printers_frame_is_read_into_its_library_and_symbol():
    assert frame(" 3  /opt/nccl/lib/libnccl.so.2(+0x120057) [0x7ff1c18c1057]") == ("libnccl.so.2", "")
    assert frame(" 5 0x0000000000050dc2 ncclProxyProgress()  /src/proxy.cc:912") == ("", "ncclProxyProgress")
    assert frame(" 0 0x0000000000042520 ???()  ???:0") == ("", "")
    assert frame("[n1:02741] [ 2] /lib/x86_64-linux-gnu/libc.so.6(memcpy+0x1c)[0x7f3c2d1e4a8b]") == ("libc.so.6",
                                                                                                     "memcpy")
    assert frame("PC: @     0x7f3c2d1e4a8b ncclProxyService()") == ("", "ncclProxyService")
    assert frame("    @     0x7f3c2d1e4a8b (unknown)") == ("", "")
    assert frame('  Binary file "/usr/lib/libcuda.so.1", at cuLaunchKernel+0x2b [0x7f3c2d1e4a8b]') == (
        "libcuda.so.1", "cuLaunchKernel")
    assert frame('  Binary file "/usr/bin/python3.14" [0x55d1c2e4a8b0]') == ("python3.14", "")
    # not frames: a Python traceback's line, prose with an address
    assert frame('  File "/x/train.py", line 12, in <module>') is None
    assert frame("allocated buffer at 0x7f3c2d1e4a8b") is None


def test_families_by_file_name_and_symbol_and_the_handlers_own_frames():
    assert family("libnccl.so.2", "") == "NCCL"
    assert family("", "pncclRedOpDestroy") == "NCCL"
    assert family("libnccl-net.so", "") == "NCCL net plugin"
    assert family("libibverbs.so.1", "ibv_post_send") == "rdma-core"
    assert family("libucp.so.0", "ucp_worker_progress") == "UCX"
    assert family("libucs.so.0", "ucs_handle_error") == "handler"
    assert family("", "__sigaction") == "handler"
    assert family("", "google::(anonymous namespace)::FailureSignalHandler()") == "handler"
    assert family("libc.so.6", "memcpy") == "system"
    assert family("_myext.cpython-311-x86_64-linux-gnu.so", "") == "_myext.cpython-311-x86_64-linux-gnu.so"


def test_a_ucx_backtrace_through_libnccl_names_nccls_crash_with_its_release_and_settings():
    text = "\n".join((NCCL_VERSION, RAS_SET, UCX_HEAD, UCX_BT, *UCX_HANDLER,
                      " 2  /opt/nccl/lib/libnccl.so.2(+0x120057) [0x7ff1c18c1057]",
                      " 3  /usr/lib/x86_64-linux-gnu/libc.so.6(+0x89144) [0x7ff1c151e144]", ""))
    crash, v = _found(text, "crash-in-nccl")
    assert crash is not None and "libnccl.so.2" in crash.message
    assert str(crash.evidence[0]).endswith(":7")
    assert "NCCL 2.27.7:" in (crash.fix or "") and "previous NCCL release" in (crash.fix or "")
    assert "NCCL_DEBUG=INFO" in (crash.fix or "")
    settings = next(f for f in v.findings if f.code == "settings-to-unset")
    assert "NCCL_RAS_ENABLE=1" in settings.message
    # the handler's own UCX frames are not UCX's crash: no UCX transport step
    assert not any("UCX_TLS" in s for s in v.next_steps)
    assert (v.cause.cause.kind if v.cause else None) == "native_crash"


def test_ucxs_detailed_frames_name_nccl_by_its_symbols_and_the_trampoline_is_passed():
    text = "\n".join((UCX_HEAD, UCX_BT, " 0 0x0000000000042520 __sigaction()  ???:0",
                      " 1 0x0000000000050dc2 ncclProxyProgress()  /src/proxy.cc:912", ""))
    crash, _ = _found(text, "crash-in-nccl")
    assert crash is not None and "ncclProxyProgress()" in crash.message
    assert "the log prints no NCCL release" in (crash.fix or "")


def test_a_fault_in_the_c_library_is_charged_to_the_library_that_called_it():
    text = "\n".join(("*** SIGSEGV (@0x0) received by PID 2741 (TID 0x7f0c9f7fe700) from PID 0; stack trace: ***",
                      "PC: @     0x7f0ca1c3e9f0 __memmove_avx_unaligned_erms",
                      "    @     0x7f0ca1b2c420 (unknown)",
                      "    @     0x7f0c8a3e1f2b ibv_post_send",
                      "    @     0x7f0c8a3e2000 ncclIbIsend", ""))
    site, v = _found(text, "crash-site")
    assert site is not None and "rdma-core" in site.message and "ibv_post_send()" in site.message
    assert "ibv_devinfo" in (site.fix or "")
    assert not any(f.code == "crash-in-nccl" for f in v.findings)


def test_cpythons_c_stack_names_the_cuda_driver():
    text = "\n".join(("Fatal Python error: Segmentation fault", "",
                      "Current thread's C stack trace (most recent call first):",
                      '  Binary file "/usr/bin/python3.14", at _Py_DumpStack+0x4c [0x55d1c2e4a8b0]',
                      '  Binary file "/usr/bin/python3.14", at faulthandler_fatal_error+0x1a2 [0x55d1c2e4a9f2]',
                      '  Binary file "/lib/x86_64-linux-gnu/libc.so.6", at +0x45330 [0x7f3c2d045330]',
                      '  Binary file "/usr/lib/x86_64-linux-gnu/libcuda.so.1", at +0x2a4b1c [0x7f3c2d1e4a8b]', ""))
    site, _ = _found(text, "crash-site")
    assert site is not None and "CUDA" in site.message and "libcuda.so.1" in site.message
    assert "nvidia-smi" in (site.fix or "")


def test_no_site_without_frames_past_the_handler_or_before_the_crash():
    # frames printed before the crash's line belong to something else (an earlier report)
    before = "\n".join((" 2  /opt/nccl/lib/libnccl.so.2(+0x120057) [0x7ff1c18c1057]", UCX_HEAD, UCX_BT, *UCX_HANDLER,
                        ""))
    crash, v = _found(before, "crash-in-nccl")
    assert crash is None and not any(f.code == "crash-site" for f in v.findings)
    # the handler and the C library only: nothing to name
    only = "\n".join((UCX_HEAD, UCX_BT, *UCX_HANDLER, " 2  /lib/libc.so.6(+0x42520) [0x7f3c2d042520]", ""))
    _, v = _found(only, "crash-in-nccl")
    assert not any(f.code in ("crash-in-nccl", "crash-site") for f in v.findings)


def test_frames_without_a_native_crash_name_nothing():
    # a Python exception with a glibc backtrace printed beside it is no native crash
    text = "\n".join(("RuntimeError: CUDA error: an illegal memory access was encountered",
                      " 2  /opt/nccl/lib/libnccl.so.2(+0x120057) [0x7ff1c18c1057]", ""))
    _, v = _found(text, "crash-in-nccl")
    assert not any(f.code in ("crash-in-nccl", "crash-site") for f in v.findings)


def test_the_public_threads_crashes_in_nccl_are_named():
    for case, named in (("226", "libnccl.so"), ("231", "pncclRedOpDestroy()")):
        v = run_text(thread_log(case).read_text()).verdict
        crash = next(f for f in v.findings if f.code == "crash-in-nccl")
        assert named in crash.message


def test_a_real_crash_under_gdb_is_charged_to_the_extension_that_called_libc():
    """gdb stopped on a real SIGSEGV (tests/data/crash/README.md): frame 0 is glibc's strlen (no library printed),
    frame 1 the _ctypes extension that passed it the null pointer."""
    v = run(DATA / "crash" / "gdb" / "console.log").verdict
    assert (v.cause.cause.kind if v.cause else None) == "native_crash"
    site = next(f for f in v.findings if f.code == "crash-site")
    assert "_ctypes.cpython-311-x86_64-linux-gnu.so" in site.message and str(site.evidence[0]).endswith(":8")
    assert not any(f.code == "crash-in-nccl" for f in v.findings)


def test_a_real_segfault_under_torchrun_names_the_python_call_faulthandler_shows():
    """torchrun's rank 1 crashed in ctypes.string_at with faulthandler on (tests/data/crash/README.md)."""
    v = run(DATA / "crash" / "torchrun" / "console.log").verdict
    assert v.kind.value == "rank_failed_first" and v.culprit_ranks == (1,)
    assert (v.cause.cause.kind if v.cause else None) == "native_crash"
    call = next(f for f in v.findings if f.code == "crash-call")
    assert "string_at" in call.message and "segv_rank1.py:10" in call.message
    assert not any(f.code in ("crash-site", "crash-in-nccl") for f in v.findings)


def test_only_the_python_frames_of_the_thread_that_caught_the_signal_are_read():
    text = "\n".join(("Fatal Python error: Segmentation fault", "",
                      "Thread 0x00007f3d40000640 (most recent call first):",
                      '  File "/usr/lib/python3.11/threading.py", line 327 in wait', "",
                      "Current thread 0x00007f3d44646b80 (most recent call first):",
                      '  File "/x/site-packages/torch/distributed/distributed_c10d.py", line 2806 in all_reduce',
                      '  File "/x/train.py", line 41 in step', ""))
    call, _ = _found(text, "crash-call")
    assert call is not None and "all_reduce" in call.message and "step (/x/train.py:41)" in call.message
    assert "wait" not in call.message


def test_frames_far_under_the_crash_are_another_reports():
    far = "\n".join((UCX_HEAD, *(f"step {i}" for i in range(500)), UCX_BT, *UCX_HANDLER,
                     " 2  /opt/nccl/lib/libnccl.so.2(+0x120057) [0x7ff1c18c1057]", ""))
    crash, _ = _found(far, "crash-in-nccl")
    assert crash is None


def test_a_backtrace_read_puts_its_librarys_step_first_and_drops_the_ask_for_the_stack():
    text = "\n".join(("[n1:288505:0:296459] Caught signal 11 (Segmentation fault: address not mapped to object at "
                      "address 0x48)", "==== backtrace (tid: 296459) ====",
                      " 0  /usr/lib/libucs.so.0(ucs_handle_error+0x2d4) [0x7fedc925c274]",
                      " 1  /usr/lib/libucs.so.0(+0x2d44c) [0x7fedc925c44c]",
                      " 2  /opt/nccl/lib/libnccl.so(+0x120057) [0x7ff1c18c1057]", ""))
    v = run_text(text).verdict
    assert v.cause is not None and v.cause.cause.kind == "native_crash"
    assert v.next_steps[0].startswith("The log prints no NCCL release") and v.next_steps[0].endswith(".")
    assert not any(s.startswith("Get the native stack") for s in v.next_steps)
    # with no frame read, the stack is what to get first
    bare = run_text("Segmentation fault (core dumped)\n").verdict
    assert bare.next_steps[0].startswith("Get the native stack")
