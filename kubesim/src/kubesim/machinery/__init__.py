"""What every layer of KubeSim shares, as k8s.io/apimachinery is to kube-apiserver: field
errors and name formats, ObjectMeta validation, label and field selectors, and what a
table printer is.
"""
