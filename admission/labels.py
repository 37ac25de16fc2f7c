"""Label and annotation keys: gangweb's own, and the Kubernetes core ones it reads.

The keys of the gang schedulers and controllers gangweb reads are in their source's module
(``admission.sources.<source>``), each spelled as its project defines it.
"""

# --- gangweb's own ------------------------------------------------------------------------------
# Label naming the gang (PodGroup) a pod belongs to. A label, so `kubectl get pods -l` finds a gang.
POD_GROUP_LABEL = "gangweb.io/pod-group"
# Annotation: how many pods must be placed together (the PodGroup's gang minCount).
MIN_COUNT_ANNOTATION = "gangweb.io/min-count"
# Annotation: "single" or "all"; overrides the namespace's default disruption mode.
DISRUPTION_MODE_ANNOTATION = "gangweb.io/disruption-mode"
# Pod or namespace label "disabled" opts out of the webhook entirely.
ADMISSION_LABEL = "gangweb.io/admission"
ADMISSION_DISABLED = "disabled"
# PodGroup annotation carrying the gang's own preemption policy in `enforce` mode (docs/design.md).
PREEMPTION_POLICY_ANNOTATION = "gangweb.io/preemption-policy"
# PodGroup annotations recording where the gang was inferred from (for people and the dashboard).
GANG_SOURCE_ANNOTATION = "gangweb.io/gang-source"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "gangweb"

# --- Kubernetes core ----------------------------------------------------------------------------
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
# KEP-6089 (Kubernetes 1.37, k8s.io/kubernetes pkg/apis/scheduling/annotation_key_constants.go): a workload
# controller that makes its own PodGroup from its Workload's template marks its objects with these; a pod
# carrying either is grouped by its controller, never by gangweb (docs/kubernetes-versions.md).
GROUP_TEMPLATE_ANNOTATION = "scheduling.k8s.io/group-template-name"
PARENT_COMPOSITE_ANNOTATION = "scheduling.k8s.io/parent-compositepodgroup"
CONTROLLER_GROUPED_ANNOTATIONS = (GROUP_TEMPLATE_ANNOTATION, PARENT_COMPOSITE_ANNOTATION)
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
