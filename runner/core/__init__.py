"""What every part of the runner reads and writes: its state files, the resolved config, the
pidfile, health verdicts, the budget and disk-growth views, and how a command reports a mistake."""
