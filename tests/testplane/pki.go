package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// RSA everywhere: every kubeconfig consumer we care about (kube-rs/rustls,
// fabric8 without BouncyCastle, Go) reads PKCS#1 RSA keys.
const rsaBits = 2048

// pki holds the PEM encodings of everything the control plane needs, and
// the file paths they were written to.
type pki struct {
	CACert, CAKey             []byte
	ServingCert, ServingKey   []byte
	AdminCert, AdminKey       []byte
	KCMCert, KCMKey           []byte
	SAPrivateKey, SAPublicKey []byte

	Files map[string]string // name -> absolute path
}

type certKey struct {
	cert *x509.Certificate
	der  []byte
	key  *rsa.PrivateKey
}

// generatePKI makes a CA, the apiserver serving certificate, the admin and
// controller-manager client certificates and the service-account key pair,
// and writes them as PEM files into dir.
func generatePKI(dir string) (*pki, error) {
	// Key generation dominates; do the five keys in parallel.
	const nKeys = 5
	keys := make([]*rsa.PrivateKey, nKeys)
	errs := make([]error, nKeys)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], errs[i] = rsa.GenerateKey(rand.Reader, rsaBits)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("generate RSA key: %w", err)
		}
	}
	caKey, servingKey, adminKey, kcmKey, saKey := keys[0], keys[1], keys[2], keys[3], keys[4]

	now := time.Now()
	notBefore := now.Add(-time.Hour)
	notAfter := now.Add(10 * 365 * 24 * time.Hour)

	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "testplane-ca"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	ca, err := sign(caTmpl, caKey, nil)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}

	servingTmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{
			"localhost",
			"kubernetes",
			"kubernetes.default",
			"kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local",
		},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(firstServiceIP)},
	}
	serving, err := sign(servingTmpl, servingKey, ca)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}

	clientTmpl := func(cn string, orgs ...string) *x509.Certificate {
		return &x509.Certificate{
			Subject:     pkix.Name{CommonName: cn, Organization: orgs},
			NotBefore:   notBefore,
			NotAfter:    notAfter,
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
	}
	admin, err := sign(clientTmpl("admin", "system:masters"), adminKey, ca)
	if err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}
	// The bootstrap RBAC policy grants system:kube-controller-manager what
	// the controllers need when they share one identity; keep it in
	// system:masters as well so nothing depends on that policy's details.
	kcm, err := sign(clientTmpl("system:kube-controller-manager", "system:masters"), kcmKey, ca)
	if err != nil {
		return nil, fmt.Errorf("controller-manager certificate: %w", err)
	}

	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("service-account public key: %w", err)
	}

	p := &pki{
		CACert:       certPEM(ca.der),
		CAKey:        keyPEM(caKey),
		ServingCert:  certPEM(serving.der),
		ServingKey:   keyPEM(servingKey),
		AdminCert:    certPEM(admin.der),
		AdminKey:     keyPEM(adminKey),
		KCMCert:      certPEM(kcm.der),
		KCMKey:       keyPEM(kcmKey),
		SAPrivateKey: keyPEM(saKey),
		SAPublicKey:  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
		Files:        map[string]string{},
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"ca.crt", p.CACert},
		{"ca.key", p.CAKey},
		{"apiserver.crt", p.ServingCert},
		{"apiserver.key", p.ServingKey},
		{"admin.crt", p.AdminCert},
		{"admin.key", p.AdminKey},
		{"controller-manager.crt", p.KCMCert},
		{"controller-manager.key", p.KCMKey},
		{"sa.key", p.SAPrivateKey},
		{"sa.pub", p.SAPublicKey},
	} {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, f.data, 0o600); err != nil {
			return nil, err
		}
		p.Files[f.name] = path
	}
	return p, nil
}

// sign creates a certificate from tmpl for key, signed by parent (or
// self-signed when parent is nil).
func sign(tmpl *x509.Certificate, key *rsa.PrivateKey, parent *certKey) (*certKey, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	issuer, issuerKey := tmpl, key
	if parent != nil {
		issuer, issuerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, &key.PublicKey, issuerKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &certKey{cert: cert, der: der, key: key}, nil
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func keyPEM(key *rsa.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}
