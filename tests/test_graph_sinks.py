"""The wait-for graph's roots: ``roots_of`` peels the chains of waiters before Tarjan's walk (issue 42); its sinks
must be those of the definition, found here the slow way (every node's reach, one search each)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from ncclcheck.job.graph import UNKNOWN_NODE, roots_of


def _reach(out: dict[int, set[int]], v: int) -> set[int]:
    seen, todo = {v}, [v]
    while todo:
        for t in out.get(todo.pop(), ()):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def _sinks(edges: list[tuple[int, int | None]], stuck: list[int]) -> list[list[int]]:
    """A sink: the component of a node reached from a stuck rank with an edge, when all it reaches reaches it back."""
    out: dict[int, set[int]] = {}
    for a, b in edges:
        out.setdefault(a, set()).add(UNKNOWN_NODE if b is None else b)
    reached = set().union(*(_reach(out, s) for s in stuck if s in out))
    found = set()
    for v in reached:
        mine = _reach(out, v)
        if all(v in _reach(out, u) for u in mine):
            found.add(tuple(sorted(mine)))
    return sorted(list(c) for c in found)


@settings(max_examples=400, deadline=None)
@given(st.integers(1, 10).flatmap(lambda n: st.tuples(
    st.lists(st.tuples(st.integers(0, n - 1), st.none() | st.integers(0, n - 1)), max_size=3 * n),
    st.lists(st.integers(0, n - 1), unique=True))))
def test_sinks_are_the_definitions(case: tuple[list[tuple[int, int | None]], list[int]]) -> None:
    edges, stuck = case
    assert sorted(sorted(c) for c in roots_of(edges, stuck)) == _sinks(edges, stuck)


def test_chain_of_waiters_peels_to_the_straggler() -> None:
    # tp peers wait for the straggler 5, the other ranks wait for a tp peer: no cycle, one sink
    edges: list[tuple[int, int | None]] = [(r, 5) for r in (4, 6, 7)] + [(r, r % 4 + 4) for r in range(4)]
    assert roots_of(edges, [0, 1, 2, 3, 4, 6, 7]) == [{5}]


def test_a_cycle_beside_a_chain_is_its_own_sink() -> None:
    # 0 and 1 wait for each other (a mismatch); 2 waits for 0; 3 waits for a member that left no input
    edges: list[tuple[int, int | None]] = [(0, 1), (1, 0), (2, 0), (3, None)]
    assert sorted(sorted(c) for c in roots_of(edges, [0, 1, 2, 3])) == [[UNKNOWN_NODE], [0, 1]]
