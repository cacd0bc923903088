#!/usr/bin/env bash
# Record Open MPI's mpirun failing to start the program, as tests/data/launchers/mpi_launch/<case>/ fixtures.
#
# Needs (installs nothing; says what is missing): Debian's openmpi-bin (mpirun.openmpi where MPICH is installed too).
# Each case starts one process that cannot start: a path that does not exist, a file that is not a program, a
# working directory that does not exist; mpirun prints its help text and exits non-zero before any rank ran.
#
# usage: tools/launchers/mpi_launch.sh [OUT_DIR] [CASE ...]     (default: tests/data/launchers/mpi_launch, every case)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-tests/data/launchers/mpi_launch}
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(not_found not_executable no_wdir)
mpirun=$(command -v mpirun.openmpi || command -v mpirun || true)
version=$([ -n "$mpirun" ] && "$mpirun" --version 2>&1 || true)
[[ $version == *OpenRTE* || $version == *"Open MPI"* || $version == *PRTE* ]] || { echo "mpi_launch.sh: Open MPI's mpirun not found: apt-get install openmpi-bin" >&2; exit 2; }

declare -A spec=(
  [not_found]="|./no_such_train.sh|mpirun starts ./no_such_train.sh, which does not exist: no rank starts"
  [not_executable]="|/etc/hosts|mpirun starts /etc/hosts, a file that is not a program (execve: Exec format error): no rank starts"
  [no_wdir]="--wdir /no/such/dir|hostname|mpirun starts hostname in a working directory that does not exist: no rank starts"
)
for case in "${cases[@]}"; do
  IFS='|' read -r opts prog what <<<"${spec[$case]}"
  dir=$out/$case
  rm -rf "$dir"; mkdir -p "$dir"
  set +e
  # shellcheck disable=SC2086
  "$mpirun" --allow-run-as-root -np 1 $opts "$prog" >"$dir/console.log" 2>&1
  rc=$?
  set -e
  echo "$case: mpirun exit $rc" >&2
  echo "$rc" >"$dir/exit-console.txt"
  printf '%s\n' "$what" >"$dir/WHAT.txt"
done
