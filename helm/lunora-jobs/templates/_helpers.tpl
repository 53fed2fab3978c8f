{{- define "lunora.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object; "component" names the role (worker, beat, flower, api, ingress, ...). */}}
{{- define "lunora.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "lunora.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "lunora.image" -}}
{{ printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) | quote }}
{{- end -}}

{{- define "lunora.secretName" -}}
{{- if .Values.existingSecret -}}{{ .Values.existingSecret }}{{- else -}}{{ include "lunora.fullname" . }}{{- end -}}
{{- end -}}

{{/* Settings the chart sets itself (ConfigMap, and the migrations hook's copy of it). */}}
{{- define "lunora.configData" -}}
LUNORA_APP: {{ .Values.app | quote }}
LUNORA_QUEUE: {{ .Values.defaultQueue | quote }}
LUNORA_DATA_DIR: "/data"
LUNORA_BEAT_SCHEDULE: "/data/celerybeat-schedule"
LUNORA_HEARTBEAT_FILE: {{ .Values.heartbeat.file | quote }}
LUNORA_HEARTBEAT_INTERVAL: {{ .Values.heartbeat.intervalSeconds | quote }}
LUNORA_WORKER_READY_FILE: "/tmp/lunora-ready"
{{- if .Values.routes }}
LUNORA_STEP_ROUTES: {{ toJson .Values.routes | quote }}
{{- end }}
{{- if .Values.allowOfflineModel }}
LUNORA_ALLOW_OFFLINE_MODEL: "true"
{{- end }}
{{- if .Values.metrics.enabled }}
LUNORA_METRICS_PORT: {{ .Values.metrics.port | quote }}
{{- end }}
{{- range $key, $value := .Values.env }}
{{ $key }}: {{ $value | quote }}
{{- end }}
{{- end -}}

{{- define "lunora.secretData" -}}
{{- range $key, $value := .Values.secretValues }}
{{- if $value }}
{{ $key }}: {{ $value | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The pod spec fields every role shares. */}}
{{- define "lunora.podCommon" -}}
automountServiceAccountToken: false
securityContext: {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  # The root filesystem is read-only: /tmp (heartbeat and ready files) and /data are the writable paths.
  - name: tmp
    emptyDir: {}
  - name: data
    emptyDir: {}
{{- end -}}

{{/* The container fields every role shares ("configName" picks the ConfigMap/Secret pair). */}}
{{- define "lunora.containerCommon" -}}
image: {{ include "lunora.image" .root }}
imagePullPolicy: {{ .root.Values.image.pullPolicy }}
securityContext: {{- toYaml .root.Values.securityContext | nindent 2 }}
envFrom:
  - configMapRef:
      name: {{ .configName }}
  - secretRef:
      name: {{ .secretName }}
volumeMounts:
  - name: tmp
    mountPath: /tmp
  - name: data
    mountPath: /data
{{- end -}}

{{/* An exec probe on the heartbeat file's age: no broker round trip, a few milliseconds. */}}
{{- define "lunora.heartbeatProbe" -}}
exec:
  command:
    - sh
    - -c
    - test $(( $(date +%s) - $(stat -c %Y "$LUNORA_HEARTBEAT_FILE") )) -lt {{ .root.Values.heartbeat.maxAgeSeconds }}
periodSeconds: {{ .root.Values.heartbeat.intervalSeconds }}
timeoutSeconds: 5
failureThreshold: {{ .failureThreshold }}
{{- end -}}

{{- define "lunora.podAnnotations" -}}
checksum/config: {{ include "lunora.configData" . | sha256sum }}
{{- with .Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* host:port and database index of the Redis broker (KEDA), from env.CELERY_BROKER_URL unless set. */}}
{{- define "lunora.brokerAddress" -}}
{{- $url := urlParse (index .Values.env "CELERY_BROKER_URL" | default "redis://redis:6379/0") -}}
{{- $url.host -}}
{{- end -}}

{{- define "lunora.brokerDatabase" -}}
{{- $url := urlParse (index .Values.env "CELERY_BROKER_URL" | default "redis://redis:6379/0") -}}
{{- trimPrefix "/" $url.path | default "0" -}}
{{- end -}}

{{/* A worker pool: the worker defaults with the pool's own values over them. */}}
{{- define "lunora.pool" -}}
{{- $defaults := omit .root.Values.worker "pools" -}}
{{- $pool := mergeOverwrite (deepCopy $defaults) (deepCopy (.pool | default dict)) -}}
{{- if not $pool.queues }}{{- $_ := set $pool "queues" (list .root.Values.defaultQueue) }}{{- end -}}
{{- toYaml $pool -}}
{{- end -}}

{{/* The Redis lists a pool's queues live in: the queue itself, plus one per priority step that a
route sends to it (kombu's Redis transport keeps priorities 3-5, 6-8 and 9 in "<queue>\x06\x16<step>"). */}}
{{- define "lunora.poolLists" -}}
{{- $lists := list -}}
{{- range $queue := .queues -}}
{{- $lists = append $lists $queue -}}
{{- range $kind, $route := $.root.Values.routes -}}
{{- if and (eq $route.queue $queue) (hasKey $route "priority") -}}
{{- $step := 0 -}}
{{- range $threshold := list 3 6 9 -}}
{{- if ge (int $route.priority) $threshold }}{{ $step = $threshold }}{{ end -}}
{{- end -}}
{{- if gt $step 0 }}{{ $lists = append $lists (printf "%s\x06\x16%d" $queue $step) }}{{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml (uniq $lists) -}}
{{- end -}}
