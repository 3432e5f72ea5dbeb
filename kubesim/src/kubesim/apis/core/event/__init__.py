"""Events, served through core/v1 and events.k8s.io/v1 from one storage."""
