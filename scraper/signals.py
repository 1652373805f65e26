"""The collector's own signals, sent through ``crawler.signals`` as Scrapy's are."""

item_written = object()
"""Sent by the item store (:mod:`pipelines.itemstore`) right after an item's line is written,
within the same call (args: ``item``). Scrapy's ``item_scraped`` comes later, on a later turn of
the event loop, by which time other items may have been written too: a handler that records an
item as collected (the content-hash store) runs here, so a kill between a write and its record
can leave at most that one item unrecorded (one duplicate line, never a lost one). A handler
that returns False could not record it (a full disk): the item store takes the line back and
drops the item, so the next round writes it once."""

fetch_sent = object()
"""Sent by :class:`scraper.downloadermiddlewares.ledger.LedgerMiddleware` when a request of a
scheduled fetch (meta ``ledger_key``) first enters the downloader (args: ``request``)."""

fetch_done = object()
"""Sent by the same middleware with a scheduled fetch's request's outcome (args: ``request``,
``outcome``, ``cause``, ``detail``): its final answer, after retries and redirects, or the
exception that ended it."""

fetch_judged = object()
"""Sent by a spider about an answer the ledger middleware reported as data, when what it held
yielded nothing (a trending page parsed to zero rows); args as :data:`fetch_done`. The worse
outcome stands in the gap ledger."""
