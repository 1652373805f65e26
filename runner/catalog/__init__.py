"""The dataset: ``catalog.sqlite`` built from the item files, and what is made from it —
exports, a report, Atom feeds and a Datasette viewer."""
