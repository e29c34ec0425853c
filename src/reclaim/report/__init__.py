"""Reporting shared by the systems: result stores, tables, plots and HTML pages."""
