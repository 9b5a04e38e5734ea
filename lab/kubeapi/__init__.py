"""Lab Kubernetes API stand-in: an HTTPS server speaking enough of the Kubernetes API for
the official Python client, the real ``kubectl`` and the ``kubeadm`` stand-in in ``bin/``.

Run it with ``python -m lab.kubeapi serve --home LAB_HOME [--listen 127.0.0.1:56443]``.
"""
