"""The coordination.k8s.io kinds: Leases."""
