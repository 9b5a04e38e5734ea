"""Discovery: each node's inventory read through its BMC (:mod:`.crawl`), verified against
what NetBox expects (:mod:`.verify`, pure), and the lifecycle's ``discover`` step
(:mod:`.discover_step`)."""
