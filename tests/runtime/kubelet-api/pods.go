package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// apiClient reads pods from the API server with the kubeconfig's credentials
// (client certificate, as the testplane's kubeconfig has them).
type apiClient struct {
	server string
	http   *http.Client
}

type kubeconfigFile struct {
	CurrentContext string `json:"current-context"`
	Contexts       []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster string `json:"cluster"`
			User    string `json:"user"`
		} `json:"context"`
	} `json:"contexts"`
	Clusters []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server                   string `json:"server"`
			CertificateAuthorityData string `json:"certificate-authority-data"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			ClientCertificateData string `json:"client-certificate-data"`
			ClientKeyData         string `json:"client-key-data"`
		} `json:"user"`
	} `json:"users"`
}

func newAPIClient(path string) (*apiClient, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var config kubeconfigFile
	if err := yaml.Unmarshal(raw, &config); err != nil {
		return nil, err
	}
	var clusterName, userName string
	for _, c := range config.Contexts {
		if c.Name == config.CurrentContext {
			clusterName, userName = c.Context.Cluster, c.Context.User
		}
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	server := ""
	for _, c := range config.Clusters {
		if c.Name != clusterName {
			continue
		}
		server = c.Cluster.Server
		ca, err := base64.StdEncoding.DecodeString(c.Cluster.CertificateAuthorityData)
		if err != nil {
			return nil, fmt.Errorf("certificate-authority-data: %w", err)
		}
		tlsConfig.RootCAs = x509.NewCertPool()
		if !tlsConfig.RootCAs.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("certificate-authority-data holds no certificate")
		}
	}
	for _, u := range config.Users {
		if u.Name != userName {
			continue
		}
		certPEM, err := base64.StdEncoding.DecodeString(u.User.ClientCertificateData)
		if err != nil {
			return nil, fmt.Errorf("client-certificate-data: %w", err)
		}
		keyPEM, err := base64.StdEncoding.DecodeString(u.User.ClientKeyData)
		if err != nil {
			return nil, fmt.Errorf("client-key-data: %w", err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		tlsConfig.Certificates = []tls.Certificate{cert}
	}
	if server == "" {
		return nil, fmt.Errorf("no cluster for current context %q", config.CurrentContext)
	}
	transport := &http.Transport{TLSClientConfig: tlsConfig, Proxy: nil}
	return &apiClient{server: strings.TrimSuffix(server, "/"), http: &http.Client{Transport: transport, Timeout: 10 * time.Second}}, nil
}

// pod holds the fields of a Pod this program reads.
type pod struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		UID       string `json:"uid"`
	} `json:"metadata"`
	Spec struct {
		NodeName       string          `json:"nodeName"`
		Containers     []containerSpec `json:"containers"`
		InitContainers []containerSpec `json:"initContainers"`
	} `json:"spec"`
	Status struct {
		ContainerStatuses     []containerStatus `json:"containerStatuses"`
		InitContainerStatuses []containerStatus `json:"initContainerStatuses"`
	} `json:"status"`
}

type containerSpec struct {
	Name string `json:"name"`
}

type containerStatus struct {
	Name         string         `json:"name"`
	RestartCount int            `json:"restartCount"`
	State        containerState `json:"state"`
	LastState    containerState `json:"lastState"`
}

type containerState struct {
	Waiting *struct {
		Reason string `json:"reason"`
	} `json:"waiting"`
	Running    *struct{} `json:"running"`
	Terminated *struct {
		ExitCode int `json:"exitCode"`
	} `json:"terminated"`
}

// statusError is an error with the HTTP status it answers with.
type statusError struct {
	code    int
	message string
}

func (e *statusError) Error() string { return e.message }

func errorf(code int, format string, args ...any) error {
	return &statusError{code: code, message: fmt.Sprintf(format, args...)}
}

func (c *apiClient) getPod(namespace, name string) (*pod, error) {
	u := fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s", c.server, url.PathEscape(namespace), url.PathEscape(name))
	resp, err := c.http.Get(u)
	if err != nil {
		return nil, errorf(http.StatusInternalServerError, "reading pod %s/%s: %v", namespace, name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, errorf(http.StatusNotFound, "pod %q does not exist", name)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, errorf(http.StatusInternalServerError, "reading pod %s/%s: HTTP %d", namespace, name, resp.StatusCode)
	}
	var p pod
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		return nil, errorf(http.StatusInternalServerError, "decoding pod %s/%s: %v", namespace, name, err)
	}
	return &p, nil
}

// lookup finds a pod of this node; uid, when given, must match.
func (s *server) lookup(namespace, name, uid string) (*pod, error) {
	p, err := s.api.getPod(namespace, name)
	if err != nil {
		return nil, err
	}
	if uid != "" && p.Metadata.UID != uid {
		return nil, errorf(http.StatusNotFound, "pod not found")
	}
	return p, nil
}

// dir is the runtime's per-pod folder.
func (s *server) dir(p *pod) string {
	return filepath.Join(s.stateDir, "pods", fmt.Sprintf("%s_%s_%s", p.Metadata.Namespace, p.Metadata.Name, p.Metadata.UID))
}

func (p *pod) hasContainer(name string) bool {
	for _, c := range append(append([]containerSpec{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if c.Name == name {
			return true
		}
	}
	return false
}

func (p *pod) containerStatus(name string) (containerStatus, bool) {
	for _, s := range append(append([]containerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if s.Name == name {
			return s, true
		}
	}
	return containerStatus{}, false
}

// process is a running container's process: its PID and its start time (clock ticks
// since boot, field 22 of /proc/PID/stat), which tells a reused PID apart.
type process struct {
	pid   int
	start string
}

func startTime(pid int) (string, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	text := string(raw)
	end := strings.LastIndexByte(text, ')')
	if end < 0 {
		return "", false
	}
	fields := strings.Fields(text[end+1:])
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 || fields[0] == "Z" {
		return "", false
	}
	return fields[19], true
}

// runningProcess is the process of the container as the runtime recorded it, if it runs.
func (s *server) runningProcess(p *pod, container string) (process, bool) {
	raw, err := os.ReadFile(filepath.Join(s.dir(p), "containers", container, "pid"))
	if err != nil {
		return process{}, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 {
		return process{}, false
	}
	start, ok := startTime(pid)
	if !ok {
		return process{}, false
	}
	return process{pid: pid, start: start}, true
}

func (p process) alive() bool {
	start, ok := startTime(p.pid)
	return ok && start == p.start
}

// anyProcess is a running process of any of the pod's containers (they share the pod's
// network namespace).
func (s *server) anyProcess(p *pod) (process, bool) {
	for _, c := range append(append([]containerSpec{}, p.Spec.Containers...), p.Spec.InitContainers...) {
		if proc, ok := s.runningProcess(p, c.Name); ok {
			return proc, true
		}
	}
	return process{}, false
}
