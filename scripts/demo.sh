#!/usr/bin/env bash
# The main job end to end on the embedded sample (data/sample): validate -> prepare -> verify -> rescore
# -> summarize -> report.
# Usage: bash scripts/demo.sh [VENV_BIN]   (make demo passes .venv/bin)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.venv/bin}
CLI="$BIN/mcqa-prep"
OUT=${DEMO_OUT:-demo-out}
rm -rf "$OUT"
mkdir -p "$OUT"

step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "${*:2}"; "${@:2}"; }

step "1. validate the sample (JSONL + Parquet with null-filled options)" \
  "$CLI" validate data/sample/train.jsonl data/sample/validation.parquet
step "2. prepare training shards stamped with the grading contract" \
  "$CLI" prepare data/sample/train.jsonl data/sample/validation.parquet -o "$OUT/prepared"
step "3. prepare again: same contract, same inputs -> reused, nothing rewritten" \
  "$CLI" prepare data/sample/train.jsonl data/sample/validation.parquet -o "$OUT/prepared"
step "4. verify the preparation (hashes, row counts, per-row contract stamps)" \
  "$CLI" verify "$OUT/prepared"
echo
echo '== 5. rescore the sample rollouts against the prepared rows (they lack options: joined by prompt)'
echo "\$ $CLI rescore data/sample/rollouts.jsonl --rows $OUT/prepared -o $OUT/rescored.jsonl --compare-mode robust"
"$CLI" rescore data/sample/rollouts.jsonl --rows "$OUT/prepared" -o "$OUT/rescored.jsonl" --compare-mode robust
step "6. summarize the rescored rows (accuracy, statuses, per template; never pools two contracts)" \
  "$CLI" summarize "$OUT/rescored.jsonl"
step "7. report: one offline HTML page with plots of the preparation and the rescoring" \
  "$CLI" report "$OUT/prepared" "$OUT/rescored.jsonl" -o "$OUT/report.html"
echo
echo "Done. Prepared shards: $OUT/prepared  Rescored rows: $OUT/rescored.jsonl  Report: $OUT/report.html"
