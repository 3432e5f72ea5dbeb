"""The apiregistration.k8s.io kinds: APIServices."""
