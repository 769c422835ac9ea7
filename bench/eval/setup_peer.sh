#!/usr/bin/env bash
# The peer harness for bench/eval/run.py: mini-swe-agent in its own venv, so its
# dependencies (litellm and friends) never enter bosun's. Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.peer-venv"
python="${PYTHON:-python3}"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade "mini-swe-agent${MINI_SWE_AGENT_VERSION:+==$MINI_SWE_AGENT_VERSION}"
# (pip show, not an import: importing minisweagent creates ~/.config/mini-swe-agent)
"$venv/bin/python" -m pip show mini-swe-agent | grep -E "^(Name|Version):"
