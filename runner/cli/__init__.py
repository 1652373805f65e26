"""The command line: ``python -m runner`` and its subcommands."""
