"""Plumbing every layer stands on: units, time stamps, state files and locks, the data dir's
layout, shard arithmetic, disk-space checks and what a round produced."""
