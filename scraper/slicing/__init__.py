"""Search past GitHub's 1000-result cap: a query cut into ``stars:``/``created:`` slices
(:mod:`.slices`), the plan kept between rounds (``SLICEPLAN_STORAGE``: SQLite, Redis, memory)
and what a round left incomplete (:mod:`.searchround`)."""
