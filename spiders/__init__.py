"""The collector's spiders: ``trending``, ``search`` and ``docs``."""
