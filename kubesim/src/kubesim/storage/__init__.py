"""KubeSim's storage: etcd-like MVCC with one global revision, each resource type's
objects and its watch history (the watch cache).
"""
