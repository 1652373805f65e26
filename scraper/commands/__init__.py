"""Scrapy commands this project replaces (``COMMANDS_MODULE``)."""
