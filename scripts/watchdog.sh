#!/usr/bin/env bash
# What cron runs every 5 minutes: silent while the collector is healthy, else it restarts it.
#
#   scripts/watchdog.sh [options]             python -m runner watchdog [options], here
#   HOST=box scripts/watchdog.sh [options]    the same on box, over ssh
#
# Interpreter, ssh and environment: see scripts/runner-command.sh.
exec "$(dirname "${BASH_SOURCE[0]}")/runner-command.sh" watchdog "$@"
