"""A gloo group whose device each rank builds from its own setting, to provoke gloo's and PyTorch's address checks.

GLOO_SOCKET_IFNAME, where set, is read by PyTorch itself (an interface name: gloo's lookupAddrForIface); else each
rank builds its device from the address in NETSETUP_ADDR<rank> (PyTorch's createDeviceForHostname, which checks that
the address is one this host can bind). One all_reduce follows, so a run whose set-up passes ends at once.
"""

import os

import torch
import torch.distributed as dist

rank = int(os.environ["RANK"])
options = None
if "GLOO_SOCKET_IFNAME" not in os.environ:
    options = dist.ProcessGroupGloo._Options()
    options._devices = [dist.ProcessGroupGloo.create_device(hostname=os.environ[f"NETSETUP_ADDR{rank}"])]
dist.init_process_group("gloo", pg_options=options)
t = torch.ones(4)
dist.all_reduce(t)
print(f"rank {rank}: all_reduce gave {t[0].item()}", flush=True)
dist.destroy_process_group()
