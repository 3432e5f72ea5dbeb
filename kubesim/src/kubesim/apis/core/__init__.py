"""The core (``v1``) kinds."""
