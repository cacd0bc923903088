"""Allow ``python -m ncclcheck``."""

from ncclcheck.cli import main

main()
