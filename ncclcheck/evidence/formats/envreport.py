"""The environment reports people paste above a log, and the one version line a framework prints as it starts.

* PyTorch's ``python -m torch.utils.collect_env`` (torch/utils/collect_env.py ``env_info_fmt``): ``PyTorch version:
  2.1.0+cu121``, ``CUDA used to build PyTorch: 12.1``, ``Nvidia driver version: 535.104.05``, and ``GPU models and
  configuration: GPU 0: NVIDIA A100-SXM4-80GB`` (one GPU on the line; several on the lines under it, one ``GPU <n>:
  <name>`` each, their UUIDs cut: ``maybe_start_on_next_line``).
* transformers' ``transformers env`` (transformers/cli/system.py, earlier commands/env.py) and Accelerate's
  ``accelerate env`` (accelerate/commands/env.py): ``- `transformers` version: 4.46.0``, ``- Accelerate version:
  1.0.1`` / ``- `Accelerate` version: 0.21.0``, ``- DeepSpeed version: 0.15.1``, ``- PyTorch version (GPU?):
  2.1.0+cu121 (True)`` (``(accelerator?)`` from transformers 4.5x), ``- GPU type: NVIDIA H100 80GB HBM3``.
* DeepSpeed's ``deepspeed.initialize`` (deepspeed/__init__.py): ``DeepSpeed info: version=0.14.0, git-hash=unknown,
  git-branch=unknown`` on rank 0.
  Its CPU section is lscpu's: ``Architecture: x86_64`` (or ``aarch64``).
* ``nvidia-smi -L``: ``GPU 0: NVIDIA H200 (UUID: GPU-684da641-...)``, one line a GPU.

A value a report could not collect (``N/A``, ``None``, ``not installed``, ``Could not collect``) says nothing and is
not read. A GPU line under collect_env's heading holds no word of its own: it is read in an input's head (where a
pasted report stands) from the heading on, up to the next line that is not one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Fact, Loc, Said, Who

_V = r"(?P<v>\d+\.\d+[\w.+-]{0,40})"  # a version: a value that was not collected never starts with a digit
TORCH = re.compile(r"PyTorch version(?: \((?:GPU|accelerator)\?\))?: " + _V)
TORCH_CUDA = re.compile(r"CUDA used to build PyTorch: " + _V)
DRIVER = re.compile(r"Nvidia driver version: " + _V)
TRANSFORMERS = re.compile(r"`transformers` version: " + _V)
ACCELERATE = re.compile(r"- (?:`Accelerate` version|Accelerate version): " + _V)
DEEPSPEED = re.compile(r"DeepSpeed info: version=(?P<v>[^,\s]+)|- DeepSpeed version: " + _V.replace("<v>", "<w>"))
GPU_HEADING = re.compile(r"GPU models and configuration: ?(?:GPU (?P<i>\d+): (?P<name>.{1,200}?))?(?: \(UUID: [^)]{0,80}\))?$")
GPU_TYPE = re.compile(r"- GPU type: (?P<name>.{1,200})$")
SMI = re.compile(r"GPU (?P<i>\d+): (?P<name>[^()]{1,200}?) \(UUID: GPU-")
ARCH = re.compile(r"(?<![\w-])Architecture: +(?P<v>x86_64|aarch64|arm64|ppc64le|s390x)\s*$")
_GPU_LINE = re.compile(r"^GPU (?P<i>\d+): (?P<name>.{1,200}?)(?: \(UUID: [^)]{0,80}\))?$")
_READS = ((TORCH, "torch"), (TORCH_CUDA, "torch_cuda"), (DRIVER, "driver"), (TRANSFORMERS, "transformers"),
          (ACCELERATE, "accelerate"), (ARCH, "cpu_arch"))
ANYONE = Who()  # the facts are the line's process's (or its input's): the parser puts it on them


def _gpu(i: str, name: str, loc: Loc) -> tuple[Said, ...]:
    """One GPU of a list: its model, and the count so far (the job side keeps the largest)."""
    return Fact(ANYONE, "gpu_model", name.strip(), loc), Fact(ANYONE, "gpu_count", str(int(i) + 1), loc)


class Lines:
    """One input's report lines, in order: collect_env's GPU list runs over the lines under its heading."""

    def __init__(self) -> None:
        self._listing = False  # under collect_env's "GPU models and configuration:" with no GPU on the line

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        text = text.rstrip()
        if self._listing:
            if m := _GPU_LINE.match(text.strip()):
                return _gpu(m["i"], m["name"], loc)
            self._listing = False
        if "GPU models and configuration" in text and (m := GPU_HEADING.search(text)):
            self._listing = m["name"] is None
            return _gpu(m["i"], m["name"], loc) if m["name"] else ()
        if "(UUID: GPU-" in text and (m := SMI.search(text)):
            return _gpu(m["i"], m["name"], loc)
        if "GPU type" in text and (m := GPU_TYPE.search(text)):
            return (Fact(ANYONE, "gpu_model", m["name"].strip(), loc),)
        if "DeepSpeed" in text and (m := DEEPSPEED.search(text)):
            return (Fact(ANYONE, "deepspeed", m["v"] or m["w"], loc),)
        for pattern, key in _READS:
            if m := pattern.search(text):
                return (Fact(ANYONE, key, m["v"], loc),)
        return ()


_CE = "torch.utils.collect_env's report as pasted in pytorch/pytorch issues (env_info_fmt)"
_TE = "transformers env's report as pasted in huggingface/transformers issues (cli/system.py)"
FORMAT = Format(
    name="environment report",
    words=("PyTorch version", "CUDA used to build PyTorch", "Nvidia driver version", "GPU models and configuration",
           "`transformers` version", "Accelerate` version", "Accelerate version", "DeepSpeed info", "DeepSpeed version",
           "GPU type", "(UUID: GPU-", "Architecture:"),
    # collect_env's GPU list under its heading: its lines hold no word of their own (a pasted report heads its log)
    head_words=("GPU ",),
    make=Lines,
    patterns=(TORCH, TORCH_CUDA, DRIVER, TRANSFORMERS, ACCELERATE, DEEPSPEED, GPU_HEADING, GPU_TYPE, SMI, ARCH,
              _GPU_LINE),
    samples=(
        Sample("PyTorch version: 2.2.2", _CE, (Fact(ANYONE, "torch", "2.2.2", AT),)),
        Sample("CUDA used to build PyTorch: 12.1", _CE, (Fact(ANYONE, "torch_cuda", "12.1", AT),)),
        Sample("Nvidia driver version: 550.67", _CE, (Fact(ANYONE, "driver", "550.67", AT),)),
        Sample("GPU models and configuration: GPU 0: NVIDIA GeForce RTX 3060 Ti", _CE,
               (Fact(ANYONE, "gpu_model", "NVIDIA GeForce RTX 3060 Ti", AT), Fact(ANYONE, "gpu_count", "1", AT))),
        Sample("GPU 1: GeForce GTX 1080 Ti", _CE + ", two GPUs under the heading",
               (*_gpu("0", "GeForce GTX 1080 Ti", AT), *_gpu("1", "GeForce GTX 1080 Ti", AT)),
               before=("GPU models and configuration:", "GPU 0: GeForce GTX 1080 Ti")),
        Sample("- `transformers` version: 4.46.0", _TE, (Fact(ANYONE, "transformers", "4.46.0", AT),)),
        Sample("- Accelerate version: 1.0.1", _TE, (Fact(ANYONE, "accelerate", "1.0.1", AT),)),
        Sample("- `Accelerate` version: 0.21.0", "accelerate env's report (accelerate/commands/env.py)",
               (Fact(ANYONE, "accelerate", "0.21.0", AT),)),
        Sample("- PyTorch version (GPU?): 2.1.0+cu121 (True)", _TE, (Fact(ANYONE, "torch", "2.1.0+cu121", AT),)),
        Sample("- DeepSpeed version: 0.15.1", _TE, (Fact(ANYONE, "deepspeed", "0.15.1", AT),)),
        Sample("- GPU type: NVIDIA H100 80GB HBM3", _TE, (Fact(ANYONE, "gpu_model", "NVIDIA H100 80GB HBM3", AT),)),
        Sample("[2024-05-02 10:11:12,345] [INFO] [logging.py:96:log_dist] [Rank 0] DeepSpeed info: version=0.14.0, "
               "git-hash=unknown, git-branch=unknown", "deepspeed/__init__.py initialize()'s log_dist line",
               (Fact(ANYONE, "deepspeed", "0.14.0", AT),)),
        Sample("Architecture:                         x86_64", _CE + " (its CPU section, lscpu's first line)",
               (Fact(ANYONE, "cpu_arch", "x86_64", AT),)),
        Sample("GPU 3: NVIDIA H200 (UUID: GPU-3e297fde-c062-7dce-9561-f5f861c48934)", "tests/data/gpu/env.txt",
               (Fact(ANYONE, "gpu_model", "NVIDIA H200", AT), Fact(ANYONE, "gpu_count", "4", AT))),
    ),
)
