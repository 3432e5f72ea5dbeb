"""What the server says about itself: the discovery documents (``/api``, ``/apis``,
aggregated discovery, ``/version``) and the OpenAPI documents (v2, v3, JSON and
protobuf).
"""
