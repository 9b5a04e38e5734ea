"""Fabric acceptance: pair tests between nodes, localising a failure to a node, a link or
a rail, per-rail RDMA figures and IB port counter growth. Pure logic: who runs the tests
(mpirun over SSH, the lab, the bench) hands results in; nothing here does I/O."""
