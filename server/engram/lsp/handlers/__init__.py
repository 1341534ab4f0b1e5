"""LSP method handlers, one module per method (or tight family), each with ``register``."""
