// Package webhook is hetsev's mutating admission webhook: it opts pods
// annotated hetsev.io/model into hetsev-scheduler, so users annotate their
// workloads instead of editing every pod template, and gives their
// containers NVIDIA_VISIBLE_DEVICES from the GPU the scheduler chooses.
//
// The webhook is served by hetsev-scaler (--webhook-bind-address) over TLS
// with a certificate kept in a Secret, so that every replica serves the same
// one, and injected into the MutatingWebhookConfiguration's caBundle. Its
// configuration and the ValidatingAdmissionPolicy that protects the GPU
// assignment are in manifests/admission.
package webhook
