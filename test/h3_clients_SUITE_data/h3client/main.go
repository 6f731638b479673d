// h3client: an HTTP/3 test client on quic-go's http3 package, for
// test/h3_clients_SUITE. It sends -requests requests at once through one
// http3.Transport (one QUIC connection) and prints one JSON object with
// what it saw:
//
//	{"client": "quic-go v0.65.0", "alpn": "h3", "http_version": "3",
//	 "connections": 1, "elapsed_ms": 12.3,
//	 "sent": {"bytes": N, "sha256": "..."},
//	 "statuses": {"200": 1},
//	 "responses": [{"status": 200, "headers": {...}, "bytes": N,
//	                "sha256": "...", "trailers": {...}}],
//	 "error": null}
//
// "alpn" is the TLS connection state's negotiated protocol, "connections"
// the QUIC connections the transport dialled (net/http/httptrace). A POST
// body (-body-size N: "0123456789" repeated, cut at N) is generated as it
// is sent; -trailer NAME:VALUE adds request trailers after it. Exit status
// 0 when every response arrived, 1 otherwise, 2 on bad arguments.
//
//	h3client [-insecure | -ca-certs F] [-X POST] [-body-size N] [-requests N]
//	         [-header N:V] [-trailer N:V] [-timeout D] https://127.0.0.1:PORT/path
package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// pattern is the request body's content, repeated.
var pattern = []byte("0123456789")

// patternReader yields n bytes of pattern.
type patternReader struct{ off, n int64 }

func (r *patternReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	k := int64(len(p))
	if k > r.n-r.off {
		k = r.n - r.off
	}
	for i := int64(0); i < k; i++ {
		p[i] = pattern[(r.off+i)%int64(len(pattern))]
	}
	r.off += k
	return int(k), nil
}

type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

type response struct {
	Status   int               `json:"status"`
	Headers  map[string]string `json:"headers"`
	Bytes    int64             `json:"bytes"`
	Sha256   string            `json:"sha256"`
	Trailers map[string]string `json:"trailers"`
}

type summary struct {
	Client      string         `json:"client"`
	ALPN        *string        `json:"alpn"`
	HTTPVersion *string        `json:"http_version"`
	Connections int64          `json:"connections"`
	ElapsedMs   float64        `json:"elapsed_ms"`
	Sent        map[string]any `json:"sent"`
	Statuses    map[string]int `json:"statuses"`
	Responses   []response     `json:"responses"`
	Error       *string        `json:"error"`
}

// flat lower-cases names and joins repeated fields with ", ".
func flat(h http.Header) map[string]string {
	m := map[string]string{}
	for k, v := range h {
		m[strings.ToLower(k)] = strings.Join(v, ", ")
	}
	return m
}

func pairs(items []string) http.Header {
	h := http.Header{}
	for _, it := range items {
		k, v, _ := strings.Cut(it, ":")
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return h
}

func quicGoVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/quic-go/quic-go" {
				return "quic-go " + d.Version
			}
		}
	}
	return "quic-go"
}

func main() {
	method := flag.String("X", "", "method (default GET, POST with a body or trailers)")
	bodySize := flag.Int64("body-size", 0, "request body bytes")
	requests := flag.Int("requests", 1, "requests at once on one connection")
	insecure := flag.Bool("insecure", false, "do not verify the server's certificate")
	caCerts := flag.String("ca-certs", "", "PEM file of CAs to verify the server with")
	timeout := flag.Duration("timeout", 60*time.Second, "deadline for the whole run")
	var headers, trailers headerList
	flag.Var(&headers, "header", "NAME:VALUE request header (repeatable)")
	flag.Var(&trailers, "trailer", "NAME:VALUE request trailer (repeatable)")
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	url := flag.Arg(0)
	if *method == "" {
		*method = "GET"
		if *bodySize > 0 || len(trailers) > 0 {
			*method = "POST"
		}
	}

	tlsConf := &tls.Config{InsecureSkipVerify: *insecure}
	if *caCerts != "" {
		pem, err := os.ReadFile(*caCerts)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		tlsConf.RootCAs = x509.NewCertPool()
		tlsConf.RootCAs.AppendCertsFromPEM(pem)
	}
	tr := &http3.Transport{TLSClientConfig: tlsConf}
	defer tr.Close()

	sent := sha256.New()
	io.Copy(sent, &patternReader{n: *bodySize})
	out := summary{Client: quicGoVersion(), Statuses: map[string]int{}, Responses: []response{},
		Sent: map[string]any{"bytes": *bodySize, "sha256": hex.EncodeToString(sent.Sum(nil))}}
	var dials atomic.Int64
	trace := &httptrace.ClientTrace{ConnectStart: func(string, string) { dials.Add(1) }}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, trace)

	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for i := 0; i < *requests; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, alpn, proto, err := one(ctx, tr, *method, url, *bodySize, headers, trailers)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			out.ALPN, out.HTTPVersion = &alpn, &proto
			out.Responses = append(out.Responses, r)
			out.Statuses[strconv.Itoa(r.Status)]++
		}()
	}
	wg.Wait()
	out.ElapsedMs = float64(time.Since(start).Microseconds()) / 1000
	out.Connections = dials.Load()
	if firstErr != nil {
		e := firstErr.Error()
		out.Error = &e
	}
	json.NewEncoder(os.Stdout).Encode(out)
	if firstErr != nil {
		os.Exit(1)
	}
}

// one request: its response, the negotiated ALPN and the HTTP version.
func one(ctx context.Context, tr *http3.Transport, method, url string, size int64,
	headers, trailers []string) (response, string, string, error) {
	var body io.Reader
	if size > 0 || len(trailers) > 0 {
		body = &patternReader{n: size}
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return response{}, "", "", err
	}
	req.ContentLength = size
	req.Header = pairs(headers)
	if len(trailers) > 0 {
		req.Trailer = pairs(trailers)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return response{}, "", "", err
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil {
		return response{}, "", "", fmt.Errorf("after %d body bytes: %w", n, err)
	}
	alpn := ""
	if resp.TLS != nil {
		alpn = resp.TLS.NegotiatedProtocol
	}
	proto := strings.TrimSuffix(strings.TrimPrefix(resp.Proto, "HTTP/"), ".0")
	return response{Status: resp.StatusCode, Headers: flat(resp.Header), Bytes: n,
		Sha256: hex.EncodeToString(h.Sum(nil)), Trailers: flat(resp.Trailer)}, alpn, proto, nil
}
