"""Pods: defaults, validation, the table printer and graceful deletion."""
