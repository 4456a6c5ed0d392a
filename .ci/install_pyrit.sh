#!/usr/bin/env bash
# PyRIT for `RedjuryScorer`'s attack test, in its own virtualenv `.venv-pyrit` beside the
# checkout: PyRIT's pins (cryptography among them) would change the test environment's.
# redjury goes in editable, without its extras. No torch: PyRIT 1.1.0 does not pull it.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv-pyrit
.venv-pyrit/bin/python -m pip install -q --upgrade pip
.venv-pyrit/bin/pip install -q 'pyrit==1.1.0'
.venv-pyrit/bin/pip install -q -e .
.venv-pyrit/bin/python -c "import pyrit; print('pyrit', pyrit.__version__)"
