// Package adapterbench measures how fast hetsev-metrics-adapter answers the
// request an HPA makes for a Pods metric: listing requests_per_second for
// every pod of a namespace through the kube-apiserver's aggregation layer,
// with 1,000 pods whose Istio series a real Prometheus holds. The same run
// measures the kube-apiserver listing those 1,000 pods from its own watch
// cache, the baseline the ratios are taken against.
package adapterbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"gonum.org/v1/gonum/stat"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/test/utils/ktesting"

	"github.com/hetsev/hetsev/internal/cluster"
	"github.com/hetsev/hetsev/internal/sim/exporters"
	"github.com/hetsev/hetsev/pkg/adapter"
)

// Config sizes a run.
type Config struct {
	Pods     int // pods in the namespace, each with an istio_requests_total series
	Requests int // timed requests per row and round
	Rounds   int // rounds, alternating baseline and adapter requests
}

// DefaultConfig is the size: 1,000 pods.
func DefaultConfig() Config { return Config{Pods: 1000, Requests: 100, Rounds: 3} }

// Row is one measured request kind.
type Row struct {
	Name     string
	Requests int
	P50, P99 float64 // ms
	Items    int     // items in the last answer
	// Ratio is P50 over the baseline's P50 in the same phase.
	Ratio float64
}

// Report is the rows of a run, in order.
type Report struct {
	Pods int
	Rows []Row
	// ResultP99 is the p99 (ms) of the row the RESULT line quotes.
	ResultP99 float64
}

const namespace = "bench"

// Run starts a control plane, Prometheus and the adapter under dir and
// measures. say reports progress.
func Run(ctx context.Context, tb ktesting.TB, dir string, cfg Config, say func(string, ...any)) (*Report, error) {
	cp, err := cluster.StartControlPlane(ctx, tb, dir)
	if err != nil {
		return nil, err
	}
	defer cp.Stop()
	cfgNoLimit := rest.CopyConfig(cp.Config)
	cfgNoLimit.QPS, cfgNoLimit.Burst = -1, 0
	c, err := kubernetes.NewForConfig(cfgNoLimit)
	if err != nil {
		return nil, err
	}
	if err := cluster.EnsureNamespace(ctx, c, namespace); err != nil {
		return nil, err
	}
	say("creating %d pods", cfg.Pods)
	rates, err := createPods(ctx, c, cfg.Pods)
	if err != nil {
		return nil, err
	}
	load := exporters.NewPodRequestLoad()
	load.SetRates(rates)
	addr, stop, err := cluster.ServeLoopback(exporters.Handler(load))
	if err != nil {
		return nil, err
	}
	defer stop()
	prom, err := cluster.StartPrometheus(ctx, dir, time.Second, []cluster.PrometheusTarget{{Job: "istio-sidecars", Address: addr, HonorLabels: true}})
	if err != nil {
		return nil, err
	}
	defer prom.Stop(5 * time.Second)
	say("Prometheus at %s; waiting for two scrapes of %d series", prom.URL, cfg.Pods)
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := prom.QueryScalar(ctx, "count(count_over_time(istio_requests_total[10s]) >= 2)")
		return err == nil && int(n) == cfg.Pods, nil
	}); err != nil {
		return nil, fmt.Errorf("waiting for Prometheus to hold every pod's series: %w", err)
	}

	rc := c.CoreV1().RESTClient()
	podList := "/api/v1/namespaces/" + namespace + "/pods"
	metricList := "/apis/custom.metrics.k8s.io/v1beta2/namespaces/" + namespace + "/pods/*/" + adapter.MetricRequestsPerSecond
	rep := &Report{Pods: cfg.Pods}
	for _, phase := range []struct {
		name string
		args []string
	}{
		// Every list runs one PromQL query: what an HPA syncing every
		// 15 s sees, as the default 5 s cache has expired by then.
		{"no cache, PromQL per list", []string{"--prometheus-cache-ttl=-1s"}},
		// Lists within the TTL reuse the answer.
		{"default 5s cache", nil},
	} {
		say("adapter (%s)", phase.name)
		ad, _, err := cluster.StartAdapter(ctx, cp, cluster.AdapterOptions{PrometheusURL: prom.URL, RateWindow: "10s", ExtraArgs: append([]string{"--v=1"}, phase.args...)})
		if err != nil {
			return nil, err
		}
		// The aggregator may still point at the previous adapter for a
		// moment: wait for a full answer.
		var last string
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			n, err := items(ctx, rc, metricList)
			if s := fmt.Sprintf("%d items, error %v", n, err); s != last && (err != nil || n != cfg.Pods) {
				last = s
				say("  not yet: %s", s)
			}
			return err == nil && n == cfg.Pods, nil
		}); err != nil {
			ad.Stop(time.Second)
			return nil, fmt.Errorf("waiting for the adapter to list %d pods (last: %s): %w", cfg.Pods, last, err)
		}
		base, metric, err := measure(ctx, rc, podList, metricList, cfg)
		ad.Stop(5 * time.Second)
		if err != nil {
			return nil, err
		}
		base.Name = fmt.Sprintf("kube-apiserver: list %d pods (baseline)", cfg.Pods)
		metric.Name = "adapter via APIService, " + phase.name
		base.Ratio, metric.Ratio = 1, metric.P50/base.P50
		rep.Rows = append(rep.Rows, base, metric)
		if len(rep.Rows) == 2 {
			rep.ResultP99 = metric.P99
		}
	}
	return rep, nil
}

// createPods creates n pods (never run: the adapter needs only their names)
// and returns their request rates: 1 to 10 requests/s.
func createPods(ctx context.Context, c kubernetes.Interface, n int) (map[types.NamespacedName]float64, error) {
	rates := map[types.NamespacedName]float64{}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				p := &v1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("model-%04d", i), Namespace: namespace, Labels: map[string]string{"app": "bench"}},
					Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "model-server", Image: "model-server"}}},
				}
				_, err := c.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{})
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				rates[types.NamespacedName{Namespace: namespace, Name: p.Name}] = float64(1 + i%10)
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	return rates, firstErr
}

// items GETs path and counts the items of the list it returns; the time
// to decode is not part of what measure times.
func items(ctx context.Context, rc rest.Interface, path string) (int, error) {
	raw, err := rc.Get().AbsPath(path).SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return 0, err
	}
	return count(raw)
}

func count(raw []byte) (int, error) {
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return 0, err
	}
	return len(list.Items), nil
}

// measure times cfg.Requests sequential GETs of each path per round,
// alternating paths request by request so that both see the same machine.
func measure(ctx context.Context, rc rest.Interface, basePath, metricPath string, cfg Config) (Row, Row, error) {
	var bt, mt []float64
	var bn, mn int
	for r := 0; r < cfg.Rounds; r++ {
		for i := 0; i < cfg.Requests; i++ {
			for _, x := range []struct {
				path string
				ms   *[]float64
				n    *int
			}{{basePath, &bt, &bn}, {metricPath, &mt, &mn}} {
				start := time.Now()
				raw, err := rc.Get().AbsPath(x.path).SetHeader("Accept", "application/json").DoRaw(ctx)
				took := time.Since(start)
				if err != nil {
					return Row{}, Row{}, fmt.Errorf("GET %s: %w", x.path, err)
				}
				*x.ms = append(*x.ms, float64(took.Microseconds())/1000)
				if *x.n, err = count(raw); err != nil {
					return Row{}, Row{}, fmt.Errorf("GET %s: %w", x.path, err)
				}
			}
		}
	}
	return row(bt, bn), row(mt, mn), nil
}

func row(ms []float64, n int) Row {
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	return Row{Requests: len(s), P50: quantile(s, 0.50), P99: quantile(s, 0.99), Items: n}
}

// quantile of sorted values, nearest rank (q in [0, 1]); NaN for none.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return stat.Quantile(q, stat.Empirical, sorted, nil)
}

// WriteTable prints the rows.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "request (%d pods)\trequests\titems\tp50 ms\tp99 ms\tp50 / baseline p50\n", r.Pods)
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.2f\t%.2f\n", row.Name, row.Requests, row.Items, row.P50, row.P99, row.Ratio)
	}
	return tw.Flush()
}

// ResultLine is the last line of the output: the p99 of listing the metric
// for every pod with a PromQL query per list. Its name is the issue's,
// list_1000, whatever -pods is.
func (r *Report) ResultLine() string {
	return fmt.Sprintf("RESULT list_1000_p99_ms=%.2f", r.ResultP99)
}
