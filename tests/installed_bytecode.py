"""The installed packages' own bytecode, found from the run's bytecode folder (conftest.py's PYTHONPYCACHEPREFIX).

Python looks for a module's bytecode in the prefix folder only, once one is set: the ``__pycache__`` that pip wrote
beside every installed module is never read, and each run compiled every library it imported from source once more
(torch and transformers alone: about 14 s of CPU, and twice where both xdist workers import one at the same time; the
workers also compiled pytest, hypothesis and the standard library side by side as they started). Linking every
installed file into the prefix up front costs more than it saves on this VM (12,000 links for site-packages and the
standard library: 4 s of CPU to make, 35 s to remove), so the link is made as a module is imported: this finder, put before the path finder in each of
the run's pytest processes, finds the module as the path finder does and, where the source has bytecode beside it,
links that file to where the prefix is looked in. Python still checks the file against its source (a stale one is
compiled again, and written over the link, not through it). The run's child processes read the links the pytest
processes made; what they import first they compile into the prefix, as before.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType


class InstalledBytecode(importlib.abc.MetaPathFinder):
    tag = sys.implementation.cache_tag

    @classmethod
    def install(cls) -> None:
        """Before the path finder in ``sys.meta_path`` (once a process, after the prefix is set), and link what this
        process already imported, which its workers and child processes import again."""
        assert sys.pycache_prefix
        if any(isinstance(f, cls) for f in sys.meta_path):
            return
        finder = cls()
        sys.meta_path.insert(sys.meta_path.index(importlib.machinery.PathFinder), finder)
        for module in list(sys.modules.values()):
            finder.link(getattr(module, "__file__", None))

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            self.link(spec.origin)
        return spec

    def link(self, source: str | None) -> None:
        """Link the bytecode pip wrote beside ``source`` to where the prefix is looked in, if there is one."""
        if not source or not source.endswith(".py"):
            return
        folder, name = os.path.split(source)
        beside = os.path.join(folder, "__pycache__", f"{name[:-3]}.{self.tag}.pyc")
        there = importlib.util.cache_from_source(source)  # in the prefix, which this process has set
        if os.path.exists(there) or not os.path.exists(beside):
            return
        os.makedirs(os.path.dirname(there), exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another process of the run linked or compiled it first
            os.symlink(beside, there)
