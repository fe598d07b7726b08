{{/* Names -------------------------------------------------------------- */}}

{{- define "coworkjobs.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "coworkjobs.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "coworkjobs.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "coworkjobs.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{/* "root" and "component" in a dict: the name of one component's objects. */}}
{{- define "coworkjobs.componentName" -}}
{{- printf "%s-%s" (include "coworkjobs.fullname" .root) .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "coworkjobs.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "coworkjobs.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "coworkjobs.secretName" -}}
{{- default (include "coworkjobs.fullname" .) .Values.secrets.existingSecret }}
{{- end }}

{{/* Labels: selectors never carry the chart or app version (they are immutable). */}}
{{- define "coworkjobs.selectorLabels" -}}
app.kubernetes.io/name: {{ include "coworkjobs.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "coworkjobs.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "coworkjobs.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: coworkjobs
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Image of a service ("root", "service", "override"): <registry>/<repository>/<service>
with the tag, or @digest when the override has one (a digest pins one image,
so it is only ever set per component, never globally).
*/}}
{{- define "coworkjobs.image" -}}
{{- $img := .root.Values.image -}}
{{- $o := .override | default dict -}}
{{- $repo := $o.repository | default (printf "%s/%s" $img.repository .service) -}}
{{- if and $img.registry (not $o.repository) }}{{ $repo = printf "%s/%s" $img.registry $repo }}{{ end -}}
{{- if $o.digest -}}
{{- printf "%s@%s" $repo $o.digest -}}
{{- else -}}
{{- $tag := $o.tag | default $img.tag | default .root.Chart.AppVersion -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}
{{- end }}

{{/*
The image override of a component that runs another component's image
("own", "service"): a worker or the mailcatcher inherits what is set for its
service's API (repository, tag, digest), its own keys winning.
*/}}
{{- define "coworkjobs.inheritedImage" -}}
{{- toYaml (merge (deepCopy (.own | default dict)) (deepCopy (.service | default dict))) -}}
{{- end }}

{{/* The command of a container: an optional dev wrapper, then /app/<binary>. */}}
{{- define "coworkjobs.command" -}}
{{- $cmd := concat (.root.Values.commandPrefix | default list) (list (printf "/app/%s" .binary)) -}}
{{ toYaml $cmd }}
{{- end }}

{{/*
GOMEMLIMIT: 90% of the memory limit when it is written in Mi or Gi (the Go
runtime then collects before the kernel kills); otherwise the limit itself,
read from the container's resources.
*/}}
{{- define "coworkjobs.goRuntimeEnv" -}}
{{- $limit := "" -}}
{{- with .resources }}{{ with .limits }}{{ $limit = toString (.memory | default "") }}{{ end }}{{ end -}}
- name: GOMAXPROCS
  valueFrom:
    resourceFieldRef:
      resource: limits.cpu
      divisor: "1"
{{- if regexMatch "^[0-9]+Mi$" $limit }}
- name: GOMEMLIMIT
  value: {{ printf "%dMiB" (div (mul (trimSuffix "Mi" $limit | atoi) 9) 10) | quote }}
{{- else if regexMatch "^[0-9]+Gi$" $limit }}
- name: GOMEMLIMIT
  value: {{ printf "%dMiB" (div (mul (trimSuffix "Gi" $limit | atoi) 1024 9) 10) | quote }}
{{- else }}
- name: GOMEMLIMIT
  valueFrom:
    resourceFieldRef:
      resource: limits.memory
      divisor: "1"
{{- end }}
{{- end }}

{{- define "coworkjobs.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .name }}
{{- end }}

{{/* A generated secret value that survives upgrades (read back with lookup). */}}
{{- define "coworkjobs.generated" -}}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace (include "coworkjobs.fullname" .root) -}}
{{- if .value }}{{ .value }}
{{- else if and $existing (hasKey $existing.data .key) }}{{ index $existing.data .key | b64dec }}
{{- else }}{{ randAlphaNum 48 }}
{{- end }}
{{- end }}

{{/*
Scheduling fields of a pod ("root", "c": the component's values, "selector":
its selector labels, "spread": true for Deployments). A component's own value
wins over the global one. Deployments spread across nodes by default
(spreadAcrossNodes);
a spread constraint without a labelSelector gets the component's selector
labels, since one that selects no pod spreads nothing.
*/}}
{{- define "coworkjobs.scheduling" -}}
{{- with (.c.priorityClassName | default .root.Values.priorityClassName) }}
priorityClassName: {{ . }}
{{- end }}
{{- with (.c.nodeSelector | default .root.Values.nodeSelector) }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (.c.tolerations | default .root.Values.tolerations) }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (.c.affinity | default .root.Values.affinity) }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $tsc := .c.topologySpreadConstraints | default .root.Values.topologySpreadConstraints }}
{{- if and .spread .selector (not $tsc) .root.Values.spreadAcrossNodes }}
{{- $tsc = list (dict "maxSkew" 1 "topologyKey" "kubernetes.io/hostname" "whenUnsatisfiable" "ScheduleAnyway") }}
{{- end }}
{{- if $tsc }}
{{- $out := list }}
{{- range $tsc }}
{{- $t := deepCopy . }}
{{- if and $.selector (not (hasKey $t "labelSelector")) }}{{ $_ := set $t "labelSelector" (dict "matchLabels" $.selector) }}{{ end }}
{{- $out = append $out $t }}
{{- end }}
topologySpreadConstraints:
  {{- toYaml $out | nindent 2 }}
{{- end }}
{{- end }}

{{/* The data of the chart's Secret (also copied into the migrations hook's Secret). */}}
{{- define "coworkjobs.secretData" -}}
DATABASE_URL: {{ required "secrets.databaseURL is required" .Values.secrets.databaseURL | b64enc | quote }}
REDIS_URL: {{ required "secrets.redisURL is required" .Values.secrets.redisURL | b64enc | quote }}
SMTP_URL: {{ required "secrets.smtpURL is required" .Values.secrets.smtpURL | b64enc | quote }}
INTERNAL_IDENTITY_SECRET: {{ include "coworkjobs.generated" (dict "root" . "key" "INTERNAL_IDENTITY_SECRET" "value" .Values.secrets.internalIdentitySecret) | b64enc | quote }}
NEWSLETTER_TOKEN_SECRET: {{ include "coworkjobs.generated" (dict "root" . "key" "NEWSLETTER_TOKEN_SECRET" "value" .Values.secrets.newsletterTokenSecret) | b64enc | quote }}
{{- end }}
