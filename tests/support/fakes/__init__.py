"""Fake upstream servers (GitHub, documentation hosts) for offline tests."""
