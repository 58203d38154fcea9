package server

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	resourceinformers "k8s.io/client-go/informers/resource/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/metadata/metadatalister"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/hetsev/hetsev/pkg/adapter"
	"github.com/hetsev/hetsev/pkg/apis/v1alpha1"
	"github.com/hetsev/hetsev/pkg/kubeversion"
)

// clusterInformers are the informers the provider and the scraper read.
type clusterInformers struct {
	factory     informers.SharedInformerFactory
	pods        coreinformers.PodInformer
	deployments appsinformers.DeploymentInformer

	// ResourceClaims (of namespace) and ResourceSlices, from factory, in
	// GPU mode dra only (nil otherwise): where a pod without
	// hetsev.io/gpu-index finds its GPU.
	claims resourceinformers.ResourceClaimInformer
	slices resourceinformers.ResourceSliceInformer

	// ModelServices by metadata only: names and labels are all the
	// provider needs. Nil without the CRD.
	metaFactory    metadatainformer.SharedInformerFactory
	services       metadatalister.Lister
	servicesSynced func() bool
}

// newInformers refuses an API server older than hetsev supports
// (pkg/kubeversion) and returns the informers of namespace ("" for all), with
// those of ResourceClaims and ResourceSlices when gpuMode is
// v1alpha1.GPUModeDRA (an error when the API server does not serve
// resource.k8s.io/v1). Without the ModelService CRD, ModelServices are not
// listed by selector (a ModelService asked for by name is still served
// from its pods).
func newInformers(cfg *rest.Config, namespace, gpuMode string) (*clusterInformers, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	if err := kubeversion.Check(client.Discovery()); err != nil {
		return nil, err
	}
	inf := &clusterInformers{
		factory: informers.NewSharedInformerFactoryWithOptions(client, 0,
			informers.WithNamespace(namespace), informers.WithTransform(stripManagedFields)),
		servicesSynced: func() bool { return false },
	}
	inf.pods = inf.factory.Core().V1().Pods()
	inf.deployments = inf.factory.Apps().V1().Deployments()
	// Register the informers before the factory starts.
	inf.pods.Informer()
	inf.deployments.Informer()
	if gpuMode == v1alpha1.GPUModeDRA {
		gv := resourcev1.SchemeGroupVersion.String()
		if _, err := client.Discovery().ServerResourcesForGroupVersion(gv); apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("--gpu-mode=%s: the API server does not serve %s (ResourceClaims, ResourceSlices)", gpuMode, gv)
		} else if err != nil {
			// Not a missing API: start the informers anyway; they retry.
			klog.ErrorS(err, "Discovering the DRA API", "groupVersion", gv)
		}
		// Slices are cluster-scoped: the factory's namespace does not
		// apply to them.
		inf.claims = inf.factory.Resource().V1().ResourceClaims()
		inf.slices = inf.factory.Resource().V1().ResourceSlices()
		inf.claims.Informer()
		inf.slices.Informer()
	}

	msGVR := adapter.ModelServicesResource.WithVersion("v1alpha1")
	if _, err := client.Discovery().ServerResourcesForGroupVersion(msGVR.GroupVersion().String()); apierrors.IsNotFound(err) {
		klog.InfoS("ModelService CRD not installed; ModelServices are not listed by selector", "groupVersion", msGVR.GroupVersion())
		return inf, nil
	} else if err != nil {
		// Not a missing CRD: start the informer anyway; it retries.
		klog.ErrorS(err, "Discovering the ModelService API", "groupVersion", msGVR.GroupVersion())
	}
	metaClient, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating metadata client: %w", err)
	}
	inf.metaFactory = metadatainformer.NewFilteredSharedInformerFactory(metaClient, 0, namespace, nil)
	informer := inf.metaFactory.ForResource(msGVR).Informer()
	inf.services = metadatalister.New(informer.GetIndexer(), msGVR)
	inf.servicesSynced = informer.HasSynced
	return inf, nil
}

// draSynced reports whether the ResourceClaim and ResourceSlice caches
// have synced; true without them.
func (inf *clusterInformers) draSynced() bool {
	return inf.claims == nil || (inf.claims.Informer().HasSynced() && inf.slices.Informer().HasSynced())
}

// start starts the informers; they stop when ctx is done.
func (inf *clusterInformers) start(ctx context.Context) {
	inf.factory.Start(ctx.Done())
	if inf.metaFactory != nil {
		inf.metaFactory.Start(ctx.Done())
	}
}

// stripManagedFields drops managedFields from cached objects; the adapter
// never reads them.
func stripManagedFields(obj interface{}) (interface{}, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
