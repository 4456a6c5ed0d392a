#!/usr/bin/env bash
# garak itself, for the test that renders redjury's report with garak's own report_digest
# (tests/report/test_garak_report_digest.py). garak 0.17's full install pulls torch,
# transformers and some forty services' clients; report_digest needs none of them, so garak
# goes into a virtualenv of its own (.venv-garak, gitignored) without its dependencies, plus
# the few modules report_digest imports. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv-garak
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import garak.analyze.report_digest" 2>/dev/null; then
  exit 0
fi
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/pip" install -q --no-deps "garak==0.17.1"
# pip then lists the forty dependencies left out as conflicts: expected, and harmless here.
"$VENV/bin/pip" install -q pyyaml xdg-base-dirs markdown colorama numpy
# garak writes its config and cache under the XDG folders when imported: a scratch home.
HOME=$(mktemp -d) "$VENV/bin/python" -c "import garak.analyze.report_digest"
