"""Questions asked of the catalog in more than one place (the report and the viewer)."""

from __future__ import annotations

WEEK_START = ("(SELECT strftime('%Y-%m-%dT%H:%M:%fZ', max(observed_at), '-7 days') "
              "FROM trending_observations)")
"""Seven days before the last observation: a report of an old catalog still shows its week."""

RISERS = f"""
SELECT full_name, max(stars) - min(stars) AS stars_gained, min(stars) AS stars_from,
       max(stars) AS stars_to, count(DISTINCT observed_at) AS observations,
       min(rank) AS best_rank
FROM trending_observations
WHERE observed_at >= {WEEK_START} AND stars IS NOT NULL
GROUP BY full_name
ORDER BY stars_gained DESC, best_rank, full_name
LIMIT :limit
""".strip()
"""The repositories whose star count rose most over the last 7 days of observations."""

STAR_CURVE = f"""
SELECT observed_at, max(stars) FROM trending_observations
WHERE full_name = :full_name AND observed_at >= {WEEK_START}
GROUP BY observed_at ORDER BY observed_at
""".strip()

LONGEST_ON_TRENDING = """
SELECT full_name, period, trending_language, first_seen, last_seen,
       round(julianday(last_seen) - julianday(first_seen), 2) AS days, observations, best_rank,
       stars_first, stars_last
FROM trending_history
ORDER BY days DESC, observations DESC, full_name
LIMIT :limit
""".strip()

RECENTLY_CHANGED_DOCS = """
SELECT url, title, last_changed, versions, first_seen
FROM docs_pages
WHERE versions > 1
ORDER BY last_changed DESC, url
LIMIT :limit
""".strip()
