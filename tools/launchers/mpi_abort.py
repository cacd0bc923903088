"""A program whose rank 1 calls MPI_Abort(MPI_COMM_WORLD, 3) after an error message of its own, through Open MPI's
libmpi by ctypes (no compiler or mpi4py needed): tests/data/launchers/mpi_launch/abort was recorded with
`mpirun --allow-run-as-root --oversubscribe -np 4 python3 tools/launchers/mpi_abort.py` (Open MPI 4.1.4), once plain
(console.log) and once with --tag-output (tagged.log)."""

import ctypes
import sys
import time

lib = ctypes.CDLL("libmpi.so.40", mode=ctypes.RTLD_GLOBAL)
lib.MPI_Init(None, None)
world = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.in_dll(lib, "ompi_mpi_comm_world")))
rank, size = ctypes.c_int(), ctypes.c_int()
lib.MPI_Comm_rank(world, ctypes.byref(rank))
lib.MPI_Comm_size(world, ctypes.byref(size))
print(f"rank {rank.value} of {size.value} joined", flush=True)
lib.MPI_Barrier(world)
if rank.value == 1:
    print("rank 1: checkpoint file missing, aborting", file=sys.stderr, flush=True)
    lib.MPI_Abort(world, 3)
time.sleep(20)
lib.MPI_Finalize()
