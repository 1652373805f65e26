"""Operating the collector from outside: what cron runs (``watchdog``, ``size``), what installs it
(``install-cron``), and how those jobs judge, restart and speak. The runner itself (``runner/``)
runs the workers and never imports from here."""
