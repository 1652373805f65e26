"""Downloader middlewares that change or extend Scrapy's own: the GitHub token (only to the API
origin), retries with backoff, redirects that keep their dedup keys, one robots.txt per host."""
