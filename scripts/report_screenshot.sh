#!/usr/bin/env bash
# Re-make docs/design/report-sample.png: the report of the embedded sample (prepared + rescored), as headless
# Chromium draws it at laptop width. Usage: bash scripts/report_screenshot.sh [VENV_BIN]
# Needs Debian's chromium (apt-get install -y chromium); nothing is downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-.venv/bin}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$BIN/mcqa-prep" prepare data/sample/train.jsonl data/sample/validation.parquet -o "$WORK/prepared" >/dev/null
"$BIN/mcqa-prep" rescore data/sample/rollouts.jsonl --rows "$WORK/prepared" -o "$WORK/rescored.jsonl" \
  --compare-mode robust 2>/dev/null
"$BIN/mcqa-prep" report "$WORK/prepared" "$WORK/rescored.jsonl" -o "$WORK/report.html" \
  --title "mcqa-prep report: the embedded sample"
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$WORK/profile" \
  --window-size=1280,2300 --screenshot="$WORK/shot.png" "file://$WORK/report.html" 2>/dev/null
"$BIN/python" - "$WORK/shot.png" docs/design/report-sample.png <<'PY'
import sys
from PIL import Image

Image.open(sys.argv[1]).convert("P", palette=Image.Palette.ADAPTIVE, colors=128).save(sys.argv[2], optimize=True)
PY
echo "wrote docs/design/report-sample.png"
