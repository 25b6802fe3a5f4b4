"""The virtual filesystem over the store: `paths` (canonical paths, durable prefixes,
`FileError`), `storage` (inline and chunked contents), `search` (grep's bounded scan and glob
matching), `filesystem` (`FileSystem`) and `tools` (the model's file tools).

Nothing is imported here: a module that needs only paths does not load DuckDB.
"""
