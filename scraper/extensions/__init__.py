"""Extensions of every crawl: the worker state file, the summary line, log rotation, the memory
limit and GC threshold, the shutdown gate, and the feed filter."""
