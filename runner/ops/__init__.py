"""Operating the collector from outside: what cron runs (``watchdog``, ``size``), what installs it
(``install-cron``), and how those jobs judge, restart and speak. The modules directly under
``runner/`` run the workers; these only read what the runner leaves in ``state/`` and the
pidfile, and start or stop whole runners."""
