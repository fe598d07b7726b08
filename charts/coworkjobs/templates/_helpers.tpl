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
      {{- if or (hasPrefix "STRIPE_" .name) (eq .name "DATABASE_READ_URL") }}
      optional: true
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

{{/*
The values of the chart's Secret, decided once per render and cached on the
root context, so that every include (the Secret, the migrations hook's Secret)
sees the same ones: the operator's value, else what the release's Secret
already holds (lookup: helm install/upgrade), else generated. `helm template`
(Argo CD) cannot look up, so it generates new HMAC keys on every render: set
them, or use secrets.existingSecret, there.
*/}}
{{- define "coworkjobs.secretValues" -}}
{{- if not (hasKey . "coworkjobsSecretValues") -}}
{{- $s := .Values.secrets -}}
{{- $existing := (lookup "v1" "Secret" .Release.Namespace (include "coworkjobs.fullname" .)).data | default dict -}}
{{- $v := dict "DATABASE_URL" (required "secrets.databaseURL is required" $s.databaseURL) "REDIS_URL" (required "secrets.redisURL is required" $s.redisURL) "SMTP_URL" (required "secrets.smtpURL is required" $s.smtpURL) -}}
{{- range $key, $given := dict "INTERNAL_IDENTITY_SECRET" $s.internalIdentitySecret "NEWSLETTER_TOKEN_SECRET" $s.newsletterTokenSecret -}}
{{- if $given }}{{ $_ := set $v $key $given }}
{{- else if hasKey $existing $key }}{{ $_ := set $v $key (index $existing $key | b64dec) }}
{{- else }}{{ $_ := set $v $key (randAlphaNum 48) }}
{{- end -}}
{{- end -}}
{{- if ne (empty $s.stripeSecretKey) (empty $s.stripeWebhookSecret) }}{{ fail "secrets.stripeSecretKey and secrets.stripeWebhookSecret go together: set both or neither" }}{{ end -}}
{{- if $s.stripeSecretKey }}{{ $_ := set $v "STRIPE_SECRET_KEY" $s.stripeSecretKey }}{{ $_ := set $v "STRIPE_WEBHOOK_SECRET" $s.stripeWebhookSecret }}{{ end -}}
{{- if $s.databaseReadURL }}{{ $_ := set $v "DATABASE_READ_URL" $s.databaseReadURL }}{{ end -}}
{{- $_ := set . "coworkjobsSecretValues" $v -}}
{{- end -}}
{{- end }}

{{/* The data of the chart's Secret (also copied into the migrations hook's Secret). */}}
{{- define "coworkjobs.secretData" -}}
{{- include "coworkjobs.secretValues" . -}}
{{- range $k, $v := .coworkjobsSecretValues }}
{{ $k }}: {{ $v | b64enc | quote }}
{{- end }}
{{- end }}

{{/*
The secret keys a workload reads ("component", "service", "api", "stripe":
Stripe is configured or may be in secrets.existingSecret), as a YAML list: its
env and its checksum/secret both come from it.
*/}}
{{- define "coworkjobs.secretKeys" -}}
{{- $keys := list "DATABASE_URL" -}}
{{- /* jobs-worker signs the job alerts' links as the jobs API checks them;
both workers seal the erasure links of their mails (libs/privacy). */ -}}
{{- if or .api (has .component (list "jobs-worker" "community-worker")) }}{{ $keys = append $keys "INTERNAL_IDENTITY_SECRET" }}{{ end -}}
{{- /* Every workload: the gateway's rate limit, and the change versions every
writer bumps (libs/changes), which the gateway's response cache is keyed by. A
backend without it would write without bumping, and the cache would serve what
was stored before its write. Given whatever config.responseCacheMB says, so a
later switch on finds every writer already bumping. */ -}}
{{- $keys = append $keys "REDIS_URL" -}}
{{- if eq .service "community" }}{{ $keys = append $keys "NEWSLETTER_TOKEN_SECRET" }}{{ end -}}
{{- /* The gateway mails the dashboard's sign-in links. */ -}}
{{- if has .component (list "community-worker" "jobs-worker" "gateway") }}{{ $keys = append $keys "SMTP_URL" }}{{ end -}}
{{- if and (eq .component "jobs") .stripe }}{{ $keys = concat $keys (list "STRIPE_SECRET_KEY" "STRIPE_WEBHOOK_SECRET") }}{{ end -}}
{{- /* The APIs that route reads to a replica (docs/scaling.md). */ -}}
{{- if and (has .component (list "jobs" "content" "community")) .readReplica }}{{ $keys = append $keys "DATABASE_READ_URL" }}{{ end -}}
{{- toYaml $keys -}}
{{- end }}

{{/*
checksum/secret of a workload ("root", "keys"): from stable inputs only, so
that a render with the same values gives the same pods. Per key, the
operator's value, or "generated" for an HMAC key the chart generated (kept
across upgrades, so not a change), or the name of secrets.existingSecret
(whose content the chart cannot see: restart the pods yourself when you
change it). A changed value restarts exactly the workloads that read it.
*/}}
{{- define "coworkjobs.secretChecksum" -}}
{{- $s := .root.Values.secrets -}}
{{- $given := dict "DATABASE_URL" $s.databaseURL "DATABASE_READ_URL" $s.databaseReadURL "REDIS_URL" $s.redisURL "SMTP_URL" $s.smtpURL "INTERNAL_IDENTITY_SECRET" $s.internalIdentitySecret "NEWSLETTER_TOKEN_SECRET" $s.newsletterTokenSecret "STRIPE_SECRET_KEY" $s.stripeSecretKey "STRIPE_WEBHOOK_SECRET" $s.stripeWebhookSecret -}}
{{- $parts := list -}}
{{- range .keys -}}
{{- if $s.existingSecret }}{{ $parts = append $parts (printf "%s from Secret %s" . $s.existingSecret) }}
{{- else }}{{ $parts = append $parts (printf "%s=%s" . (index $given . | default "(generated)")) }}
{{- end -}}
{{- end -}}
{{- $parts | sortAlpha | join "\n" | sha256sum -}}
{{- end }}

{{/* Milliseconds of a Go duration made of whole units ("1m30s", "500ms"; the schema allows no other form). */}}
{{- define "coworkjobs.durationMs" -}}
{{- $ms := 0 -}}
{{- $unit := dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000 -}}
{{- range regexFindAll "[0-9]+(ms|s|m|h)" . -1 -}}
{{- $u := regexFind "(ms|s|m|h)$" . -}}
{{- $ms = add $ms (mul (trimSuffix $u . | atoi) (get $unit $u)) -}}
{{- end -}}
{{- $ms -}}
{{- end }}

{{/*
terminationGracePeriodSeconds: the drain delay, then the shutdown timeout,
then 5 s for the process to exit; a value of the operator's below that fails
the render (the kubelet would kill requests in flight).
*/}}
{{- define "coworkjobs.terminationGracePeriodSeconds" -}}
{{- $s := .Values.shutdown -}}
{{- $needMs := add (include "coworkjobs.durationMs" $s.drainDelay | atoi) (include "coworkjobs.durationMs" $s.timeout | atoi) -}}
{{- $min := add (div (add $needMs 999) 1000) 5 -}}
{{- $given := .Values.terminationGracePeriodSeconds | default 0 | int -}}
{{- if and $given (lt $given $min) -}}
{{- fail (printf "terminationGracePeriodSeconds %d is too short: shutdown.drainDelay (%s) + shutdown.timeout (%s) + 5s need %d (or leave it 0 to compute it)" $given $s.drainDelay $s.timeout $min) -}}
{{- end -}}
{{- max $given $min -}}
{{- end }}

{{/*
Settings the chart owns and computes with (the grace period depends on the
shutdown durations; the response cache is only correct with REDIS_URL on every
writer, which the chart gives): an env entry of the operator's must not set them.
*/}}
{{- define "coworkjobs.checkReservedEnv" -}}
{{- $reserved := list "SHUTDOWN_DRAIN_DELAY" "SHUTDOWN_TIMEOUT" "ADMIN_ADDR" "HTTP_ADDR" "UPSTREAM_BALANCE" "RESPONSE_CACHE_MB" "RESPONSE_CACHE_STORE" "RESPONSE_CACHE_TTL" -}}
{{- $names := keys (.Values.config.extraEnv | default dict) -}}
{{- range .Values.extraEnv }}{{ $names = append $names .name }}{{ end -}}
{{- range $_, $c := merge (dict) .Values.apis .Values.workers -}}
{{- $names = concat $names (keys ($c.env | default dict)) -}}
{{- range $c.extraEnv }}{{ $names = append $names .name }}{{ end -}}
{{- end -}}
{{- range $reserved -}}
{{- if has . $names -}}
{{- fail (printf "%s is set by the chart (shutdown.*, config.upstreamBalance, config.responseCacheMB, and the ports the probes use): remove it from config.extraEnv, extraEnv and the components' env" .) -}}
{{- end -}}
{{- end -}}
{{- end }}
