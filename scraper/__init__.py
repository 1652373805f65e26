"""hubcollect scraper package."""
