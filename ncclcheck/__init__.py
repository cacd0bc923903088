"""ncclcheck: find which collective hung, which rank caused it, and what to change."""

__version__ = "0.1.0"
