"""bringup: take GPU servers from racked-and-cabled to serving in Kubernetes.

The package is the library: domain models, pure policy and one adapter per external
system. It never imports Prefect; the flows in ``flows/`` orchestrate it.
"""

__version__ = "0.1.0"
