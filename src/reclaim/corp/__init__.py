"""CORP: opportunistic reuse of allocated-but-unused resources of short-lived jobs, its baselines
(RCCR, CloudScale, DRA), the short-job scenario built from real traces, and its simulator."""
