"""PostgreSQL-only fast paths of ``SqlStore``: hot-path statements as SQL text, psycopg's pipeline
mode (several statements in one round trip) and the one-statement step completion."""
