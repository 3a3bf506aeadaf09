// kubelet-api: the part of a kubelet's HTTPS API that the API server calls for
// `kubectl logs`, `kubectl exec` and `kubectl port-forward`, for the pods of
// flink-local-runtime (tests/runtime). The streaming protocols (SPDY and WebSocket)
// are the kubelet's own: k8s.io/cri-streaming's remotecommand.ServeExec and
// portforward.ServePortForward.
//
//	kubelet-api --listen IP --kubeconfig FILE --state-dir DIR [--node-name NAME] [--nsenter PATH]
//
// It prints `READY {"port":N}` on stdout once it listens on IP:N (a free port), and
// exits when its stdin reaches end-of-file (its parent, the runtime, closed it or
// died), or on SIGTERM/SIGINT.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "", "the address to listen on (the node's InternalIP)")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the control plane (pod lookups)")
	stateDir := flag.String("state-dir", "", "the runtime's --state-dir")
	nodeName := flag.String("node-name", "flink-local-runtime", "the node's name (in the serving certificate)")
	nsenter := flag.String("nsenter", "", "nsenter to run exec commands with (default: from PATH)")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.SetPrefix("kubelet-api: ")
	if *listen == "" || *kubeconfig == "" || *stateDir == "" {
		log.Fatal("--listen, --kubeconfig and --state-dir are required")
	}
	if *nsenter == "" {
		path, err := exec.LookPath("nsenter")
		if err != nil {
			log.Fatalf("nsenter (util-linux) not found: %v", err)
		}
		*nsenter = path
	}
	api, err := newAPIClient(*kubeconfig)
	if err != nil {
		log.Fatalf("kubeconfig %s: %v", *kubeconfig, err)
	}
	cert, err := selfSignedCertificate(*listen, *nodeName)
	if err != nil {
		log.Fatalf("serving certificate: %v", err)
	}
	listener, err := net.Listen("tcp", net.JoinHostPort(*listen, "0"))
	if err != nil {
		log.Fatalf("listen on %s: %v", *listen, err)
	}
	s := &server{api: api, stateDir: *stateDir, nsenter: *nsenter}
	httpServer := &http.Server{
		Handler:           s.routes(),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.Default(),
	}
	go func() {
		if err := httpServer.ServeTLS(listener, "", ""); err != nil && err != http.ErrServerClosed {
			log.Fatalf("serve: %v", err)
		}
	}()
	ready, _ := json.Marshal(map[string]any{"port": listener.Addr().(*net.TCPAddr).Port})
	fmt.Printf("READY %s\n", ready)
	os.Stdout.Sync()

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	orphaned := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(orphaned)
	}()
	select {
	case <-stop:
	case <-orphaned:
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = httpServer.Shutdown(ctx)
	s.killSessions()
}

// selfSignedCertificate is the serving certificate; the API server does not verify it
// unless it is given --kubelet-certificate-authority (the testplane does not give it).
func selfSignedCertificate(ip, nodeName string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: nodeName + "@kubelet-api"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{nodeName, "localhost"},
		IPAddresses:  []net.IP{net.ParseIP(ip), net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
