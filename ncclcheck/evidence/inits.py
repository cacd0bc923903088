"""A log's group-creation lines kept as columns: the flat per-file table of :class:`GroupInit` (issue 42).

ProcessGroupNCCL prints its ``initialization options`` line once per group and process: three lines a rank in a
3-D mesh, the most numerous of a node log's lines that the reader keeps. Each became a :class:`GroupInit` and its
:class:`Loc`, two frozen objects whose constructors the main process ran again when a worker's scan crossed to it
(evidence/crossing.py): 6,000 constructors of a 20-node chunk's ~15,000, a third of its unpickling (41 -> 27 ms on
the 2-core VM). As columns (the line's process and group: shared objects; its numbers: small ints; the input's
name once) the table crosses as a few tuples, and the two readers of every line at scale, the job's members
(job/build.py's ``from_text``) and the JSON's folded events (render/json_out.py), read it a row at a time as
:class:`InitRow`, a named tuple made in C with the same attributes, never the objects. Anything else that iterates
the table (the attempts' split, the evidence file, the per-rank detail's equality in tests) gets the same
:class:`GroupInit` objects the parser read, made on first use and kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from itertools import repeat
from typing import Any, NamedTuple, overload

from ncclcheck.evidence.types import PG, GroupInit, Loc, Who


class InitRow(NamedTuple):
    """One group-creation line as a row of its table: :class:`GroupInit`'s attributes, its place as file and line."""

    who: Who
    pg: PG
    group_rank: int | None
    size: int | None
    global_rank: int | None
    timeout_ms: int | None
    file: str
    line: int

    @property
    def loc(self) -> Loc:
        return Loc(self.file, self.line)


_ROW = partial(tuple.__new__, InitRow)  # a row from a tuple of its values, in C (no Python-level __new__ a row)


class InitTable(Sequence[GroupInit]):
    """One input's group-creation lines, in line order, as columns; a sequence of :class:`GroupInit` to whoever
    iterates it. Made by :func:`init_table` only, where every line is in the input's own file."""

    __slots__ = ("file", "who", "pg", "group_rank", "size", "global_rank", "timeout_ms", "line", "_made")

    def __init__(self, file: str, who: tuple[Who, ...], pg: tuple[PG, ...], group_rank: tuple[int | None, ...],
                 size: tuple[int | None, ...], global_rank: tuple[int | None, ...],
                 timeout_ms: tuple[int | None, ...], line: tuple[int, ...]) -> None:
        self.file, self.who, self.pg, self.group_rank = file, who, pg, group_rank
        self.size, self.global_rank, self.timeout_ms, self.line = size, global_rank, timeout_ms, line
        self._made: tuple[GroupInit, ...] | None = None

    def rows(self) -> Iterator[InitRow]:
        """The lines as rows, made in one C-level pass: what the readers at scale walk."""
        return map(_ROW, zip(self.who, self.pg, self.group_rank, self.size, self.global_rank, self.timeout_ms,
                             repeat(self.file), self.line))

    def items(self) -> tuple[GroupInit, ...]:
        """The lines as the parser read them, made once, on first use."""
        if self._made is None:
            self._made = tuple(map(GroupInit, self.who, self.pg, self.group_rank, self.size, self.global_rank,
                                   self.timeout_ms, map(Loc, repeat(self.file), self.line)))
        return self._made

    def __len__(self) -> int:
        return len(self.line)

    @overload
    def __getitem__(self, i: int) -> GroupInit: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[GroupInit, ...]: ...

    def __getitem__(self, i: int | slice) -> GroupInit | tuple[GroupInit, ...]:
        return self.items()[i]

    def __iter__(self) -> Iterator[GroupInit]:
        return iter(self.items())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, InitTable):
            return self.items() == other.items()
        if isinstance(other, tuple):  # a scan read from an evidence file, or filtered by the attempts' split
            return self.items() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.items())

    def __repr__(self) -> str:
        return repr(self.items())

    def __reduce__(self) -> tuple[Any, ...]:
        """Crosses as its columns (evidence/crossing.py): no object a line."""
        return (InitTable, (self.file, self.who, self.pg, self.group_rank, self.size, self.global_rank,
                            self.timeout_ms, self.line))


def init_table(inits: Sequence[GroupInit], file: str) -> Sequence[GroupInit]:
    """The parser's group-creation lines of ``file`` as its table; none, or one read elsewhere (no parser makes
    one now), as they are."""
    if not inits or any(g.loc.file != file for g in inits):
        return tuple(inits)
    return InitTable(file, tuple(g.who for g in inits), tuple(g.pg for g in inits),
                     tuple(g.group_rank for g in inits), tuple(g.size for g in inits),
                     tuple(g.global_rank for g in inits), tuple(g.timeout_ms for g in inits),
                     tuple(g.loc.line for g in inits))


def init_rows(inits: Sequence[GroupInit]) -> Iterable[GroupInit | InitRow]:
    """A scan's group-creation lines for a reader of their attributes: a table's rows, else its objects."""
    return inits.rows() if isinstance(inits, InitTable) else inits
