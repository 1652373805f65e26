"""Spider middlewares: the per-site page cap of the docs spider."""
