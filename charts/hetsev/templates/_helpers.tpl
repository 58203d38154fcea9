{{/*
hetsev.namespace: the programs' namespace (namespace.name).
*/}}
{{/* The DRA driver's name and full-GPU type: the dra.driver profile's
(pkg/dra.Profile) unless dra.driverName / dra.gpuType replace them. */}}
{{- define "hetsev.draDriverName" -}}
{{- if .Values.dra.driverName }}{{ .Values.dra.driverName }}{{ else if eq .Values.dra.driver "hami" }}hami-core-gpu.project-hami.io{{ else }}gpu.nvidia.com{{ end }}
{{- end }}
{{- define "hetsev.draGPUType" -}}
{{- if .Values.dra.gpuType }}{{ .Values.dra.gpuType }}{{ else if eq .Values.dra.driver "hami" }}hami-gpu{{ else }}gpu{{ end }}
{{- end }}

{{/* The --dra-driver flags of hetsev-scaler and hetsev-metrics-adapter
(none for the default profile, as manifests/overlays/dra). */}}
{{- define "hetsev.draArgs" -}}
{{- if ne .Values.dra.driver "nvidia" }}
- --dra-driver={{ .Values.dra.driver }}
{{- end }}
{{- if .Values.dra.driverName }}
- --dra-driver-name={{ .Values.dra.driverName }}
{{- end }}
{{- if .Values.dra.gpuType }}
- --dra-gpu-type={{ .Values.dra.gpuType }}
{{- end }}
{{- if .Values.dra.claimRequests }}
{{- $reqs := list }}
{{- range $k, $v := .Values.dra.claimRequests }}{{ $reqs = append $reqs (printf "%s=%s" $k (toString $v)) }}{{ end }}
- --dra-claim-requests={{ join "," $reqs }}
{{- end }}
{{- end }}

{{/*
hetsev.namespace: where the programs run: namespace.name, or the release's
namespace (helm install --namespace) when it is empty.
*/}}
{{- define "hetsev.namespace" -}}
{{- .Values.namespace.name | default .Release.Namespace -}}
{{- end -}}

{{/*
hetsev.foreignNamespace: non-empty when the chart must not render the
programs' namespace: it is the release's own (Helm keeps its release
records there, and helm uninstall would delete them with it; helm install
--create-namespace makes it), or it exists and this release does not own
it (its operators made it: helm uninstall would delete it). A Namespace
the release rendered carries its release annotation, so an upgrade keeps
rendering it and Helm never deletes it. lookup finds nothing under helm
template.
*/}}
{{- define "hetsev.foreignNamespace" -}}
{{- $ns := include "hetsev.namespace" . -}}
{{- $n := lookup "v1" "Namespace" "" $ns -}}
{{- if or (eq $ns .Release.Namespace) (and $n (ne (dig "metadata" "annotations" "meta.helm.sh/release-name" "" $n) .Release.Name)) -}}
{{- $ns -}}
{{- end -}}
{{- end -}}

{{/*
hetsev.labels: the labels of an object of one program. Call with
(dict "name" "hetsev-scaler" "root" $). app.kubernetes.io/name and part-of
are those of manifests/; the others say which release owns the object.
*/}}
{{- define "hetsev.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/part-of: hetsev
{{ include "hetsev.releaseLabels" .root }}
{{- end -}}

{{/*
hetsev.componentLabels: hetsev.labels plus app.kubernetes.io/component, for
Deployments, their pods and Services. Call with
(dict "name" "hetsev-scaler" "component" "scaler" "root" $).
*/}}
{{- define "hetsev.componentLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: hetsev
{{ include "hetsev.releaseLabels" .root }}
{{- end -}}

{{- define "hetsev.releaseLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
hetsev.image: repository:tag of a program, or repository@digest when
image.digest is set; the tag defaults to v<appVersion>, the tag the
repository's images get (Makefile: v$(VERSION)). global.imageRegistry
replaces the repository's registry (its first element when that names a
host: it has a dot or a port, or is localhost), so one mirror serves every
image.
Call with (dict "image" .Values.scaler.image "root" $).
*/}}
{{- define "hetsev.image" -}}
{{- $repo := .image.repository -}}
{{- with .root.Values.global.imageRegistry -}}
{{- $parts := splitList "/" $repo -}}
{{- $first := first $parts -}}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) -}}
{{- $parts = rest $parts -}}
{{- end -}}
{{- $repo = printf "%s/%s" (trimSuffix "/" .) (join "/" $parts) -}}
{{- end -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $repo .image.digest -}}
{{- else -}}
{{- $tag := .image.tag | default (printf "v%s" .root.Chart.AppVersion) -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}
{{- end -}}

{{/*
hetsev.serviceAccountUser: the full user name of one program's service account,
as the API server names it in request.userInfo. Call with
(dict "name" "hetsev-scheduler" "root" $).
*/}}
{{- define "hetsev.serviceAccountUser" -}}
{{- printf "system:serviceaccount:%s:%s" (include "hetsev.namespace" .root) .name -}}
{{- end -}}

{{/*
hetsev.scalerMetricsBackend: hetsev-scaler's --metrics-backend.
*/}}
{{- define "hetsev.scalerMetricsBackend" -}}
{{- if .Values.scaler.metricsBackend -}}
{{- .Values.scaler.metricsBackend -}}
{{- else if eq .Values.metrics.backend "prometheus" -}}
prometheus
{{- else -}}
custom-metrics
{{- end -}}
{{- end -}}

{{/*
hetsev.usesPrometheus: "true" when either program queries Prometheus.
*/}}
{{- define "hetsev.usesPrometheus" -}}
{{- if or (eq .Values.metrics.backend "prometheus") (eq (include "hetsev.scalerMetricsBackend" .) "prometheus") -}}
true
{{- end -}}
{{- end -}}

{{/*
hetsev.prometheusArgs: the --prometheus-* flags both programs take.
*/}}
{{- define "hetsev.prometheusArgs" -}}
{{- $p := .Values.metrics.prometheus -}}
{{- if not $p.url }}
{{- fail "metrics.prometheus.url: required when metrics.backend or scaler.metricsBackend is prometheus" }}
{{- end }}
- {{ printf "--prometheus-url=%s" $p.url | quote }}
{{- if $p.bearerTokenSecret.name }}
- {{ printf "--prometheus-bearer-token-file=/var/run/hetsev/prometheus-token/%s" $p.bearerTokenSecret.key | quote }}
{{- else if $p.bearerTokenFile }}
- {{ printf "--prometheus-bearer-token-file=%s" $p.bearerTokenFile | quote }}
{{- end }}
{{- if $p.caSecret.name }}
- {{ printf "--prometheus-ca-file=/var/run/hetsev/prometheus-ca/%s" $p.caSecret.key | quote }}
{{- else if $p.caConfigMap.name }}
- {{ printf "--prometheus-ca-file=/var/run/hetsev/prometheus-ca/%s" $p.caConfigMap.key | quote }}
{{- else if $p.caFile }}
- {{ printf "--prometheus-ca-file=%s" $p.caFile | quote }}
{{- end }}
{{- range $name, $value := $p.headers }}
- {{ printf "--prometheus-header=%s=%s" $name $value | quote }}
{{- end }}
{{- end -}}

{{/*
hetsev.prometheusVolumeMounts and hetsev.prometheusVolumes: the token and CA
mounted from a Secret or ConfigMap, when named.
*/}}
{{- define "hetsev.prometheusVolumeMounts" -}}
{{- $p := .Values.metrics.prometheus -}}
{{- if $p.bearerTokenSecret.name }}
- name: prometheus-token
  mountPath: /var/run/hetsev/prometheus-token
  readOnly: true
{{- end }}
{{- if or $p.caSecret.name $p.caConfigMap.name }}
- name: prometheus-ca
  mountPath: /var/run/hetsev/prometheus-ca
  readOnly: true
{{- end }}
{{- end -}}

{{- define "hetsev.prometheusVolumes" -}}
{{- $p := .Values.metrics.prometheus -}}
{{- if $p.bearerTokenSecret.name }}
- name: prometheus-token
  secret:
    secretName: {{ $p.bearerTokenSecret.name }}
    items:
      - key: {{ $p.bearerTokenSecret.key }}
        path: {{ $p.bearerTokenSecret.key }}
{{- end }}
{{- if $p.caSecret.name }}
- name: prometheus-ca
  secret:
    secretName: {{ $p.caSecret.name }}
    items:
      - key: {{ $p.caSecret.key }}
        path: {{ $p.caSecret.key }}
{{- else if $p.caConfigMap.name }}
- name: prometheus-ca
  configMap:
    name: {{ $p.caConfigMap.name }}
    items:
      - key: {{ $p.caConfigMap.key }}
        path: {{ $p.caConfigMap.key }}
{{- end }}
{{- end -}}

{{/*
hetsev.podScheduling: nodeSelector, affinity, tolerations,
priorityClassName and imagePullSecrets of one program's pods. Call with
(dict "p" .Values.scaler "root" $).
*/}}
{{- define "hetsev.podScheduling" -}}
{{- with .p.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .p.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .p.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .p.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .p.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
hetsev.certManagerCAAnnotation: cainjector's annotation naming the
Certificate whose CA goes into caBundle. Call with
(dict "cert" "hetsev-webhook-serving-cert" "root" $).
*/}}
{{- define "hetsev.certManagerCAAnnotation" -}}
{{- if eq .root.Values.certificates.mode "certManager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ include "hetsev.namespace" .root }}/{{ .cert }}
{{- end }}
{{- end -}}

{{/*
hetsev.foreignAPIService: non-empty when the cluster already has APIService
<version>.custom.metrics.k8s.io and another owner keeps it (no Helm release
annotation of this release: prometheus-adapter, or an install by kubectl):
the chart then leaves it alone instead of failing the install or taking
custom metrics over. Call with (dict "version" "v1beta1" "root" $). lookup
finds nothing under helm template, which renders both.
*/}}
{{- define "hetsev.foreignAPIService" -}}
{{- $a := lookup "apiregistration.k8s.io/v1" "APIService" "" (printf "%s.custom.metrics.k8s.io" .version) -}}
{{- if and $a (ne (dig "metadata" "annotations" "meta.helm.sh/release-name" "" $a) .root.Release.Name) -}}
{{- dig "spec" "service" "namespace" "" $a }}/{{ dig "spec" "service" "name" "" $a -}}
{{- end -}}
{{- end -}}

{{/*
hetsev.nvidiaRuntimeClasses: admissionPolicy.nvidiaRuntimeClasses with
scaler.gpuRuntimeClass added when it is not among them, as a JSON array:
the class hetsev gives GPU pods runs NVIDIA's runtime.
*/}}
{{- define "hetsev.nvidiaRuntimeClasses" -}}
{{- $c := .Values.admissionPolicy.nvidiaRuntimeClasses -}}
{{- with .Values.scaler.gpuRuntimeClass -}}
{{- if not (has . $c) -}}
{{- $c = append $c . -}}
{{- end -}}
{{- end -}}
{{- toJson $c -}}
{{- end -}}
