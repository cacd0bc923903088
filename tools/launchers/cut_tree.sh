# shellcheck shell=bash
# Sourced by the recording scripts (tools/launchers/*.sh) for their `cut` case: a job cut off mid-run, as when the
# node it runs on goes away with every process on it (power, a kernel crash, a fenced host, a container's kill).
#
# cut_tree DEST WORD CMD...: runs CMD in a session of its own (setsid) with its output in DEST, waits until DEST holds
# WORD (the workers' lines of step 2: every rank then sleeps in host code at step 3, worker.py's `timelimit`) and 5 s
# more, then takes the launcher's whole process tree, by each process's id: the launcher and every descendant,
# those in sessions of their own too (torchrun's agent starts each worker in a new session), are stopped (SIGSTOP,
# so that none sees another go and reacts), then killed (SIGKILL). Nothing of the launcher or its workers writes
# another line. Prints the launcher's exit status (137: killed).
tree() {  # a process and its descendants, parents first
  local pid
  echo "$1"
  for pid in $(ps -o pid= --ppid "$1" 2>/dev/null); do tree "$pid"; done
}
cut_tree() {
  local dest=$1 word=$2 sid rc pids
  shift 2
  setsid "$@" >"$dest" 2>&1 </dev/null &
  sid=$!
  for _ in $(seq 300); do
    grep -q -- "$word" "$dest" 2>/dev/null && break
    kill -0 "$sid" 2>/dev/null || break
    sleep 1
  done
  sleep 5
  pids=$(tree "$sid")
  # shellcheck disable=SC2086
  kill -STOP $pids 2>/dev/null || true
  # shellcheck disable=SC2086
  kill -KILL $pids 2>/dev/null || true
  set +e
  wait "$sid" 2>/dev/null
  rc=$?
  set -e
  echo "$rc"
}
