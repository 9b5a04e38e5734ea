"""Programs the lab's kubelet runs as real containers: ``trainer.py``, the pool acceptance
job's stand-in for a production training image (issue #28)."""
