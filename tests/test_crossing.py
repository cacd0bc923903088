"""A scan crosses from a worker pickled as its objects' constructors' arguments (evidence/crossing.py): the same
objects come back, and their pickle names no field, so unpickling went through the constructor."""

from __future__ import annotations

import pickle
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ncclcheck.evidence.reader import resolve
from ncclcheck.evidence.scan import scan_source
from ncclcheck.job.records import file_part

DATA = Path(__file__).parent / "data"
INPUTS = sorted(p for p in (DATA / "real").rglob("*") if p.is_file())[:12] + \
    sorted(p for p in (DATA / "frdump").rglob("*") if p.is_file())[:4]


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.relative_to(DATA).as_posix())
def test_a_scan_crosses_whole_and_by_its_constructors(path: Path) -> None:
    (source,) = resolve([str(path)], lambda _: None)
    scan = scan_source(source)
    data = pickle.dumps(scan, protocol=pickle.HIGHEST_PROTOCOL)
    assert pickle.loads(data) == scan
    for name in ("bytes_read", "ranks_seen", "dump_signals", "group_inits"):
        assert name.encode() not in data  # a field dict would name them


def test_a_records_part_crosses_whole(tmp_path: Path) -> None:
    log = tmp_path / "node.log"
    log.write_text("".join(
        f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600010 "
        "milliseconds before timing out.\n" for r in range(20)))
    (source,) = resolve([str(log)], lambda _: None)
    part = file_part(scan_source(source))
    assert part is not None and len(part.records) == 20
    data = pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL)
    back = pickle.loads(data)
    assert back == part and [r.global_rank for r in back.records] == list(range(20))
    assert b"last_enqueued" not in data  # the records cross as their constructors' arguments, not field dicts


def test_group_inits_cross_as_columns_and_read_as_the_parser_read_them(tmp_path: Path) -> None:
    """A node log's group-creation lines are kept as their table (evidence/tables.py): it crosses as columns, no
    object a line, and its rows, its items and the evidence file's copy say what the lines said."""
    from ncclcheck.evidence import bundle
    from ncclcheck.evidence.tables import InitTable, rows
    from ncclcheck.evidence.types import GroupInit

    log = tmp_path / "node.log"
    log.write_text("".join(
        f"[rank{r}]:[I1122 10:00:0{k}.000000000 ProcessGroupNCCL.cpp:988] [PG ID {k} PG GUID {k}{r % 2} Rank "
        f"{r % 2}] ProcessGroupNCCL initialization options: size: {2 if k else 8}, global rank: {r}, "
        f"TIMEOUT(ms): 600000\n" for r in range(8) for k in range(2)))
    (source,) = resolve([str(log)], lambda _: None)
    scan = scan_source(source)
    inits = scan.group_inits
    assert isinstance(inits, InitTable) and len(inits) == 16
    data = pickle.dumps(scan, protocol=pickle.HIGHEST_PROTOCOL)
    assert b"GroupInit" not in data and b"InitTable" in data  # columns: no constructor a line
    back = pickle.loads(data)
    assert back == scan and back.group_inits == inits.items() and inits == back.group_inits
    made = inits.items()
    assert all(type(g) is GroupInit for g in made) and [g.global_rank for g in made[:3]] == [0, 0, 1]
    fields = ("who", "pg", "group_rank", "size", "global_rank", "timeout_ms", "loc")
    assert [tuple(getattr(r, f) for f in fields) for r in rows(back.group_inits)] == \
        [tuple(getattr(g, f) for f in fields) for g in made]
    assert made[3].loc.line == 4 and made[3].size == 2 and made[3].group_rank == 1
    stored = bundle.dumps([scan], [], compress=False)
    assert bundle.dumps([replace(scan, group_inits=made)], [], compress=False) == stored
    (read,), _ = bundle.read(_written(tmp_path / "node.ev", stored))
    assert read == scan and read.group_inits == made


def _written(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def test_facts_cross_as_columns_and_are_read_as_rows(tmp_path: Path) -> None:
    """A log's facts are kept as their table (evidence/tables.py): it crosses as columns, the readers at scale walk
    its rows without making its objects, and its rows, its objects and the evidence file's copy say the same."""
    from ncclcheck.evidence import bundle
    from ncclcheck.evidence.tables import FactTable, as_fact, rows
    from ncclcheck.evidence.types import Fact
    from ncclcheck.job.facts import read_facts
    from ncclcheck.job.world import statements

    log = tmp_path / "node.log"
    log.write_text("".join(
        f"[rank{r}]:[I1122 10:00:00.000000000 ProcessGroupNCCL.cpp:988] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
        f"ProcessGroupNCCL initialization options: size: 8, global rank: {r}, TIMEOUT(ms): 600000\n"
        for r in range(8)))
    (source,) = resolve([str(log)], lambda _: None)
    scan = scan_source(source)
    assert isinstance(scan.facts, FactTable) and len(scan.facts) == 16
    data = pickle.dumps(scan, protocol=pickle.HIGHEST_PROTOCOL)
    back = pickle.loads(data)
    facts = back.facts
    assert isinstance(facts, FactTable)
    read_facts([back])
    assert [(s.size, s.kind) for s in statements([back])][:1] == [(8, "init_line")]
    assert facts._made is None  # the job's facts and the world read the rows: no object made
    made = facts.items()
    assert all(type(f) is Fact for f in made) and back == scan and made == scan.facts
    assert {(f.key, f.value) for f in made} == {("world_size", "8"), ("TIMEOUT(ms)", "600000")}
    assert [as_fact(r) for r in rows(facts)] == list(made) and [r.loc for r in rows(facts)] == [f.loc for f in made]
    assert made[2].who.global_rank == 1 and made[2].loc.line == 2
    stored = bundle.dumps([scan], [], compress=False)
    assert bundle.dumps([replace(scan, facts=made)], [], compress=False) == stored
    (read,), _ = bundle.read(_written(tmp_path / "node.ev", stored))
    assert read == scan and read.facts == made


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["world_size", "nnodes", "nproc_per_node", "monitored_barrier_missing",
                                           "TIMEOUT(ms)", "launcher_world"]),
                          st.sampled_from(["8", "08", "16", "2", "3,5", "5", "0"]), st.integers(0, 3)),
                min_size=16, max_size=60))
def test_the_first_line_of_each_key_and_value_as_every_line_read(lines: list[tuple[str, str, int]]) -> None:
    """A table's rows at the first line of each distinct key and value (tables.firsts) are the lines a reader that
    keeps the first of equal lines keeps; the world read from them is the world read from every line's object."""
    from ncclcheck.evidence.tables import FactTable, firsts, table
    from ncclcheck.evidence.types import Fact, FileScan, Loc, Who
    from ncclcheck.job.world import statements, strongest

    facts = [Fact(Who(global_rank=r), k, v, Loc("n.log", i + 1)) for i, (k, v, r) in enumerate(lines)]
    made = table(FactTable, facts, "n.log")
    assert isinstance(made, FactTable)
    wanted = {"world_size", "nnodes", "monitored_barrier_missing"}
    first: dict[tuple[str, str], Fact] = {}
    for f in facts:
        first.setdefault((f.key, f.value), f)
    assert [(r.key, r.value, r.who, r.loc) for r in firsts(made, ("key", "value"), wanted.__contains__)] == [
        (f.key, f.value, f.who, f.loc) for f in first.values() if f.key in wanted]
    assert made._made is not None and firsts(tuple(facts), ("key", "value"), wanted.__contains__) == tuple(facts)
    one, every = (FileScan("n.log", None, len(lines), 0, (), facts=f) for f in (made, tuple(facts)))
    assert strongest(statements([one])) == strongest(statements([every]))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.lists(st.tuples(
    st.sampled_from(["world_size", "TIMEOUT(ms)", "host", "__HIDDEN__"]), st.integers(0, 11),
    st.one_of(st.none(), st.integers(0, 40))), max_size=40)), min_size=1, max_size=6))
def test_the_json_facts_folded_from_columns_as_from_every_object(
        inputs: list[tuple[bool, list[tuple[str, int, int | None]]]]) -> None:
    """The JSON's facts classes read from a table's columns (a row for each value's first line alone) are the classes
    folded from every line's object, in order, across inputs some of which are tables and some tuples, and tables of
    more values than the columns' path takes."""
    from ncclcheck.evidence.formats import ncclsetup
    from ncclcheck.evidence.tables import FactTable, table
    from ncclcheck.evidence.types import Fact, FileScan, Loc, Who
    from ncclcheck.render import json_out

    hidden = next(iter(ncclsetup.MARKS))
    (event,) = (e for e in json_out._EVENTS if e.name == "facts")
    tables, objects = [], []
    for n, (few, lines) in enumerate(inputs):  # few: two values a key (a node log's), else up to twelve
        name = f"n{n}.log"
        facts = [Fact(Who(global_rank=r), hidden if k == "__HIDDEN__" else k, str(v % 2 if few else v),
                      Loc(name, i + 1)) for i, (k, v, r) in enumerate(lines)]
        tables.append(FileScan(name, None, len(lines), 0, (), facts=table(FactTable, facts, name)))
        objects.append(FileScan(name, None, len(lines), 0, (), facts=tuple(facts)))
    assert event.folded(tables) == event.folded(objects)
