"""libfabric's own log lines: the fabric library under NCCL's OFI network plugin (aws-ofi-nccl), and its fi_info tool.

libfabric logs through its providers' FI_WARN/FI_INFO/FI_DBG macros (include/rdma/providers/fi_log.h) to stderr, at
the level FI_LOG_LEVEL asks (warn, info, trace, debug; nothing by default), each line as src/log.c's ofi_log writes
it: ``libfabric:<pid>:<prov>:<subsys>:<func>():<line><<level>> <message>`` up to 1.13, with the time in seconds after
the PID since late 2021 (``libfabric:<pid>:<time>:<prov>:...``) and a utility provider's log prefix after the time
since early 2022 (``libfabric:<pid>:<time>:<prefix>:<prov>:...``, often empty). The subsystem is one of src/log.c's
ten names (core, fabric, domain, ep_ctrl, ep_data, av, cq, eq, mr, cntr), which anchors the line whatever stands
before the provider (a paste that elided the PID and the time). A ``<warn>`` line is libfabric stating a failure: a
:class:`Clue` of the kind ``libfabric``, in the words ``<prov>:<subsys>:<func>(): <message>``; the other levels are
its trace and say nothing failed.

fi_info (util/info.c), libfabric's own listing of the providers the process can use, prints ``fi_getinfo: <ret>
(<fi_strerror>)`` when none matches (``-61 (No data available)``: FI_ENODATA, no provider for the hints, ``-p efa``
among them), a clue of the same kind.

The catalogue's ``ofi_provider_empty`` reads them: a provider that found no device it could use, the layer under the
plugin (NCCL then finds no such network and falls back to its sockets, or fails).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

LOG = re.compile(r"libfabric:(?:[^:\s<>]{0,40}:){0,4}?(?P<prov>[\w;.-]{1,64}):"
                 r"(?P<subsys>core|fabric|domain|ep_ctrl|ep_data|av|cq|eq|mr|cntr):(?P<func>\w{1,128})\(\):\d{1,6}"
                 r"<(?P<level>warn|info|trace|debug)> ?(?P<msg>.*)")
FI_INFO = re.compile(r"fi_getinfo: (?P<code>-\d{1,4}) \((?P<text>[^)]{1,80})\)")
_ANYONE = Who()  # the line's process: the parser puts the clue on it


class Lines:
    """One input's libfabric lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if "libfabric:" in text and (m := LOG.search(text)):
            if m["level"] != "warn":
                return ()
            return (Clue(_ANYONE, "libfabric", f"{m['prov']}:{m['subsys']}:{m['func']}(): {m['msg'].strip()}", loc),)
        if "fi_getinfo: -" in text and (m := FI_INFO.search(text)):
            return (Clue(_ANYONE, "libfabric", m[0], loc),)
        return ()


_THREAD = "https://github.com/ofiwg/libfabric/issues/12708"
FORMAT = Format(
    name="libfabric",
    words=("libfabric:", "fi_getinfo: -"),
    make=Lines,
    patterns=(LOG, FI_INFO),
    samples=(
        Sample("libfabric:2317:1714043021::efa:ep_data:efa_device_construct_gid():47<warn> ibv_open_device failed! "
               "errno: 2", "libfabric prov/efa/src/efa_device.c (EFA_WARN) in src/log.c's format since 2022",
               (Clue(_ANYONE, "libfabric", "efa:ep_data:efa_device_construct_gid(): ibv_open_device failed! errno: 2",
                     AT),)),
        Sample("libfabric:...:core:core:fi_getinfo_():1391<warn> fi_getinfo: provider efa output empty list",
               f"{_THREAD} (the PID and the time elided)",
               (Clue(_ANYONE, "libfabric", "core:core:fi_getinfo_(): fi_getinfo: provider efa output empty list", AT),)),
        Sample("libfabric:13567:verbs:fabric:vrb_get_device_attrs():617<warn> ibv_query_device: No such device (19)",
               "libfabric prov/verbs (VRB_WARN) in src/log.c's format up to 1.13",
               (Clue(_ANYONE, "libfabric", "verbs:fabric:vrb_get_device_attrs(): ibv_query_device: No such device (19)",
                     AT),)),
        Sample("libfabric:13567:1634030000:efa:fabric:efa_device_list_initialize():302<warn> efa_device_construct_gid "
               "failed for device_idx 0, err=-2", "libfabric prov/efa/src/efa_device.c (EFA_WARN) in src/log.c's "
               "format of late 2021 (the time after the PID)",
               (Clue(_ANYONE, "libfabric", "efa:fabric:efa_device_list_initialize(): efa_device_construct_gid failed "
                     "for device_idx 0, err=-2", AT),)),
        Sample("fi_getinfo: -61 (No data available)", f"{_THREAD}; libfabric util/info.c",
               (Clue(_ANYONE, "libfabric", "fi_getinfo: -61 (No data available)", AT),)),
    ),
)
