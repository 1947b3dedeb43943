{{/* Chart name, at most 63 characters. */}}
{{- define "bragerone-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full object name: the release name, plus the chart name unless it contains it. */}}
{{- define "bragerone-exporter.fullname" -}}
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

{{- define "bragerone-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "bragerone-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "bragerone-exporter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "bragerone-exporter.selectorLabels" . }}
app.kubernetes.io/component: exporter
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The Secret with the cloud account. */}}
{{- define "bragerone-exporter.credentialsSecret" -}}
{{- default (include "bragerone-exporter.fullname" .) .Values.credentials.existingSecret }}
{{- end }}

{{/* The Secret with the web configuration ("" when there is none). */}}
{{- define "bragerone-exporter.webConfigSecret" -}}
{{- if .Values.webConfig.existingSecret }}
{{- .Values.webConfig.existingSecret }}
{{- else if .Values.webConfig.config }}
{{- printf "%s-web-config" (include "bragerone-exporter.fullname" .) }}
{{- end }}
{{- end }}
