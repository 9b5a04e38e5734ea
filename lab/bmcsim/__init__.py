"""Fleet BMC simulator: every BMC of a fleet profile as a Redfish service on loopback.

- :mod:`hardware`: what each simulated server is (GPUs, MACs, BIOS, firmware), faults applied
- :mod:`state`: power, boot override, virtual media, pending BIOS, sessions, tasks
- :mod:`service`: the Redfish resource tree and actions (no HTTP)
- :mod:`server`: HTTPS listeners, one per BMC, in one process
- :mod:`check`: runs DMTF's Redfish Service Validator against one simulated BMC

Run: ``python -m lab.bmcsim serve --fleet FILE --home LAB_HOME``.
"""
