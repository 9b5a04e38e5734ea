"""NetBox, the source of truth: the adapter (:mod:`.adapter`, the only code that speaks
NetBox's API), its retry policy (:mod:`.http_retry`), the schema as code (:mod:`.schema`),
the lifecycle's records port (:mod:`.records`), evidence documents in journal entries
(:mod:`.evidence`), the node lease (:mod:`.lease`) and the spool of results NetBox could not
take yet (:mod:`.spool`)."""
