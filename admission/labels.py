"""Label and annotation keys: gangweb's own, and those of the gang schedulers and controllers it reads.

Each foreign key is spelled as its project defines it (see docs/admission.md for the source of each).
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
# PodGroup annotation carrying the gang's own preemption policy in `enforce` mode (DESIGN.md).
PREEMPTION_POLICY_ANNOTATION = "gangweb.io/preemption-policy"
# PodGroup annotations recording where the gang was inferred from (for people and the dashboard).
GANG_SOURCE_ANNOTATION = "gangweb.io/gang-source"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "gangweb"

# --- Kubernetes core ----------------------------------------------------------------------------
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# batch/v1 Job controller (kubernetes/kubernetes pkg/controller/job, k8s.io/api batch/v1 types).
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
JOB_CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"

# --- Gang schedulers ----------------------------------------------------------------------------
# scheduler-plugins coscheduling: current label, and the pre-v0.24 label of the lightweight plugin.
COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
LEGACY_COSCHEDULING_LABEL = "pod-group.scheduling.sigs.k8s.io"
LEGACY_COSCHEDULING_MIN_LABEL = "pod-group.scheduling.sigs.k8s.io/min-available"
# Volcano (volcano.sh/apis scheduling/v1beta1 KubeGroupNameAnnotationKey, batch JobNameKey).
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_JOB_NAME = "volcano.sh/job-name"
# Kueue plain-pod groups (kueue pkg/controller/jobs/pod constants).
KUEUE_POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
KUEUE_POD_GROUP_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
# Apache YuniKorn gang scheduling (yunikorn-k8shim pkg/common/constants).
YUNIKORN_APP_ID_LABEL = "applicationId"
YUNIKORN_APP_ID_KEY = "yunikorn.apache.org/app-id"
YUNIKORN_TASK_GROUP_NAME = "yunikorn.apache.org/task-group-name"
YUNIKORN_TASK_GROUPS = "yunikorn.apache.org/task-groups"
# NVIDIA KAI-Scheduler: the podgrouper writes the group name as a bare annotation.
KAI_POD_GROUP_ANNOTATION = "pod-group-name"
KAI_QUEUE_LABEL = "kai.scheduler/queue"

# --- Workload controllers -----------------------------------------------------------------------
# JobSet (kubernetes-sigs/jobset api/jobset/v1alpha2 constants).
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
JOBSET_REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
JOBSET_REPLICATED_JOB_REPLICAS = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOBSET_RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"
# LeaderWorkerSet (kubernetes-sigs/lws api/leaderworkerset/v1 constants).
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_SIZE = "leaderworkerset.sigs.k8s.io/size"
# Kubeflow training-operator v1 (PyTorchJob, TFJob, MPIJob, ...).
KUBEFLOW_JOB_NAME = "training.kubeflow.org/job-name"
KUBEFLOW_OPERATOR_NAME = "training.kubeflow.org/operator-name"
KUBEFLOW_REPLICA_TYPE = "training.kubeflow.org/replica-type"
# Kubeflow Trainer v2: a TrainJob runs as a JobSet of the same name; the runtime template labels each
# replicated job with its step, and only the "trainer" step is the gang (initializers run before it).
TRAINJOB_STEP = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINJOB_TRAINER_STEP = "trainer"
# KubeRay (ray-project/kuberay ray-operator/controllers/ray/utils/constant.go).
RAY_CLUSTER = "ray.io/cluster"
RAY_GROUP = "ray.io/group"
RAY_NODE_TYPE = "ray.io/node-type"
