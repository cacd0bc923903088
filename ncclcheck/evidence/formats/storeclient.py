"""PyTorch's TCPStore client in its own words: the store's host and port it tried, and its wait that gave up.

Read once where an error or a clue is kept (evidence/parse.py), whichever source quoted the client's words (a Python
exception's line, a glog record, a C++ exception's ``what()``, a logger's record), into the event's ``store`` field:
the job's rules match on those fields (job/storewait.py, job/storeaddr.py), never on the line again.

* The address (torch/csrc/distributed/c10d/socket.cpp, SocketConnectOp): "The client socket has failed to connect to
  any network address of (host, port).", "... to connect to host:port (errno: N - text)." ("[host]:port" for a name
  or an IPv6 address), "The client socket has timed out after Nms while trying to connect to (host, port)."
* The wait (TCPStore::doWait, torch/csrc/distributed/c10d/TCPStore.cpp, under every ``get``, ``wait`` and
  ``multi_get``): the client asked the server to wait for keys and, when they were not set within the timeout,
  cancelled and raised: ``Socket Timeout`` up to 2.1 (c10d/Utils.hpp), ``wait timeout after <N>ms, keys: <keys>``
  since 2.2 (``doWait timeout`` in some releases).
* The peer of a socket's error: c10d's socket names itself "SocketImpl(fd=N, addr=[host]:port, remote=[host]:port)"
  in its lines (TCPStore.cpp's "recvValue failed on SocketImpl(...): Failed to recv, got 0 bytes.").
* A communicator's ncclUniqueId fetched through the store (ProcessGroupNCCL.cpp, broadcastUniqueNCCLID): "[W] is
  setting up NCCL communicator and retrieving ncclUniqueId from [R] via c10d key-value store by key 'K', but
  store->get('K') got error: ..." (job/idwait.py, the catalogue's nccl_id_wait).
* The store's failure itself, a worker's lost store and not a failure of its own (job/causes.py): c10d's exceptions
  for it (DistNetworkError, DistStoreError: torch/csrc/distributed/c10d/exception.h, 2.2+), a line naming the
  TCPStore, its socket's recv that got nothing ("Failed to recv, got 0 bytes", c10d's Utils.hpp recvBytes).
"""

from __future__ import annotations

import re

from ncclcheck.evidence.types import StoreWords

# The store's wait giving up: 2.1's words and those since 2.2 (job/catalogue/store_wait.toml).
WAIT = re.compile(r"\bSocket Timeout\b|(?:^|[^a-zA-Z])(?:doW|w)ait timeout after (?P<ms>\d+) ?ms")
# The store's host and port on the client's lines: "(host, port)" or "host:port" / "[host]:port".
ADDRESS = re.compile(r"(?:address of|connect to) \((?P<host>[^(), ]{1,255}), (?P<port>\d{1,5})\)"
                     r"|connect to \[?(?P<host2>[^\[\]\s():]{1,255})\]?:(?P<port2>\d{1,5})\b")
REMOTE = re.compile(r"remote=\[?(?P<host>[\w.:-]+?)\]?:(?P<port>\d+)\)")
KEY = re.compile(r"by key '(?P<key>[^']{1,80})'")
ROOT = re.compile(r"ncclUniqueId from \[(?P<rank>\d+)\]")
WAITER = re.compile(r"\[(?P<rank>\d+)\] is setting up NCCL communicator")
# Literal words one of which each of the patterns' matches holds: a line without any is read no further.
_WAIT_WORDS = ("Socket Timeout", "ait timeout after")
_ADDRESS_WORDS = ("address of (", "connect to ")
_FAILED_WORDS = ("DistNetworkError", "DistStoreError", "TCPStore", "Failed to recv")
_WORDS = (*_WAIT_WORDS, *_ADDRESS_WORDS, *_FAILED_WORDS, "remote=", "by key '", "ncclUniqueId from [",
          "is setting up NCCL communicator")


def read(text: str) -> StoreWords | None:
    """The store client's words in this text, or None where it holds none."""
    if not any(map(text.__contains__, _WORDS)):
        return None
    wait = WAIT.search(text) if any(map(text.__contains__, _WAIT_WORDS)) else None
    at = ADDRESS.search(text) if any(map(text.__contains__, _ADDRESS_WORDS)) else None
    remote = tuple(f"{m['host']}:{m['port']}" for m in REMOTE.finditer(text)) if "remote=" in text else ()
    key = KEY.search(text) if "by key '" in text else None
    root = ROOT.search(text) if "ncclUniqueId from [" in text else None
    waiters = tuple(int(m["rank"]) for m in WAITER.finditer(text)) if "is setting up NCCL communicator" in text else ()
    failed = any(map(text.__contains__, _FAILED_WORDS))
    if wait is None and at is None and not remote and key is None and root is None and not waiters and not failed:
        return None
    host = port = None
    if at is not None:
        host, port = (at["host"], at["port"]) if at["host"] else (at["host2"], at["port2"])
    ms = wait["ms"] if wait is not None else None
    return StoreWords(host, int(port) if port else None, wait is not None, int(ms) if ms else None, remote,
                      key["key"] if key else None, int(root["rank"]) if root else None, waiters, failed)
