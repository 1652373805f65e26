"""What ``python -m runner status`` and ``metrics`` show: the status view, the cluster lines and
the OpenMetrics text."""
