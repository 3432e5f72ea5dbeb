"""Protobuf message tables of the batch, RBAC, policy, scheduling, review, autoscaling/v1
and certificates kinds (by field number, from the kinds' ``generated.proto`` and Go types of
v1.28), for :mod:`._protobuf`.

kubectl >= 1.32 sends these bodies as protobuf: ``create job|cronjob|role|rolebinding|
clusterrole|clusterrolebinding|poddisruptionbudget|priorityclass``, ``auth can-i``
(a SelfSubjectAccessReview), ``auth whoami`` (a SelfSubjectReview), ``autoscale`` (an
autoscaling/v1 HPA) and ``certificate approve|deny`` (a CSR; ``spec.extra`` is not decoded,
KubeSim never sets it). Status messages
that clients send empty are tables without fields: a field in them is reported as not
understood. The field notation is :mod:`._protobuf`'s.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["EXTRA_KINDS", "EXTRA_MESSAGES", "PTR", "REPEATED", "Field", "Message"]

REPEATED = 1
PTR = 2
#: (json name, kind, message, flags); see :mod:`._protobuf`.
Field = tuple[str, str, str, int]
Message = Mapping[int, Field]

_EMPTY_STATUS = ("ResourceRule", "NonResourceRule")

EXTRA_MESSAGES: dict[str, Message] = {
    "Job": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("spec", "msg", "JobSpec", 0),
        3: ("status", "msg", "JobStatus", 0),
    },
    "JobSpec": {
        1: ("parallelism", "int", "", PTR),
        2: ("completions", "int", "", PTR),
        3: ("activeDeadlineSeconds", "int", "", PTR),
        11: ("podFailurePolicy", "msg", "PodFailurePolicy", PTR),
        7: ("backoffLimit", "int", "", PTR),
        12: ("backoffLimitPerIndex", "int", "", PTR),
        13: ("maxFailedIndexes", "int", "", PTR),
        4: ("selector", "msg", "LabelSelector", PTR),
        5: ("manualSelector", "bool", "", PTR),
        6: ("template", "msg", "PodTemplateSpec", 0),
        8: ("ttlSecondsAfterFinished", "int", "", PTR),
        9: ("completionMode", "str", "", PTR),
        10: ("suspend", "bool", "", PTR),
        14: ("podReplacementPolicy", "str", "", PTR),
    },
    "CronJob": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("spec", "msg", "CronJobSpec", 0),
        3: ("status", "msg", "CronJobStatus", 0),
    },
    "CronJobSpec": {
        1: ("schedule", "str", "", 0),
        8: ("timeZone", "str", "", PTR),
        2: ("startingDeadlineSeconds", "int", "", PTR),
        3: ("concurrencyPolicy", "str", "", 0),
        4: ("suspend", "bool", "", PTR),
        5: ("jobTemplate", "msg", "JobTemplateSpec", 0),
        6: ("successfulJobsHistoryLimit", "int", "", PTR),
        7: ("failedJobsHistoryLimit", "int", "", PTR),
    },
    "JobTemplateSpec": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("spec", "msg", "JobSpec", 0),
    },
    "Role": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("rules", "msg", "PolicyRule", REPEATED),
    },
    "ClusterRole": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("rules", "msg", "PolicyRule", REPEATED),
        3: ("aggregationRule", "msg", "AggregationRule", PTR),
    },
    "AggregationRule": {
        1: ("clusterRoleSelectors", "msg", "LabelSelector", REPEATED),
    },
    "PolicyRule": {
        1: ("verbs", "str", "", REPEATED),
        2: ("apiGroups", "str", "", REPEATED),
        3: ("resources", "str", "", REPEATED),
        4: ("resourceNames", "str", "", REPEATED),
        5: ("nonResourceURLs", "str", "", REPEATED),
    },
    "RoleBinding": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("subjects", "msg", "Subject", REPEATED),
        3: ("roleRef", "msg", "RoleRef", 0),
    },
    "ClusterRoleBinding": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("subjects", "msg", "Subject", REPEATED),
        3: ("roleRef", "msg", "RoleRef", 0),
    },
    "Subject": {
        1: ("kind", "str", "", 0),
        2: ("apiGroup", "str", "", 0),
        3: ("name", "str", "", 0),
        4: ("namespace", "str", "", 0),
    },
    "RoleRef": {
        1: ("apiGroup", "str", "", 0),
        2: ("kind", "str", "", 0),
        3: ("name", "str", "", 0),
    },
    "SelfSubjectAccessReview": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("spec", "msg", "SelfSubjectAccessReviewSpec", 0),
        3: ("status", "msg", "SubjectAccessReviewStatus", 0),
    },
    "SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "msg", "ResourceAttributes", PTR),
        2: ("nonResourceAttributes", "msg", "NonResourceAttributes", PTR),
    },
    "ResourceAttributes": {
        1: ("namespace", "str", "", 0),
        2: ("verb", "str", "", 0),
        3: ("group", "str", "", 0),
        4: ("version", "str", "", 0),
        5: ("resource", "str", "", 0),
        6: ("subresource", "str", "", 0),
        7: ("name", "str", "", 0),
    },
    "NonResourceAttributes": {
        1: ("path", "str", "", 0),
        2: ("verb", "str", "", 0),
    },
    "SelfSubjectRulesReview": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("spec", "msg", "SelfSubjectRulesReviewSpec", 0),
        3: ("status", "msg", "SubjectRulesReviewStatus", 0),
    },
    "SelfSubjectRulesReviewSpec": {
        1: ("namespace", "str", "", 0),
    },
    "SubjectAccessReview": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("spec", "msg", "SubjectAccessReviewSpec", 0),
        3: ("status", "msg", "SubjectAccessReviewStatus", 0),
    },
    "SubjectAccessReviewSpec": {
        1: ("resourceAttributes", "msg", "ResourceAttributes", PTR),
        2: ("nonResourceAttributes", "msg", "NonResourceAttributes", PTR),
        3: ("user", "str", "", 0),
        4: ("groups", "str", "", REPEATED),
        6: ("uid", "str", "", 0),
    },
    "LocalSubjectAccessReview": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("spec", "msg", "SubjectAccessReviewSpec", 0),
        3: ("status", "msg", "SubjectAccessReviewStatus", 0),
    },
    "SubjectAccessReviewStatus": {
        1: ("allowed", "bool", "", 0),
        4: ("denied", "bool", "", 0),
        2: ("reason", "str", "", 0),
        3: ("evaluationError", "str", "", 0),
    },
    "SelfSubjectReview": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("status", "msg", "SelfSubjectReviewStatus", 0),
    },
    "SelfSubjectReviewStatus": {
        1: ("userInfo", "msg", "UserInfo", 0),
    },
    "UserInfo": {
        1: ("username", "str", "", 0),
        2: ("uid", "str", "", 0),
        3: ("groups", "str", "", REPEATED),
    },
    "PodDisruptionBudget": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("spec", "msg", "PodDisruptionBudgetSpec", 0),
        3: ("status", "msg", "PodDisruptionBudgetStatus", 0),
    },
    "PodDisruptionBudgetSpec": {
        1: ("minAvailable", "intstr", "", PTR),
        2: ("selector", "msg", "LabelSelector", PTR),
        3: ("maxUnavailable", "intstr", "", PTR),
        4: ("unhealthyPodEvictionPolicy", "str", "", PTR),
    },
    "PriorityClass": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("value", "int", "", 0),
        3: ("globalDefault", "bool", "", 0),
        4: ("description", "str", "", 0),
        5: ("preemptionPolicy", "str", "", PTR),
    },
    # the scalars of the status messages (a Go client writes its zero values)
    "JobStatus": {
        2: ("startTime", "time", "", PTR),
        3: ("completionTime", "time", "", PTR),
        4: ("active", "int", "", 0),
        5: ("succeeded", "int", "", 0),
        6: ("failed", "int", "", 0),
        11: ("terminating", "int", "", PTR),
        7: ("completedIndexes", "str", "", 0),
        10: ("failedIndexes", "str", "", PTR),
        9: ("ready", "int", "", PTR),
    },
    "CronJobStatus": {
        4: ("lastScheduleTime", "time", "", PTR),
        5: ("lastSuccessfulTime", "time", "", PTR),
    },
    "PodDisruptionBudgetStatus": {
        1: ("observedGeneration", "int", "", 0),
        3: ("disruptionsAllowed", "int", "", 0),
        4: ("currentHealthy", "int", "", 0),
        5: ("desiredHealthy", "int", "", 0),
        6: ("expectedPods", "int", "", 0),
    },
    **{name: {} for name in _EMPTY_STATUS},
    "HorizontalPodAutoscaler": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("spec", "msg", "HorizontalPodAutoscalerSpec", 0),
        3: ("status", "msg", "HorizontalPodAutoscalerStatus", PTR),
    },
    "HorizontalPodAutoscalerSpec": {
        1: ("scaleTargetRef", "msg", "CrossVersionObjectReference", 0),
        2: ("minReplicas", "int", "", PTR),
        3: ("maxReplicas", "int", "", 0),
        4: ("targetCPUUtilizationPercentage", "int", "", PTR),
    },
    "CrossVersionObjectReference": {
        1: ("kind", "str", "", 0),
        2: ("name", "str", "", 0),
        3: ("apiVersion", "str", "", PTR),
    },
    "HorizontalPodAutoscalerStatus": {
        1: ("observedGeneration", "int", "", PTR),
        2: ("lastScaleTime", "time", "", PTR),
        3: ("currentReplicas", "int", "", 0),
        4: ("desiredReplicas", "int", "", 0),
        5: ("currentCPUUtilizationPercentage", "int", "", PTR),
    },
    "CertificateSigningRequest": {
        1: ("metadata", "msg", "ObjectMeta", 0),
        2: ("spec", "msg", "CertificateSigningRequestSpec", 0),
        3: ("status", "msg", "CertificateSigningRequestStatus", PTR),
    },
    "CertificateSigningRequestSpec": {
        1: ("request", "bytes", "", 0),
        7: ("signerName", "str", "", 0),
        8: ("expirationSeconds", "int", "", PTR),
        5: ("usages", "str", "", REPEATED),
        2: ("username", "str", "", PTR),
        3: ("uid", "str", "", PTR),
        4: ("groups", "str", "", REPEATED),
    },
    "CertificateSigningRequestStatus": {
        1: ("conditions", "msg", "CertificateSigningRequestCondition", REPEATED),
        2: ("certificate", "bytes", "", PTR),
    },
    "CertificateSigningRequestCondition": {
        1: ("type", "str", "", 0),
        6: ("status", "str", "", 0),
        2: ("reason", "str", "", PTR),
        3: ("message", "str", "", PTR),
        4: ("lastUpdateTime", "time", "", PTR),
        5: ("lastTransitionTime", "time", "", PTR),
    },
}

#: (apiVersion, kind) -> message, for the kinds above.
EXTRA_KINDS: dict[tuple[str, str], str] = {
    ("batch/v1", "Job"): "Job",
    ("batch/v1", "CronJob"): "CronJob",
    **{
        ("rbac.authorization.k8s.io/v1", k): k
        for k in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")
    },
    **{
        ("authorization.k8s.io/v1", k): k
        for k in (
            "SelfSubjectAccessReview",
            "SelfSubjectRulesReview",
            "SubjectAccessReview",
            "LocalSubjectAccessReview",
        )
    },
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "SelfSubjectReview",
    ("policy/v1", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
    ("autoscaling/v1", "HorizontalPodAutoscaler"): "HorizontalPodAutoscaler",
    ("certificates.k8s.io/v1", "CertificateSigningRequest"): "CertificateSigningRequest",
}
