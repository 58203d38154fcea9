// Package catalog holds the data hetsev decides over, and no decisions:
//
//   - the GPU catalog ([Catalog], [GPUType]): price in USD/h and GPU memory in
//     MiB per GPU type, and the GPU Feature Discovery product label that
//     identifies the type on a node; loaded from data/profiles/gpu_catalog.csv
//     or a user's CSV;
//   - model profiles ([Profiles], [Profile]): throughput in requests/s and
//     batch latency in ms of one instance per model and GPU type, measured and
//     cited per row, joined with per-model resource and launch-time
//     estimates (marked as estimates where they are defined); loaded from
//     data/profiles/model_profiles.csv and data/profiles/instance_estimates.csv.
//
// Loaders reject bad input with a [FieldError] naming the file, line and
// column. Provenance of every shipped row is in data/README.md.
package catalog
