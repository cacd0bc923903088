"""The two consoles (results to stdout, everything else to stderr) and layout that never cuts a value.

Rich decides on colour (TTY detection, NO_COLOR, FORCE_COLOR); nothing here hard-codes ANSI. Print what holds
pasteable text or numbers with ``crop=False``: a word wider than the terminal then runs on instead of losing
its end.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

console = Console(soft_wrap=False)
err_console = Console(stderr=True)


def whole(text: str, style: str = "") -> Text:
    """A line that is never wrapped, folded or cut (commands, ``export`` lines)."""
    return Text(text, style=style, no_wrap=True, overflow="ignore")


# A word, or a `code span` with what sticks to it: a command in backticks is copied whole, so it is never broken;
# a number and its unit ("10 s", "1.87 GB", "10 GbE") read as one word too.
_WORD = re.compile(
    r"`[^`]*`\S*|\d[\d,.]* (?:[KMGTP]i?B(?:/s)?|[KMG]?bit|\d*GbE|ms|s|min|h|%|elements)(?![\w-])\S*|\S+")


def _breaks(line: str, width: int) -> Iterator[int]:
    """Offsets at which to break ``line`` so that its pieces fit ``width``, between words only."""
    start = 0
    for word in _WORD.finditer(line):
        if word.end() - start > width and word.start() > start:
            start = word.start()
            yield start


class Unbroken:
    """Text wrapped between words only: a word wider than the terminal (a path, an address) runs on whole, or,
    inside a box (``boxed``), folds onto the next line, since a box cuts what runs past its border."""

    def __init__(self, text: Text, boxed: bool = False) -> None:
        self.text = text
        self.boxed = boxed

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.text.split(allow_blank=True):
            for piece in line.divide(list(_breaks(line.plain, options.max_width))):
                piece.rstrip()
                fold = self.boxed and cell_len(piece.plain) > options.max_width
                piece.no_wrap, piece.overflow = not fold, "fold" if fold else "ignore"
                yield piece

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.text)


def unbroken(text: Text | str) -> Unbroken:
    """See :class:`Unbroken`."""
    return Unbroken(Text(text) if isinstance(text, str) else text)


class Fit:
    """A table where the terminal holds it whole, else the same rows stacked one value per line.

    A table squeezed below its natural width folds or cuts cells (``58,720…``); this never does: no cell wraps,
    and a row that does not fit becomes a block of ``column: value`` lines.
    """

    def __init__(self, table: Table, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        self.table = table
        self.headers = tuple(headers)
        self.rows = [tuple(r) for r in rows]

    def stacked(self) -> Group:
        title = self.table.title
        lines: list[Text | Unbroken] = [Text(str(title), style="italic")] if title else []
        for row in self.rows:
            lines.append(whole(row[0], style="bold"))
            lines += [unbroken(f"  {h}: {' '.join(v.splitlines())}")
                      for h, v in zip(self.headers[1:], row[1:], strict=True) if v]
        return Group(*lines)

    def width(self) -> int:
        """Columns the table needs to show every cell whole: widest line per column, padding, rules."""
        cols = [max(cell_len(line) for cell in (h, *(r[i] for r in self.rows)) for line in cell.splitlines() or [""])
                for i, h in enumerate(self.headers)]
        return sum(cols) + 3 * len(cols) + 1

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.table if self.width() <= options.max_width else self.stacked()


def fit_table(title: str | None, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> Fit:
    """A :class:`Fit` of plain string cells; a cell may hold several lines (one value each)."""
    t = Table(title=title, title_justify="left")
    for h in headers:
        t.add_column(h, no_wrap=True)
    for r in rows:
        t.add_row(*r)
    return Fit(t, headers, rows)


class Indented:
    """A renderable moved right by ``n`` columns, its lines not padded out to the width (no trailing spaces)."""

    def __init__(self, renderable: RenderableType, n: int) -> None:
        self.renderable, self.n = renderable, n

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        inner = options.update_width(max(1, options.max_width - self.n))
        for line in console.render_lines(self.renderable, inner, pad=False, new_lines=False):
            while line and not line[-1].text.strip() and not line[-1].control:
                line = line[:-1]
            if line and line[-1].text != line[-1].text.rstrip():
                last = line[-1]
                line = [*line[:-1], Segment(last.text.rstrip(), last.style)]
            yield Segment(" " * self.n)
            yield from line
            yield Segment.line()
