"""torch.distributed.elastic's process context with one worker killed by SIGBUS: its failures map printed as is
(tests/data/launchers/torchrun/procfailure_repr), the ProcessFailure repr an agent built on it logs.

usage: python procfailure_repr.py > console.log 2>&1
"""

from __future__ import annotations

import sys
import tempfile

from torch.distributed.elastic.multiprocessing import DefaultLogsSpecs, start_processes

CHILD = "import os, signal; os.kill(os.getpid(), signal.SIGBUS)"

if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as logs:
        pc = start_processes(name="trainer", entrypoint=sys.executable,
                             args={0: ("-c", CHILD), 1: ("-c", "import time; time.sleep(3)")}, envs={0: {}, 1: {}},
                             logs_specs=DefaultLogsSpecs(log_dir=logs))
        while (result := pc.wait(0.2)) is None:
            pass
        print(result.failures)
        pc.close()
