"""The review APIs (authentication.k8s.io, authorization.k8s.io) and RBAC rule matching."""
