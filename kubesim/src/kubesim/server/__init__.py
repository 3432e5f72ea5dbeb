"""KubeSim's HTTP server: routing, authentication, content negotiation, request bodies,
limits, watch streams, tables, health endpoints, connection admission and TLS.
"""
