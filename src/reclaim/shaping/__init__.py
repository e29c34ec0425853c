"""Shaping controllers, built by name through the registry (kind ``controller``)."""
