"""NetBox, the source of truth: the adapter (:mod:`.adapter`, the only code that speaks
NetBox's API), its one retry budget (:mod:`.http_retry`: timeouts, retries and pauses of
every layer, and the worst case one call can take), the schema as code (:mod:`.schema`)
and its apply through the adapter (:mod:`.schema_apply`), the lifecycle's records port
(:mod:`.records`), evidence documents in journal entries (:mod:`.evidence`), the node lease
(:mod:`.lease`) and the spool of results NetBox could not take yet (:mod:`.spool`).
Nothing here reads Kubernetes."""
