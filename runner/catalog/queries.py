"""Questions asked of the catalog in more than one place (the report and the viewer)."""

from __future__ import annotations

WEEK_START = ("(SELECT strftime('%Y-%m-%dT%H:%M:%fZ', max(observed_at), '-7 days') "
              "FROM trending_fetches)")
"""Seven days before the last observation: a report of an old catalog still shows its week."""

# Each distinct page of the week once, weighted by how often it was fetched: a year of
# fetches costs the week's pages, not the week's fetches times 25 rows. ``+page_id``: grouping
# through the page index would read every fetch ever made (3.4 s on a year), the time range
# reads the week's.
RISERS = f"""
WITH week AS (SELECT page_id, count(*) AS fetches FROM trending_fetches
              WHERE observed_at >= {WEEK_START} GROUP BY +page_id)
SELECT r.full_name, max(r.stars) - min(r.stars) AS stars_gained, min(r.stars) AS stars_from,
       max(r.stars) AS stars_to, sum(week.fetches) AS observations, min(r.rank) AS best_rank
FROM week JOIN trending_page_rows r ON r.page_id = week.page_id
WHERE r.stars IS NOT NULL
GROUP BY r.full_name
HAVING stars_gained > 0
ORDER BY stars_gained DESC, best_rank, r.full_name
LIMIT :limit
""".strip()
"""The repositories whose star count rose most over the last 7 days of observations."""

STAR_CURVE = f"""
SELECT f.observed_at, max(r.stars) FROM trending_page_rows r
JOIN trending_fetches f ON f.page_id = r.page_id
WHERE r.full_name = :full_name AND f.observed_at >= {WEEK_START}
GROUP BY f.observed_at ORDER BY f.observed_at
""".strip()

WHEN_TRENDING = """
SELECT h.period, h.trending_language, h.spoken_language_code, h.first_seen, h.last_seen,
       (SELECT count(DISTINCT substr(f.observed_at, 1, 10)) FROM trending_page_rows r
        JOIN trending_fetches f ON f.page_id = r.page_id
        JOIN trending_lists l ON l.list_id = f.list_id
        WHERE r.full_name = h.full_name AND l.period = h.period
          AND l.trending_language = h.trending_language
          AND l.spoken_language_code = h.spoken_language_code) AS days,
       h.observations, h.best_rank, h.stars_first, h.stars_last
FROM trending_history h
WHERE h.full_name = :full_name
ORDER BY h.first_seen, h.period, h.trending_language, h.spoken_language_code
""".strip()
"""Each list a repository appeared on: first and last seen, the days (UTC dates) it was seen
there, observations, best rank, stars at entry and at exit."""

NEW_ON_LIST = """
SELECT h.full_name, h.first_seen, h.best_rank, h.stars_first, r.description, r.language, r.rank
FROM trending_history h
JOIN trending_lists l ON l.period = h.period AND l.trending_language = h.trending_language
 AND l.spoken_language_code = h.spoken_language_code
LEFT JOIN trending_fetches f ON f.list_id = l.list_id AND f.observed_at = h.first_seen
LEFT JOIN trending_page_rows r ON r.page_id = f.page_id AND r.full_name = h.full_name
WHERE h.period = :period AND h.trending_language = :language
  AND h.spoken_language_code = :spoken
ORDER BY h.first_seen DESC, h.full_name LIMIT :limit
""".strip()
"""A list's newest arrivals (the feeds): each with the row it entered with."""

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

WHEN_DEVELOPER_TRENDING = """
SELECT h.period, h.trending_language, h.first_seen, h.last_seen,
       (SELECT count(DISTINCT substr(f.observed_at, 1, 10))
        FROM trending_developer_page_rows r
        JOIN trending_developer_fetches f ON f.page_id = r.page_id
        JOIN trending_developer_lists l ON l.list_id = f.list_id
        WHERE r.login = h.login AND l.period = h.period
          AND l.trending_language = h.trending_language) AS days,
       h.observations, h.best_rank, h.repo_first, h.repo_last,
       (SELECT r.name FROM trending_developer_page_rows r
        JOIN trending_developer_fetches f ON f.page_id = r.page_id
        JOIN trending_developer_lists l ON l.list_id = f.list_id
        WHERE r.login = h.login AND l.period = h.period
          AND l.trending_language = h.trending_language AND f.observed_at = h.last_seen
        LIMIT 1) AS name
FROM trending_developer_history h
WHERE h.login = :login
ORDER BY h.first_seen, h.period, h.trending_language
""".strip()
"""Each developer list a login appeared on: first and last seen, days, observations, best
rank, the popular repository shown at entry and at exit, and the name shown last."""

NEW_DEVELOPER_ON_LIST = """
SELECT h.login, h.first_seen, h.best_rank, r.name, r.repo_full_name, r.repo_description, r.rank
FROM trending_developer_history h
JOIN trending_developer_lists l ON l.period = h.period AND l.trending_language = h.trending_language
LEFT JOIN trending_developer_fetches f ON f.list_id = l.list_id AND f.observed_at = h.first_seen
LEFT JOIN trending_developer_page_rows r ON r.page_id = f.page_id AND r.login = h.login
WHERE h.period = :period AND h.trending_language = :language
ORDER BY h.first_seen DESC, h.login LIMIT :limit
""".strip()
"""A developer list's newest arrivals (the feeds): each with the row it entered with."""

GAPS = """
SELECT spider, kind, key, outcome, cause, count(*) AS rounds, min(round) AS first_seen,
       max(round) AS last_seen, max(detail) AS detail
FROM fetch_ledger
WHERE outcome NOT IN ('data', 'not_modified')
  AND round >= strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || :days || ' days')
GROUP BY spider, kind, key, outcome, cause
ORDER BY last_seen DESC, spider, key
LIMIT :limit
""".strip()
"""The scheduled fetches that yielded nothing in the last ``days`` days, per list, query or
site and cause (``python -m runner gaps`` also splits them into runs of consecutive rounds)."""
