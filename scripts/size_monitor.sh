#!/usr/bin/env bash
# What cron runs every 5 minutes: one line per data-size milestone, and log housekeeping.
#
#   scripts/size_monitor.sh [options]             python -m runner size [options], here
#   HOST=box scripts/size_monitor.sh [options]    the same on box, over ssh
#
# Interpreter, ssh and environment: see scripts/runner-command.sh.
exec "$(dirname "${BASH_SOURCE[0]}")/runner-command.sh" size "$@"
