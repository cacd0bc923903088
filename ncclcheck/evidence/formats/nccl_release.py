"""NCCL's own words, at ``NCCL_DEBUG=INFO``, on what a process runs: its release, the driver, the network plugin
and the plugin's fabric library, and how many ranks of a communicator share its node.

Each is printed once per process (per communicator for the last) as it sets NCCL up, so that every rank's log
states its own; read from NVIDIA/nccl (master, 2.30, and the releases named):

* ``NCCL version 2.28.9+cuda13.0``: ``showVersion`` (src/init.cc) prints ``NCCL version <major>.<minor>.<patch>
  <suffix>+cuda<major>.<minor>``, the CUDA it was built with last. The release itself is also read by the parser
  (``nccl_version``, with PyTorch's ``NCCL version: 2.28.9``); read here: the CUDA of the build (``nccl_cuda``).
* ``cudaDriverVersion 13000``: ``initOnceFunc`` (src/misc/cudawrap.cc) prints what ``cudaDriverGetVersion`` returns,
  1000 x major + 10 x minor of the newest CUDA the driver supports (``cuda_driver``, as ``13.0``).
* ``NET/Plugin: Loaded net plugin <name> (v<N>)`` (src/plugin/net/net_v*.cc): an external network plugin and the
  plugin API it speaks; NCCL's own transports instead: ``NET/Plugin : No plugin found (libnccl-net.so), using internal
  implementation`` (to 2.20, src/net.cc), ``NET/Plugin: No plugin found (libnccl-net.so)`` (2.21-2.22),
  ``NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.`` (2.23+, src/plugin/plugin_open.cc;
  the fallback sentence is left off where there is none). ``net_plugin``: the name and API, or ``internal``.
* ``Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so``: HPC-X's nccl-rdma-sharp-plugins names the
  file NCCL loaded it from (Mellanox/nccl-rdma-sharp-plugins src/p2p_plugin.c, pluginSetup): ``net_plugin`` too, its
  path. Each plugin line whose NCCL header names its host also yields ``nccl_host`` (job/versions.py compares the
  plugins of rankless lines across hosts).
* aws-ofi-nccl (aws/aws-ofi-nccl src/nccl_ofi_net.cpp, through NCCL's logger, every line behind ``NET/OFI ``):
  ``Initializing aws-ofi-nccl 1.17.1`` (its PACKAGE_STRING, configure.ac) and ``Using Libfabric version 2.3``
  (``aws_ofi_nccl``, ``libfabric``).
* ``comm 0x... rank 3 nRanks 8 nNodes 2 localRanks 4 localRank 3 MNNVL 0`` (src/init.cc, 2.19+): the ranks of this
  communicator on the node (``local_ranks``, as ``4 of 8``: the job side takes the largest communicator's).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Behind, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

BUILD = re.compile(r"NCCL version \d+\.\d+\.\d+[\w.-]{0,16}\+cuda(?P<cuda>\d+\.\d+)")
DRIVER = re.compile(r"cudaDriverVersion (?P<v>\d+)")
PLUGIN = re.compile(r"NET/Plugin: Loaded net plugin (?P<name>[^()]{1,80}?) \((?P<api>v\d+)\)")
# nccl-rdma-sharp-plugins (HPC-X's libnccl-net.so) names the file NCCL loaded it from, in its own init
# (src/p2p_plugin.c, pluginSetup: INFO "Plugin Path : %s"): a plugin loaded, and which.
PLUGIN_PATH = re.compile(r"NCCL INFO Plugin Path ?: (?P<path>/\S{1,400})")
# NCCL's line header, "host:pid:tid [dev] NCCL INFO": the host a rankless plugin line is from (job/versions.py
# compares the plugins across hosts).
HEADER = re.compile(r"(?:^|[\]:] ?)(?P<host>[A-Za-z0-9][\w.-]{0,200}):\d{1,10}:\d{1,10} \[\d{1,4}\] NCCL INFO ")
INTERNAL = re.compile(r"NET/Plugin ?: (?:dlerror=.{0,400}?)?(?:No plugin found|Could not find:|Using internal network plugin)")
OFI = re.compile(r"NET/OFI Initializing aws-ofi-nccl (?P<v>\S+)")
LIBFABRIC = re.compile(r"NET/OFI Using Libfabric version (?P<v>\d+\.\d+\S{0,16})")
LOCAL = re.compile(r"nRanks (?P<n>\d+) nNodes \d+ localRanks (?P<local>\d+) ")
ANYONE = Who()  # the facts are the line's process's: the parser puts it on them


def driver_cuda(code: str) -> str:
    """``cudaDriverGetVersion``'s number as the CUDA version it stands for: 12040 -> ``12.4``."""
    n = int(code)
    return f"{n // 1000}.{n % 1000 // 10}"


def _hosted(text: str, fact: Fact) -> tuple[Fact, ...]:
    """The plugin's fact, with the host NCCL's header names (``nccl_host``), where it names one."""
    head = HEADER.search(text, 0, 300)
    return (fact,) if head is None else (fact, Fact(ANYONE, "nccl_host", head["host"], fact.loc))


class Lines:
    """One input's NCCL set-up lines (each read on its own)."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "NCCL version" in text and (m := BUILD.search(text)):
            return (Fact(ANYONE, "nccl_cuda", m["cuda"], loc),)
        if "cudaDriverVersion" in text and (m := DRIVER.search(text)):
            return (Fact(ANYONE, "cuda_driver", driver_cuda(m["v"]), loc),)
        if "NET/Plugin" in text:
            if m := PLUGIN.search(text):
                return _hosted(text, Fact(ANYONE, "net_plugin", f"{m['name']} ({m['api']})", loc))
            if INTERNAL.search(text):
                return _hosted(text, Fact(ANYONE, "net_plugin", "internal", loc))
        if "Plugin Path" in text and (m := PLUGIN_PATH.search(text)):
            return _hosted(text, Fact(ANYONE, "net_plugin", m["path"], loc))
        if "NET/OFI" in text:
            if m := OFI.search(text):
                return (Fact(ANYONE, "aws_ofi_nccl", m["v"], loc),)
            if m := LIBFABRIC.search(text):
                return (Fact(ANYONE, "libfabric", m["v"], loc),)
        if "localRanks" in text and (m := LOCAL.search(text)):
            return (Fact(ANYONE, "local_ranks", f"{m['local']} of {m['n']}", loc),)
        return ()


_TP = "tests/data/real4/tp_straggler_info/console.log"
_P5 = "a p5 cluster's console (aws-ofi-nccl 1.14.0, NCCL 2.26.2), quoted in a public Slurm training guide"
FORMAT = Format(
    name="NCCL release",
    words=("NCCL version", "cudaDriverVersion", "NET/Plugin", "NET/OFI", "localRanks", "Plugin Path"),
    make=Lines,
    patterns=(BUILD, DRIVER, PLUGIN, INTERNAL, OFI, LIBFABRIC, LOCAL, PLUGIN_PATH),
    behind=(
        # the header of a plugin's line, for the host it names
        Behind((PLUGIN, INTERNAL, PLUGIN_PATH), (HEADER,)),
    ),
    samples=(
        Sample("[default0]:vm:2375:2375 [0] NCCL INFO NCCL version 2.28.9+cuda13.0", f"{_TP}:19",
               (Fact(ANYONE, "nccl_cuda", "13.0", AT),)),
        Sample("[default0]:vm:2375:2375 [0] NCCL INFO cudaDriverVersion 13000", f"{_TP}:18",
               (Fact(ANYONE, "cuda_driver", "13.0", AT),)),
        Sample("[default3]:vm:2378:2378 [3] NCCL INFO NET/Plugin: Could not find: libnccl-net.so", f"{_TP}:49",
               (Fact(ANYONE, "net_plugin", "internal", AT), Fact(ANYONE, "nccl_host", "vm", AT))),
        Sample("gpu-st-ml-2:49542:49542 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v11)",
               "aws/aws-ofi-nccl issue thread's console (NCCL 2.27, aws-ofi-nccl 1.18.0)",
               (Fact(ANYONE, "net_plugin", "Libfabric (v11)", AT), Fact(ANYONE, "nccl_host", "gpu-st-ml-2", AT))),
        Sample("node1:44:44 [0] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such "
               "file or directory No plugin found (libnccl-net.so), using internal implementation",
               "NVIDIA/nccl 2.18 src/net.cc's INFO line, as NCCL 2.18 prints it",
               (Fact(ANYONE, "net_plugin", "internal", AT), Fact(ANYONE, "nccl_host", "node1", AT))),
        Sample("HGX-H100-04:589474:589541 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so",
               "HPC-X's nccl-rdma-sharp-plugins (src/p2p_plugin.c pluginSetup), https://github.com/NVIDIA/nccl/issues/1634",
               (Fact(ANYONE, "net_plugin", "/opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so", AT),
                Fact(ANYONE, "nccl_host", "HGX-H100-04", AT))),
        Sample("2: p5-dy-gpu-3:60823:61204 [2] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.14.0", _P5,
               (Fact(ANYONE, "aws_ofi_nccl", "1.14.0", AT),)),
        Sample("2: p5-dy-gpu-3:60823:61204 [2] NCCL INFO NET/OFI Using Libfabric version 1.22", _P5,
               (Fact(ANYONE, "libfabric", "1.22", AT),)),
        Sample("[default3]:vm:2378:2378 [3] NCCL INFO comm 0x1b884a80 rank 3 nRanks 4 nNodes 1 localRanks 4 localRank 3 "
               "MNNVL 0", f"{_TP}:113", (Fact(ANYONE, "local_ranks", "4 of 4", AT),)),
    ),
)
