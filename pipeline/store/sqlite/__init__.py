"""The SQLite backend: one file, Mnemosyne's own database."""
