// wsload: the WebSocket load generator of falco's benchmark (bench/run
// builds it into _build/bench/tools with `go build` and runs it pinned to
// the load core with GOMAXPROCS=1). Go's standard library only: its own
// opening handshake (RFC 6455 §4.1, Sec-WebSocket-Accept checked), masking
// and framing, so no part of falco's WebSocket code measures itself.
//
// Modes (-mode):
//
//	check  one connection: a 64-byte text message and one message of the
//	       scenario (-size, -kind) must come back equal; then a close
//	       handshake. The driver runs it before measuring a server.
//	echo   -conns connections, each in a closed loop: send one message,
//	       wait for its echo, compare it byte for byte, record the round
//	       trip, repeat, for -duration seconds; then a close handshake.
//	idle   open -conns connections (handshake only), print an "open" line,
//	       wait for a line on stdin (or its end, or -hold seconds), then
//	       send one 64-byte message on every connection and check its
//	       echo, so every connection is known to have stayed open.
//	       With -proto h1, h1tls or h2c (idle.go) the connections are
//	       HTTP/1.1 keep-alive (over TLS with h1tls) or HTTP/2
//	       prior-knowledge ones instead, each after
//	       one GET of -path, and the check is one more GET; check mode
//	       then opens one such connection and checks it.
//
// With -proto wsh2c (h2ws.go) every WebSocket connection of the check,
// echo and idle modes is opened over h2c instead: an HTTP/2 connection
// with prior knowledge, its stream 1 opened with an extended CONNECT
// (RFC 8441), the frames going as that stream's DATA.
//
// Every wait has a deadline (-timeout), and the whole run another: the
// program always stops by itself. The last line of output is one JSON
// object; "ok" is false (and the exit status 2) when a server answered
// wrong (bad handshake, an echo that differs, a missing echo), so such a
// server is not measured.
package main

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

type config struct {
	addr     string
	path     string
	mode     string
	conns    int
	size     int
	binary   bool
	duration time.Duration
	timeout  time.Duration
	hold     time.Duration
	parallel int
	proto    string
}

// A wrong answer from the server: the run is void.
type wrongAnswer struct{ msg string }

func (w *wrongAnswer) Error() string { return w.msg }

func wrong(format string, args ...interface{}) error {
	return &wrongAnswer{fmt.Sprintf(format, args...)}
}

func isWrong(err error) bool {
	var w *wrongAnswer
	return errors.As(err, &w)
}

func main() {
	cfg := config{}
	kind := ""
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "server host:port")
	flag.StringVar(&cfg.path, "path", "/ws", "request target of the handshake")
	flag.StringVar(&cfg.mode, "mode", "echo", "check, echo or idle")
	flag.IntVar(&cfg.conns, "conns", 50, "connections")
	flag.IntVar(&cfg.size, "size", 64, "payload bytes per message")
	flag.StringVar(&kind, "kind", "text", "text or binary messages")
	duration := flag.Float64("duration", 5, "echo: measured seconds")
	timeout := flag.Float64("timeout", 10, "seconds any single wait may take")
	hold := flag.Float64("hold", 300, "idle: longest wait for the go-ahead on stdin, seconds")
	flag.IntVar(&cfg.parallel, "parallel", 64, "idle: handshakes in flight at once")
	flag.StringVar(&cfg.proto, "proto", "ws",
		"ws, or wsh2c (WebSocket over h2c, RFC 8441); idle and check also h1, h1tls or h2c connections")
	flag.Parse()
	cfg.binary = kind == "binary"
	cfg.duration = secs(*duration)
	cfg.timeout = secs(*timeout)
	cfg.hold = secs(*hold)
	if !webSocket(cfg) && cfg.proto != "h1" && cfg.proto != "h1tls" && cfg.proto != "h2c" {
		fmt.Fprintln(os.Stderr, "wsload: -proto ws|wsh2c|h1|h1tls|h2c")
		os.Exit(1)
	}
	if (kind != "text" && kind != "binary") || cfg.conns < 1 || cfg.size < 16 || cfg.parallel < 1 {
		fmt.Fprintln(os.Stderr, "wsload: bad arguments (kind text|binary, conns >= 1, size >= 16)")
		os.Exit(1)
	}
	// The last resort: whatever happens, the program ends.
	limit := cfg.duration + 4*cfg.timeout + 30*time.Second
	if cfg.mode == "idle" {
		// Opening and checking each take at most conns/parallel deadlines.
		limit += cfg.hold + 2*time.Duration(cfg.conns/cfg.parallel+1)*cfg.timeout
	}
	time.AfterFunc(limit, func() {
		emit(map[string]interface{}{"ok": false, "error": "wsload: overall deadline passed"})
		os.Exit(3)
	})
	var res map[string]interface{}
	var err error
	switch cfg.mode {
	case "check":
		res, err = runCheck(cfg)
	case "echo":
		res, err = runEcho(cfg)
	case "idle":
		res, err = runIdle(cfg)
	default:
		fmt.Fprintln(os.Stderr, "wsload: -mode check|echo|idle")
		os.Exit(1)
	}
	if err != nil {
		if res == nil {
			res = map[string]interface{}{}
		}
		res["ok"] = false
		res["error"] = err.Error()
		emit(res)
		os.Exit(2)
	}
	res["ok"] = true
	emit(res)
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

var outMu sync.Mutex

func emit(m map[string]interface{}) {
	b, _ := json.Marshal(m)
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

// ------------------------------------------------------------ connection

// The bytes under a WebSocket: a TCP connection, or an HTTP/2 stream
// (h2Stream).
type byteStream interface {
	io.ReadWriter
	SetDeadline(time.Time) error
	Close() error
}

type wsConn struct {
	c       byteStream
	r       *bufio.Reader
	rnd     *rand.Rand
	out     []byte // the frame being written (header + masked payload)
	in      []byte // the message being read
	timeout time.Duration
}

// webSocket: whether the connections are WebSocket ones.
func webSocket(cfg config) bool { return cfg.proto == "ws" || cfg.proto == "wsh2c" }

func dial(cfg config, rnd *rand.Rand) (*wsConn, error) {
	if cfg.proto == "wsh2c" {
		return dialH2WS(cfg, rnd)
	}
	c, err := net.DialTimeout("tcp", cfg.addr, cfg.timeout)
	if err != nil {
		return nil, err
	}
	w := &wsConn{c: c, r: bufio.NewReaderSize(c, 65536), rnd: rnd, timeout: cfg.timeout}
	if err := w.handshake(cfg); err != nil {
		c.Close()
		return nil, err
	}
	return w, nil
}

func (w *wsConn) handshake(cfg config) error {
	var nonce [16]byte
	w.rnd.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req := "GET " + cfg.path + " HTTP/1.1\r\nHost: " + cfg.addr + "\r\n" +
		"Upgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	w.c.SetDeadline(time.Now().Add(w.timeout))
	if _, err := io.WriteString(w.c, req); err != nil {
		return err
	}
	status, err := w.r.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(status, "HTTP/1.1 101") {
		return wrong("handshake answered %q", strings.TrimSpace(status))
	}
	fields := map[string]string{}
	for {
		line, err := w.r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if i := strings.IndexByte(line, ':'); i > 0 {
			k := strings.ToLower(strings.TrimSpace(line[:i]))
			fields[k] = strings.TrimSpace(line[i+1:])
		}
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	want := base64.StdEncoding.EncodeToString(sum[:])
	switch {
	case !strings.EqualFold(fields["upgrade"], "websocket"):
		return wrong("101 without Upgrade: websocket")
	case !strings.Contains(strings.ToLower(fields["connection"]), "upgrade"):
		return wrong("101 without Connection: upgrade")
	case fields["sec-websocket-accept"] != want:
		return wrong("Sec-WebSocket-Accept %q, expected %q", fields["sec-websocket-accept"], want)
	case fields["sec-websocket-extensions"] != "":
		return wrong("an extension nobody offered: %q", fields["sec-websocket-extensions"])
	}
	return nil
}

// writeFrame sends one final frame, masked with a fresh key (RFC 6455 §5.3).
func (w *wsConn) writeFrame(op byte, payload []byte) error {
	n := len(payload)
	hdr := 2
	switch {
	case n > 65535:
		hdr = 10
	case n > 125:
		hdr = 4
	}
	total := hdr + 4 + n
	if cap(w.out) < total {
		w.out = make([]byte, total)
	}
	b := w.out[:total]
	b[0] = 0x80 | op
	switch hdr {
	case 2:
		b[1] = 0x80 | byte(n)
	case 4:
		b[1] = 0x80 | 126
		binary.BigEndian.PutUint16(b[2:], uint16(n))
	default:
		b[1] = 0x80 | 127
		binary.BigEndian.PutUint64(b[2:], uint64(n))
	}
	key := w.rnd.Uint32()
	binary.LittleEndian.PutUint32(b[hdr:], key)
	mask(b[hdr+4:], payload, key)
	_, err := w.c.Write(b)
	return err
}

// mask writes src XOR the repeated 4-byte key into dst, 8 bytes at a time.
func mask(dst, src []byte, key uint32) {
	k8 := uint64(key) | uint64(key)<<32
	i := 0
	for ; i+8 <= len(src); i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(src[i:])^k8)
	}
	var kb [4]byte
	binary.LittleEndian.PutUint32(kb[:], key)
	for ; i < len(src); i++ {
		dst[i] = src[i] ^ kb[i&3]
	}
}

// readMessage reads one whole data message (joining fragments, answering
// pings); a close frame or a masked frame from the server is an error.
func (w *wsConn) readMessage() (byte, []byte, error) {
	w.in = w.in[:0]
	var first byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.r, h[:]); err != nil {
			return 0, nil, err
		}
		fin, op := h[0]&0x80 != 0, h[0]&0x0f
		if h[0]&0x70 != 0 {
			return 0, nil, wrong("reserved bits set: %#x", h[0])
		}
		if h[1]&0x80 != 0 {
			return 0, nil, wrong("a masked frame from the server")
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var e [2]byte
			if _, err := io.ReadFull(w.r, e[:]); err != nil {
				return 0, nil, err
			}
			n = uint64(binary.BigEndian.Uint16(e[:]))
		case 127:
			var e [8]byte
			if _, err := io.ReadFull(w.r, e[:]); err != nil {
				return 0, nil, err
			}
			n = binary.BigEndian.Uint64(e[:])
		}
		if n > 1<<30 {
			return 0, nil, wrong("a %d-byte frame", n)
		}
		if op >= 8 {
			p := make([]byte, n)
			if _, err := io.ReadFull(w.r, p); err != nil {
				return 0, nil, err
			}
			switch op {
			case 8:
				code := 0
				if len(p) >= 2 {
					code = int(binary.BigEndian.Uint16(p))
				}
				return op, p, fmt.Errorf("server closed (code %d)", code)
			case 9:
				if err := w.writeFrame(0xA, p); err != nil {
					return 0, nil, err
				}
			}
			continue
		}
		switch {
		case op == 0 && first == 0:
			return 0, nil, wrong("a continuation frame with no message")
		case op != 0 && first != 0:
			return 0, nil, wrong("a new message inside a fragmented one")
		case op != 0:
			first = op
		}
		start := len(w.in)
		need := start + int(n)
		if cap(w.in) < need {
			grown := make([]byte, start, need)
			copy(grown, w.in)
			w.in = grown
		}
		w.in = w.in[:need]
		if _, err := io.ReadFull(w.r, w.in[start:]); err != nil {
			return 0, nil, err
		}
		if fin {
			return first, w.in, nil
		}
	}
}

// roundTrip sends one message and checks that its echo is the same bytes.
func (w *wsConn) roundTrip(op byte, payload []byte) error {
	w.c.SetDeadline(time.Now().Add(w.timeout))
	if err := w.writeFrame(op, payload); err != nil {
		return err
	}
	gotOp, got, err := w.readMessage()
	if err != nil {
		return err
	}
	if gotOp != op {
		return wrong("echo of opcode %d came back as opcode %d", op, gotOp)
	}
	if len(got) != len(payload) {
		return wrong("echo of %d bytes came back with %d", len(payload), len(got))
	}
	if string(got) != string(payload) {
		return wrong("echo of %d bytes differs in content", len(payload))
	}
	return nil
}

// closeHandshake sends close 1000 and waits for the server's close frame.
func (w *wsConn) closeHandshake() error {
	defer w.c.Close()
	w.c.SetDeadline(time.Now().Add(w.timeout))
	if err := w.writeFrame(0x8, []byte{0x03, 0xe8}); err != nil {
		return err
	}
	for {
		op, _, err := w.readMessage()
		if op == 8 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// payload makes a message of the scenario: printable ASCII (valid UTF-8 for
// text), its first 16 bytes the connection and sequence numbers, so that an
// echo of another message, or of another connection's, does not compare equal.
func fill(b []byte) {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
	for i := range b {
		b[i] = chars[(i*7+i/64)%len(chars)]
	}
}

func stamp(b []byte, conn, seq int) {
	digits(b[0:6], conn)
	b[6] = ':'
	digits(b[7:15], seq)
	b[15] = ':'
}

// digits writes n's last len(b) decimal digits into b, zero-padded.
func digits(b []byte, n int) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
}

func opcode(cfg config) byte {
	if cfg.binary {
		return 0x2
	}
	return 0x1
}

// ------------------------------------------------------------ check

func runCheck(cfg config) (map[string]interface{}, error) {
	if !webSocket(cfg) {
		c, err := openIdle(cfg, 0, nil)
		if err != nil {
			return nil, err
		}
		if _, err := c.check(0); err != nil {
			return nil, err
		}
		return map[string]interface{}{"mode": "check", "proto": cfg.proto, "requests": 2}, nil
	}
	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	w, err := dial(cfg, rnd)
	if err != nil {
		return nil, err
	}
	small := make([]byte, 64)
	fill(small)
	stamp(small, 0, 0)
	if err := w.roundTrip(0x1, small); err != nil {
		w.c.Close()
		return nil, err
	}
	msg := make([]byte, cfg.size)
	fill(msg)
	stamp(msg, 0, 1)
	if err := w.roundTrip(opcode(cfg), msg); err != nil {
		w.c.Close()
		return nil, err
	}
	if err := w.closeHandshake(); err != nil {
		return nil, fmt.Errorf("close handshake: %v", err)
	}
	return map[string]interface{}{"mode": "check", "messages": 2}, nil
}

// ------------------------------------------------------------ echo

type connResult struct {
	lat      []int64 // round trips that ended inside the window, ns
	err      error
	closeErr error
}

func runEcho(cfg config) (map[string]interface{}, error) {
	conns := make([]*wsConn, cfg.conns)
	for i := range conns {
		w, err := dial(cfg, rand.New(rand.NewSource(time.Now().UnixNano()+int64(i))))
		if err != nil {
			for _, c := range conns[:i] {
				c.c.Close()
			}
			return map[string]interface{}{"connected": i}, fmt.Errorf("connection %d: %v", i, err)
		}
		conns[i] = w
	}
	var stop atomic.Bool
	start := time.Now()
	end := start.Add(cfg.duration)
	time.AfterFunc(cfg.duration, func() { stop.Store(true) })
	results := make([]connResult, cfg.conns)
	var wg sync.WaitGroup
	for i, w := range conns {
		wg.Add(1)
		go func(i int, w *wsConn) {
			defer wg.Done()
			results[i] = echoLoop(cfg, i, w, &stop, end)
		}(i, w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	if elapsed > cfg.duration {
		elapsed = cfg.duration
	}
	var all []int64
	errs, closeErrs := 0, 0
	var firstErr error
	for _, r := range results {
		all = append(all, r.lat...)
		if r.err != nil {
			errs++
			if firstErr == nil || isWrong(r.err) {
				firstErr = r.err
			}
		}
		if r.closeErr != nil {
			closeErrs++
		}
	}
	res := summary(all, elapsed)
	res["mode"] = "echo"
	res["conns"] = cfg.conns
	res["size"] = cfg.size
	res["bytes"] = int64(len(all)) * int64(cfg.size)
	res["errors"] = errs
	res["close_errors"] = closeErrs
	if firstErr != nil {
		res["first_error"] = firstErr.Error()
		if isWrong(firstErr) {
			return res, firstErr
		}
	}
	if len(all) == 0 {
		return res, errors.New("no message came back")
	}
	return res, nil
}

func echoLoop(cfg config, id int, w *wsConn, stop *atomic.Bool, end time.Time) connResult {
	var r connResult
	r.lat = make([]int64, 0, 4096)
	msg := make([]byte, cfg.size)
	fill(msg)
	op := opcode(cfg)
	for seq := 0; !stop.Load(); seq++ {
		stamp(msg, id, seq)
		t0 := time.Now()
		if err := w.roundTrip(op, msg); err != nil {
			r.err = err
			w.c.Close()
			return r
		}
		t1 := time.Now()
		if !t1.After(end) {
			r.lat = append(r.lat, t1.Sub(t0).Nanoseconds())
		}
	}
	r.closeErr = w.closeHandshake()
	return r
}

func summary(lat []int64, elapsed time.Duration) map[string]interface{} {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return -1
		}
		i := int(p*float64(len(lat))+0.5) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(lat) {
			i = len(lat) - 1
		}
		return float64(lat[i]) / 1000
	}
	return map[string]interface{}{
		"messages":    len(lat),
		"duration_us": elapsed.Microseconds(),
		"p50":         pct(0.50),
		"p90":         pct(0.90),
		"p99":         pct(0.99),
		"p999":        pct(0.999),
		"max":         pct(1.0),
	}
}

// ------------------------------------------------------------ idle

func runIdle(cfg config) (map[string]interface{}, error) {
	conns := make([]idler, cfg.conns)
	errs := make([]error, cfg.conns)
	t0 := time.Now()
	each(cfg, func(i int) {
		conns[i], errs[i] = openIdle(cfg, i, rand.New(rand.NewSource(t0.UnixNano()+int64(i))))
	})
	openTime := time.Since(t0)
	opened, firstErr := 0, error(nil)
	for i, e := range errs {
		if e == nil {
			opened++
		} else if firstErr == nil || isWrong(e) {
			firstErr = fmt.Errorf("connection %d: %v", i, e)
		}
	}
	res := map[string]interface{}{"mode": "idle", "proto": cfg.proto, "conns": cfg.conns, "opened": opened,
		"open_us": openTime.Microseconds()}
	if firstErr != nil {
		for _, c := range conns {
			if c != nil {
				c.close()
			}
		}
		res["first_error"] = firstErr.Error()
		return res, firstErr
	}
	emit(map[string]interface{}{"event": "open", "opened": opened, "open_us": openTime.Microseconds()})
	// The driver measures the server now; a line on stdin (or its end)
	// says it is done.
	done := make(chan struct{})
	go func() {
		bufio.NewReader(os.Stdin).ReadString('\n')
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(cfg.hold):
		res["held_until_deadline"] = true
	}
	alive, closed := make([]bool, cfg.conns), make([]bool, cfg.conns)
	msgErrs := make([]error, cfg.conns)
	each(cfg, func(i int) {
		closed[i], msgErrs[i] = conns[i].check(i)
		alive[i] = msgErrs[i] == nil
	})
	nAlive, nClosed := 0, 0
	for i := range alive {
		if alive[i] {
			nAlive++
		} else if firstErr == nil || isWrong(msgErrs[i]) {
			firstErr = fmt.Errorf("connection %d after idling: %v", i, msgErrs[i])
		}
		if closed[i] {
			nClosed++
		}
	}
	res["alive"] = nAlive
	res["closed_cleanly"] = nClosed
	if firstErr != nil {
		res["first_error"] = firstErr.Error()
		return res, firstErr
	}
	return res, nil
}

// each runs f(0..conns-1) with at most cfg.parallel calls at once.
func each(cfg config, f func(int)) {
	sem := make(chan struct{}, cfg.parallel)
	var wg sync.WaitGroup
	for i := 0; i < cfg.conns; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			f(i)
		}(i)
	}
	wg.Wait()
}
