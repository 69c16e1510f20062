"""The interchange with the outside: importing, exporting and ``persona edit``'s file, one floor above the store.

What comes in (a facts file, persona.md, Hermes' memory, instruction files,
lists, mem0's export: :mod:`.formats`, one module per format) becomes the same
entries (:mod:`.fact_entry`), applied by one engine (:mod:`.importing`); what
goes out is a facts file (:mod:`.export`) or the file ``persona edit`` opens
(:mod:`.edit_file`, applied by :mod:`.edit`). It reaches the tables only
through the store's exported names (``pipeline.store.__all__``) and runs no
SQL itself; the store never imports it.
"""
