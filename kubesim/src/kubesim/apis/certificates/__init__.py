"""The certificates.k8s.io kinds: CertificateSigningRequests."""
