"""The contract between core and its backends (``builtins``: the table of the project's own backends)."""
