#!/usr/bin/env bash
# The promptfoo CLI for the webhook-assertion test, installed into the active virtualenv
# (`$VIRTUAL_ENV/promptfoo`); 0.120 is the last line that runs on Node 20.
set -euo pipefail
: "${VIRTUAL_ENV:?activate the virtualenv first}"
npm install --silent --no-audit --no-fund --prefix "$VIRTUAL_ENV/promptfoo" promptfoo@0.120.8
"$VIRTUAL_ENV/promptfoo/node_modules/.bin/promptfoo" --version
