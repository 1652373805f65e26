"""The stores on Redis, for the distributed mode (``scraper.distributed.wiring`` names them in
the ``*_STORAGE`` settings): one store for every machine of the cluster. Every key name is in
:mod:`scraper.distributed.keys`; the connection is :mod:`scraper.distributed.connection`'s, so
a store is up exactly when the process's Redis link is."""

from __future__ import annotations

from collections.abc import Callable

from scraper.distributed.connection import RedisLink


class RedisOutage:
    """The outage contract (:mod:`scraper.stores.base`) of a store on the process's link."""

    link: RedisLink

    @property
    def up(self) -> bool:
        return self.link.up

    async def wait_until_up(self, should_stop: Callable[[], bool] | None = None) -> bool:
        return await self.link.wait_until_up(should_stop)
