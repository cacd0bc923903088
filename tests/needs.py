"""What a test module needs installed, said once: skipped where it is missing, a failure where CI says it is not."""

from __future__ import annotations

import os

import pytest

from ncclcheck.explain.frommodel import installed


def torch_and_transformers() -> None:
    """Skip the calling module without torch and transformers; under ``NCCLCHECK_CI`` or
    ``NCCLCHECK_REQUIRE_TORCH`` their absence is an error (a missing install step must not pass quietly)."""
    if installed("transformers") is None or installed("torch") is None:
        reason = "transformers and torch are not installed (make test installs both)"
        if os.environ.get("NCCLCHECK_CI") or os.environ.get("NCCLCHECK_REQUIRE_TORCH"):
            raise RuntimeError(reason)
        pytest.skip(reason, allow_module_level=True)
