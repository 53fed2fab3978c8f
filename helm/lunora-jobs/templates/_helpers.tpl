{{- define "lunora.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "lunora.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "lunora.secretName" -}}
{{- if .Values.existingSecret -}}{{ .Values.existingSecret }}{{- else -}}{{ include "lunora.fullname" . }}{{- end -}}
{{- end -}}

{{- define "lunora.envFrom" -}}
envFrom:
  - configMapRef:
      name: {{ include "lunora.fullname" . }}
  - secretRef:
      name: {{ include "lunora.secretName" . }}
{{- end -}}
