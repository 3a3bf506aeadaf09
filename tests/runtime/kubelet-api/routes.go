package main

import (
	"net/http"
)

type server struct {
	api      *apiClient
	stateDir string
	nsenter  string
	sessions sessions
}

// routes are the kubelet's paths the API server uses (k8s.io/kubernetes
// pkg/kubelet/server/server.go); anything else answers 404.
func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.containerLogs)
	for _, method := range []string{"GET", "POST"} {
		mux.HandleFunc(method+" /exec/{namespace}/{pod}/{container}", s.exec)
		mux.HandleFunc(method+" /exec/{namespace}/{pod}/{uid}/{container}", s.exec)
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}", s.portForward)
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}/{uid}", s.portForward)
		for _, path := range []string{"/attach/", "/run/", "/checkpoint/"} {
			mux.HandleFunc(method+" "+path, notSupported)
		}
	}
	return mux
}

func notSupported(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "flink-local-runtime's kubelet API serves only containerLogs, exec and portForward, not "+r.URL.Path, http.StatusNotImplemented)
}
