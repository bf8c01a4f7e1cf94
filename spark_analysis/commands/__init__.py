"""``kconfigs analyze``: registered by module name in ``kconfigs.cli`` (kconfigs never imports
this package)."""
