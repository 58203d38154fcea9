package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// NodeAccess opens a control plane to real kubelets on a bridge the run
// created: the API server is also reached at HostIP:Port (a TCP relay to
// its loopback listener, which the apiserver's test server always binds to
// 127.0.0.1), with a serving certificate valid for that address and for
// the `kubernetes` Service's ClusterIP, and it reaches kubelets through
// their InternalIP only.
type NodeAccess struct {
	// HostIP is the host's address on the nodes' bridge, e.g. 172.30.0.1.
	HostIP net.IP
	// Port is the port at HostIP, e.g. 6443.
	Port int
	// ServiceCIDR is the API server's --service-cluster-ip-range, e.g.
	// 10.96.0.0/16; its first address is the `kubernetes` Service's.
	ServiceCIDR string
}

// nodePKI is what a control plane with NodeAccess issued: its CA (which
// kubelets trust for clients and nodes trust for the API server) and where
// it wrote the files.
type nodePKI struct {
	access NodeAccess
	ca     *testCA
	caFile string
	relay  net.Listener
	wg     sync.WaitGroup
}

// apiserverArgs issues the certificates and returns the kube-apiserver
// flags for real nodes:
//   - the serving certificate for 127.0.0.1, HostIP and the Service IP;
//   - the run's CA as --client-ca-file, so kubelets authenticate with a
//     certificate for system:node:<node> in group system:nodes;
//   - a client certificate for the API server towards kubelets (logs,
//     exec), in system:masters so the kubelet's webhook authorizer admits it;
//   - --kubelet-preferred-address-types=InternalIP: otherwise logs and exec
//     resolve the node name through the machine's DNS resolver;
//   - --authorization-mode=Node,RBAC: the Node authorizer gives kubelets
//     what their pods need and nothing else, as in a real cluster.
func (p *nodePKI) apiserverArgs(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	_, svcNet, err := net.ParseCIDR(p.access.ServiceCIDR)
	if err != nil {
		return nil, fmt.Errorf("NodeAccess.ServiceCIDR %q: %w", p.access.ServiceCIDR, err)
	}
	svcIP := append(net.IP(nil), svcNet.IP.To4()...)
	svcIP[len(svcIP)-1]++
	if p.ca, err = newTestCA("hetsev-e2e-ca"); err != nil {
		return nil, err
	}
	serving, err := p.ca.serving("kube-apiserver",
		[]net.IP{net.IPv4(127, 0, 0, 1), p.access.HostIP, svcIP},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return nil, err
	}
	kubeletClient, err := p.ca.client("kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		return nil, err
	}
	p.caFile = filepath.Join(dir, "ca.crt")
	files := map[string][]byte{
		p.caFile:                                 p.ca.certPEM,
		filepath.Join(dir, "apiserver.crt"):      append(serving.cert, p.ca.certPEM...),
		filepath.Join(dir, "apiserver.key"):      serving.key,
		filepath.Join(dir, "kubelet-client.crt"): kubeletClient.cert,
		filepath.Join(dir, "kubelet-client.key"): kubeletClient.key,
	}
	for f, b := range files {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return nil, err
		}
	}
	return []string{
		"--tls-cert-file=" + filepath.Join(dir, "apiserver.crt"),
		"--tls-private-key-file=" + filepath.Join(dir, "apiserver.key"),
		"--client-ca-file=" + p.caFile,
		"--kubelet-client-certificate=" + filepath.Join(dir, "kubelet-client.crt"),
		"--kubelet-client-key=" + filepath.Join(dir, "kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP",
		"--advertise-address=" + p.access.HostIP.String(),
		"--service-cluster-ip-range=" + p.access.ServiceCIDR,
		"--authorization-mode=Node,RBAC",
		// Webhooks and APIServices are dialled at their Services' endpoint
		// (pod) addresses, which the host routes to the nodes: the host
		// runs no kube-proxy to translate ClusterIPs.
		"--enable-aggregator-routing=true",
		// The test server points the peer proxy's CA at the self-signed
		// certificate it writes only when no serving certificate is given;
		// a single API server has no peers to proxy to.
		"--feature-gates=UnknownVersionInteroperabilityProxy=false",
	}, nil
}

// startRelay accepts on HostIP:Port and copies each connection to the API
// server's loopback address, TLS untouched.
func (p *nodePKI) startRelay(apiserverURL string) error {
	u, err := url.Parse(apiserverURL)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(p.access.HostIP.String(), strconv.Itoa(p.access.Port))
	if p.relay, err = net.Listen("tcp", addr); err != nil {
		return fmt.Errorf("listening for nodes on %s (is the bridge up?): %w", addr, err)
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := p.relay.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					klog.ErrorS(err, "node relay stopped")
				}
				return
			}
			go relay(c, u.Host)
		}
	}()
	return nil
}

func relay(in net.Conn, to string) {
	defer in.Close()
	out, err := net.Dial("tcp", to)
	if err != nil {
		klog.ErrorS(err, "node relay: dialing the API server", "to", to)
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(out, in)
	go cp(in, out)
	<-done
	<-done
}

func (p *nodePKI) stop() {
	if p.relay != nil {
		_ = p.relay.Close()
		p.wg.Wait()
	}
}

// NodeServer is the URL nodes and pods reach the API server at, empty when
// the control plane was started without NodeAccess.
func (cp *ControlPlane) NodeServer() string {
	if cp.nodes == nil {
		return ""
	}
	return "https://" + net.JoinHostPort(cp.nodes.access.HostIP.String(), strconv.Itoa(cp.nodes.access.Port))
}

// CAFile is the run's CA certificate (PEM) with NodeAccess: kubelets trust
// it for client certificates (authentication.x509.clientCAFile), nodes for
// the API server's serving certificate.
func (cp *ControlPlane) CAFile() string {
	if cp.nodes == nil {
		return ""
	}
	return cp.nodes.caFile
}

// WriteNodeKubeconfig writes a kubeconfig for the kubelet of node: the API
// server at NodeServer, and a client certificate for system:node:<node> in
// group system:nodes (what the Node authorizer expects).
func (cp *ControlPlane) WriteNodeKubeconfig(node, path string) error {
	return cp.WriteKubeconfigFor("system:node:"+node, []string{"system:nodes"}, path)
}

// WriteKubeconfigFor writes a kubeconfig for a program on a node: the API
// server at NodeServer, and a client certificate of the run's CA for user
// in groups, e.g. system:kube-proxy (bound to system:node-proxier by the
// API server's default RBAC).
func (cp *ControlPlane) WriteKubeconfigFor(user string, groups []string, path string) error {
	if cp.nodes == nil {
		return fmt.Errorf("control plane started without NodeAccess")
	}
	cred, err := cp.nodes.ca.client(user, groups...)
	if err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cp.NodeServer(), CertificateAuthorityData: cp.nodes.ca.certPEM}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cred.cert, ClientKeyData: cred.key}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "user"}
	kc.CurrentContext = "local"
	return clientcmd.WriteToFile(*kc, path)
}

// publishKubernetesEndpoints writes the `kubernetes` Service's Endpoints
// and EndpointSlice: HostIP:Port, where the relay listens. The API server
// runs with --endpoint-reconciler-type=none (its own address is loopback),
// so in-cluster clients reach it through the Service only with these.
func (p *nodePKI) publishKubernetesEndpoints(ctx context.Context, c kubernetes.Interface) error {
	ip, port := p.access.HostIP.String(), int32(p.access.Port)
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: ip}},
			Ports:     []corev1.EndpointPort{{Name: "https", Port: port, Protocol: corev1.ProtocolTCP}},
		}},
	}
	if _, err := c.CoreV1().Endpoints(metav1.NamespaceDefault).Create(ctx, ep, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("endpoints of the kubernetes Service: %w", err)
	}
	name, proto := "https", corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes", discoveryv1.LabelManagedBy: "hetsev-cluster"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	if _, err := c.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("endpointslice of the kubernetes Service: %w", err)
	}
	return nil
}
