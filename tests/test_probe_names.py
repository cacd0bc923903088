"""probe's knowledge of variable names: every listed name accepted, typo suggestions only towards real names."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ncclcheck.probe import names
from ncclcheck.probe.host import Probe, Setting
from ncclcheck.probe.lint import lint

ALL = sorted(names.CURRENT | names.ALIASES.keys())


def probe(env: dict[str, str]) -> Probe:
    """A host with nothing but these settings."""
    return Probe(hostname="h", system="Linux", python="3", interfaces=(), default_route=None, master_addr=None,
                 master_addr_iface=None, rdma=(), uverbs=(), libibverbs=False, gpus=(), topology=(), nvidia_smi=False,
                 shm_bytes=None, memlock=None, port_range=None,
                 settings=tuple(Setting(k, v, "env") for k, v in env.items()), versions={})


def by_name(env: dict[str, str]) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in lint(probe(env)):
        for ev in f.evidence:
            out.setdefault(ev.split("=", 1)[0], []).append(f)
    return out


def test_real_variables_are_not_called_unknown():
    """The names a first user met with 'not a variable NCCL or PyTorch reads' and a harmful rename."""
    found = by_name({n: "1" for n in ("NCCL_NTHREADS", "NCCL_LL128_NTHREADS", "NCCL_P2P_PXN_LEVEL",
                                      "NCCL_RUNTIME_CONNECT", "NCCL_IB_AR_THRESHOLD")})
    for name, findings in found.items():
        assert all(f.code != "unknown-name" for f in findings), (name, [f.message for f in findings])


def test_old_cpp_stack_name_is_an_alias():
    [f] = by_name({"TORCH_NCCL_TRACE_CPP_STACK": "1"})["TORCH_NCCL_TRACE_CPP_STACK"]
    assert f.code == "deprecated-name"
    assert "TORCH_FR_CPP_STACK" in f.message and f.fix == "Use TORCH_FR_CPP_STACK=1."


def test_every_listed_name_is_accepted():
    found = by_name({n: "1" for n in ALL})
    bad = {n: [f.code for f in fs] for n, fs in found.items() if {"unknown-name", "timeout-not-read"} & {f.code for f in fs}}
    assert not bad


def test_aliases_lead_to_current_names():
    assert set(names.ALIASES.values()) <= names.CURRENT
    assert not set(names.ALIASES) & names.CURRENT


def test_removed_names_say_so_without_a_rename():
    [f] = by_name({"NCCL_LL_THRESHOLD": "16384"})["NCCL_LL_THRESHOLD"]
    assert f.code == "removed-name"
    assert "2.5" in f.message and "did you mean" not in f.message


def test_coverage_is_recorded():
    """The table says which releases it covers, and holds the bulk of NCCL's variables."""
    assert "2.30.7" in names.__doc__ and "PyTorch 2.2" in names.__doc__ and "2.32" in names.__doc__
    assert len(names.NCCL_RELEASE) > 200


NAME_CHARS = st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789")


@st.composite
def typo(draw):
    """A real name with one character replaced, dropped or inserted, or two neighbours swapped."""
    name = draw(st.sampled_from(ALL))
    i = draw(st.integers(min_value=5, max_value=len(name) - 1))
    kind = draw(st.sampled_from(("replace", "drop", "insert", "swap")))
    if kind == "replace":
        return name[:i] + draw(NAME_CHARS) + name[i + 1:]
    if kind == "drop":
        return name[:i] + name[i + 1:]
    if kind == "insert":
        return name[:i] + draw(NAME_CHARS) + name[i:]
    return name[:i - 1] + name[i] + name[i - 1] + name[i + 1:]


@settings(max_examples=300, deadline=None)
@given(typo())
def test_suggestions_point_only_at_current_names(name):
    """A misspelling is either a real name (accepted), or gets a suggestion that is a current, real name."""
    findings = by_name({name: "1"}).get(name, [])
    unknown = [f for f in findings if f.code == "unknown-name"]
    if name in names.CURRENT or name in names.ALIASES or name in names.NCCL_REMOVED:
        assert not unknown
    for f in unknown:
        if f.fix and f.fix.startswith("Rename it to "):
            assert f.fix.removeprefix("Rename it to ").rstrip(".") in names.CURRENT
