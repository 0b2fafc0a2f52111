{{/* The chart's name, or nameOverride. */}}
{{- define "rperf3.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The release's full name: also the name of the headless Service whose
EndpointSlices list the mesh's members.
*/}}
{{- define "rperf3.fullname" -}}
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

{{- define "rperf3.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels that select the agents' pods. */}}
{{- define "rperf3.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rperf3.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every object of the chart. */}}
{{- define "rperf3.labels" -}}
helm.sh/chart: {{ include "rperf3.chart" . }}
{{ include "rperf3.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/component: mesh-agent
app.kubernetes.io/part-of: rperf3
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "rperf3.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "rperf3.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "rperf3.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* The slot length the agents use: mesh.slot, or the agent's default -t + 2. */}}
{{- define "rperf3.slotSeconds" -}}
{{- if gt (int .Values.mesh.slot) 0 }}{{ int .Values.mesh.slot }}{{ else }}{{ add (int .Values.mesh.time) 2 }}{{ end }}
{{- end }}

{{/*
A metric with the rules' series selector: include "rperf3.series" (list . "name")
gives name{selector}, or just name when prometheusRule.selector is empty.
*/}}
{{- define "rperf3.series" -}}
{{- $root := index . 0 }}
{{- $name := index . 1 }}
{{- $extra := "" }}
{{- if gt (len .) 2 }}{{ $extra = index . 2 }}{{ end }}
{{- $sel := compact (list $root.Values.prometheusRule.selector $extra) | join ", " }}
{{- if $sel }}{{ printf "%s{%s}" $name $sel }}{{ else }}{{ $name }}{{ end }}
{{- end }}

{{/* The agent's command line (after the entrypoint, the rperf3 binary). */}}
{{- define "rperf3.args" -}}
{{- $m := .Values.mesh -}}
- mesh
- --name
- $(NODE_NAME)
- --peers-k8s
- {{ include "rperf3.fullname" . }}
- --namespace
- {{ .Release.Namespace }}
- -p
- {{ int $m.port | quote }}
- --metrics
- {{ printf "0.0.0.0:%d" (int $m.metricsPort) | quote }}
- -t
- {{ int $m.time | quote }}
{{- if gt (int $m.slot) 0 }}
- --slot
- {{ int $m.slot | quote }}
{{- end }}
{{- if gt (int $m.period) 0 }}
- --period
- {{ int $m.period | quote }}
{{- end }}
{{- if $m.udp }}
- -u
{{- end }}
{{- if $m.bitrate }}
- -b
- {{ $m.bitrate | toString | quote }}
{{- end }}
{{- if gt (int $m.parallel) 1 }}
- -P
- {{ int $m.parallel | quote }}
{{- end }}
{{- if $m.congestion }}
- -C
- {{ $m.congestion | quote }}
{{- end }}
{{- if $m.cycleBytes }}
- --cycle-bytes
- {{ $m.cycleBytes | toString | quote }}
{{- end }}
{{- if gt (int $m.cycleTime) 0 }}
- --cycle-time
- {{ int $m.cycleTime | quote }}
{{- end }}
- --full-max
- {{ int $m.fullMax | quote }}
- --sample
- {{ int $m.sample | quote }}
{{- if $m.json }}
- -J
{{- end }}
{{- if $m.debug }}
- -d
{{- end }}
{{- range $m.extraArgs }}
- {{ . | toString | quote }}
{{- end }}
{{- end }}
