"""The PostgreSQL backend: one server for many profiles on many hosts."""
