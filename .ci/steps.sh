# Sourced by .ci/run: named steps, each one's duration printed in a table when the run ends,
# whether it ends well or not (test/ci/ci-steps.test.ts runs these on a dummy script).

ci_step_names=()
ci_step_seconds=()
ci_step_current=''
ci_step_started=0

ci_step_close() {
  if [ -n "$ci_step_current" ]; then
    ci_step_names+=("$ci_step_current")
    ci_step_seconds+=("$((SECONDS - ci_step_started))")
    ci_step_current=''
  fi
}

# Starts a step: the previous one ends here.
step() {
  ci_step_close
  ci_step_current="$*"
  ci_step_started=$SECONDS
  printf '\n=== %s\n' "$*"
}

# The EXIT trap: a step still open when the run exits is the one that failed (or the last one).
# A function ci_cleanup, when the script defines one, runs first.
ci_step_report() {
  local code=$? failed='' i
  if declare -F ci_cleanup >/dev/null; then ci_cleanup || true; fi
  [ "$code" -ne 0 ] && failed="$ci_step_current"
  ci_step_close
  printf '\n=== step durations\n'
  printf '%-28s %8s\n' step seconds
  for i in "${!ci_step_names[@]}"; do
    printf '%-28s %8d%s\n' "${ci_step_names[$i]}" "${ci_step_seconds[$i]}" \
      "$([ -n "$failed" ] && [ "$i" -eq $((${#ci_step_names[@]} - 1)) ] && echo '  FAILED')"
  done
  printf '%-28s %8d\n' total "$SECONDS"
  exit "$code"
}

# The summary of a vitest log, one line ("Test Files  N passed (N) | Tests  M passed (M)"), or
# a failure when it has no summary or counts anything but passed tests (failed, skipped, todo).
vitest_summary() {
  local log=$1 lines
  lines=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^ *(Test Files|Tests) ' | sed -E 's/^ +//; s/ +/ /g') || true
  if [ "$(printf '%s\n' "$lines" | grep -c .)" -ne 2 ]; then
    echo "no vitest summary in $log" >&2
    return 1
  fi
  # A here-string, not a pipe: under pipefail, grep -q leaving early could fail printf with
  # SIGPIPE, and the failed pipeline would read as "all green".
  if grep -qvE '^(Test Files|Tests) [0-9]+ passed \([0-9]+\)$' <<<"$lines"; then
    echo "not all green in $log: $(printf '%s\n' "$lines" | paste -sd '|' -)" >&2
    return 1
  fi
  printf '%s\n' "$lines" | paste -sd '|' - | sed 's/|/ | /'
}
