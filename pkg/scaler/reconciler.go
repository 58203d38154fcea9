package scaler

import (
	"fmt"
	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sync"
	"time"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	configv1 "github.com/hetsev/hetsev/pkg/apis/config/v1"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/catalog"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/interference"
	"github.com/hetsev/hetsev/pkg/placement"
	"github.com/hetsev/hetsev/pkg/schedulerconfig"
)

// Reconciler reconciles ModelServices: a reconcile at or after the
// ModelService's decision time (or after a spec change) runs a scaling
// decision and asks to come back after spec.scaling.intervalSeconds; one
// in between, triggered by a change to one of its Deployments, only keeps
// the Deployments and the traffic split in line, so decisions keep their
// interval.
type Reconciler struct {
	// Client reads ModelServices, Deployments, pods and nodes (from the
	// manager's cache) and writes Deployments, Services and status.
	Client client.Client
	// APIReader reads around the cache (a Deployment that exists but is
	// not cached yet); nil: Client.
	APIReader client.Reader
	Metrics   MetricsSource
	// MetricsTimeout bounds each call to Metrics (<= 0:
	// DefaultMetricsTimeout; --metrics-timeout). A decision whose call
	// runs out holds the replicas.
	MetricsTimeout time.Duration
	Catalog        catalog.Catalog
	Recorder       record.EventRecorder
	// TrafficSplit keeps, per ModelService, a Service and the
	// capacity-weighted Istio VirtualService and DestinationRule that split
	// its traffic (--traffic-split; routing.go).
	TrafficSplit bool
	// Defaults are the solver and SLO check used unless a ModelService
	// says otherwise (zero value: DefaultDefaults).
	Defaults Defaults
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Colocation is the co-location model of the capacity factor (zero
	// value: interference.FittedColocation; --interference-model).
	Colocation interference.Colocation
	// GPUSharing is the sharing mode the capacity factor assumes ("":
	// time-slicing, CUDA's default and the costlier mode for saturating
	// servers; the scaler does not look at the nodes' GFD labels).
	GPUSharing interference.SharingMode
	// Admission is hetsev-scheduler's HetsevGPUShare arguments, read from
	// the scheduler's own configuration file (--scheduler-config,
	// schedulerconfig.LoadFile): free slots are the instances its rule
	// (placement.Placer.Admit) admits with them. nil is the arguments'
	// defaults (schedulerconfig.DefaultGPUShareArgs).
	Admission *schedulerconfig.GPUShareArgs
	// DecisionHistory is how many decisions status.decisions keeps, newest
	// last (<= 0: none; --decision-history).
	DecisionHistory int
	// StatusRefresh is how often the measured fields of a status are
	// rewritten while nothing else in it changes (0: DefaultStatusRefresh;
	// --status-refresh).
	StatusRefresh time.Duration
	// ClusterDomain is the Services' DNS domain of the VirtualService
	// hosts ("": DefaultClusterDomain; --cluster-domain).
	ClusterDomain string

	mu sync.Mutex
	// state is kept per ModelService object (its UID): one deleted and
	// recreated under the same name starts afresh. uids is the UID each
	// name has now, to find the state of a ModelService that is gone.
	state map[types.UID]*msState
	uids  map[types.NamespacedName]types.UID
}

// msState is what the reconciler keeps of one ModelService between
// reconciles.
type msState struct {
	autoscaler *heterogeneity.Autoscaler
	// decided: a decision (or the finding that the spec is invalid) was
	// made for generation; next is when the next decision is due, zero
	// when only a spec change brings one (an invalid spec).
	decided    bool
	generation int64
	next       time.Time
}

// SetupWithManager registers r with mgr: ModelServices trigger a reconcile
// when created, deleted or their spec changes (not on status writes, which
// the reconciler makes itself), and so does any change to a Deployment or
// Service a ModelService owns; workers ModelServices are reconciled in
// parallel. In DRA mode, so does any change to a ResourceClaimTemplate it
// owns; with the traffic split, to a VirtualService or DestinationRule it
// owns, when the API server serves networking.istio.io/v1 at setup (else
// they are written without a watch, and status says when Istio is
// missing).
func (r *Reconciler) SetupWithManager(mgr manager.Manager, workers int) error {
	b := builder.ControllerManagedBy(mgr).
		Named("modelservice").
		For(&v1alpha1.ModelService{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, deletionStarted{}))).
		Owns(&appsv1.Deployment{}).
		Owns(&v1.Service{})
	if r.TrafficSplit {
		served, err := istioServed(mgr.GetRESTMapper())
		if err != nil {
			return err
		}
		if served {
			b = b.Owns(&networkingv1.VirtualService{}).Owns(&networkingv1.DestinationRule{})
		} else {
			mgr.GetLogger().Info("Istio networking.istio.io/v1 is not served: VirtualServices and DestinationRules are written without a watch")
		}
	}
	if r.defaults().GPUMode == v1alpha1.GPUModeDRA {
		// Only in DRA mode: a cluster without resource.k8s.io/v1 (or RBAC
		// for it) runs annotation mode.
		b = b.Owns(&resourcev1.ResourceClaimTemplate{})
	}
	return b.WithOptions(controller.Options{MaxConcurrentReconciles: workers, RateLimiter: retryLimiter()}).Complete(r)
}

// MaxRetryBackoff bounds how long a ModelService whose reconcile keeps
// failing waits before the next try: controller-runtime's default backs
// off exponentially to about 16 minutes, during which the service takes
// no decision; status says Degraded meanwhile.
const MaxRetryBackoff = 30 * time.Second

// retryLimiter is controller-runtime's default rate limiter (exponential
// per item from 5 ms, and 10 requests/s with bursts of 100 overall) with
// the per-item backoff capped at MaxRetryBackoff.
func retryLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, MaxRetryBackoff),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// istioServed says whether the API server serves VirtualServices and
// DestinationRules of networking.istio.io/v1.
func istioServed(m meta.RESTMapper) (bool, error) {
	for _, kind := range []string{"VirtualService", "DestinationRule"} {
		_, err := m.RESTMapping(schema.GroupKind{Group: networkingv1.SchemeGroupVersion.Group, Kind: kind}, networkingv1.SchemeGroupVersion.Version)
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("looking up Istio's %s: %w", kind, err)
		}
	}
	return true, nil
}

func (r *Reconciler) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

func (r *Reconciler) metricsTimeout() time.Duration {
	if r.MetricsTimeout <= 0 {
		return DefaultMetricsTimeout
	}
	return r.MetricsTimeout
}

// defaults is r.Defaults, or DefaultDefaults when none is set.
func (r *Reconciler) defaults() Defaults {
	if d := r.Defaults; d.Solver == "" && d.SLOCheck == "" && d.RuntimeClassName == "" && d.GPUMode == "" && len(d.Flavors) == 0 {
		return DefaultDefaults
	}
	return r.Defaults
}

func (r *Reconciler) apiReader() client.Reader {
	if r.APIReader == nil {
		return r.Client
	}
	return r.APIReader
}

// stateOf returns ms's state, creating it; the state of an earlier
// ModelService of the same name (deleted and recreated while no reconcile
// saw it gone) is dropped.
func (r *Reconciler) stateOf(ms *v1alpha1.ModelService) *msState {
	key := types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == nil {
		r.state, r.uids = map[types.UID]*msState{}, map[types.NamespacedName]types.UID{}
	}
	if old, ok := r.uids[key]; ok && old != ms.UID {
		delete(r.state, old)
	}
	r.uids[key] = ms.UID
	s, ok := r.state[ms.UID]
	if !ok {
		s = &msState{}
		r.state[ms.UID] = s
	}
	return s
}

// forget drops the state of the ModelService named key (deleted, or being
// deleted) and its series of the scaler's metrics.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	if uid, ok := r.uids[key]; ok {
		delete(r.state, uid)
		delete(r.uids, key)
	}
	r.mu.Unlock()
	deleteMetrics(key.Namespace, key.Name)
}

// autoscalerFor returns the ModelService's autoscaler with policy p; spec
// edits apply to the next decision. A new autoscaler (this reconciler's
// first decision on the ModelService: a new leader) starts from the timing
// state, the replacement in flight and the rate history its predecessor
// persisted in status, so that it keeps the cool-downs, finishes or times
// out the replacement, and forecasts and stabilizes scale-in on the rates
// its predecessor saw.
func (s *msState) autoscalerFor(p heterogeneity.Policy, persisted *v1alpha1.ScalingState, history *v1alpha1.RateHistory) *heterogeneity.Autoscaler {
	if s.autoscaler == nil {
		s.autoscaler = heterogeneity.NewAutoscaler(p)
		if persisted != nil {
			s.autoscaler.SetState(heterogeneity.State{
				AboveThresholdSince: timeOf(persisted.AboveThresholdSince),
				LastScaleOut:        timeOf(persisted.LastScaleOut),
				LastScaleIn:         timeOf(persisted.LastScaleIn),
				LastReplacement:     timeOf(persisted.LastReplacement),
				Replacement:         replacementInFlight(persisted.Replacement),
			})
		}
		s.autoscaler.SetHistory(historyOf(history))
	}
	s.autoscaler.Policy = p
	return s.autoscaler
}

// scalingState is st as status keeps it: to the second, zero times absent.
func scalingState(st heterogeneity.State) *v1alpha1.ScalingState {
	at := func(t time.Time) *metav1.Time {
		if t.IsZero() {
			return nil
		}
		mt := metav1.NewTime(t.Truncate(time.Second))
		return &mt
	}
	return &v1alpha1.ScalingState{AboveThresholdSince: at(st.AboveThresholdSince), LastScaleOut: at(st.LastScaleOut), LastScaleIn: at(st.LastScaleIn),
		LastReplacement: at(st.LastReplacement), Replacement: replacementStatus(st.Replacement, "")}
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// deletionStarted passes the update that sets a ModelService's deletion
// timestamp (a finalizer keeps it), which GenerationChangedPredicate
// lets through only when the generation changes with it.
type deletionStarted struct{ predicate.Funcs }

func (deletionStarted) Update(e event.UpdateEvent) bool {
	return e.ObjectOld != nil && e.ObjectNew != nil && e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}

// untilDecision is how long before the next decision of a ModelService at
// generation gen is due at now: 0 when one is due now, -1 when none is
// due until its spec changes.
func (s *msState) untilDecision(gen int64, now time.Time) time.Duration {
	switch {
	case !s.decided || s.generation != gen:
		return 0
	case s.next.IsZero():
		return -1
	}
	return max(s.next.Sub(now), 0)
}

func (r *Reconciler) colocation() interference.Colocation {
	if r.Colocation.Source == "" && r.Colocation.Occupancy == nil {
		return interference.FittedColocation()
	}
	return r.Colocation
}

// admission is the placer hetsev-scheduler admits instances with.
func (r *Reconciler) admission() placement.Placer {
	if r.Admission == nil {
		return schedulerconfig.DefaultGPUShareArgs().Placer()
	}
	return r.Admission.Placer()
}

// gpuPool is hetsev-scheduler's arg gpuPool (Admission; unset is its
// default): whether the scheduler places hetsev pods only on nodes in the
// GPU pool (v1alpha1.LabelGPUPool).
func (r *Reconciler) gpuPool() bool {
	if r.Admission == nil || r.Admission.GPUPool == nil {
		return configv1.DefaultGPUSharePool
	}
	return *r.Admission.GPUPool
}

func (r *Reconciler) gpuSharing() interference.SharingMode {
	if r.GPUSharing == "" {
		return interference.SharingTimeSlicing
	}
	return r.GPUSharing
}
