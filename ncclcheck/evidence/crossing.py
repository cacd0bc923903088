"""The dataclasses that cross from a worker process to the main process, pickled as their constructor's arguments.

Pickle's default for a dataclass stores its fields as a dict, and unpickling writes that dict into the new object's
``__dict__``. CPython (3.11 on) otherwise keeps an object's attributes in place, without a dict: an object made by
unpickling has one more allocation, and every later read of its attributes takes the dict's slower path. A scan
read by a worker is read again and again by the main process (the records, the job's build, the facts, the verdict,
the JSON), so that path is paid many times over: at 8,192 files of one rank, ``job/facts.py``'s ``read_facts``
took 0.18-0.20 CPU s over unpickled scans against 0.07-0.08 s over the same scans made here (issue 42). Pickled as
``(class, fields)``, unpickling calls the constructor: the objects are as if made here and the pickle a third
smaller (no field names); unpickling costs about what it did (0.18 s for those scans either way, 0.13 s against
0.10 s for 8,192 ranks as node logs), and the main process's CPU time for 32,768 ranks fell by about a sixth.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter
from typing import Any


def by_constructor(cls: type) -> None:
    """Pickle ``cls``'s objects as its constructor's arguments: every field, in order. A class with a field its
    constructor does not take keeps pickle's default (none does now)."""
    names = [f.name for f in dataclasses.fields(cls)]
    if not all(f.init for f in dataclasses.fields(cls)):
        return
    fields = attrgetter(*names) if len(names) > 1 else attrgetter(*names, *names)  # a tuple either way:
    # attrgetter of one name returns the value itself; of two, the pair (the one field, twice), cut below
    one = len(names) == 1

    def __reduce__(self: Any) -> tuple[Any, ...]:
        if type(self) is not cls:  # a subclass with fields of its own: its own constructor and fields
            return (type(self), tuple(getattr(self, f.name) for f in dataclasses.fields(self)))
        return (cls, fields(self)[:1] if one else fields(self))

    setattr(cls, "__reduce__", __reduce__)  # noqa: B010  (assigned after the class is made: mypy refuses the attribute)


def every_dataclass(namespace: dict[str, Any]) -> None:
    """:func:`by_constructor` for every dataclass a module defines (its ``globals()``): derived, so that a type added
    to the module crosses the same way without a list kept in step."""
    module = namespace["__name__"]
    for value in list(namespace.values()):
        if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module:
            by_constructor(value)
