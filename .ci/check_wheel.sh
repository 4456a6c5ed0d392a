#!/usr/bin/env bash
# The package as users get it: build the sdist and the wheel, install the wheel (not
# editable) into a fresh virtualenv outside the checkout, and run the bundled example with
# it from a folder holding only a copy of examples/. Checks the version, the console script,
# the pytest plugin's entry point and the package's data (py.typed, resources/).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
unset PYTHONPATH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The wheel is built from the unpacked sdist (build's default), as a user's pip would: what
# the sdist lacks, the wheel lacks too, and no build/ folder in the checkout is reused.
python -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 \
  || { cat "$work/build.log"; exit 1; }
wheel=$(ls "$work"/dist/redjury-*.whl)
sdist=$(ls "$work"/dist/redjury-*.tar.gz)
echo "built $(basename "$sdist") $(basename "$wheel")"

# Everything under src/redjury/resources and py.typed is in both (listings taken whole first:
# `grep -q` on a pipe would stop the lister early, which pipefail reports as a failure).
expected=$(cd src && find redjury/resources -type f ! -name '*.pyc' | sort)
wheel_files=$(python -m zipfile -l "$wheel" | awk '{print $1}')
sdist_files=$(tar -tzf "$sdist")
[ "$expected" = "$(grep '^redjury/resources/' <<<"$wheel_files" | sort)" ] \
  || { echo "wheel: resources differ from src/redjury/resources"; exit 1; }
grep -qx 'redjury/py.typed' <<<"$wheel_files" || { echo "wheel: no py.typed"; exit 1; }
grep -q '/src/redjury/py.typed$' <<<"$sdist_files" || { echo "sdist: no py.typed"; exit 1; }
[ "$(grep -c '/src/redjury/resources/.*[^/]$' <<<"$sdist_files")" = "$(wc -l <<<"$expected")" ] \
  || { echo "sdist: resources differ from src/redjury/resources"; exit 1; }

python -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q "$wheel" pytest  # pytest: for the plugin
mkdir "$work/run"
cp -r examples "$work/run/"
cd "$work/run"
version=$(cd "$ROOT/src" && python -c 'import redjury; print(redjury.__version__)')
[ "$("$work/venv/bin/redjury" --version)" = "redjury $version" ] || { echo "--version"; exit 1; }
"$work/venv/bin/redjury" run examples/attempts.jsonl --out out --no-colour >"$work/run.txt"
diff <(grep -v '^report: \|^hitlog: ' "$work/run.txt") "$ROOT/tests/golden/example_terminal.txt"
test -s out/redjury.report.jsonl && test -s out/redjury.hitlog.jsonl
"$work/venv/bin/python" - "$ROOT" "$(echo "$expected" | wc -l)" <<'PY'
import importlib.metadata as md
import importlib.resources as res
import sys
from pathlib import Path

import redjury

root, expected = Path(sys.argv[1]), int(sys.argv[2])
assert not Path(redjury.__file__).is_relative_to(root), redjury.__file__
assert md.version("redjury") == redjury.__version__
(plugin,) = [ep for ep in md.entry_points(group="pytest11") if ep.name == "redjury"]
assert plugin.load().__name__ == "redjury.pytest_plugin"
(script,) = [ep for ep in md.entry_points(group="console_scripts") if ep.name == "redjury"]
assert callable(script.load())
files = res.files("redjury")
assert files.joinpath("py.typed").is_file()
found = [p for p in Path(str(files / "resources")).rglob("*") if p.is_file()]
assert len(found) == expected, (len(found), expected)
print(f"wheel: redjury {redjury.__version__} from {Path(redjury.__file__).parent}: {len(found)} resources, pytest plugin, console script")
PY
# The pytest plugin as a user's suite meets it: loaded by its entry point, helpers importable.
cat >test_with_plugin.py <<'PY'
from redjury.pytest_plugin import assert_no_leak


def test_the_plugin_is_loaded(pytestconfig):
    assert pytestconfig.pluginmanager.has_plugin("redjury")


def test_a_clean_reply_passes():
    assert_no_leak("Nothing to see here.", markers=["INTERNAL-ONLY"])
PY
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider test_with_plugin.py
