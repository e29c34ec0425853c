"""Built-in placement plugins, built by name through the registry (kind ``placement``)."""
