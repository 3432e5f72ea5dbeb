"""The autoscaling kinds: HorizontalPodAutoscalers (v2 and v1)."""
