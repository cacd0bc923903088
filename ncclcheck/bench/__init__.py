"""all_reduce benchmark, unchunked vs chunked, run under torchrun: ``torchrun -m ncclcheck.bench``.

Only :mod:`ncclcheck.bench.runner` imports torch; everything else here is plain Python.
"""
