"""Where ncclcheck keeps what it can rebuild but need not: explain's parameter tables, the reader's compiled search.

``$NCCLCHECK_CACHE_DIR``, else ``$XDG_CACHE_HOME/ncclcheck``, else ``~/.cache/ncclcheck``; ``NCCLCHECK_NO_CACHE=1``
turns every cache off. Nothing kept there changes an answer, only how soon it comes.
"""

from __future__ import annotations

import os

_OFF = {"1", "true", "yes", "on"}


def directory() -> str | None:
    """The cache folder, or None when caching is turned off."""
    if os.environ.get("NCCLCHECK_NO_CACHE", "").strip().lower() in _OFF:
        return None
    own = os.environ.get("NCCLCHECK_CACHE_DIR")
    if own:
        return own
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ncclcheck")
