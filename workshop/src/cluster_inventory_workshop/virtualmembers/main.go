// Command virtualmembers serves many virtual member clusters as URL paths over a few real
// kube-apiservers, for tests and benchmarks of cluster_inventory (docs/testing.md,
// "Virtual members").
//
// https://ADDR/members/<n>/<path> is forwarded to real apiserver n mod M as <path>, with the
// method, query, body and headers (Authorization included) unchanged and responses streamed
// as they arrive (watches). Two answers are changed so that each virtual member looks like a
// cluster of its own:
//
//   - GET /api/v1/namespaces/kube-system: the real namespace's UID is replaced by virtual
//     member n's UID (the member id a cluster manager reads);
//   - GET of the about.k8s.io ClusterProperty collection (list and watch): the label
//     selector gains "<label> in (all,<n>)", so member n sees the properties meant for all
//     members of its real apiserver and its own.
//
// Only the Go standard library is used, so the program builds without module downloads. The
// configuration is a JSON file written by cluster_inventory.testing.VirtualMembers.
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
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type upstreamConfig struct {
	Server        string `json:"server"`
	CA            string `json:"ca"`
	KubeSystemUID string `json:"kubeSystemUID"`
}

type config struct {
	Listen        string           `json:"listen"`
	CertFile      string           `json:"certFile"`
	KeyFile       string           `json:"keyFile"`
	PropertyLabel string           `json:"propertyLabel"`
	MemberUIDs    []string         `json:"memberUIDs"`
	Upstreams     []upstreamConfig `json:"upstreams"`
}

type upstream struct {
	url       *url.URL
	transport *http.Transport
	uid       []byte
}

type route struct {
	member   int
	upstream *upstream
	identity bool
}

type routeKey struct{}

type proxy struct {
	cfg       config
	upstreams []*upstream
	rp        *httputil.ReverseProxy
	open      atomic.Int64
	active    atomic.Int64
	requests  atomic.Int64
}

var (
	propertyCollection = regexp.MustCompile(`^/apis/about\.k8s\.io/[^/]+/clusterproperties/?$`)
	kubeSystem         = "/api/v1/namespaces/kube-system"
)

func newUpstream(c upstreamConfig) (*upstream, error) {
	u, err := url.Parse(strings.TrimRight(c.Server, "/"))
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %w", c.Server, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(c.CA)) {
		return nil, fmt.Errorf("upstream %q: CA is not PEM", c.Server)
	}
	t := &http.Transport{
		Proxy:               nil, // loopback apiservers: never through an environment proxy
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   true, // thousands of watches share a few connections
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	}
	return &upstream{url: u, transport: t, uid: []byte(c.KubeSystemUID)}, nil
}

// RoundTrip sends the request through the transport of the upstream it was routed to.
func (p *proxy) RoundTrip(req *http.Request) (*http.Response, error) {
	r, _ := req.Context().Value(routeKey{}).(*route)
	if r == nil {
		return nil, errors.New("request without a route")
	}
	return r.upstream.transport.RoundTrip(req)
}

func (p *proxy) rewrite(pr *httputil.ProxyRequest) {
	r := pr.In.Context().Value(routeKey{}).(*route)
	out := pr.Out
	out.URL.Scheme = r.upstream.url.Scheme
	out.URL.Host = r.upstream.url.Host
	out.Host = r.upstream.url.Host
	if r.identity {
		// Let the transport ask for gzip and decompress, so the body can be edited.
		out.Header.Del("Accept-Encoding")
	}
	if out.Method == http.MethodGet && propertyCollection.MatchString(out.URL.Path) {
		q := out.URL.Query()
		own := fmt.Sprintf("%s in (all,%d)", p.cfg.PropertyLabel, r.member)
		if sel := strings.TrimSpace(q.Get("labelSelector")); sel != "" {
			own = sel + "," + own
		}
		q.Set("labelSelector", own)
		out.URL.RawQuery = q.Encode()
	}
}

func (p *proxy) modifyResponse(resp *http.Response) error {
	r, _ := resp.Request.Context().Value(routeKey{}).(*route)
	if r == nil || !r.identity || resp.StatusCode != http.StatusOK || len(r.upstream.uid) == 0 {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	// UIDs are 36-character strings, so the replacement keeps every length (protobuf too).
	body = bytes.ReplaceAll(body, r.upstream.uid, []byte(p.cfg.MemberUIDs[r.member]))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	resp.Header.Del("Content-Encoding")
	return nil
}

func writeStatus(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"apiVersion": "v1", "kind": "Status", "status": "Failure",
		"message": message, "reason": http.StatusText(code), "code": code,
	})
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch req.URL.Path {
	case "/healthz":
		_, _ = io.WriteString(w, "ok")
		return
	case "/stats":
		var mem runtime.MemStats
		runtime.ReadMemStats(&mem)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"openConnections": p.open.Load(),
			"activeRequests":  p.active.Load(),
			"requests":        p.requests.Load(),
			"goroutines":      runtime.NumGoroutine(),
			"heapInuseBytes":  mem.HeapInuse,
			"stackInuseBytes": mem.StackInuse,
			"sysBytes":        mem.Sys,
		})
		return
	}
	rest, ok := strings.CutPrefix(req.URL.Path, "/members/")
	if !ok {
		writeStatus(w, http.StatusNotFound, "not a virtual member path: /members/<n>/...")
		return
	}
	number, tail, _ := strings.Cut(rest, "/")
	n, err := strconv.Atoi(number)
	if err != nil || n < 0 || n >= len(p.cfg.MemberUIDs) || strconv.Itoa(n) != number {
		writeStatus(w, http.StatusNotFound, fmt.Sprintf("no virtual member %q", number))
		return
	}
	p.requests.Add(1)
	p.active.Add(1)
	defer p.active.Add(-1)
	prefix := "/members/" + number
	out := req.Clone(req.Context())
	out.URL.Path = "/" + tail
	if raw := req.URL.RawPath; raw != "" {
		out.URL.RawPath = strings.TrimPrefix(raw, prefix)
		if out.URL.RawPath == "" {
			out.URL.RawPath = "/"
		}
	}
	r := &route{
		member:   n,
		upstream: p.upstreams[n%len(p.upstreams)],
		identity: req.Method == http.MethodGet && strings.TrimSuffix(out.URL.Path, "/") == kubeSystem,
	}
	p.rp.ServeHTTP(w, out.WithContext(context.WithValue(out.Context(), routeKey{}, r)))
}

// raiseOpenFiles lifts RLIMIT_NOFILE: the hard limit to want when privileged, the soft
// limit to the hard one in any case. Each virtual member holds a watch and a probe
// connection, so 10,000 members need more than 20,000 descriptors.
func raiseOpenFiles(want uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	if data, err := os.ReadFile("/proc/sys/fs/nr_open"); err == nil {
		if most, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64); err == nil && want > most {
			want = most
		}
	}
	if want > lim.Max {
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: want, Max: want}) == nil {
			log.Printf("open files limit %d", want)
			return
		}
	}
	lim.Cur = lim.Max
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	log.Printf("open files limit %d", lim.Cur)
}

type smallBuffers struct{ pool sync.Pool }

func (b *smallBuffers) Get() []byte  { return *(b.pool.Get().(*[]byte)) }
func (b *smallBuffers) Put(v []byte) { b.pool.Put(&v) }

func main() {
	configPath := flag.String("config", "", "JSON configuration file")
	openFiles := flag.Uint64("open-files", 1<<20, "RLIMIT_NOFILE to ask for")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	data, err := os.ReadFile(*configPath)
	if err != nil {
		log.Fatal(err)
	}
	var cfg config
	if err := json.Unmarshal(data, &cfg); err != nil {
		log.Fatalf("%s: %v", *configPath, err)
	}
	if len(cfg.Upstreams) == 0 || len(cfg.MemberUIDs) == 0 {
		log.Fatal("configuration needs upstreams and memberUIDs")
	}
	raiseOpenFiles(*openFiles)
	p := &proxy{cfg: cfg}
	for _, c := range cfg.Upstreams {
		u, err := newUpstream(c)
		if err != nil {
			log.Fatal(err)
		}
		p.upstreams = append(p.upstreams, u)
	}
	buffers := &smallBuffers{pool: sync.Pool{New: func() any { b := make([]byte, 4<<10); return &b }}}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      p,
		FlushInterval:  -1, // watch events reach the client as the apiserver sends them
		ModifyResponse: p.modifyResponse,
		BufferPool:     buffers,
		ErrorLog:       log.Default(),
	}
	srv := &http.Server{
		Addr:              cfg.Listen,
		Handler:           p,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       10 * time.Minute,
		ConnState: func(_ net.Conn, state http.ConnState) {
			switch state {
			case http.StateNew:
				p.open.Add(1)
			case http.StateClosed, http.StateHijacked:
				p.open.Add(-1)
			}
		},
		// A client that goes away mid-handshake is not news.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("serving %d virtual members over %d apiservers on https://%s",
		len(cfg.MemberUIDs), len(cfg.Upstreams), ln.Addr())
	if err := srv.ServeTLS(ln, cfg.CertFile, cfg.KeyFile); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
