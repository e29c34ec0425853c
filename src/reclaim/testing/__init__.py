"""Conformance suites: every registered plugin of a kind passes the same checks by being registered."""
