"""The collector's one validated configuration: ``collector.yaml`` read, checked and turned into
Scrapy settings, and the types of the settings a user may set."""
