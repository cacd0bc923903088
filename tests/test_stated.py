"""The stated reason is never lost (issue 41 §1): the report quotes the most specific line the job wrote about its
failure, and two rules hold on every fixture input.

(a) No report says ``no_failure`` while an input holds an error-class line of a known source; (b) none says that
NCCL failed without saying why while NCCL's WARN line, its ``Last error:`` text or a CUDA error says why. The lines
are found here by this test's own reading of each source's shape (NCCL's src/debug.cc and include/checks.h,
PyTorch's NCCLUtils.cpp, gloo's logging.cc, the C++ runtime's terminate handler, Python's traceback), on the raw
bytes, not by the parser: a line the reader drops or the verdict ignores fails it.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
from pathlib import Path

import pytest
from analysed import analysed, report
from conftest import DATA, run
from typer.testing import CliRunner

from ncclcheck.cli import app
from ncclcheck.evidence.formats import cmdline, ray
from ncclcheck.evidence.formats.errors import NOT_FATAL
from ncclcheck.evidence.types import Loc
from ncclcheck.job.layers import LAYERS
from ncclcheck.job.reasons import Stated, ranked

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()

# ------------------------------------------------------------------------------------------------ the ranking


def _line(source: str, rank: int | None, line: int, clock: float | None = None, file: str = "a.log") -> Stated:
    return Stated(source, f"{source} {rank} {line}", "", rank, Loc(file, line), clock)


def test_the_more_specific_source_comes_first():
    """NCCL's WARN over its error code over a Python exception, wherever each stands in the file."""
    lines = [_line("exception", 0, 1), _line("nccl_error", 0, 2), _line("nccl_warn", 0, 3)]
    assert [x.source for x in ranked(lines)] == ["nccl_warn", "nccl_error", "exception"]


def test_the_earlier_line_of_one_source_comes_first():
    """By the clock where the lines carry one (across files), else by the place in the file."""
    assert [x.loc.line for x in ranked([_line("nccl_warn", 1, 9, 5.0, "b.log"), _line("nccl_warn", 0, 2, 7.0)])] \
        == [9, 2]
    assert [x.loc.line for x in ranked([_line("cuda", 0, 8), _line("cuda", 0, 3)])] == [3, 8]


def test_the_culprits_lines_come_first():
    """The rank that failed first: its own exception over another rank's WARN (which is its echo)."""
    lines = [_line("nccl_warn", 0, 1), _line("exception", 2, 5)]
    assert [x.rank for x in ranked(lines, culprits=[2])] == [2, 0]
    assert [x.rank for x in ranked(lines)] == [0, 2]


# ------------------------------------------------------------------------------------------ real lines, read


def _verdict(tmp_path: Path, *lines: str) -> dict:
    log = tmp_path / "console.log"
    log.write_text("".join(x + "\n" for x in lines))
    result = runner.invoke(app, ["analyze-log", str(log), "--json"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)["verdict"]


# NCCL 2.19's header (tests/data/failure_corpus/37, corpus/07).
USE_BEFORE = ("lzm-h200-10:74737:74737 [1] init.cc:290 NCCL WARN Attempt to use communicator before the previous "
              "operation returned ncclSuccess")
PROXY = ("a100-st-p4d24xlarge-22:183006:183220 [1] proxy.cc:1119 NCCL WARN [Proxy Service 9] Failed to execute "
         "operation Connect from rank 9, retcode 6")


def _layer(name: str) -> str:
    """What a WARN line of that layer under NCCL means, known by the file its header printed (job/layers.toml)."""
    return next(x.means for x in LAYERS if x.id == name) + " (known by the file NCCL printed)"


def test_a_warn_line_alone_is_a_failure(tmp_path):
    """A job whose only error is NCCL's WARN line failed, as the line states: never no_failure."""
    v = _verdict(tmp_path, "step 1", "[rank1]:" + USE_BEFORE)
    assert (v["kind"], v["culprit_ranks"], v["cause"]["kind"]) == ("rank_failed_first", [1], "stated_reason")
    assert v["stated"] == {"source": "nccl_warn", "rank": 1, "at": f"{tmp_path}/console.log:2",
                           "text": "Attempt to use communicator before the previous operation returned ncclSuccess",
                           "meaning": _layer("api")}  # init.cc: NCCL's API (job/layers.toml)
    assert v["summary"].startswith("Rank 1 failed, as its own line states: NCCL's WARN line \"Attempt to use")


def test_an_older_warn_header_is_read_as_nccls():
    """NCCL 2.0-2.2 printed no word NCCL before WARN (public_threads/12, NVIDIA/nccl-tests#14): the line is NCCL's all
    the same, and its libibverbs WARN before it, which NCCL went on from over sockets, is no stated failure."""
    path = "tests/data/public_threads/12-nccltests-14-no-socket-interface-docker.log"
    result = runner.invoke(app, ["analyze-log", path, "--json"])
    v = json.loads(result.stdout)["verdict"]
    assert (result.exit_code, v["kind"], v["cause"]["kind"]) == (1, "setup_failure", "no_socket_interface")
    assert v["stated"] == {"source": "nccl_warn", "rank": None, "at": f"{path}:4",
                           "text": "Socket creation failed : Address family not supported by protocol",
                           "meaning": _layer("bootstrap")}  # include/socket.h, its printed file: the socket layer


def test_an_older_warn_header_alone_is_a_failure(tmp_path):
    """The same header with no cause of the catalogue: the process failed inside NCCL, as the line states."""
    v = _verdict(tmp_path, "e66aa18dc444:3171:3171 [0] misc/group.cc:72 WARN Thread creation failed : Resource "
                           "temporarily unavailable")
    assert (v["kind"], v["stated"]["source"], v["stated"]["at"]) == ("nccl_error", "nccl_warn",
                                                                     f"{tmp_path}/console.log:1")


@pytest.mark.parametrize("header", ["[2026-05-13 10:00:01] node7:3171:3190 [2] net.cc:812 (sendProxyConnect) ",
                                    "node7:3171:3190 [2] net.cc:812 "])
def test_the_current_warn_headers_are_read(tmp_path, header):
    """2.26's date before the header and the function's name after the line number (src/debug.cc)."""
    v = _verdict(tmp_path, header + "NCCL WARN Call to connect returned Connection refused, retrying")
    assert v["stated"]["text"] == "Call to connect returned Connection refused, retrying"


def test_nccl_said_why_so_the_report_never_says_it_did_not(tmp_path):
    """An NCCL system error with an empty 'Last error:', below the WARN line that says why: the WARN is the cause,
    and nothing says NCCL gave no reason (ProcessGroupNCCL's error text, NCCLUtils.cpp)."""
    v = _verdict(tmp_path, "[rank9]:" + PROXY,
                 "[rank9]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
                 "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
                 "[rank9]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
                 "device error.", "[rank9]: Last error:", "[rank9]: ")
    assert v["cause"]["kind"] == "stated_reason"
    assert "without saying why" not in json.dumps(v) and "no reason printed" not in json.dumps(v)
    assert v["summary"] == (
        f"Rank 9's NCCL failed: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details) "
        f"({tmp_path}/console.log:2), and NCCL's WARN line says why: \"[Proxy Service 9] Failed to execute operation "
        f"Connect from rank 9, retcode 6\" ({tmp_path}/console.log:1), that is {_layer('proxy')}.")  # proxy.cc


def test_without_a_warn_line_nccl_gave_no_reason(tmp_path):
    """The same error with nothing that says why keeps its cause: rerun with NCCL_DEBUG=WARN."""
    v = _verdict(tmp_path, "[rank9]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
                           "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
                 "[rank9]: Last error:", "[rank9]: ")
    assert v["cause"]["kind"] == "nccl_system_error"


def test_a_cuda_failure_in_a_warn_says_which_call(tmp_path):
    """NCCL's CUDACHECK words a failed CUDA call as "Cuda failure '<string>'" (include/checks.h)."""
    v = _verdict(tmp_path, "[rank0]:n1:1:2 [0] transport/p2p.cc:275 NCCL WARN Cuda failure 'operation not supported'")
    assert v["stated"]["meaning"] == f"a CUDA call NCCL made failed with 'operation not supported'; {_layer('p2p')}"


def test_gloos_enforce_text_is_quoted(tmp_path):
    """gloo's EnforceNotMet, re-raised in Python: the condition it checked (gloo/common/logging.cc), where no entry of
    job/statements.toml names the check's mechanism (pair.cc's duplicate receive of one slot)."""
    v = _verdict(tmp_path, "[rank2]: RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:740] "
                           "false. duplicate buffer for slot 3")
    assert (v["kind"], v["culprit_ranks"], v["stated"]["source"]) == ("rank_failed_first", [2], "gloo_enforce")
    assert v["stated"]["meaning"] == ("gloo checked a condition at ../third_party/gloo/gloo/transport/tcp/pair.cc:740 "
                                      "and it did not hold")


def test_the_plain_report_names_the_line_where_the_summary_does_not(tmp_path):
    """A verdict no cause explains whose summary does not quote the line (a hang's rules keep their own words): the
    panel says it, with its place; a verdict whose cause explains prints the cause instead."""
    from dataclasses import replace

    from rich.console import Console

    from ncclcheck.render.report import verdict_panel

    log = tmp_path / "console.log"
    log.write_text("[rank1]:" + PROXY + "\n")
    a = run(log)
    plain = replace(a, verdict=replace(a.verdict, cause=None, summary="The ranks waited."))

    def text(x) -> str:
        c = Console(width=400, record=True, file=open("/dev/null", "w"))  # noqa: SIM115 - closed with the console
        c.print(verdict_panel(x))
        c.file.close()
        return c.export_text()

    assert f'stated: NCCL\'s WARN line "[Proxy Service 9] Failed to execute operation Connect from rank 9, retcode 6" ' \
           f"({log}:1)" in text(plain)
    assert "stated:" not in text(a)


def test_a_terminates_what_line_says_why(tmp_path):
    """An exception no code caught: the C++ runtime names its type, then its message after what() (formats/cxx.py);
    the message is quoted, gloo's failed check read as such."""
    v = _verdict(tmp_path, "[rank3]:terminate called after throwing an instance of 'gloo::EnforceNotMet'",
                 "[rank3]:  what():  [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] "
                 "op.preamble.length <= op.nbytes. 8 vs 4")
    assert (v["kind"], v["culprit_ranks"], v["cause"]["kind"]) == ("rank_failed_first", [3], "stated_reason")
    assert (v["stated"]["source"], v["stated"]["rank"], v["stated"]["at"]) == ("gloo_enforce", 3,
                                                                               f"{tmp_path}/console.log:2")
    assert "Gloo's EnforceNotMet says why: \"[enforce fail at" in v["summary"]


def test_a_what_line_that_holds_an_nccl_error_is_read_as_both():
    """The real one-line paste (failure_corpus/10): its what() is a clue, and its NCCL error is still the rank's."""
    a = run(DATA / "failure_corpus" / "10-alpaca207-ib-error12-remote.log")
    assert [c.kind for s in a.scans for c in s.clues if c.kind == "what"] == ["what"]
    assert any(e.message.startswith("NCCL error: remote process exited") for s in a.scans for e in s.errors)


def test_each_real_line_is_read_as_its_source():
    """A real console (corpus/07): NCCL's WARN lines, a lost connection among them, are NCCL's (never a Python
    exception), in the order printed; the same words twice are one line."""
    a = run(DATA / "corpus" / "07-nccl-socket-warn-broken-pipe-negative.log")
    assert [(x.source, x.loc.line) for x in a.job.facts.stated] == [("nccl_warn", 1), ("nccl_warn", 7),
                                                                   ("nccl_warn", 8)]
    assert a.job.facts.stated[2].meaning.startswith("the peer a100-st-p4d24xlarge-22.")


def test_the_driver_shutting_down_is_no_failure():
    """CUDA's 'driver shutting down' at exit, which the watchdog reports at INFO, states no failure."""
    a = run(DATA / "corpus" / "22-fuser-watchdog-caught-cuda-shutdown-negative.log")
    assert (a.verdict.kind.value, a.verdict.stated) == ("no_failure", None)


def test_a_timeout_no_rank_of_the_job_is_placed_in_is_no_pass():
    """The watchdog's what() names rank 7 of PG 1 only: something timed out, the others' lines are missing."""
    v = run(DATA / "corpus" / "17-megatron-what-pg1-reduce-scatter-base-overshoot.log").verdict
    assert v.kind.value == "incomplete_evidence"
    assert v.summary.startswith("A collective timed out, as its own line states: rank 7 of PG 1 (its rank within "
                                "that group: no line gives its rank in the job) waited for 882,725 ms in "
                                "_REDUCE_SCATTER_BASE #199 against a timeout of 600,000 ms")


def test_a_lagging_ranks_own_line_says_why_it_never_arrived(tmp_path):
    """Rank 0 timed out waiting for rank 1, whose NCCL wrote why it failed: the verdict names rank 1 and quotes its
    line (tests/data/real's watchdog line, failure_corpus/37's WARN); the plain report shows it too."""
    log = tmp_path / "console.log"
    log.write_text("[rank0]:[E1122 05:10:03.208457661 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught collective "
                   "operation timeout: WorkNCCL(SeqNum=4, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=10000) "
                   "ran for 10015 milliseconds before timing out.\n[rank1]:" + USE_BEFORE + "\nWORLD_SIZE=2\n")
    v = run(log).verdict
    assert (v.kind.value, v.culprit_ranks) == ("lagging_rank", (1,))
    assert v.summary.endswith(f"NCCL's WARN line says why: \"Attempt to use communicator before the previous operation "
                              f"returned ncclSuccess\" ({log}:2), that is {_layer('api')}.")
    out = runner.invoke(app, ["analyze-log", str(log)], env={"COLUMNS": "400", "NO_COLOR": "1"}).stdout
    assert "NCCL's WARN line says why: \"Attempt to use communicator" in out


# ------------------------------------------------------------------------------------- every fixture, both rules
# Each known source's shape, read on the raw bytes: NCCL's WARN header (2.3+: "[dev] file.cc:N NCCL WARN", with
# " (function)" in its 2026 logging; 2.0-2.2: "[dev] file.cc:N WARN"), PyTorch's "Last error:" with its text on the
# same line, a CUDA error string, gloo's EnforceNotMet, a C++ terminate, NCCL's error code, a Python exception's line.
SAYS_WHY = (
    re.compile(r"\[\d+\] (?:[\w/.-]+:\d+ (?:\(\w+\) )?)?NCCL WARN \S"),
    re.compile(r"\[\d+\] [\w/.-]+\.(?:cc|cu|h|c):\d+ WARN \S"),
    re.compile(r"Last error:\s*\S"),
    re.compile(r"CUDA error: \w"),
)
ERROR_CLASS = (
    *SAYS_WHY,
    re.compile(r"\[enforce fail at "),
    re.compile(r"terminate called after throwing an instance of"),
    re.compile(r"NCCL (?:error|Error \d+)(?: in: \S+)?: \w|NCCL failure \S+:\d+ '"),
    re.compile(r"^(?:\[\w+\]:\s*)?(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): \S"),
    cmdline.ERROR,  # argparse's "%(prog)s: error: %(message)s" exit (status 2): the job never started
    ray.DIED,  # Ray's actor error for a worker process that died (Worker exit type: SYSTEM_ERROR): a death, not a pass
)
NO_REASON = re.compile(r"without saying why|no reason printed|printed no reason|printed no WARN line")
SKIP = {"explain", "expected", "expected4", "expected_failures", "hosts"}  # as tools/golden.py, and its blind sets


def _inputs() -> list[Path]:
    """Every fixture input, files and folders (each is one analyze-log input), and the bundled example; never the
    blind set (its README: it measures rules nobody tuned to it)."""
    found = [ROOT / "examples" / "incident-8rank"]
    for top in sorted(DATA.iterdir()):
        if top.is_dir() and top.name not in SKIP and not top.name.startswith("blind_threads"):
            found += [p for p in sorted(top.rglob("*")) if p.suffix not in {".py", ".sh", ".md"}]
    return found


def _lines(path: Path) -> list[str]:
    out: list[str] = []
    for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
        if not f.is_file() or f.suffix in (".pickle", ".json") or f.name.startswith("nccl_trace"):
            continue  # a dump; a truth or description file (it quotes lines, it prints none)
        data = f.read_bytes()
        if f.suffix == ".gz":
            data = gzip.decompress(data)
        if b"\x00" not in data[:4096]:
            out += [x for x in data.decode("utf-8", "replace").splitlines() if not NOT_FATAL.search(x)]
    return out


@functools.cache
def _holding() -> tuple[tuple[Path, bool], ...]:
    """The inputs that hold an error-class line, each with whether one of its lines says why NCCL failed (read once:
    the parametrisation and the count below both need it)."""
    out = []
    for p in _inputs():
        lines = _lines(p)
        if any(r.search(x) for x in lines for r in ERROR_CLASS):
            out.append((p, any(r.search(x) for x in lines for r in SAYS_WHY)))
    return tuple(out)


def test_the_fixtures_hold_both_kinds_of_line():
    """The property below has something to hold on: hundreds of inputs with an error line, dozens with a line that says why."""
    held = _holding()
    assert len(held) > 400 and sum(why for _, why in held) > 50


@pytest.mark.parametrize(("path", "says_why"), _holding(), ids=lambda x: str(x.relative_to(ROOT)) if isinstance(
    x, Path) else "")
def test_a_stated_failure_is_never_lost(path, says_why):
    """(a) not no_failure while an error-class line is in the input; (b) no "without saying why" while a line
    says why."""
    a = analysed(path)  # run(path), shared with the other properties of every fixture (tests/analysed.py)
    assert a.verdict.kind.value != "no_failure", a.verdict.summary
    if says_why:
        v = report(path)["verdict"]
        said = json.dumps({k: v[k] for k in ("summary", "cause", "findings", "next_steps")})
        assert not NO_REASON.search(said), v["summary"]
