"""Apptainer's and Singularity's own fatal error: the container runtime gave up before the program inside it ran.

A rank started in a container (``mpirun -n 2 apptainer exec --nv image.sif ./train.sh``, srun's the same) runs only
once the runtime has opened the image, mounted its binds and executed the program. Where one of those fails the
runtime logs the reason at its FATAL level and exits 255 (pkg/sylog: Fatalf is Errorf then os.Exit(255)); the
program never ran, so no line of its own follows. sylog writes the level's label with its colon padded to eight
columns and a space (``fmt.Sprintf("%-8s ", "FATAL:")``: ``FATAL:   <text>``; with colour, the label's padding and a
reset code before that space, the same once the codes are left off), and at debug level the label unpadded by a
colon then the user and process and the function (``FATAL   [U=1000,P=4211]   execProcess()   <text>``). Singularity
3.x (Sylabs, and SingularityCE) has the same package and the same words; Apptainer since 1.0 too. The text is Go's
error as the runtime wraps it: ``permission denied`` (the program or a bind path not executable or readable by
the user inside the container), ``could not open image ...``, ``container creation failed: mount ...``.

Each is a ``container`` clue of the line's process: the runtime's stated reason (job/reasons.py), its words after
the label; job/statements.toml says what it means. Other programs' FATAL lines differ in the padding (PostgreSQL's
``FATAL:  `` has two spaces, glog's ``F1122``), so the exact three are the runtime's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

# The label at the line's start or after a launcher's tag (srun -l's "0: ", Open MPI's "[1,0]<stderr>:").
FATAL = re.compile(r"(?<![^\s:>])FATAL:   (?P<said>\S[^\n]{0,300}?)\s*$"
                   r"|(?<![^\s:>])FATAL   \[U=\d{1,10},P=\d{1,10}\] {1,40}\w{1,100}\(\) {1,60}(?P<debug>\S[^\n]{0,300}?)\s*$")
WORDS = ("FATAL:   ", "FATAL   [U=")


class Lines:
    """One input's runtime fatal errors, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        if (m := FATAL.search(text)) is None:
            return ()
        return (Clue(Who(), "container", "FATAL:   " + (m["said"] or m["debug"]), loc),)


FORMAT = Format(
    name="Apptainer",
    words=WORDS,
    make=Lines,
    patterns=(FATAL,),
    samples=(
        Sample("FATAL:   permission denied",
               "Apptainer pkg/sylog/sylog.go (prefix: \"%-8s \" of \"FATAL:\"; Fatalf exits 255); "
               "https://github.com/FZJ-JSC/tutorial-multi-gpu/issues/36",
               (Clue(Who(), "container", "FATAL:   permission denied", AT),)),
        Sample("FATAL   [U=1000,P=4211]    execProcess()                 exec ./train.sh failed: permission denied",
               "Apptainer pkg/sylog/sylog.go (debug prefix: \"%-8s%-19s%-30s\" of the level, [U=%d,P=%d] and the "
               "function) with internal/pkg/runtime/engine/apptainer/process_linux.go's \"exec %s failed: %s\"",
               (Clue(Who(), "container", "FATAL:   exec ./train.sh failed: permission denied", AT),)),
        Sample("0: FATAL:   could not open image /scratch/img.sif: failed to retrieve path for /scratch/img.sif: lstat "
               "/scratch/img.sif: no such file or directory",
               "Apptainer's FATAL line behind srun -l's label; the image's path missing on that node",
               (Clue(Who(), "container", "FATAL:   could not open image /scratch/img.sif: failed to retrieve path for "
                                         "/scratch/img.sif: lstat /scratch/img.sif: no such file or directory", AT),)),
    ),
)
