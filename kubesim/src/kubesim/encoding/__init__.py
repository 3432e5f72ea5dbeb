"""How KubeSim reads and writes bytes as kube-apiserver v1.28 does: JSON (documents
nested 10000 levels deep, Go's decoding of invalid UTF-8), protobuf (the wire format and
the built-in objects both ways), YAML as go-yaml writes it, and Go's time formats.
"""
