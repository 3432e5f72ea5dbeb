"""HorizontalPodAutoscalers: one storage (autoscaling/v2), served as v2 and v1."""
