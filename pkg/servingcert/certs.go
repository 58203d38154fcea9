// Package servingcert keeps a self-signed serving certificate for a server
// the kube-apiserver calls (hetsev-scaler's pod webhook,
// hetsev-metrics-adapter's aggregated API): in a Secret that every replica
// shares, renewed ahead of expiry by a CA the API server already trusts
// (certs.go), in the files the server reads, and in the caBundle of the
// objects that point the API server at it (provisioner.go; the caller says
// which objects).
package servingcert

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// Keys of the certificate Secret (type kubernetes.io/tls) besides tls.crt
// (the serving certificate followed by the CA that signed it) and tls.key.
const (
	// SecretCABundleKey holds the CAs the API server must trust: the one
	// that signed tls.crt, the next one, and earlier ones until they
	// expire. It is what goes into caBundle (a webhook configuration's, an
	// APIService's).
	SecretCABundleKey = "ca.crt"
	// The CA that signs the next serving certificate, and its key. It is
	// in ca.crt from the moment it is made, so that by the time a renewed
	// certificate is served, the API server has long trusted its CA.
	secretNextCACertKey = "next-ca.crt"
	secretNextCAKeyKey  = "next-ca.key"
)

// clockSkew is how far back a new certificate's validity starts, so that a
// machine whose clock is behind accepts it (client-go's certutil does the
// same).
const clockSkew = time.Hour

// Options says where a serving certificate lives and what it must cover.
type Options struct {
	// Component names the server in the Secret's
	// app.kubernetes.io/component label, the CA's name and the logs, e.g.
	// "webhook" or "metrics-adapter"; default "server".
	Component  string
	Namespace  string   // of the Secret
	SecretName string   // a kubernetes.io/tls Secret: tls.crt (serving cert + its CA), tls.key, ca.crt, next-ca.{crt,key}
	Hosts      []string // DNS names or IPs the API server dials, e.g. hetsev-webhook.hetsev-system.svc
	// MaxAge is the validity of a new certificate (default 1 year; a CA's
	// is twice that); RenewBefore renews one that expires sooner than this
	// (default 30 days).
	MaxAge, RenewBefore time.Duration
}

func (o *Options) defaults() error {
	if len(o.Hosts) == 0 || o.SecretName == "" || o.Namespace == "" {
		return fmt.Errorf("serving certificate: need hosts, a Secret name and a namespace")
	}
	if o.Component == "" {
		o.Component = "server"
	}
	if o.MaxAge == 0 {
		o.MaxAge = 365 * 24 * time.Hour
	}
	if o.RenewBefore == 0 {
		o.RenewBefore = 30 * 24 * time.Hour
	}
	return nil
}

// servingCert is what the Secret holds, PEM encoded.
type servingCert struct {
	crt, key        []byte // tls.crt, tls.key
	bundle          []byte // ca.crt
	nextCA, nextKey []byte // next-ca.crt, next-ca.key
}

func fromSecret(s *v1.Secret) servingCert {
	return servingCert{crt: s.Data[v1.TLSCertKey], key: s.Data[v1.TLSPrivateKeyKey], bundle: s.Data[SecretCABundleKey],
		nextCA: s.Data[secretNextCACertKey], nextKey: s.Data[secretNextCAKeyKey]}
}

func (sc servingCert) into(s *v1.Secret) {
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[v1.TLSCertKey], s.Data[v1.TLSPrivateKeyKey], s.Data[SecretCABundleKey] = sc.crt, sc.key, sc.bundle
	s.Data[secretNextCACertKey], s.Data[secretNextCAKeyKey] = sc.nextCA, sc.nextKey
}

// Ensure returns the TLS certificate and the CA bundle (PEM) the API
// server's caBundle must carry. It is kept in a Secret so that
// every replica serves the same certificate: a missing Secret is created
// with a new certificate, one that does not cover Hosts or expires within
// RenewBefore is replaced (see ensureSecret). Errors: API errors.
func Ensure(ctx context.Context, c kubernetes.Interface, o Options) (tls.Certificate, []byte, error) {
	sc, err := ensureSecret(ctx, c, o)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pair, err := tls.X509KeyPair(sc.crt, sc.key)
	if err != nil { // refresh made it; cannot happen
		return tls.Certificate{}, nil, fmt.Errorf("%s certificate in Secret %s/%s: %w", o.Component, o.Namespace, o.SecretName, err)
	}
	return pair, sc.bundle, nil
}

// ensureSecret reads the certificate Secret, creates it when absent and
// writes it back when refresh changed it (a new certificate, a new next
// CA, expired CAs dropped from the bundle). Replicas race on it with
// optimistic concurrency: the loser of a create or update reads the
// winner's Secret and, finding it fresh, keeps it.
func ensureSecret(ctx context.Context, c kubernetes.Interface, o Options) (servingCert, error) {
	if err := o.defaults(); err != nil {
		return servingCert{}, err
	}
	secrets := c.CoreV1().Secrets(o.Namespace)
	var sc servingCert
	err := retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		s, err := secrets.Get(ctx, o.SecretName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			var why string
			if sc, why, err = refresh(servingCert{}, o, time.Now()); err != nil {
				return err
			}
			s = &v1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: o.SecretName, Namespace: o.Namespace,
					Labels: map[string]string{"app.kubernetes.io/part-of": "hetsev", "app.kubernetes.io/component": o.Component}},
				Type: v1.SecretTypeTLS,
			}
			sc.into(s)
			_, err = secrets.Create(ctx, s, metav1.CreateOptions{})
			if err == nil {
				klog.InfoS("created the serving certificate", "component", o.Component, "secret", klog.KObj(s), "hosts", o.Hosts, "why", why)
			}
			return err // AlreadyExists: another replica won; read its Secret
		case err != nil:
			return err
		}
		var why string
		if sc, why, err = refresh(fromSecret(s), o, time.Now()); err != nil || why == "" {
			return err
		}
		s.Type = v1.SecretTypeTLS
		sc.into(s)
		if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			return err
		}
		klog.InfoS("updated the serving certificate", "component", o.Component, "secret", klog.KObj(s), "why", why)
		return nil
	})
	if err != nil {
		return servingCert{}, fmt.Errorf("%s certificate in Secret %s/%s: %w", o.Component, o.Namespace, o.SecretName, err)
	}
	return sc, nil
}

// refresh returns the Secret's content as it should be at now, and why it
// changed ("" when it did not):
//   - a serving certificate that is not a key pair, does not cover Hosts,
//     is not signed by the CA after it in tls.crt, or expires within
//     RenewBefore is replaced by one signed by the next CA, which has been
//     in the caBundle since the previous renewal, so the API server trusts
//     the new certificate before any replica serves it. A CA lives twice
//     MaxAge and a certificate no longer than its CA, so on schedule the
//     next CA has MaxAge+RenewBefore left when it signs. Only a next CA
//     that is missing or expires within RenewBefore (no replica ran for
//     about MaxAge) is passed over for a new CA: then there was no
//     certificate to keep serving anyway;
//   - the CA that signed it is then the current one, and a new next CA is
//     made;
//   - the bundle is the previous bundle, the current CA and the next CA,
//     less expired CAs: replicas still serving the previous certificate
//     during a rollout stay trusted until it expires.
//
// A Secret with only tls.crt and tls.key keeps its certificate and gets a
// bundle and a next CA.
func refresh(cur servingCert, o Options, now time.Time) (servingCert, string, error) {
	if o.Component == "" {
		o.Component = "server"
	}
	out := cur
	var why []string
	next, err := parseCA(cur.nextCA, cur.nextKey)
	if err == nil && next.cert.NotAfter.Sub(now) <= o.RenewBefore {
		err = fmt.Errorf("expires %s", next.cert.NotAfter.Format(time.RFC3339))
	}
	nextUsable := err == nil
	if reason := stale(cur.crt, cur.key, o, now); reason != "" {
		issuer := next
		if !nextUsable {
			if issuer, err = newCA(o.Component, now, 2*o.MaxAge); err != nil {
				return servingCert{}, "", err
			}
		}
		if out.crt, out.key, err = issue(issuer, o, now); err != nil {
			return servingCert{}, "", err
		}
		nextUsable = false // it is the current CA now
		why = append(why, "serving certificate "+reason)
	}
	if !nextUsable {
		if next, err = newCA(o.Component, now, 2*o.MaxAge); err != nil {
			return servingCert{}, "", err
		}
		out.nextCA, out.nextKey = next.certPEM, next.keyPEM
		if len(why) == 0 {
			why = append(why, "no usable next CA")
		}
	}
	var cas []*x509.Certificate
	cas = append(cas, parseCerts(cur.bundle)...)
	cas = append(cas, chainCAs(out.crt)...)
	cas = append(cas, next.cert)
	out.bundle = encodeBundle(cas, now)
	if len(why) == 0 && !bytes.Equal(out.bundle, cur.bundle) {
		why = append(why, "CA bundle out of date")
	}
	return out, strings.Join(why, "; "), nil
}

// stale says why the serving certificate in tls.crt cannot be served any
// longer, or "" when it can.
func stale(crt, key []byte, o Options, now time.Time) string {
	if len(crt) == 0 {
		return "missing"
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return "not a key pair: " + err.Error()
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return "unparsable: " + err.Error()
	}
	if leaf.NotAfter.Sub(now) < o.RenewBefore {
		return fmt.Sprintf("expires %s", leaf.NotAfter.Format(time.RFC3339))
	}
	for _, h := range o.Hosts {
		if err := leaf.VerifyHostname(h); err != nil {
			return fmt.Sprintf("does not cover %s", h)
		}
	}
	roots := x509.NewCertPool()
	for _, ca := range chainCAs(crt) {
		roots.AddCert(ca)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return "not signed by the CA after it in " + v1.TLSCertKey + ": " + err.Error()
	}
	return ""
}

type keyPair struct {
	cert            *x509.Certificate
	key             crypto.Signer
	certPEM, keyPEM []byte
}

func parseCA(certPEM, keyPEM []byte) (keyPair, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return keyPair{}, err
	}
	k, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return keyPair{}, err
	}
	signer, ok := k.(crypto.Signer)
	if !ok || !certs[0].IsCA {
		return keyPair{}, fmt.Errorf("not a CA key pair")
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return keyPair{}, err
	}
	return keyPair{cert: certs[0], key: signer, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// newCA makes a self-signed CA for component valid for maxAge (and
// clockSkew before now).
func newCA(component string, now time.Time, maxAge time.Duration) (keyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("hetsev-%s-ca@%d", component, now.UnixNano())},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(maxAge),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	return sign(tmpl, nil)
}

// issue makes a serving certificate for o.Hosts signed by ca, valid for
// o.MaxAge (no longer than ca), and returns tls.crt (the certificate
// followed by ca) and tls.key.
func issue(ca keyPair, o Options, now time.Time) (crt, key []byte, err error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: o.Hosts[0]},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(o.MaxAge),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if tmpl.NotAfter.After(ca.cert.NotAfter) {
		tmpl.NotAfter = ca.cert.NotAfter
	}
	for _, h := range o.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	kp, err := sign(tmpl, &ca)
	if err != nil {
		return nil, nil, err
	}
	return append(kp.certPEM, ca.certPEM...), kp.keyPEM, nil
}

// sign makes a new P-256 key and a certificate from tmpl with a random
// serial number, signed by parent (nil: self-signed).
func sign(tmpl *x509.Certificate, parent *keyPair) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
		return keyPair{}, err
	}
	issuer, signer := tmpl, crypto.Signer(key)
	if parent != nil {
		issuer, signer = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, key.Public(), signer)
	if err != nil {
		return keyPair{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{cert: cert, key: key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}, nil
}

// parseCerts returns the certificates in PEM data, skipping what does not
// parse.
func parseCerts(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return out
		}
		if b.Type != certutil.CertificateBlockType {
			continue
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// chainCAs returns the CA certificates in tls.crt after the serving
// certificate.
func chainCAs(crt []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for i, c := range parseCerts(crt) {
		if i > 0 && c.IsCA {
			out = append(out, c)
		}
	}
	return out
}

// encodeBundle PEM-encodes the CAs that are still valid at now, each once,
// in the order given.
func encodeBundle(cas []*x509.Certificate, now time.Time) []byte {
	var buf bytes.Buffer
	seen := map[string]bool{}
	for _, c := range cas {
		if c == nil || seen[string(c.Raw)] || now.After(c.NotAfter) {
			continue
		}
		seen[string(c.Raw)] = true
		_ = pem.Encode(&buf, &pem.Block{Type: certutil.CertificateBlockType, Bytes: c.Raw})
	}
	return buf.Bytes()
}
