"""Fleet BMC simulator: every BMC of a fleet profile as a Redfish service on loopback.

- :mod:`profile` and ``vendors/*.yaml``: each vendor's layout and quirks, as data
  (``bmcsim`` the default, ``supermicro-hgx``, ``dell-idrac``, ``hpe-ilo``, ``ami-megarac``),
  chosen per node by ``NodeSpec.bmc_vendor``
- :mod:`hardware`: what each simulated server is (GPUs, MACs, BIOS, firmware), faults applied
- :mod:`state`: power and the POST timeline, boot override, virtual media, staged BIOS and
  jobs, the OS boot and its failure, sessions, tasks, the system log
- :mod:`tree`, :mod:`docs`, :mod:`chassis_docs`: where each resource is and its document
- :mod:`service` and :mod:`writes`: the Redfish service (no HTTP)
- :mod:`server`: HTTPS listeners, one per BMC, in one process
- :mod:`check`: runs DMTF's Redfish Service Validator against one simulated BMC

Run: ``python -m lab.bmcsim serve --fleet FILE --home LAB_HOME``.
"""
