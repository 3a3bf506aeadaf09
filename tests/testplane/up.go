package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	serviceCIDR    = "10.0.0.0/16"
	firstServiceIP = "10.0.0.1"

	startupTimeout = 120 * time.Second
	stopGrace      = 10 * time.Second
	pollInterval   = 100 * time.Millisecond
	parentPoll     = 300 * time.Millisecond

	// Controllers we run. No scheduler and no kubelet exist, so everything
	// that watches nodes (node-lifecycle, taint-eviction, pod GC of orphans,
	// node-ipam, ttl) stays off. The volume controllers bind claims to volumes
	// (the local runtime provisions them as an external provisioner), keep
	// claims and volumes in use from being deleted (the StorageObjectInUseProtection
	// admission plugin adds their finalizers), and create the claims of ephemeral
	// volumes; attach/detach and expansion stay off.
	defaultControllers = "serviceaccount-token-controller," +
		"serviceaccount-controller," +
		"root-ca-certificate-publisher-controller," +
		"namespace-controller," +
		"garbage-collector-controller," +
		"deployment-controller," +
		"replicaset-controller," +
		"endpoints-controller," +
		"endpointslice-controller," +
		"endpointslice-mirroring-controller," +
		"clusterrole-aggregation-controller," +
		"persistentvolume-binder-controller," +
		"persistentvolume-protection-controller," +
		"persistentvolumeclaim-protection-controller," +
		"ephemeral-volume-controller"
)

type upOptions struct {
	dir            string
	exitWithParent bool
	controllers    string
}

type readyLine struct {
	Kubeconfig            string  `json:"kubeconfig"`
	Server                string  `json:"server"`
	APIServerReadySeconds float64 `json:"apiserverReadySeconds"`
	TotalReadySeconds     float64 `json:"totalReadySeconds"`
}

// auditPolicyYAML records the metadata (user, verb, resource, namespace, name, response
// code) of every request made with a service account's token, and nothing else.
const auditPolicyYAML = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    userGroups: ["system:serviceaccounts"]
  - level: None
`

func runUp(args []string) int {
	start := time.Now()
	parent := os.Getppid()
	var o upOptions
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.StringVar(&o.dir, "dir", "", "state directory (created; pki/, etcd/, logs/, kubeconfig inside)")
	fs.BoolVar(&o.exitWithParent, "exit-with-parent", false, "stop when the parent process dies")
	fs.StringVar(&o.controllers, "controllers", defaultControllers, "kube-controller-manager --controllers value")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.dir == "" || fs.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "testplane up: --dir DIR is required and no positional arguments are accepted")
		return 2
	}

	// Writing to a closed stdout/stderr pipe must not kill us (that would
	// leave the children to Pdeathsig instead of an orderly stop).
	signal.Ignore(syscall.SIGPIPE)

	dir, err := filepath.Abs(o.dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testplane up: %v\n", err)
		return 1
	}
	p := &plane{opts: o, dir: dir, start: start}
	if err := p.prepareDirs(); err != nil {
		fmt.Fprintf(os.Stderr, "testplane up: %v\n", err)
		return 1
	}
	defer p.logFile.Close()

	// stopCtx is cancelled by SIGTERM/SIGINT or by the parent's death.
	stopCtx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	sigCh := make(chan os.Signal, 2)
	signal.Notify(sigCh, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sigCh
		stop(fmt.Errorf("received %v", s))
	}()
	if o.exitWithParent {
		go watchParent(stopCtx, stop, parent)
	}

	code := p.run(stopCtx)
	p.shutdown()
	p.logf("exit %d", code)
	return code
}

// watchParent cancels stop when our parent process goes away (we get
// re-parented, so getppid changes).
func watchParent(ctx context.Context, stop context.CancelCauseFunc, initial int) {
	t := time.NewTicker(parentPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if os.Getppid() != initial {
				stop(fmt.Errorf("parent process %d exited", initial))
				return
			}
		}
	}
}

type plane struct {
	opts  upOptions
	dir   string
	start time.Time

	logFile *os.File
	logMu   sync.Mutex

	etcd       *embed.Etcd
	apiserver  *child
	kcm        *child
	server     string
	httpClient *http.Client
}

func (p *plane) path(elem ...string) string {
	return filepath.Join(append([]string{p.dir}, elem...)...)
}

func (p *plane) prepareDirs() error {
	for _, d := range []string{p.dir, p.path("pki"), p.path("logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// Always start from an empty cluster: the PKI (and so every token) is
	// new on each run, old objects would be useless.
	if err := os.RemoveAll(p.path("etcd")); err != nil {
		return err
	}
	if err := os.MkdirAll(p.path("etcd"), 0o700); err != nil {
		return err
	}
	// etcd's logger appends; start every log of this run empty.
	if err := os.WriteFile(p.path("logs", "etcd.log"), nil, 0o644); err != nil {
		return err
	}
	f, err := os.OpenFile(p.path("logs", "testplane.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	p.logFile = f
	return nil
}

// logf writes a line to logs/testplane.log.
func (p *plane) logf(format string, args ...any) {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	fmt.Fprintf(p.logFile, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// progressf writes to testplane.log and to stderr.
func (p *plane) progressf(format string, args ...any) {
	p.logf(format, args...)
	fmt.Fprintf(os.Stderr, "testplane: %s\n", fmt.Sprintf(format, args...))
}

func (p *plane) since() float64 {
	return math.Round(time.Since(p.start).Seconds()*1000) / 1000
}

// run starts everything, prints READY and blocks until stopCtx is done or a
// component fails. It returns the exit code; shutdown is done by the caller.
func (p *plane) run(stopCtx context.Context) int {
	ctx, cancel := context.WithTimeout(stopCtx, startupTimeout)
	defer cancel()

	ready, err := p.startAll(ctx)
	if err != nil {
		if cause := context.Cause(stopCtx); cause != nil {
			p.progressf("stopping during startup: %v", cause)
			return 0
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("startup timed out after %v: %w", startupTimeout, err)
		}
		p.progressf("startup failed: %v", err)
		p.dumpLogTails(p.failedComponent())
		return 1
	}

	line, _ := json.Marshal(ready)
	p.logf("READY %s", line)
	fmt.Fprintf(os.Stdout, "READY %s\n", line)

	select {
	case <-stopCtx.Done():
		p.progressf("stopping: %v", context.Cause(stopCtx))
		return 0
	case <-p.apiserver.done:
		p.progressf("kube-apiserver exited unexpectedly: %v", p.apiserver.err)
	case <-p.kcm.done:
		p.progressf("kube-controller-manager exited unexpectedly: %v", p.kcm.err)
	case err := <-p.etcd.Err():
		p.progressf("etcd failed: %v", err)
	}
	p.dumpLogTails(p.failedComponent())
	return 1
}

func (p *plane) startAll(ctx context.Context) (*readyLine, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdClientPort, etcdPeerPort, apiPort := ports[0], ports[1], ports[2]
	p.server = "https://127.0.0.1:" + strconv.Itoa(apiPort)

	// PKI generation (RSA keys) and etcd start-up are independent.
	type pkiResult struct {
		pki *pki
		err error
	}
	pkiCh := make(chan pkiResult, 1)
	go func() {
		k, err := generatePKI(p.path("pki"))
		p.logf("pki generated at %.3fs", p.since())
		pkiCh <- pkiResult{k, err}
	}()

	if err := p.startEtcd(ctx, etcdClientPort, etcdPeerPort); err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	p.logf("etcd ready at %.3fs", p.since())

	var keys *pki
	select {
	case r := <-pkiCh:
		if r.err != nil {
			return nil, fmt.Errorf("pki: %w", r.err)
		}
		keys = r.pki
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}

	kubeconfig := p.path("kubeconfig")
	if err := writeKubeconfig(kubeconfig, p.server, keys.CACert, "admin", keys.AdminCert, keys.AdminKey); err != nil {
		return nil, err
	}
	kcmKubeconfig := p.path("controller-manager.kubeconfig")
	if err := writeKubeconfig(kcmKubeconfig, p.server, keys.CACert, "controller-manager", keys.KCMCert, keys.KCMKey); err != nil {
		return nil, err
	}
	if p.httpClient, err = newHTTPClient(keys); err != nil {
		return nil, err
	}

	// What service accounts do is written to the audit log, as JSON lines: the tests compare
	// what the operator did with what its Helm chart grants it. Other users (the
	// controller-manager, the local runtime, the tests' admin) are left out.
	auditPolicy := p.path("pki", "audit-policy.yaml")
	if err := os.WriteFile(auditPolicy, []byte(auditPolicyYAML), 0o600); err != nil {
		return nil, err
	}
	f := keys.Files
	p.apiserver, err = startChild("apiserver", p.path("logs", "apiserver.log"), []string{
		"--audit-policy-file=" + auditPolicy,
		"--audit-log-path=" + p.path("logs", "audit.log"),
		"--audit-log-format=json",
		"--audit-log-maxsize=0",
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(etcdClientPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + p.path("pki"),
		"--tls-cert-file=" + f["apiserver.crt"],
		"--tls-private-key-file=" + f["apiserver.key"],
		"--client-ca-file=" + f["ca.crt"],
		"--service-account-issuer=" + p.server,
		"--service-account-key-file=" + f["sa.pub"],
		"--service-account-signing-key-file=" + f["sa.key"],
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
		// The local runtime's node reports its name as its Hostname address, which does not
		// resolve: reach its kubelet API (logs, exec, port-forward) at its InternalIP, as
		// kubeadm configures it.
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
		// Webhooks registered by Service are called at a ready endpoint of the Service (a
		// pod's address, which the host reaches) instead of its cluster IP, which nothing
		// routes here (there is no kube-proxy).
		"--enable-aggregator-routing=true",
	})
	if err != nil {
		return nil, err
	}
	p.progressf("kube-apiserver started (pid %d) on %s", p.apiserver.cmd.Process.Pid, p.server)

	if err := p.waitFor(ctx, "kube-apiserver /readyz", func() bool { return p.getOK("/readyz") }); err != nil {
		return nil, err
	}
	if err := p.waitFor(ctx, "namespace default", func() bool { return p.getOK("/api/v1/namespaces/default") }); err != nil {
		return nil, err
	}
	apiReady := p.since()
	p.progressf("kube-apiserver ready after %.3fs", apiReady)

	p.kcm, err = startChild("controller-manager", p.path("logs", "controller-manager.log"), []string{
		"--kubeconfig=" + kcmKubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--authentication-skip-lookup=true",
		"--service-account-private-key-file=" + f["sa.key"],
		"--root-ca-file=" + f["ca.crt"],
		"--use-service-account-credentials=false",
		"--controllers=" + p.opts.controllers,
		"--kube-api-qps=100",
		"--kube-api-burst=200",
	})
	if err != nil {
		return nil, err
	}
	p.progressf("kube-controller-manager started (pid %d)", p.kcm.cmd.Process.Pid)

	if err := p.waitFor(ctx, "serviceaccount default/default", func() bool {
		return p.getOK("/api/v1/namespaces/default/serviceaccounts/default")
	}); err != nil {
		return nil, err
	}
	total := p.since()
	p.progressf("control plane ready after %.3fs", total)

	return &readyLine{
		Kubeconfig:            kubeconfig,
		Server:                p.server,
		APIServerReadySeconds: apiReady,
		TotalReadySeconds:     total,
	}, nil
}

func (p *plane) startEtcd(ctx context.Context, clientPort, peerPort int) error {
	cfg := embed.NewConfig()
	cfg.Dir = p.path("etcd")
	cfg.UnsafeNoFsync = true
	clientURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(clientPort)}
	peerURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(peerPort)}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// A lone member still waits out a (randomised) election timeout before
	// it leads; short ticks cut etcd's start from ~1 s to ~0.1 s. There are
	// no peers, so the faster heartbeat costs nothing.
	cfg.TickMs = 20
	cfg.ElectionMs = 100
	cfg.Logger = "zap"
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{p.path("logs", "etcd.log")}

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	p.etcd = e
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// waitFor polls cond until it holds, failing early if a child process or
// etcd dies, or ctx ends.
func (p *plane) waitFor(ctx context.Context, what string, cond func() bool) error {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		if cond() {
			return nil
		}
		for _, c := range []*child{p.apiserver, p.kcm} {
			if c != nil && c.exited() {
				return fmt.Errorf("%s exited while waiting for %s: %v", c.name, what, c.err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case err := <-p.etcd.Err():
			return fmt.Errorf("etcd failed while waiting for %s: %v", what, err)
		case <-t.C:
		}
	}
}

// getOK reports whether GET path answers 200 (with the admin identity).
func (p *plane) getOK(path string) bool {
	resp, err := p.httpClient.Get(p.server + path)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// shutdown stops the children (SIGTERM, SIGKILL after stopGrace) and etcd.
func (p *plane) shutdown() {
	var running []*child
	for _, c := range []*child{p.kcm, p.apiserver} {
		if c != nil && !c.exited() {
			running = append(running, c)
			_ = c.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(stopGrace)
	for _, c := range running {
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-c.done:
		case <-t.C:
			if !c.exited() {
				p.progressf("%s did not stop within %v, killing it", c.name, stopGrace)
				_ = c.cmd.Process.Kill()
			}
			<-c.done
		}
		t.Stop()
		p.logf("%s stopped: %v", c.name, c.err)
	}
	if p.etcd != nil {
		p.etcd.Close()
		p.logf("etcd stopped")
	}
}

// failedComponent names the log of the child that has exited, if any.
func (p *plane) failedComponent() string {
	switch {
	case p.apiserver != nil && p.apiserver.exited():
		return "apiserver"
	case p.kcm != nil && p.kcm.exited():
		return "controller-manager"
	}
	return ""
}

// dumpLogTails prints the end of the component logs to stderr, the failed
// component's last and longest.
func (p *plane) dumpLogTails(failed string) {
	for _, name := range []string{"etcd", "apiserver", "controller-manager"} {
		if name != failed {
			p.printLogTail(name, 15)
		}
	}
	if failed != "" {
		p.printLogTail(failed, 60)
	}
}

func (p *plane) printLogTail(name string, lines int) {
	path := p.path("logs", name+".log")
	tail, err := logTail(path, lines)
	if err != nil || len(tail) == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "----- last lines of %s -----\n%s", path, tail)
}

func logTail(path string, lines int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const max = 64 << 10
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := st.Size() - max
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return nil, err
	}
	parts := bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n"))
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return append(bytes.Join(parts, []byte("\n")), '\n'), nil
}

// child is a component running as `<self> <subcommand> <args>`.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // valid after done is closed
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func startChild(subcommand, logPath string, args []string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, append([]string{subcommand}, args...)...)
	cmd.Stdin = nil
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C on the terminal reaches only us, and
		// we stop the children in order.
		Setpgid: true,
		// Backup for when we die without stopping them (SIGKILL, crash).
		Pdeathsig: syscall.SIGKILL,
	}
	if err := spawn(cmd); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", subcommand, err)
	}
	c := &child{name: "kube-" + subcommand, cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		logFile.Close()
		close(c.done)
	}()
	return c, nil
}

// Pdeathsig fires when the *thread* that forked the child exits, and the Go
// runtime may retire threads. All children are therefore forked from one
// goroutine locked to its thread, which lives as long as the process.
var (
	spawnOnce sync.Once
	spawnReqs chan spawnReq
)

type spawnReq struct {
	cmd  *exec.Cmd
	errc chan error
}

func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnReqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread()
			for r := range spawnReqs {
				r.errc <- r.cmd.Start()
			}
		}()
	})
	errc := make(chan error, 1)
	spawnReqs <- spawnReq{cmd: cmd, errc: errc}
	return <-errc
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func newHTTPClient(k *pki) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(k.CACert) {
		return nil, errors.New("bad CA certificate")
	}
	cert, err := tls.X509KeyPair(k.AdminCert, k.AdminKey)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
		},
	}, nil
}

// writeKubeconfig writes a self-contained kubeconfig (everything embedded as
// data) atomically.
func writeKubeconfig(path, server string, caPEM []byte, user string, certPEM, keyPEM []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testplane"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["testplane"] = &clientcmdapi.Context{Cluster: "testplane", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = "testplane"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
