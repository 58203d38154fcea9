// Package adapter is hetsev's custom-metrics adapter: it serves request rate,
// request latency percentiles and GPU utilisation per pod, per Deployment and
// per ModelService through the custom.metrics.k8s.io API
// (sigs.k8s.io/custom-metrics-apiserver), for the hetsev scaler and for
// HorizontalPodAutoscalers.
//
// Layout: this package holds only what its subpackages share, so that the
// provider and the two backends depend on it and not on each other:
//
//	pkg/adapter             names.go (metrics served, resources, series,
//	                        labels and annotations read), source.go (Source,
//	                        Value, Histogram, ErrNoData), histogram.go
//	                        (HistogramQuantile, MergeHistograms)
//	pkg/adapter/provider    the custom-metrics provider: objects to pods,
//	                        aggregation per Deployment and ModelService,
//	                        NotFound and 503 semantics
//	pkg/adapter/scrape      the built-in backend: target discovery, the
//	                        scrape loop, exposition parsing, per-pod histories
//	pkg/adapter/prometheus  the Prometheus backend: options, PromQL
//	                        templates, queries, cache
//	pkg/adapter/server      the command: options and flags, wiring, serving
//	                        (cmd/metrics-adapter is its thin main)
//
// and, internal to these, selfmetrics (the hetsev_metrics_adapter_*
// metrics) and adaptertest (the fixtures their tests share).
//
// Data flow, with one of two backends (--backend):
//
//	scrape (default): pods annotated prometheus.io/scrape="true"
//	  -> scrape.Scraper: GET http://<podIP>:<prometheus.io/port><prometheus.io/path>
//	     every --scrape-interval, parsed with expfmt, kept as short per-pod
//	     histories in the samples' own clock
//	prometheus: prometheus.Source: PromQL instant queries (templates in
//	     prometheus.Options) per namespace for Istio series, for all GPUs
//	     for DCGM series; one query per API request and series, reused for
//	     --prometheus-cache-ttl
//	  -> Source (interface)
//	  -> provider.Provider (custom-metrics-apiserver's
//	     CustomMetricsProvider) -> custom.metrics.k8s.io
//
// Inputs, as the real exporters publish them:
//
//   - Istio standard metrics from each model-server pod's sidecar:
//     istio_requests_total (counter) and
//     istio_request_duration_milliseconds (histogram, buckets in ms), only
//     reporter="destination", summed over all other labels of the pod.
//   - dcgm-exporter gauges DCGM_FI_DEV_GPU_UTIL (percent) and
//     DCGM_FI_DEV_FB_USED (MiB), one series per GPU labelled gpu (index) and
//     Hostname (node name). A pod's GPU is (spec.nodeName, annotation
//     hetsev.io/gpu-index), written by hetsev-scheduler in both GPU modes.
//     With --gpu-mode=dra, a pod without the annotation (its
//     ResourceClaim allocated by another scheduler, e.g. the upstream
//     DynamicResources plugin for a Deployment that HPA scales) is joined
//     through its claims instead (provider.podGPU, dra.PodGPU): the
//     claims of all its spec.resourceClaims entries, their allocated
//     device of driver gpu.nvidia.com, and that device's "index"
//     attribute in the ResourceSlice of the pod's node (the adapter then
//     watches ResourceClaims and ResourceSlices). A pod whose claims hold
//     several GPUs is reported its lowest-index GPU; a claim that is
//     missing or not allocated, or a device not published or without an
//     index, leaves the pod without GPU data. DCGM measures
//     devices, not processes: a pod that shares its GPU with other pods is
//     reported the WHOLE GPU's utilisation and used memory, the same value
//     as its neighbours (hetsev places several models on one GPU, so
//     dcgm-exporter's own per-pod attribution, which follows device-plugin
//     allocations, does not apply).
//
// With the Prometheus backend, Istio series carry the pod's namespace and
// name in the labels Prometheus' Kubernetes service discovery adds
// (--prometheus-namespace-label, --prometheus-pod-label), and DCGM series
// the node in Hostname or a relabelled node label (--prometheus-node-label).
//
// Metrics served (see the Metric* constants for units):
//
//	requests_per_second       pods, deployments.apps, modelservices.hetsev.io   sum of pod rates
//	request_latency_p50_ms    pods, deployments.apps, modelservices.hetsev.io   merged histogram
//	request_latency_p98_ms    pods, deployments.apps, modelservices.hetsev.io   merged histogram
//	request_latency_p99_ms    pods, deployments.apps, modelservices.hetsev.io   merged histogram
//	gpu_utilization_percent   pods, deployments.apps, modelservices.hetsev.io   mean of pods
//	gpu_memory_used_mib       pods
//
// A ModelService's pods are those labelled hetsev.io/modelservice=<name> in
// its namespace: the pods of all its GPU types' Deployments.
//
// Time: a sample carrying its own timestamp in the exposition is stored at
// that time (hetsev's simulated exporters stamp samples with a compressed
// simulation clock, and Prometheus honours such timestamps); other samples
// are stored at the scrape's start time. Rates and histogram increases are
// computed over the last --rate-window of that sample clock, ending at the
// pod's newest sample.
//
// Missing data is never reported as zero: a pod that was never scraped, whose
// last scrape failed, that exposes no matching series, or that has fewer than
// two samples in the window yields a NotFound error
// (custom-metrics-apiserver's provider.NewMetricNotFoundForError), so that a
// scaler cannot mistake it for an idle pod. A Deployment is reported over those of its pods that have data,
// and is NotFound only when none has. A Prometheus that cannot be reached,
// answers with an error, or takes longer than --prometheus-timeout makes the
// whole request fail with 503 ServiceUnavailable naming Prometheus and the
// cause; HPA and hetsev-scaler then hold replicas.
//
// The adapter's own metrics (hetsev_metrics_adapter_*, defined in
// internal/selfmetrics) are registered by server.Options.Run in
// k8s.io/component-base/metrics/legacyregistry, which the generic API server
// serves on /metrics next to /healthz.
package adapter
