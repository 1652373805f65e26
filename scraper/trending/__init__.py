"""The trending pages: the parsers of repository and developer rows, the page archive that keeps
every page as served (``TRENDING_ARCHIVE_STORAGE``), drift detection, and the page reader that
turns a fetched or archived page into items."""
