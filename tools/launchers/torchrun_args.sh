# Sourced by the torchrun recording scripts (torchrun_signals.sh, torchrun_nodes.sh, uneven.sh) with their own
# arguments, after each sets `default_cases`: `[OUT_DIR] [CASE ...]`. Leaves the repository's root as the current
# folder and sets root, out, cases and venv (VENV=... or the repository's .venv, which must hold torchrun).
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
out=${1:-tests/data/launchers/torchrun}
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=("${default_cases[@]}")
venv=${VENV:-$root/.venv}
[ -x "$venv/bin/torchrun" ] || { echo "$(basename "$0"): no torchrun in $venv (VENV=...)" >&2; exit 2; }
