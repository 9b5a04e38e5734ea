"""Fleet insight, read from NetBox: the fleet's tables (:mod:`.fleetdata`), the GPU-hours
ledger (:mod:`.ledger`), the HTML report (:mod:`.fleetreport` with :mod:`.report_plots` and
:mod:`.report_html`), the Prometheus metrics (:mod:`.metrics`, :mod:`.metrics_server`) and a
run's summary (:mod:`.run_summary`)."""
