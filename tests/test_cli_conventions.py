"""CLI conventions: short flags, shell completion, help on every parameter, lazy imports, usage exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import click
import pytest
import typer
from conftest import DATA
from typer.testing import CliRunner

from ncclcheck import __version__, schemas
from ncclcheck.cli import app
from ncclcheck.transfer import DEFAULT_DTYPE

runner = CliRunner()


def test_importing_the_cli_loads_no_core_module():
    """`ncclcheck --help` pays only for Typer and the constants its help states (the schema versions, the default
    dtype): the commands import what they need when they run."""
    code = ("import sys, ncclcheck.cli; "
            "print(sorted(m for m in sys.modules if m.startswith(('ncclcheck.', 'torch', 'rich', 'psutil'))"
            " and m != 'ncclcheck.cli'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.replace("'", '"')) == ["ncclcheck.schemas", "ncclcheck.transfer"]


@pytest.mark.parametrize(("command", "said"), [
    ("analyze-log", f"--json Print the machine-readable result (schema_version {schemas.ANALYZE_LOG})."),
    ("analyze-log", f"(the log does not say). [default: {DEFAULT_DTYPE}]"),
    ("explain", f"--json Print the machine-readable result (schema_version {schemas.EXPLAIN})."),
    ("explain", f"(default: the config's torch_dtype, else {DEFAULT_DTYPE})."),
    ("snapshot", f"--json Print the machine-readable result (schema_version {schemas.SNAPSHOT})."),
    ("probe", f"or JSON (schema_version {schemas.PROBE})."),
])
def test_help_states_the_constants_the_commands_use(command, said):
    r = runner.invoke(app, [command, "--help"], env={"COLUMNS": "400"})
    assert said in " ".join(r.stdout.replace("│", " ").split())


def test_the_json_is_the_version_the_help_states():
    """The number in `analyze-log --help` is the one its --json prints (the help once said 5 of a version 6)."""
    help_text = " ".join(runner.invoke(app, ["analyze-log", "--help"], env={"COLUMNS": "400"}).stdout.split())
    out = json.loads(runner.invoke(app, ["analyze-log", "--json", str(DATA / "real" / "sleep")]).stdout)
    assert f"(schema_version {out['schema_version']})." in help_text


@pytest.mark.parametrize("args", [["-h"], ["--help"], ["analyze-log", "-h"], ["probe", "-h"], ["explain", "-h"]])
def test_short_and_long_help(args):
    r = runner.invoke(app, args, env={"COLUMNS": "100"})
    assert r.exit_code == 0 and "Usage:" in r.stdout


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version_flags(flag):
    r = runner.invoke(app, [flag])
    assert (r.exit_code, r.stdout) == (0, f"ncclcheck {__version__}\n")


def test_completion_options_are_offered():
    r = runner.invoke(app, ["--help"], env={"COLUMNS": "120"})
    assert "--install-completion" in r.stdout and "--show-completion" in r.stdout


def test_show_completion_prints_a_script():
    """The script for the running shell, from a real process (completion reads the program name)."""
    # The shell is detected from the process tree (make and CI run tests under sh): run it from bash.
    # ("; exit $?" keeps bash as the parent: a lone command would be exec'd in its place.)
    r = subprocess.run(["bash", "-c", f"'{sys.executable}' -m ncclcheck --show-completion; exit $?"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "complete" in r.stdout and "_NCCLCHECK_COMPLETE" in r.stdout.upper()


def _params():
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    for name, cmd in group.commands.items():
        for p in cmd.params:
            if p.name not in ("help",):
                yield name, p


@pytest.mark.parametrize(("command", "param"), list(_params()), ids=lambda x: getattr(x, "name", x))
def test_every_parameter_has_help(command, param):
    assert getattr(param, "help", None), f"{command}: {param.name} has no help text"


def test_analyze_log_path_help_names_every_input_kind():
    r = runner.invoke(app, ["analyze-log", "--help"], env={"COLUMNS": "200"})
    text = " ".join(r.stdout.split())
    for kind in ("files", "directories", "globs", "- for stdin"):
        assert kind in text, kind


def test_explain_json_without_input_is_a_usage_error_like_text_mode():
    text = runner.invoke(app, ["explain"])
    as_json = runner.invoke(app, ["explain", "--json"])
    assert text.exit_code == as_json.exit_code == 2
    assert as_json.stdout == "" and "nothing to show" in as_json.stderr


def test_one_flight_recorder_block_from_one_place():
    """analyze-log's next step, snapshot's advice and probe --debug name the same settings with the same values."""
    from ncclcheck.frsettings import SETTINGS
    from ncclcheck.job.findings import FR_EXPORT
    from ncclcheck.snapshot.dumppipe import ADVICE_EXPORT

    block = " ".join(f"{k}={v}" for k, v, _ in SETTINGS)
    assert f"export {block}" == FR_EXPORT
    assert ADVICE_EXPORT.startswith(f"export {block} ")
    assert {"TORCH_FR_DUMP_ON_TIMEOUT", "TORCH_NCCL_DUMP_ON_TIMEOUT"} <= {k for k, _, _ in SETTINGS}
    r = CliRunner().invoke(app, ["probe", "--debug", "--format", "shell"])  # this machine, as test_probe's real run
    assert {f"export {k}={v}" for k, v, _ in SETTINGS} <= set(r.stdout.splitlines())


def test_install_completion_installs_for_the_shell_named(tmp_path):
    """`--install-completion fish` writes fish's completion (Typer alone would ignore the name and install for the
    shell it detects); an unknown shell is a usage error."""
    env = {**os.environ, "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "ncclcheck", "--install-completion", "fish"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 0 and "fish completion installed" in r.stdout
    assert (tmp_path / ".config" / "fish" / "completions" / "ncclcheck.fish").is_file()
    assert not (tmp_path / ".bashrc").exists()
    r = subprocess.run([sys.executable, "-m", "ncclcheck", "--install-completion", "tcsh"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert r.returncode == 2 and r.stderr == "ncclcheck: error: --install-completion tcsh: one of bash, zsh, fish, powershell, pwsh\n"


@pytest.mark.parametrize(("words", "offered"), [
    ("ncclcheck explain --model q", ["qwen2.5-7b", "qwen2.5-vl-7b", "qwen3-8b", "qwen3-30b-a3b"]),
    ("ncclcheck explain --strategy f", ["fsdp", "fsdp2"]),
    ("ncclcheck analyze-log --dtype bf", ["bfloat16", "bf16"]),
    # bench hands its options to the benchmark's parser; completion offers them and their values
    ("ncclcheck bench --op all", ["all_reduce", "all_gather"]),
    ("ncclcheck bench --size 1e8 --b", ["--bytes", "--backend"]),
    ("ncclcheck bench --np", ["--nproc"]),
    ("ncclcheck bench --backend g", ["gloo"]),
])
def test_completion_offers_the_values_an_option_takes(words, offered):
    env = {**os.environ, "_NCCLCHECK_COMPLETE": "complete_bash", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()) - 1)}
    r = subprocess.run([sys.executable, "-m", "ncclcheck"], capture_output=True, text=True, env=env, timeout=60)
    assert r.stdout.split() == offered


@pytest.mark.parametrize("width", range(40, 101, 3))
def test_the_verdict_box_keeps_numbers_with_units_and_cuts_nothing(width):
    """At any width the verdict box breaks between words only, never inside "10 GbE" or "15 s" or a file:line,
    and a word wider than the box folds onto the next line instead of being cut at the border."""
    from dataclasses import replace

    from conftest import DATA, run
    from rich.console import Console

    from ncclcheck.render.report import verdict_panel

    a = run(DATA / "real4" / "tp_straggler")
    summary = ("All 3 other ranks waited until the 15 s timeout; moving 1.87 GB over 10 GbE takes 1.7 s, against "
               "the 600 s timeout: see [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] and "
               "/work/main/tools/a_rather_long_module_name_for_a_path/incident_groups.py:65.")
    a = replace(a, verdict=replace(a.verdict, summary=summary))
    con = Console(width=width, record=True, color_system=None)
    con.print(verdict_panel(a))
    rows = [line[2:-2].rstrip() for line in con.export_text().splitlines()[1:-1]]
    for pair in ("15 s", "1.87 GB", "10 GbE", "1.7 s", "600 s"):
        assert any(pair in r for r in rows), (pair, rows)  # on one line, not "10" at an end and "GbE" under it
    joined = "".join(r.strip() for r in rows)
    assert "unbound_buffer.cc:78]" in joined and "incident_groups.py:65." in joined
    assert all(len(line) <= width for line in con.export_text().splitlines())
