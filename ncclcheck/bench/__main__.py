"""``torchrun --nproc-per-node N -m ncclcheck.bench``: the ``bench`` command's options, parsed by the CLI (one help
system) and run in this process by :mod:`ncclcheck.bench.rank`; rank 0 reports. The exit codes are that module's.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Parse the command line (the ``bench`` command's options) and run; return the exit code."""
    from ncclcheck.cli import bench_here

    return bench_here(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
