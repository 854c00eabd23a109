#!/usr/bin/env bash
# The published demo loss cannot drift from the demo: scripts/demo.sh checks that a run reaches DEMO_EVAL_LOSS,
# and this test checks that the README and docs/training-curve.md publish that same number.
# Usage: demo_docs_test.sh SOURCE_DIR
set -euo pipefail
root=$1
loss=$(sed -nE 's/^DEMO_EVAL_LOSS=([0-9.]+).*/\1/p' "$root/scripts/demo.sh")
[[ -n "$loss" ]] || { echo "demo_docs_test: no DEMO_EVAL_LOSS in scripts/demo.sh"; exit 1; }
fail=0
grep -q "validation loss of \*\*$loss nats per byte\*\*" "$root/README.md" ||
  { echo "README.md does not publish the demo loss $loss"; fail=1; }
grep -qE "^\| 800 \| [0-9.]+ \| $loss \|$" "$root/docs/training-curve.md" ||
  { echo "docs/training-curve.md: the step-800 row does not hold $loss"; fail=1; }
grep -q "ends at $loss nats per" "$root/docs/training-curve.md" ||
  { echo "docs/training-curve.md: the text does not say $loss"; fail=1; }
# Any other loss-like number next to "validation loss" in the README would be a stale one.
if grep -oE "validation loss of \*\*[0-9.]+" "$root/README.md" | grep -v "$loss" | grep -q .; then
  echo "README.md publishes another demo loss"; fail=1
fi
[[ $fail -eq 0 ]] && echo "demo_docs_test: README and docs/training-curve.md publish $loss, as scripts/demo.sh checks"
exit $fail
