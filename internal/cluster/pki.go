package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// testCA is a certificate authority of one control plane's run: it signs
// the API server's serving certificate for the node bridge and the client
// certificates of kubelets and of the API server towards kubelets. Never
// written outside the run's directory; it lives as long as the run.
type testCA struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// pemPair is a certificate and its private key, PEM-encoded.
type pemPair struct{ cert, key []byte }

func newTestCA(name string) (*testCA, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	p, key, cert, err := signCert(tmpl, nil)
	if err != nil {
		return nil, err
	}
	return &testCA{cert: cert, key: key, certPEM: p.cert}, nil
}

// serving issues a serving certificate for the IP addresses and DNS names
// in hosts.
func (ca *testCA) serving(cn string, ips []net.IP, dns []string) (pemPair, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: ips,
		DNSNames:    dns,
	}
	p, _, _, err := signCert(tmpl, ca)
	return p, err
}

// client issues a client certificate for user cn in groups: the API
// server's x509 authenticator takes the user from CN and groups from O.
func (ca *testCA) client(cn string, groups ...string) (pemPair, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn, Organization: groups},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	p, _, _, err := signCert(tmpl, ca)
	return p, err
}

// signCert makes a P-256 key and a certificate valid for a day from tmpl,
// signed by parent (nil: self-signed).
func signCert(tmpl *x509.Certificate, parent *testCA) (pemPair, crypto.Signer, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return pemPair{}, nil, nil, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
		return pemPair{}, nil, nil, err
	}
	now := time.Now()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
	issuer, signer := tmpl, crypto.Signer(key)
	if parent != nil {
		issuer, signer = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, key.Public(), signer)
	if err != nil {
		return pemPair{}, nil, nil, fmt.Errorf("signing %s: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return pemPair{}, nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return pemPair{}, nil, nil, err
	}
	return pemPair{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, key, cert, nil
}
