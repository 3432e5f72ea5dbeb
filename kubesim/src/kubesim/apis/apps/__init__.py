"""The apps/v1 kinds: the workloads (Deployments, StatefulSets, DaemonSets,
ReplicaSets) and ControllerRevisions.
"""
