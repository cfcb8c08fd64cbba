{{/*
Object names derive from the release, as charts do: "<fullname>-<component>", where fullname
is fullnameOverride, else the release name when it holds the chart's name (release
"cluster-inventory": "cluster-inventory-manager", what deploy/ holds), else
"<release>-cluster-inventory"; 63 characters at most. Two releases on one hub therefore own
separate ServiceAccounts, RBAC, Deployments and Services. Leader-election Leases keep the
names the code gives them (a manager named by manager.name, a MultiKueue config name, each
elects on its own), so two releases of the same component with the same name share one
leader, as they share one job.
*/}}
{{- define "ci.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "ci.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := include "ci.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Labels of every object; ci.selector is the immutable subset Deployments select on. */}}
{{- define "ci.labels" -}}
app.kubernetes.io/name: cluster-inventory
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- end -}}

{{- define "ci.selector" -}}
app.kubernetes.io/name: cluster-inventory
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "ci.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* --log-format only when not the CLI's default (text). */}}
{{- define "ci.logArgs" -}}
{{- if ne .Values.logFormat "text" }}
- --log-format={{ .Values.logFormat }}
{{- end }}
{{- end -}}

{{/*
A Role and RoleBinding for the component's leader-election Lease in `namespace`.
Arguments: root, name (ServiceAccount and Role name; the Lease's too unless leaseName),
leaseName (the Lease the code elects on: a manager named other than cluster-inventory, or
a sync instance other than default, has its own), namespace, component.
*/}}
{{- define "ci.leaseRole" -}}
{{- $lease := .leaseName | default .name }}
# Leader election: one Lease, {{ $lease }}, in {{ .namespace }}.
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ .roleName | default (printf "%s-leader-election" .name) }}
  namespace: {{ .namespace }}
  labels:
    {{- include "ci.labels" . | nindent 4 }}
rules:
  # create cannot be limited by name (the object does not exist yet).
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["create"]
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    resourceNames: [{{ $lease | quote }}]
    verbs: ["get", "update"]
{{- end -}}

{{/*
A binding of `role` (kind `kind`) to the component's ServiceAccount.
Arguments: root, component, kind (RoleBinding/ClusterRoleBinding), name, namespace (RoleBinding
only), roleKind, role, serviceAccount, serviceAccountNamespace.
*/}}
{{- define "ci.binding" -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: {{ .kind }}
metadata:
  name: {{ .name }}
  {{- with .namespace }}
  namespace: {{ . }}
  {{- end }}
  labels:
    {{- include "ci.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: {{ .roleKind }}
  name: {{ .role }}
subjects:
  - kind: ServiceAccount
    name: {{ .serviceAccount }}
    namespace: {{ .serviceAccountNamespace }}
{{- end -}}

{{- define "ci.serviceAccount" -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .name }}
  namespace: {{ .namespace }}
  labels:
    {{- include "ci.labels" . | nindent 4 }}
{{- end -}}

{{/* A PodDisruptionBudget for a component with more than one replica. */}}
{{- define "ci.pdb" -}}
{{- if and .values.podDisruptionBudget.enabled (gt (int .values.replicas) 1) }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  namespace: {{ .namespace }}
  labels:
    {{- include "ci.labels" . | nindent 4 }}
spec:
  maxUnavailable: {{ .values.podDisruptionBudget.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "ci.selector" . | nindent 6 }}
{{- end }}
{{- end -}}

{{/*
The hardened Deployment every component runs as.
Arguments: root, component, name, namespace, container, command (list), args (YAML list
text), values (the component's values), volumes and mounts (YAML list text, optional),
ports (YAML list text of further container ports, optional), stateless (no Lease: every
replica works), single (exactly one pod, never two at once: one replica, strategy Recreate).
*/}}
{{- define "ci.deployment" -}}
{{- $root := .root -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
  namespace: {{ .namespace }}
  labels:
    {{- include "ci.labels" . | nindent 4 }}
spec:
  {{- if .single }}
  # Exactly one pod, never two at once (Recreate).
  replicas: 1
  strategy:
    type: Recreate
  {{- else }}
  {{- if .stateless }}
  # Stateless: every replica serves.
  {{- else }}
  # More than one replica is safe: only the holder of the Lease {{ .name }} works.
  {{- end }}
  replicas: {{ .values.replicas }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "ci.selector" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "ci.labels" . | nindent 8 }}
      {{- with $root.Values.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ .name }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector:
                  matchLabels:
                    {{- include "ci.selector" . | nindent 20 }}
      {{- with .values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ .container }}
          image: {{ include "ci.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command: {{ toJson .command }}
          args:
            {{- .args | nindent 12 }}
            {{- with .values.extraArgs }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          env:
            {{- if not (or .stateless .single) }}
            # POD_NAME is the Lease holder identity.
            {{- end }}
            - name: POD_NAME
              valueFrom:
                fieldRef:
                  fieldPath: metadata.name
            - name: POD_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
          ports:
            - name: metrics
              containerPort: {{ $root.Values.metricsPort }}
              protocol: TCP
            - name: health
              containerPort: {{ $root.Values.healthPort }}
              protocol: TCP
            {{- with .ports }}
            {{- . | nindent 12 }}
            {{- end }}
          livenessProbe:
            httpGet:
              path: /healthz
              port: health
            initialDelaySeconds: 15
            periodSeconds: 20
          readinessProbe:
            httpGet:
              path: /readyz
              port: health
            initialDelaySeconds: 5
            periodSeconds: 10
          resources:
            {{- toYaml .values.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            # The root filesystem is read-only; Python's tempfile needs a writable /tmp.
            - name: tmp
              mountPath: /tmp
            {{- with .mounts }}
            {{- . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir: {}
        {{- with .volumes }}
        {{- . | nindent 8 }}
        {{- end }}
{{- end -}}
