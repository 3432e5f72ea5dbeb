"""flowcontrol.apiserver.k8s.io: FlowSchemas and PriorityLevelConfigurations."""
