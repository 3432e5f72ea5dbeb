"""CertificateSigningRequests: the registry strategy's rules, validation, the printer."""
