"""The controllers a cluster runs beside its apiserver, inside KubeSim: the garbage
collector, the namespace controller, Event expiry, the aggregator's local APIServices, and
the scheduler/kubelet emulation with the Events a pod's start writes.
"""
