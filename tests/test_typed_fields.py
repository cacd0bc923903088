"""Facts a line states, read once into typed fields by the module of evidence/formats/ that owns the line and
carried by the event the assembler keeps, so that job/ matches on fields, not on the line's words (issue 40;
docs/layout.md, "Regular expressions over an event's words in job/")."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ncclcheck.evidence.formats import errors, nccl, storeclient, torchrun
from ncclcheck.evidence.parse import LogParser
from ncclcheck.evidence.types import Closing, ErrorKind, FileScan, NcclWords, PeerGone, Stating, StoreWords
from ncclcheck.job.analyze import analyze_scans


def _scan(lines: list[str], name: str = "console.log") -> FileScan:
    parser = LogParser(name, None)
    for i, line in enumerate(lines, 1):
        parser.feed(i, line.encode())
    return parser.finish(len(lines), sum(map(len, lines)))


# torchrun's agent stopping its workers (multiprocessing/api.py, PContext._close), as recorded.
CLOSING = [
    ("W1122 11:30:29.213000 1549 torch/distributed/elastic/multiprocessing/api.py:1012] Sending process 2271 closing "
     "signal SIGTERM", Closing(2271, "SIGTERM")),  # tests/data/real4/detail/console.log:64
    ("W1127 15:04:24.079000 353 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 590 closing "
     "signal SIGINT", Closing(590, "SIGINT")),  # tests/data/launchers/torchrun/sigint/console.log
    ("WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4242 closing signal SIGTERM",
     Closing(4242, "SIGTERM")),  # the logger's basic form (PyTorch 1.x)
]


def test_the_agents_closing_line_is_read_into_pid_and_signal():
    assert [torchrun.closing(line) for line, _ in CLOSING] == [want for _, want in CLOSING]
    assert torchrun.closing("Received 15 death signal, shutting down workers") is None


def test_the_closing_rides_on_the_kept_launcher_clue_only():
    scan = _scan([line for line, _ in CLOSING])
    assert [(c.kind, c.closing) for c in scan.clues] == [("launcher", want) for _, want in CLOSING]
    store = _scan(["[c10d] TCPStore: Broken pipe after Sending process 7 closing signal SIGTERM"])  # a store's clue
    assert [(c.kind, c.closing) for c in store.clues] == [("store", None)]


@given(st.integers(0, 2**22), st.sampled_from(["SIGTERM", "SIGINT", "SIGKILL"]), st.text(max_size=40))
def test_any_closing_line_is_read_whatever_surrounds_it(pid, sig, before):
    assert torchrun.closing(f"{before}Sending process {pid} closing signal {sig}") == Closing(pid, sig)


# The peer NCCL's transport names (src/misc/socket.cc, ncclSocketToString's "host<port>"), as recorded.
PEER = [
    ("a100-st-p4d24xlarge-22:183006:183181 [1] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer "
     "a100-st-p4d24xlarge-22.luciodelelis-92732890-0458-4f76-8369-c4fee80b23e7.pcluster<47861>",
     NcclWords("a100-st-p4d24xlarge-22.luciodelelis-92732890-0458-4f76-8369-c4fee80b23e7.pcluster", 47861)),
    ("[rank3]:gpu-h:812:900 [3] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.3.0.7<39138> "
     "with status=5 opcode=1 len=0 vendor err 249 (Send) localGid ::ffff:10.3.0.8 remoteGids::ffff:10.3.0.7",
     NcclWords("10.3.0.7", 39138)),  # tests/data/verbs/wc_5_rank.log
]


def test_the_peer_a_transport_names_is_read_into_host_and_port():
    assert [nccl.words(line) for line, _ in PEER] == [want for _, want in PEER]
    # the peer's address cut off (tests/data/real4/net_killed), and a socket's own address: no peer
    assert nccl.words("vm:2278:2861 [3] misc/socket.cc:72 NCCL WARN socketProgress: Connection closed by remote peer ") \
        is None
    assert nccl.words("NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>") is None


def test_the_peer_rides_on_the_kept_warn():
    scan = _scan([line for line, _ in PEER])
    assert [(e.kind, e.nccl) for e in scan.errors] == [(ErrorKind.CONNECTION, PEER[0][1]),
                                                       (ErrorKind.NCCL_WARN, PEER[1][1])]


@given(st.text(max_size=300))
def test_any_text_is_read_or_left(text):
    said = nccl.words(text)
    assert said is None or said != NcclWords()  # a result always says something


# NCCL's duplicate-GPU check (src/init.cc), as recorded: a WARN with its header, the sentence under "Last error:".
DUPLICATE = "tests/data/public_threads/125-azuremlex-675-cifar-job-duplicate-gpu.log"
LAST_ERROR = "tests/data/failure_corpus/32-megatron661-duplicate-gpu.log"


def test_the_duplicate_gpu_pair_is_read_into_ranks_and_bus():
    line = ("8dbe9e7102e4446db27ef6fb1a2533e9000001:176:194 [0] init.cc:573 NCCL WARN Duplicate GPU detected : rank 0 "
            "and rank 1 both on CUDA device 1cb00000")
    assert nccl.words(line) == NcclWords(shared=(0, 1), bus="01cb:00:00.0")
    assert nccl.words("Detected ranks 2 and 6 sharing GPU with bus 53000 on this node") == \
        NcclWords(shared=(2, 6), bus="0000:53:00.0")  # 2.30's INFO (ncclCheckMultiRank)
    assert nccl.words("Multiple ranks detected using the same GPU on this node.") is None  # names no rank


def test_the_pair_rides_on_the_kept_warn_and_last_error():
    warn = _scan(Path(DUPLICATE).read_text(errors="replace").splitlines(), DUPLICATE)
    assert NcclWords(shared=(0, 1), bus="01cb:00:00.0") in [e.nccl for e in warn.errors]
    last = _scan(Path(LAST_ERROR).read_text(errors="replace").splitlines(), LAST_ERROR)
    assert {c.nccl.shared for c in last.clues if c.nccl is not None} >= {(3, 0), (7, 0)}


# A peer that went away, in each source's words (evidence/formats/nccl.py, PEER_GONE), as recorded: gloo's closed and
# reset connections (gloo/transport/tcp/pair.cc), NCCL's socket layer with strerror(EPIPE), PyTorch's words for
# ncclGetErrorString(ncclRemoteError) and the result's line under it (torch/csrc/distributed/c10d/NCCLUtils.cpp).
GONE = [
    ("[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed "
     "by peer [127.0.0.1]:40074. This is typically caused by a remote worker crashing.",
     PeerGone("Connection closed by peer [127.0.0.1]:40074")),  # tests/data/world/tpdp
    ("[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
     "[127.0.0.1]:44172: Connection reset by peer. This is typically caused by a remote worker hanging",
     PeerGone("Connection reset by peer")),  # tests/data/launchers/torchrun/uneven_lines_metric
    ("a100-st-p4d24xlarge-22:183006:183220 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from "
     "10.200.84.247<58355> failed : Broken pipe", PeerGone("Broken pipe")),  # tests/data/corpus/07-*
    ("[rank3]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
     "remote process exited or there was a network error, NCCL version 2.20.5",
     PeerGone("remote process exited or there was a network error, NCCL version 2.20.5", remote=True)),  # verbs/
    ("ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.",
     PeerGone("ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
              "prematurely", remote=True)),
]


def test_a_peer_gone_is_read_in_every_sources_words():
    assert [nccl.gone(line) for line, _ in GONE] == [want for _, want in GONE]
    # a connect the peer refused: the peer was never reached, none went away
    assert nccl.gone("socketPollConnect: connect to 192.0.2.2<57551> returned Connection refused") is None


def test_the_peer_gone_rides_on_the_kept_error_and_the_ranks_ending():
    scan = _scan([GONE[0][0]])
    assert [e.gone for e in scan.errors] == [GONE[0][1]]
    job = analyze_scans([scan]).job
    assert [s.ending.gone for s in job.ranks if s.rank == 0] == [GONE[0][1]]


def test_a_works_async_error_carries_its_peer_gone_to_the_ending():
    """ProcessGroupNCCL's "raised the following async exception: NCCL error: remote process exited ..." (recorded,
    tests/data/gpu/async-error/rank0.log:32): the work's error is read once, and the rank's NCCL_ERROR ending quotes
    it with its typed word that a peer went away."""
    line = ("[rank0]:[E1122 11:30:06.511656724 ProcessGroupNCCL.cpp:612] [Rank 0] Collective WorkNCCL(SeqNum=178, "
            "OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=30000) raised the following async "
            "exception: NCCL error: remote process exited or there was a network error, NCCL version 2.28.9")
    want = PeerGone("remote process exited or there was a network error, NCCL version 2.28.9", remote=True)
    scan = _scan([line], "rank0.log")
    assert [w.gone for w in scan.works if w.evidence == "async_exception"] == [want]
    ending = next(s.ending for s in analyze_scans([scan]).job.ranks if s.rank == 0)
    assert (ending.kind.value, ending.gone) == ("nccl_error", want)


# What a failure line states (evidence/formats/errors.py, stating), each form as recorded in tests/data or as its
# source's format string prints it: NCCL's CUDACHECK (src/include/checks.h, "Cuda failure '%s'", the number before it
# since 2.19) and SYSCHECK ("Call to %s failed : %s"), its socket layer, ncclGetErrorString's results, gloo's enforce,
# the terminate handler's type, and the lines that state no failure.
STATING = [
    ("misc/strongstream.cc:395 NCCL WARN Cuda failure 1 'invalid argument'",
     Stating(cuda="invalid argument", result="ncclInvalidArgument")),  # the words of both: each source reads its own
    ("include/alloc.h:48 NCCL WARN Cuda failure 'initialization error'", Stating(cuda="initialization error")),
    ("a100-st-p4d24xlarge-22:183006:183220 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from "
     "10.200.84.247<58355> failed : Broken pipe", Stating(call="recv", call_error="Broken pipe")),
    ("socketProgress: Connection closed by remote peer localhost<34172>", Stating(closed_by="localhost<34172>")),
    ("socketProgress: Connection closed by remote peer ", Stating(closed_by="")),  # its address cut off
    ("NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.1",
     Stating(result="ncclSystemError", system=True)),
    ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, remote "
     "process exited or there was a network error, NCCL version 2.20.5",
     Stating(result="ncclRemoteError", exception="torch.distributed.DistBackendError")),
    ("RuntimeError: [enforce fail at /__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456] "
     "op.preamble.length <= op.nbytes. 4096 vs 4",
     Stating(enforce_at="/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:456", exception="RuntimeError")),
    ("terminate called after throwing an instance of 'c10::DistBackendError'", Stating(thrown="c10::DistBackendError")),
    ("NET/IB : Failed to open libibverbs.so[.1]", Stating(notice=True)),
    ("CUDA error: driver shutting down", Stating(notice=True)),
]


def test_what_a_failure_line_states_is_read_into_its_fields():
    assert [errors.stating(line) for line, _ in STATING] == [want for _, want in STATING]
    assert errors.stating("NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>") is None


def test_the_statement_rides_on_the_kept_error_and_clue():
    scan = _scan(["gpu-a:410:470 [1] misc/strongstream.cc:395 NCCL WARN Cuda failure 1 'invalid argument'",
                  "terminate called after throwing an instance of 'std::runtime_error'"])
    assert [e.says for e in scan.errors] == [Stating(cuda="invalid argument", result="ncclInvalidArgument"),
                                             Stating(thrown="std::runtime_error")]


@given(st.text(max_size=300))
def test_any_text_states_something_or_nothing(text):
    said = errors.stating(text)
    assert said is None or said != Stating()


_WORDS = st.sampled_from(["unhandled cuda error", "UNHANLED System Error", "internal error", "Invalid Argument",
                          "invalid usage", "Remote process exited", "network ERROR", "İnvalid usage", "ſystem"])


@given(st.lists(st.one_of(_WORDS, st.text(max_size=20)), max_size=6))
def test_a_result_is_read_as_a_case_blind_match_would(parts):
    """ncclGetErrorString's words in any case: ASCII lines through lower(), others through a case-blind pattern;
    either way the first result of the table whose words the line holds."""
    text = " ".join(parts)
    want = next((name for words, name in nccl.RESULTS
                 if re.search("|".join(map(re.escape, words)), text, re.IGNORECASE)), None)
    assert nccl.results(text)[0] == want


# ncclSystemError in every form a line names it (evidence/formats/nccl.py, results), as recorded in tests/data:
# ncclGetErrorString's words under PyTorch's "NCCL error", PyTorch 1.x's typo, the result's name on the line PyTorch
# prints under it (NCCLUtils.hpp, getNcclErrorDetailStr; 1.10's shorter description), nccl-tests' NCCLCHECK.
SYSTEM = [
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2027, "
    "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",  # verbs/reg_mr_enomem.log:3
    "fail to new train...e= NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:272, unhanled system error",
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
    "NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1169, unhandled system error, NCCL version "
    "21.0.3 ncclSystemError: System call (socket, malloc, munmap, etc) failed.",  # public_threads/84-…:1
    "fastmoe: Test NCCL failure common.cu:777 'unhandled system error'",  # public_threads/13-…:8
]
_OLD_SYSTEM = re.compile(r"unhandled system error|unhanled system error|ncclSystemError", re.IGNORECASE)


def test_the_system_error_is_read_in_every_form():
    assert [nccl.results(line)[1] for line in SYSTEM] == [True] * len(SYSTEM)
    assert [s.system for line in SYSTEM if (s := errors.stating(line)) is not None] == [True] * len(SYSTEM)
    for other in ("NCCL error: unhandled cuda error, NCCL version 2.18.1", "ncclInternalError: Internal check failed.",
                  "RuntimeError: NCCL error: internal error"):
        said = errors.stating(other)
        assert said is not None and not said.system, other


def test_the_system_error_rides_on_the_kept_error():
    kept = [_scan([line]).errors for line in (*SYSTEM, "RuntimeError: NCCL error: unhandled cuda error")]
    assert [[e.says is not None and e.says.system for e in errs] for errs in kept] == [[True]] * len(SYSTEM) + [[False]]


_SYSTEM_WORDS = st.sampled_from(["unhandled system error", "UNHANLED System Error", "ncclSystemError",
                                 "NCCLSYSTEMERROR", "unhandled ſystem error", "unhan dled system error", "İ"])


@given(st.lists(st.one_of(_SYSTEM_WORDS, st.text(max_size=20)), max_size=6))
def test_the_system_error_is_read_as_a_case_blind_match_would(parts):
    """The words and the name in any case, as the catalogue's case-blind pattern read them before they were a
    field: ASCII lines through lower(), others through a case-blind pattern."""
    text = "".join(parts)
    assert nccl.results(text)[1] == (_OLD_SYSTEM.search(text) is not None)


# torchrun's agent's own exceptions (evidence/formats/torchrun.py, agent_error), as recorded in tests/data; the last
# two are RendezvousError's other kinds as torch/distributed/elastic/rendezvous/api.py names them.
AGENT = [
    ("torch.distributed.elastic.rendezvous.api.RendezvousClosedError", "RendezvousClosedError"),  # rdzv_closed:104
    ("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError", "RendezvousTimeoutError"),  # rdzv_timeout:41
    ("torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has "
     "failed. See inner exception for details.", "RendezvousConnectionError"),  # rdzv_store_lost/node1:151
    ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "ChildFailedError"),  # real4/detail:84
    ("torch.distributed.elastic.multiprocessing.api.SignalException: Process 922 got signal: 15",
     "SignalException"),  # launchers/torchrun/agent_term:45
    ("torch.distributed.elastic.rendezvous.api.RendezvousStateError: state changed", "RendezvousStateError"),
    ("torch.distributed.elastic.rendezvous.api.RendezvousError: failed", "RendezvousError"),
]


def test_the_agents_own_exception_is_read_by_its_name():
    assert [torchrun.agent_error(line) for line, _ in AGENT] == [want for _, want in AGENT]
    assert [s.agent for line, _ in AGENT if (s := errors.stating(line)) is not None] == [want for _, want in AGENT]
    assert torchrun.agent_error("RuntimeError: Rendezvous'ing worker group") is None
    assert torchrun.agent_error("torch.distributed.DistBackendError: NCCL error") is None


def test_the_agents_exception_rides_on_the_kept_error():
    """Each is kept as an error but ChildFailedError, the agent's restatement of its workers' failures (a cascade)."""
    kept = [e for line, _ in AGENT for e in _scan([line]).errors]
    assert [e.says.agent if e.says else None for e in kept] == [want for _, want in AGENT if want != "ChildFailedError"]


# The store's failure itself (evidence/formats/storeclient.py, StoreWords.failed), as recorded in tests/data.
STORE_FAILED = [
    "torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed. Did the remote "
    "server shutdown or crash?",  # launchers/torchrun/rdzv_store_lost/node1.console.log:93
    "torch.distributed.DistNetworkError: Ping failed, invalid value returned from server. Expected: 32035, Got: "
    "1347703880",  # launchers/torchrun/store_not_a_store/console.log:167
    "[rank1]: torch.distributed.DistStoreError: wait timeout after 4000ms, keys: /default_pg/0//eval_done",
    "RuntimeError: [c10d] TCPStore client closed",
]


def test_the_stores_failure_is_read_where_its_words_are():
    assert [s is not None and s.failed for s in map(storeclient.read, STORE_FAILED)] == [True] * len(STORE_FAILED)
    assert storeclient.read("torch.distributed.DistStoreError: wait timeout after 4000ms") == StoreWords(
        waited=True, wait_ms=4000, failed=True)
    assert storeclient.read("RuntimeError: Socket Timeout") == StoreWords(waited=True)
    assert storeclient.read("RuntimeError: NCCL error") is None


_AGENT_PARTS = st.sampled_from(["RendezvousError", "RendezvousClosedError", "Rendezvous", "ChildFailedError",
                                "SignalException", "DistNetworkError", "DistStoreError", "TCPStore", "Failed to recv",
                                "Broken pipe", "broken PIPE", "Error", "rendezvousError"])
_OLD_AGENT = re.compile(r"Rendezvous(?:Closed|Timeout|Connection|State|GracefulExit)?Error|ChildFailedError"
                        r"|SignalException|DistNetworkError|DistStoreError|TCPStore|Failed to recv|Broken pipe")


@given(st.lists(st.one_of(_AGENT_PARTS, st.text(max_size=12)), max_size=6))
def test_an_agents_or_stores_error_is_read_as_the_catalogues_pattern_did(parts):
    """The agent's exception, the store's failure and a peer gone: together the words job/causes.py's pattern read
    over a worker's error before they were fields (its Broken pipe is a peer gone, PEER_GONE)."""
    text = "".join(parts)
    store = storeclient.read(text)
    fields = (torchrun.agent_error(text) is not None or (store is not None and store.failed)
              or nccl.gone(text) is not None)
    assert fields >= (_OLD_AGENT.search(text) is not None)
    assert fields == (_OLD_AGENT.search(text) is not None or nccl.gone(text) is not None)
