"""CustomResourceDefinitions and the custom resources they define: the CRD's strategy
(validation, defaults, the types it serves), structural schemas (validation, pruning,
defaulting), the custom resources' strategy and printer columns, and their OpenAPI.
"""
