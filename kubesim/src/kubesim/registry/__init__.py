"""The generic registry: the one store every resource type plugs into (create, update,
patch, delete, dry run, the status and scale subresources), deletion with finalizers, and
the resource types with the strategy that carries each kind's rules.
"""
