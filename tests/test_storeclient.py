"""The TCPStore client's words read into typed fields (evidence/formats/storeclient.py), carried by the events the
assembler keeps, so that job/ matches on fields (job/storewait.py, job/storeaddr.py, job/idwait.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ncclcheck.evidence.formats import storeclient
from ncclcheck.evidence.parse import LogParser
from ncclcheck.evidence.types import StoreWords

# Each the catalogue's example line of its cause (job/catalogue/*.toml), with what its words say.
LINES = [
    ("torch.distributed.DistStoreError: wait timeout after 4000ms, keys: /default_pg/0//eval_done",
     StoreWords(waited=True, wait_ms=4000, failed=True)),
    ("RuntimeError: Socket Timeout", StoreWords(waited=True)),
    ("[W socket.cpp:464] [c10d] The client socket has failed to connect to [node0]:29500 (errno: 111 - Connection "
     "refused).", StoreWords(host="node0", port=29500)),
    ("[E socket.cpp:860] [c10d] The client socket has timed out after 60s while trying to connect to 192.0.0.1:1234",
     StoreWords(host="192.0.0.1", port=1234)),
    ("torch.distributed.DistNetworkError: The client socket has failed to connect to any network address of "
     "(master-0, 29500). The IPv4 network addresses of (master-0, 29500) cannot be retrieved (gai error: -3 - "
     "Temporary failure in name resolution).", StoreWords(host="master-0", port=29500, failed=True)),
    ("[W1124 02:31:58.923435327 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=48, addr=[localhost]:43800, "
     "remote=[localhost]:33249): Failed to recv, got 0 bytes.", StoreWords(remote=("localhost:33249",), failed=True)),
    ("torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via "
     "c10d key-value store by key '0:1', but store->get('0:1') got error: wait timeout after 600000ms",
     StoreWords(waited=True, wait_ms=600000, key="0:1", root=0, waiters=(1,))),
]


def test_each_line_is_read_into_its_fields():
    assert [storeclient.read(line) for line, _ in LINES] == [want for _, want in LINES]


def test_lines_that_only_look_alike_say_nothing_of_the_store():
    assert storeclient.read("node1:3110:3110 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0") is None
    assert storeclient.read("socketPollConnect: connect to 192.0.2.2<57551> returned Connection refused") is None
    assert storeclient.read("ssh: connect to host 10.0.0.12 port 22: Connection refused") is None
    assert storeclient.read("the job's socket timeout was 30 s") is None


def test_the_fields_ride_on_the_kept_error_and_clue():
    """Read where the assembler keeps an error or a clue, whichever source read the line."""
    lines = ["[rank1]: " + LINES[-1][0], "[rank0]:[W socket.cpp:464] [c10d] The client socket has failed to connect "
             "to [node0]:29500 (errno: 111 - Connection refused)."]
    parser = LogParser("console.log", None)
    for i, line in enumerate(lines, 1):
        parser.feed(i, line.encode())
    scan = parser.finish(len(lines), sum(map(len, lines)))
    assert [e.store for e in scan.errors] == [LINES[-1][1]]
    assert StoreWords(host="node0", port=29500) in [c.store for c in scan.clues]


@given(st.text(max_size=300))
def test_any_text_is_read_or_left(text):
    said = storeclient.read(text)
    assert said is None or said != StoreWords()  # a result always says something
