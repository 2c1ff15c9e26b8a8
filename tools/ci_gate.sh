#!/usr/bin/env bash
# The steps of the profaudit GitHub Action (action.yml), as a script CI and the tests run alike.
#
# Inputs (environment):
#   PROFAUDIT_COMMAND   compare (default) or audit
#   PROFAUDIT_BASELINE, PROFAUDIT_CANDIDATE   compare: the two sides; audit: timing logs or profiles
#   PROFAUDIT_CLAIM     audit: a claim file (instead of baseline/candidate)
#   PROFAUDIT_CLAIMED   audit with baseline/candidate: the claimed speedup
#   PROFAUDIT_FAIL_ON   regression (default), any-significant or none (compare)
#   PROFAUDIT_MAX_SLOWDOWN   e.g. 5% (default 0%)
#   PROFAUDIT_OUTPUT_DIR     where reports go (default profaudit-reports)
#   PROFAUDIT_ARGS      extra arguments, split on spaces
#   PROFAUDIT           the profaudit executable (default: profaudit on PATH)
# Outputs: OUTPUT_DIR/summary.md and findings.sarif, plus report.md and junit.xml (compare) or
# report.json (audit); the Markdown summary appended to $GITHUB_STEP_SUMMARY and exit-code=,
# status= and report-dir= lines to $GITHUB_OUTPUT when they are set.
# Exit code: profaudit's (compare: 0 pass, 1 regression, 2 bad input, 4 not comparable; audit: 0
# PASS/WARN, 1 FAIL/INCONCLUSIVE, 2 bad input).
set -u -o pipefail

cmd="${PROFAUDIT_COMMAND:-compare}"
exe="${PROFAUDIT:-profaudit}"
out="${PROFAUDIT_OUTPUT_DIR:-profaudit-reports}"
fail_on="${PROFAUDIT_FAIL_ON:-regression}"
max_slowdown="${PROFAUDIT_MAX_SLOWDOWN:-0%}"
read -r -a extra <<< "${PROFAUDIT_ARGS:-}"

die() { echo "ci_gate: $*" >&2; exit 2; }
mkdir -p "$out" || die "cannot create $out"

case "$cmd" in
  compare)
    [ -n "${PROFAUDIT_BASELINE:-}" ] && [ -n "${PROFAUDIT_CANDIDATE:-}" ] || die "compare needs PROFAUDIT_BASELINE and PROFAUDIT_CANDIDATE"
    # profaudit appends the summary to $GITHUB_STEP_SUMMARY itself
    "$exe" compare "$PROFAUDIT_BASELINE" "$PROFAUDIT_CANDIDATE" \
      --fail-on "$fail_on" --max-slowdown "$max_slowdown" \
      --junit "$out/junit.xml" --sarif "$out/findings.sarif" --summary "$out/summary.md" \
      -f markdown -o "$out/report.md" "${extra[@]}"
    rc=$?
    ;;
  audit)
    if [ -n "${PROFAUDIT_CLAIM:-}" ]; then
      args=("$PROFAUDIT_CLAIM")
    else
      [ -n "${PROFAUDIT_BASELINE:-}" ] && [ -n "${PROFAUDIT_CANDIDATE:-}" ] || die "audit needs PROFAUDIT_CLAIM, or PROFAUDIT_BASELINE and PROFAUDIT_CANDIDATE"
      args=(-b "$PROFAUDIT_BASELINE" -c "$PROFAUDIT_CANDIDATE")
      [ -n "${PROFAUDIT_CLAIMED:-}" ] && args+=(--claimed "$PROFAUDIT_CLAIMED")
    fi
    # --summary writes the Markdown report and appends it to $GITHUB_STEP_SUMMARY
    "$exe" audit "${args[@]}" -f json -o "$out/report.json" --sarif "$out/findings.sarif" --summary "$out/summary.md" "${extra[@]}"
    rc=$?
    ;;
  *) die "PROFAUDIT_COMMAND=$cmd: choose compare or audit" ;;
esac

case "$rc" in
  0) status=pass ;; 1) status=fail ;; 4) status=not-comparable ;; *) status=error ;;
esac
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  { echo "exit-code=$rc"; echo "status=$status"; echo "report-dir=$out"; } >> "$GITHUB_OUTPUT"
fi
echo "ci_gate: profaudit $cmd: $status (exit $rc); reports in $out"
exit "$rc"
