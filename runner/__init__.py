"""The multi-process runner: ``python -m runner --workers 20``."""
