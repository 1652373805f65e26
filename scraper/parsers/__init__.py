"""Parsers that turn captured GitHub HTML into plain data rows."""
