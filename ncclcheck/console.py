"""The two consoles: results to stdout, everything else (progress, warnings, errors) to stderr.

Rich decides on colour (TTY detection, NO_COLOR, FORCE_COLOR); nothing here hard-codes ANSI.
"""

from rich.console import Console

console = Console(soft_wrap=False)
err_console = Console(stderr=True)
