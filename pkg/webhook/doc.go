// Package webhook is hetsev's mutating admission webhook: it opts pods
// annotated hetsev.io/model into hetsev-scheduler, so users annotate their
// workloads instead of editing every pod template, and gives their
// containers and init containers NVIDIA_VISIBLE_DEVICES from the GPU the
// scheduler chooses, and the pod the NVIDIA runtime class that reads it.
// In DRA mode (hetsev-scaler's --gpu-mode=dra, dra.go) it gives the pod a
// ResourceClaim instead, from a per-namespace ResourceClaimTemplate of the
// pod's GPU memory that it creates when missing.
//
// PodMutator is a controller-runtime admission.Handler (MutatePod is the
// pure mutation), served by controller-runtime's webhook server, which
// reloads its certificate from Options.CertDir when the files change.
// hetsev-scaler runs it on every replica as a runnable of its
// controller-runtime manager (Options.AddFlags gives it its --webhook-*
// flags, Options.AddToManager adds it): a server that fails stops the
// manager, and the manager's /readyz fails until the server answers TLS.
//
// The certificate is either mounted into CertDir (cert-manager,
// --webhook-self-signed=false) or kept by pkg/servingcert's Provisioner: a self-signed
// one in a Secret shared by all replicas, written to CertDir, renewed
// before it expires while running, with the MutatingWebhookConfiguration's
// caBundle holding the CAs of the previous, current and next certificates,
// so that a renewal never serves a certificate the API server does not
// trust yet, nor stops trusting replicas that have not switched. The
// webhook's configuration and the ValidatingAdmissionPolicy that protects
// the GPU assignment are in manifests/admission.
package webhook
