"""Docs pages as their authors wrote them: content selection and Markdown with code byte-exact
(:mod:`.extract`, :mod:`.markdown`, :mod:`.tabs`), the fidelity check, sitemaps, and what a
docs site is (:mod:`.sites`)."""
