package exporters

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hetsev/hetsev/pkg/adapter"
)

// PodRequestLoad is a simulated exporter that speaks for many pods at once,
// as a federation endpoint would: istio_requests_total{reporter="destination",
// namespace, pod} counters that grow at each pod's rate (requests/s, wall
// clock). Prometheus must scrape it with honor_labels. Counters are
// advanced exactly, so the rate Prometheus sees is the rate set.
type PodRequestLoad struct {
	mu       sync.Mutex
	desc     *prometheus.Desc
	now      func() time.Time
	last     time.Time
	rates    map[types.NamespacedName]float64
	counters map[types.NamespacedName]float64
}

// NewPodRequestLoad returns a load with no pods.
func NewPodRequestLoad() *PodRequestLoad {
	return &PodRequestLoad{
		desc: prometheus.NewDesc(adapter.SeriesIstioRequests,
			"Total number of requests handled by the Istio proxy (simulated, per pod).",
			[]string{"namespace", "pod"}, prometheus.Labels{adapter.LabelReporter: adapter.ReporterDestination}),
		now:      time.Now,
		last:     time.Now(),
		rates:    map[types.NamespacedName]float64{},
		counters: map[types.NamespacedName]float64{},
	}
}

// advance adds each pod's requests since the last call; mu held.
func (l *PodRequestLoad) advance() {
	now := l.now()
	dt := now.Sub(l.last).Seconds()
	l.last = now
	for p, r := range l.rates {
		l.counters[p] += r * dt
	}
}

// SetRates replaces the pods and their rates (requests/s). A pod left out
// stops being exported; a new pod's counter starts at 0.
func (l *PodRequestLoad) SetRates(rates map[types.NamespacedName]float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advance()
	l.rates = map[types.NamespacedName]float64{}
	for p, r := range rates {
		l.rates[p] = r
	}
	for p := range l.counters {
		if _, ok := rates[p]; !ok {
			delete(l.counters, p)
		}
	}
}

// Describe implements prometheus.Collector.
func (l *PodRequestLoad) Describe(ch chan<- *prometheus.Desc) { ch <- l.desc }

// Collect implements prometheus.Collector.
func (l *PodRequestLoad) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	l.advance()
	pods := make([]types.NamespacedName, 0, len(l.rates))
	for p := range l.rates {
		pods = append(pods, p)
	}
	values := make([]float64, len(pods))
	sort.Slice(pods, func(i, j int) bool { return pods[i].String() < pods[j].String() })
	for i, p := range pods {
		values[i] = l.counters[p]
	}
	l.mu.Unlock()
	for i, p := range pods {
		ch <- prometheus.MustNewConstMetric(l.desc, prometheus.CounterValue, values[i], p.Namespace, p.Name)
	}
}
