"""What the tests share: the fakes (GitHub, docs sites), the recorded pages' paths, and helpers
that run the collector's real commands. No test module imports another; they import from here."""
