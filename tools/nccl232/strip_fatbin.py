"""Zero every CUDA fatbin entry of a shared library but one architecture's, so that it compresses to what a
device call may carry (nvidia-nccl-cu13 2.32.3's libnccl.so.2: 344 MB, 44 MB as .xz with sm_90 alone).

The entries keep their headers and sizes (the library's layout is unchanged); a GPU of another architecture can no
longer load its kernels. Fatbin layout: a header (magic 0xBA55ED50, version, header size, size of the entries),
then entries of (kind, version, header size, padded payload size, ..., sm at byte 28), in the sections
``.nv_fatbin`` and ``__nv_relfatbin``.

Usage: python strip_fatbin.py libnccl.so.2 OUT SM   (e.g. 90; without OUT and SM: the sizes per entry kind and sm)
"""

from __future__ import annotations

import collections
import struct
import subprocess
import sys
from pathlib import Path

MAGIC = 0xBA55ED50


def sections(path: str) -> list[tuple[str, int, int]]:
    """(name, file offset, size) of the library's fatbin sections, as readelf lists them."""
    out = subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        parts = line.replace("[ ", "[").split()
        if len(parts) > 6 and parts[1] in (".nv_fatbin", "__nv_relfatbin"):
            found.append((parts[1], int(parts[4], 16), int(parts[5], 16)))
    return found


def main(path: str, out: str | None, keep: int | None) -> None:
    data = bytearray(Path(path).read_bytes())
    sizes: collections.Counter[tuple[str, int, int]] = collections.Counter()
    for name, off, size in sections(path):
        p, end = off, off + size
        while p < end:
            if struct.unpack_from("<I", data, p)[0] != MAGIC:
                p += 8
                continue
            _, _, hsz, fsz = struct.unpack_from("<IHHQ", data, p)
            q, qend = p + hsz, p + hsz + fsz
            while q < qend:
                kind, _, ehsz, padded = struct.unpack_from("<HHII", data, q)
                sm = struct.unpack_from("<I", data, q + 28)[0]
                sizes[(name, kind, sm)] += padded
                if keep is not None and sm != keep:
                    data[q + ehsz:q + ehsz + padded] = bytes(padded)
                q += ehsz + padded
            p = qend
    for (name, kind, sm), n in sorted(sizes.items()):
        print(f"{name} {'ptx' if kind == 1 else 'cubin'} sm_{sm}: {n >> 10} KiB")
    if out is not None:
        with open(out, "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None, int(sys.argv[3]) if len(sys.argv) > 3 else None)
