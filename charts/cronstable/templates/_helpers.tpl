{{/* The chart's short name. */}}
{{- define "cronstable.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every object's name: the release name, plus the chart's
name unless the release name already holds it. */}}
{{- define "cronstable.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "cronstable.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "cronstable.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cronstable.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "cronstable.labels" -}}
helm.sh/chart: {{ include "cronstable.chart" . }}
{{ include "cronstable.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "cronstable.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "cronstable.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The ConfigMap of the durable facts (`--facts-configmap`). */}}
{{- define "cronstable.factsConfigMapName" -}}
{{- default (printf "%s-config-facts" (include "cronstable.fullname" .) | trunc 63 | trimSuffix "-") .Values.facts.configMap }}
{{- end }}

{{- define "cronstable.configMapName" -}}
{{- printf "%s-config" (include "cronstable.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The address of `--probe-listen`: the pod-wide listener of the web
section on the service port, `http://[::]:<port>` when the user's section
listens there, else `http://0.0.0.0:<port>`. The daemon serves /livez and
/readyz on it only while no web section is in force (the ConfigMap is
missing); the section's own listener takes the port over when it arrives. */}}
{{- define "cronstable.probeListen" -}}
{{- $port := int .Values.service.port }}
{{- $url := printf "http://0.0.0.0:%d" $port }}
{{- $config := default (dict) .Values.config }}
{{- range (default (list) (get (default (dict) $config.web) "listen")) }}
{{- if and (kindIs "string" .) (regexMatch (printf "^http://\\[::\\]:%d/?$" $port) .) }}
{{- $url = printf "http://[::]:%d" $port }}
{{- end }}
{{- end }}
{{- $url }}
{{- end }}

{{/* The claim holding the state store: the user's existingClaim or the
one the chart creates. */}}
{{- define "cronstable.stateClaimName" -}}
{{- $p := .Values.state.persistence }}
{{- if $p.existingClaim }}
{{- $p.existingClaim }}
{{- else }}
{{- printf "%s-state" (include "cronstable.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* "true" when the state volume may be mounted on several nodes at once
(its accessModes hold ReadWriteMany), else empty. */}}
{{- define "cronstable.stateShared" -}}
{{- if has "ReadWriteMany" (default (list) .Values.state.persistence.accessModes) }}true{{ end }}
{{- end }}

{{/* Refuses state settings that cannot work, before anything is applied
(users with `--atomic` or a locked-down namespace get the reason at
render time instead of a pod stuck in ContainerCreating). */}}
{{- define "cronstable.checkState" -}}
{{- $state := .Values.state }}
{{- $p := $state.persistence }}
{{- $replicas := int .Values.replicaCount }}
{{- $modes := default (list) $p.accessModes }}
{{- if $p.enabled }}
{{- if hasKey (default (dict) .Values.config) "state" }}
{{- fail "config.state and state.persistence.enabled both give the daemon a state section: with persistence the chart writes it (path: state.persistence.mountPath); move the other keys of config.state to state.config" }}
{{- end }}
{{- if eq (clean $p.mountPath) "/tmp" }}
{{- fail "state.persistence.mountPath must not be /tmp: the chart mounts an emptyDir there (jobs' scratch space)" }}
{{- end }}
{{- if and (gt $replicas 1) (not (has "ReadWriteMany" $modes)) }}
{{- if and (has "ReadWriteOncePod" $modes) (not (has "ReadWriteOnce" $modes)) }}
{{- fail (printf "state.persistence.accessModes is [ReadWriteOncePod] but replicaCount is %d: such a volume is mounted by one pod only, so the other replicas would never start. Use a ReadWriteMany volume (state.persistence.accessModes: [ReadWriteMany], e.g. EFS, NFS or CephFS) or replicaCount: 1" $replicas) }}
{{- end }}
{{- if and (not $p.existingClaim) (not $p.allowReadWriteOnceWithReplicas) }}
{{- fail (printf "state.persistence: replicaCount is %d but the state volume's accessModes %s lack ReadWriteMany. A ReadWriteOnce volume attaches to one node at a time, so replicas placed on other nodes would wait in ContainerCreating for ever. Use a ReadWriteMany storage class (state.persistence.accessModes: [ReadWriteMany] and a storageClass that offers it, e.g. EFS, NFS or CephFS), or replicaCount: 1; on a single-node cluster, where every replica shares the node, set state.persistence.allowReadWriteOnceWithReplicas: true" $replicas (toJson $modes)) }}
{{- end }}
{{- end }}
{{- else if $state.config }}
{{- fail "state.config is written only with state.persistence.enabled: true (the chart then adds path: state.persistence.mountPath). Without the chart's volume, put a whole state section in config.state and mount its path yourself (extraVolumes, extraVolumeMounts)" }}
{{- end }}
{{- end }}

{{/* The daemon's config as the ConfigMap holds it: the user's `config`, plus
a `web` section on 0.0.0.0:<service.port> when it has none (the Service,
probes and monitors need a pod-wide listener), plus the Kubernetes Lease
backend when there are replicas and no `cluster` section, plus the `state`
section (state.config and path: <mountPath>) with state.persistence. */}}
{{- define "cronstable.config" -}}
{{- $config := deepCopy (default (dict) .Values.config) }}
{{- $port := int .Values.service.port }}
{{- if not (hasKey $config "web") }}
{{- $_ := set $config "web" (dict "listen" (list (printf "http://0.0.0.0:%d" $port))) }}
{{- else }}
{{- $found := false }}
{{- range (default (list) (get (default (dict) $config.web) "listen")) }}
{{- if and (kindIs "string" .) (regexMatch (printf "^http://(0\\.0\\.0\\.0|\\[::\\]):%d/?$" $port) .) }}
{{- $found = true }}
{{- end }}
{{- end }}
{{- if not $found }}
{{- fail (printf "config.web.listen must hold a pod-wide listener on the service port, http://0.0.0.0:%d or http://[::]:%d (the Service and the probes use it)" $port $port) }}
{{- end }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (not (hasKey $config "cluster")) }}
{{- $le := .Values.leaderElection }}
{{- $lease := dict "leaseName" (default (printf "%s-leader" (include "cronstable.fullname" .)) $le.leaseName) "leaseDurationSeconds" $le.leaseDurationSeconds "renewDeadlineSeconds" $le.renewDeadlineSeconds "retryPeriodSeconds" $le.retryPeriodSeconds }}
{{- $_ := set $config "cluster" (dict "backend" "kubernetes" "kubernetes" $lease) }}
{{- end }}
{{- if .Values.state.persistence.enabled }}
{{- $section := deepCopy (default (dict) .Values.state.config) }}
{{- $_ := set $section "path" (clean .Values.state.persistence.mountPath) }}
{{- $_ := set $config "state" $section }}
{{- end }}
{{- toYaml $config }}
{{- end }}
