"""The ``kconfigs`` subcommands over the stores (describe/alter/delete, export/diff/apply/migrate,
completion) and kafka-configs compat mode; each is loaded by name from ``kconfigs.cli``."""
