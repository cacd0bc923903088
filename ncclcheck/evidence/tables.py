"""A log's most numerous per-line lists kept as columns: the flat per-file tables (issue 42).

At scale a node log's kept lines are a few kinds repeated once or more a rank: ProcessGroupNCCL's ``initialization
options`` line (three a rank in a 3-D mesh: a :class:`GroupInit` each) and the settings it states (a rank's world size
and timeout: two :class:`Fact`\\ s a line). Each was a frozen object and its :class:`Loc`, whose constructors the main
process ran again when a worker's scan crossed to it (evidence/crossing.py): of a 20-node chunk's ~15,000
constructors, 6,000 were the group inits (a third of its unpickling: 41 -> 27 ms on the 2-core VM) and 4,000 the
facts (another ~15 %). As columns (the line's process and group: shared objects; its numbers and words; the input's
name once) a list crosses as a few tuples, and the readers of every line at scale (the job's members in job/build.py,
the job's facts in job/facts.py, world.py, hosts.py, versions.py, the JSON's folded events) read it a row at a time
through :func:`rows`: a named tuple made in C with the object's attributes (its ``loc`` a property), never the
objects. Anything else that iterates a table (the attempts' split, the evidence file, equality in tests) gets the
objects the parser read, made on first use and kept; a reader that keeps a row beyond its walk keeps the object
instead (:func:`fact`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from itertools import repeat
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar, overload

from ncclcheck.evidence.types import PG, Fact, GroupInit, Loc, Who

T = TypeVar("T")


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


class FactRow(NamedTuple):
    """One fact as a row of its table: :class:`Fact`'s attributes, its place as file and line."""

    who: Who
    key: str
    value: str
    file: str
    line: int

    @property
    def loc(self) -> Loc:
        return Loc(self.file, self.line)


class LineTable(Sequence[T], Generic[T]):
    """One input's lines of one kind, in line order, as columns (the kind's fields but its place, then the lines);
    a sequence of the kind's objects to whoever iterates it. Made by :func:`table` only, where every line is in the
    input's own file."""

    __slots__ = ("file", "columns", "_made")
    kind: ClassVar[type]  # the dataclass a line is
    row: ClassVar[type]  # its row: a named tuple of the same fields, ``loc`` as file and line
    _loc: ClassVar[int]  # the place of ``loc`` among the kind's fields

    def __init_subclass__(cls) -> None:
        """A table's row holds its kind's fields but ``loc``, in order: checked once, where the class is made."""
        names = [f.name for f in dataclasses.fields(cls.kind)]
        if [n for n in names if n != "loc"] != list(cls.row._fields[:-2]):  # type: ignore[attr-defined]
            raise TypeError(f"{cls.row.__name__} does not hold {cls.kind.__name__}'s fields")
        cls._loc = names.index("loc")

    def __init__(self, file: str, columns: tuple[tuple[Any, ...], ...]) -> None:
        self.file, self.columns = file, columns
        self._made: tuple[T, ...] | None = None

    def rows(self) -> Iterator[Any]:
        """The lines as rows, made in one C-level pass: what the readers at scale walk."""
        *fields, line = self.columns
        return map(partial(tuple.__new__, self.row), zip(*fields, repeat(self.file), line))

    def items(self) -> tuple[T, ...]:
        """The lines as the parser read them, made once, on first use."""
        if self._made is None:
            *fields, line = self.columns
            args: list[Iterable[Any]] = list(fields)
            args.insert(self._loc, map(Loc, repeat(self.file), line))
            self._made = tuple(map(self.kind, *args))
        return self._made

    def __len__(self) -> int:
        return len(self.columns[-1])

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[T, ...]: ...

    def __getitem__(self, i: int | slice) -> T | tuple[T, ...]:
        return self.items()[i]

    def __iter__(self) -> Iterator[T]:
        return iter(self.items())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LineTable):
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
        return (type(self), (self.file, self.columns))


class InitTable(LineTable[GroupInit]):
    """One input's group-creation lines (ProcessGroupNCCL's ``initialization options``), as columns."""

    __slots__ = ()
    kind, row = GroupInit, InitRow


class FactTable(LineTable[Fact]):
    """One input's facts (the settings and words its lines state), as columns."""

    __slots__ = ()
    kind, row = Fact, FactRow


def table(cls: type[LineTable[T]], lines: Sequence[T], file: str) -> Sequence[T]:
    """The parser's lines of ``file`` as a table of class ``cls``; none, or any read elsewhere (a line of another
    file), as they are."""
    if not lines or any(x.loc.file != file for x in lines):  # type: ignore[attr-defined]
        return tuple(lines)
    names = [n for n in cls.row._fields[:-2]]  # type: ignore[attr-defined]
    return cls(file, (*(tuple(getattr(x, n) for x in lines) for n in names),
                      tuple(x.loc.line for x in lines)))  # type: ignore[attr-defined]


@overload
def rows(lines: Sequence[GroupInit]) -> Iterable[GroupInit | InitRow]: ...


@overload
def rows(lines: Sequence[Fact]) -> Iterable[Fact | FactRow]: ...


def rows(lines: Sequence[Any]) -> Iterable[Any]:
    """A scan's list for a reader of its lines' attributes: a table's rows, else its objects."""
    return lines.rows() if isinstance(lines, LineTable) else lines


def fact(f: Fact | FactRow) -> Fact:
    """The fact a row is, for a reader that keeps it (a job's list, a finding): the object, as the parser made it."""
    return f if isinstance(f, Fact) else Fact(f.who, f.key, f.value, Loc(f.file, f.line))
