"""Subcommands of the ``botgrpo`` CLI, one module each (see :mod:`botgrpo.cli`)."""
