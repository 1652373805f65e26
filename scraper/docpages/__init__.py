"""Docs pages as their authors wrote them: content selection and Markdown with code byte-exact
(:mod:`.extract`, :mod:`.markdown`, what is not content in :mod:`.visible`, :mod:`.tabs`,
:mod:`.callouts`, merged table cells in :mod:`.tables`), the fidelity check that reads the page
and the Markdown on its own (:mod:`.fidelity`, :mod:`.shown`, :mod:`.readback`, the record in
:mod:`.fidelityrecord`), sitemaps, and what a docs site is (:mod:`.sites`)."""
