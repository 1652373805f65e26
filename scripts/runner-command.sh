#!/usr/bin/env bash
# Runs `python -m runner SUBCOMMAND [options]` here, or over ssh on $HOST: what the cron scripts share.
#
#   scripts/runner-command.sh SUBCOMMAND [options]            here
#   HOST=box scripts/runner-command.sh SUBCOMMAND [options]   the same on box, over ssh
#
# Interpreter: $COLLECTOR_PYTHON, else python3 on PATH (cron's PATH is bare: install-cron writes
# absolute paths). Over ssh the remote runs in $COLLECTOR_DIR (default: this checkout's path) and
# gets $COLLECTOR_PYTHON / $COLLECTOR_CONFIG when they are set here. This script prints nothing
# itself and exits with python's status (ssh's 255 when the connection fails).
set -euo pipefail

project="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${COLLECTOR_PYTHON:-python3}"

if [[ -n "${HOST:-}" ]]; then
    remote="cd $(printf '%q' "${COLLECTOR_DIR:-$project}") &&"
    for name in COLLECTOR_PYTHON COLLECTOR_CONFIG; do
        if [[ -n "${!name:-}" ]]; then
            remote+=" $name=$(printf '%q' "${!name}")"
        fi
    done
    remote+=" $(printf '%q' "$python") -m runner"
    if (( $# )); then
        remote+="$(printf ' %q' "$@")"
    fi
    exec ssh -o BatchMode=yes -o ConnectTimeout=10 "$HOST" "$remote"
fi

# -m runner must import even when the checkout is not pip-installed into the interpreter.
export PYTHONPATH="$project${PYTHONPATH:+:$PYTHONPATH}"
exec "$python" -m runner "$@"
