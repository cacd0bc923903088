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
instead (:func:`as_fact`, :func:`as_work`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from itertools import compress, repeat
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar, overload

from ncclcheck.evidence.types import PG, Fact, GroupInit, Loc, PeerGone, StatusMention, Who, WorkMention

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


class WorkRow(NamedTuple):
    """One printing of a work as a row of its table: :class:`WorkMention`'s attributes, its place as file and line."""

    who: Who
    rank: int | None
    seq: int | None
    op_type: str | None
    numel_in: int | None
    numel_out: int | None
    tensor_shape: str | None
    timeout_ms: int | None
    ran_for_ms: int | None
    evidence: str
    error: str | None
    clock_s: float | None
    comm: str | None
    pg: PG | None
    gone: PeerGone | None
    file: str
    line: int

    @property
    def loc(self) -> Loc:
        return Loc(self.file, self.line)


class StatusRow(NamedTuple):
    """One progress line as a row of its table: :class:`StatusMention`'s attributes, its place as file and line."""

    who: Who
    pg: PG
    rank: int | None
    seq: int | None
    last_enqueued: int | None
    last_completed: int | None
    evidence: str
    error: str | None
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
    least: ClassVar[int] = 1  # the fewest lines kept as a table: a shorter list stays a tuple

    def __init_subclass__(cls) -> None:
        """A table's row holds its kind's fields but ``loc``, in order: checked once, where the class is made."""
        names = [f.name for f in dataclasses.fields(cls.kind)]
        if [n for n in names if n != "loc"] != list(cls.row._fields[:-2]):  # type: ignore[attr-defined]
            raise TypeError(f"{cls.row.__name__} does not hold {cls.kind.__name__}'s fields")
        cls._loc = names.index("loc")

    def __init__(self, file: str, columns: tuple[tuple[Any, ...], ...], made: tuple[T, ...] | None = None) -> None:
        self.file, self.columns = file, columns
        self._made = made  # the objects: the parser's where made from them (a worker's own reads, file_part's), else
        # made on first use; never pickled

    def rows(self) -> Iterator[Any]:
        """The lines as rows, made in one C-level pass: what the readers at scale walk."""
        *fields, line = self.columns
        return map(partial(tuple.__new__, self.row), zip(*fields, repeat(self.file), line))

    def rows_with(self, name: str, wanted: Callable[[Any], bool]) -> Iterable[Any]:
        """The rows whose ``name`` is a wanted value, made for those alone: the column's distinct values are asked
        once each, and a line of none of them costs no row (at scale most readers want none of a node log's)."""
        at = self.row._fields.index(name)  # type: ignore[attr-defined]
        column = self.columns[at]
        distinct = set(column)
        keep = {v for v in distinct if wanted(v)}
        if not keep:
            return ()
        if len(keep) == len(distinct):
            return self.rows()
        *fields, line = self.columns
        return map(partial(tuple.__new__, self.row),
                   compress(zip(*fields, repeat(self.file), line), map(keep.__contains__, column)))

    def firsts(self, names: tuple[str, ...], wanted: Callable[[Any], bool]) -> Iterable[Any]:
        """The rows at the first line of each distinct value of the columns ``names`` whose first is a wanted value,
        in line order: a reader that keeps the first of equal lines alone (every rank's init line states the world's
        size) makes one row, not a row a rank. The first lines are found in C: a dict keeps a key's last
        assignment, so it is filled from the last line back."""
        at = [self.row._fields.index(n) for n in names]  # type: ignore[attr-defined]
        column = self.columns[at[0]]
        keep = {v for v in set(column) if wanted(v)}
        if not keep:
            return ()
        n = len(column)
        first = dict(zip(zip(*(reversed(self.columns[i]) for i in at), strict=True), range(n - 1, -1, -1), strict=True))
        return [self._row(i) for i in sorted(i for v, i in first.items() if v[0] in keep)]

    def grouped(self, names: tuple[str, ...], wanted: Callable[[tuple[Any, ...]], bool], most: int = 8
                ) -> list[tuple[tuple[Any, ...], Any, list[Any]]] | None:
        """The lines grouped by their values of the columns ``names``, the groups of wanted values alone, in order of
        their first lines: each value, its first line's row and its lines' ``who``\\ s, no row for the others (a node
        log's facts: two values, a line each a rank); None where more than ``most`` values differ. Each group is
        found in C, a pass of its value's ``__eq__`` over the values, so a few values cost less than a row a line."""
        fields = self.row._fields  # type: ignore[attr-defined]
        if not names:
            return None
        keys = list(zip(*(self.columns[fields.index(n)] for n in names), strict=True))
        distinct = dict.fromkeys(keys)
        if len(distinct) > most:
            return None
        whos = self.columns[fields.index("who")]
        return [(k, self._row(keys.index(k)), list(whos if len(distinct) == 1 else compress(whos, map(k.__eq__, keys))))
                for k in distinct if wanted(k)]

    def _row(self, i: int) -> Any:
        """The row of the table's ``i``-th line."""
        *fields, line = self.columns
        return tuple.__new__(self.row, (*(c[i] for c in fields), self.file, line[i]))

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
    least = 16  # a dozen readers ask every input's facts: a table's few calls each pay only over a node log's many


class WorkTable(LineTable[WorkMention]):
    """One input's printings of works (the watchdog's timeouts, their restatements, async errors), as columns."""

    __slots__ = ()
    kind, row = WorkMention, WorkRow
    least = 16  # a file of one rank's works are merged as objects (job/records.py): a table would only add its calls


class StatusTable(LineTable[StatusMention]):
    """One input's progress lines (a group's counters where a work timed out or failed), as columns."""

    __slots__ = ()
    kind, row = StatusMention, StatusRow
    least = 16


def table(cls: type[LineTable[T]], lines: Sequence[T], file: str) -> Sequence[T]:
    """The parser's lines of ``file`` as a table of class ``cls``; fewer than its ``least``, or any read elsewhere (a
    line of another file), as they are."""
    if len(lines) < cls.least or any(x.loc.file != file for x in lines):  # type: ignore[attr-defined]
        return tuple(lines)
    names = [n for n in cls.row._fields[:-2]]  # type: ignore[attr-defined]
    return cls(file, (*(tuple(getattr(x, n) for x in lines) for n in names),
                      tuple(x.loc.line for x in lines)), tuple(lines))  # type: ignore[attr-defined]


@overload
def rows(lines: Sequence[GroupInit]) -> Iterable[GroupInit | InitRow]: ...


@overload
def rows(lines: Sequence[Fact]) -> Iterable[Fact | FactRow]: ...


@overload
def rows(lines: Sequence[WorkMention]) -> Iterable[WorkMention | WorkRow]: ...


@overload
def rows(lines: Sequence[StatusMention]) -> Iterable[StatusMention | StatusRow]: ...


def rows(lines: Sequence[Any]) -> Iterable[Any]:
    """A scan's list for a reader of its lines' attributes: a table's rows, else its objects."""
    return lines if type(lines) is tuple or not isinstance(lines, LineTable) else lines.rows()


def rows_with(lines: Sequence[Any], name: str, wanted: Callable[[Any], bool]) -> Iterable[Any]:
    """A scan's list for a reader of the lines whose ``name`` it wants: a table's rows of those alone
    (:meth:`LineTable.rows_with`), else every object (the reader tests each, as it does a row)."""
    return lines if type(lines) is tuple or not isinstance(lines, LineTable) else lines.rows_with(name, wanted)


def firsts(lines: Sequence[Any], names: tuple[str, ...], wanted: Callable[[Any], bool]) -> Iterable[Any]:
    """A scan's list for a reader that keeps the first of the lines equal in ``names`` alone: a table's rows at the
    first line of each distinct value whose first field is wanted (:meth:`LineTable.firsts`), else every object (the
    reader tests each and keeps the first, as it would a row)."""
    return lines if type(lines) is tuple or not isinstance(lines, LineTable) else lines.firsts(names, wanted)


def as_fact(f: Fact | FactRow) -> Fact:
    """The fact a row is, for a reader that keeps it (a job's list, a finding): the object, as the parser made it."""
    return f if isinstance(f, Fact) else Fact(f.who, f.key, f.value, Loc(f.file, f.line))


def as_work(w: WorkMention | WorkRow) -> WorkMention:
    """The work a row is, for a reader that keeps it: the object, as the parser made it."""
    if isinstance(w, WorkMention):
        return w
    return WorkMention(w.who, w.rank, w.seq, w.op_type, w.numel_in, w.numel_out, w.tensor_shape, w.timeout_ms,
                       w.ran_for_ms, w.evidence, Loc(w.file, w.line), w.error, w.clock_s, w.comm, w.pg, w.gone)
