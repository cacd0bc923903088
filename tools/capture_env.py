"""Write a torchrun worker's environment, its launcher's and process 1's to a JSON file (for the lint's fixtures).

Usage: torchrun --standalone --nproc-per-node 1 tools/capture_env.py OUT.json
"""

from __future__ import annotations

import json
import os
import sys


def env_of(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError as exc:
        return {"__error__": str(exc)}
    return dict(item.split("=", 1) for item in raw.split("\x00") if "=" in item)


if __name__ == "__main__":
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
        cmdline = f.read().decode().replace("\x00", " ")
    with open(sys.argv[1], "w") as out:
        json.dump({"worker": dict(os.environ), "launcher": env_of(os.getppid()), "init": env_of(1),
                   "launcher_cmdline": cmdline}, out, indent=1, sort_keys=True)
