// Package scaler is hetsev-scaler's controller: for each ModelService it
// keeps one Deployment per GPU type and, every interval, reads the arrival
// rate from custom.metrics.k8s.io, runs HetSev's scaling decision
// (pkg/heterogeneity, paper 4.1) and sets the Deployments' replicas. A
// metrics outage holds replicas; it never scales in on missing data.
package scaler

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hetsev/hetsev/pkg/catalog"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/heterogeneity"
	"github.com/hetsev/hetsev/pkg/traffic"
	istioclient "istio.io/client-go/pkg/clientset/versioned"
)

// Controller reconciles ModelServices.
type Controller struct {
	kube     kubernetes.Interface
	dyn      dynamic.Interface
	metrics  MetricsSource
	catalog  catalog.Catalog
	recorder record.EventRecorder
	now      func() time.Time

	msInformer     cache.SharedIndexInformer
	deployments    appslisters.DeploymentLister
	nodes          corelisters.NodeLister
	pods           corelisters.PodLister
	synced         []cache.InformerSynced
	startFactories func(stop <-chan struct{})
	queue          workqueue.TypedRateLimitingInterface[string]

	traffic  *traffic.Writer
	services sync.Map // ModelService UIDs whose Service exists
	defaults Defaults

	mu         sync.Mutex
	autoscaler map[string]*heterogeneity.Autoscaler
}

// Options configure a Controller.
type Options struct {
	Kube     kubernetes.Interface
	Dynamic  dynamic.Interface
	Metrics  MetricsSource
	Catalog  catalog.Catalog
	Recorder record.EventRecorder
	// Namespace limits the controller to one namespace ("" = all).
	Namespace string
	// Resync is the informers' resync period.
	Resync time.Duration
	// Defaults are the solver and SLO check used unless a ModelService
	// says otherwise (zero value: DefaultDefaults).
	Defaults Defaults
	// Istio, when set, receives capacity-weighted VirtualServices and
	// DestinationRules (pkg/traffic); nil disables the traffic split.
	Istio istioclient.Interface
}

// New builds a Controller and its informers; call Run to start it.
func New(o Options) *Controller {
	kf := informers.NewSharedInformerFactoryWithOptions(o.Kube, o.Resync, informers.WithNamespace(o.Namespace))
	// Nodes are cluster-scoped: a separate factory sees them all.
	nf := informers.NewSharedInformerFactory(o.Kube, o.Resync)
	df := dynamicinformer.NewFilteredDynamicSharedInformerFactory(o.Dynamic, o.Resync, o.Namespace, nil)
	c := &Controller{
		kube: o.Kube, dyn: o.Dynamic, metrics: o.Metrics, catalog: o.Catalog, recorder: o.Recorder,
		now:         time.Now,
		msInformer:  df.ForResource(v1alpha1.Resource).Informer(),
		deployments: kf.Apps().V1().Deployments().Lister(),
		nodes:       nf.Core().V1().Nodes().Lister(),
		pods:        kf.Core().V1().Pods().Lister(),
		queue:       workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		autoscaler:  map[string]*heterogeneity.Autoscaler{},
	}
	if o.Istio != nil {
		c.traffic = &traffic.Writer{Client: o.Istio}
	}
	c.defaults = o.Defaults
	if c.defaults == (Defaults{}) {
		c.defaults = DefaultDefaults
	}
	_, _ = c.msInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(old, cur interface{}) { c.enqueueIfSpecChanged(old, cur) },
		DeleteFunc: func(obj interface{}) {
			if k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				c.mu.Lock()
				delete(c.autoscaler, k)
				c.mu.Unlock()
			}
		},
	})
	c.synced = []cache.InformerSynced{
		c.msInformer.HasSynced,
		kf.Apps().V1().Deployments().Informer().HasSynced,
		kf.Core().V1().Pods().Informer().HasSynced,
		nf.Core().V1().Nodes().Informer().HasSynced,
	}
	c.startFactories = func(stop <-chan struct{}) { kf.Start(stop); nf.Start(stop); df.Start(stop) }
	return c
}

func (c *Controller) enqueue(obj interface{}) {
	if k, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(k)
	}
}

// enqueueIfSpecChanged reacts to spec edits only: status writes by the
// controller itself would otherwise re-trigger a decision before its
// interval.
func (c *Controller) enqueueIfSpecChanged(old, cur interface{}) {
	o, ok1 := old.(*unstructured.Unstructured)
	n, ok2 := cur.(*unstructured.Unstructured)
	if ok1 && ok2 && o.GetGeneration() == n.GetGeneration() {
		return
	}
	c.enqueue(cur)
}

// Run starts the informers and workers and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	c.startFactories(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("caches did not sync")
	}
	logger.Info("hetsev-scaler started", "workers", workers)
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) worker(ctx context.Context) {
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		next, err := c.sync(ctx, key)
		if err != nil {
			klog.FromContext(ctx).Error(err, "reconciling ModelService", "key", key)
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
			if next > 0 {
				c.queue.AddAfter(key, next)
			}
		}
		c.queue.Done(key)
	}
}
