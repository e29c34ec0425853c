"""Reporting: console tables and progress for long runs."""
