// The idle connections of the idle mode, by protocol (-proto): ws (a
// WebSocket after its handshake), h1 (HTTP/1.1 keep-alive after one
// request), h1tls (the same over TLS, ALPN http/1.1) or h2c (HTTP/2 with
// prior knowledge after one request). Each
// is opened, held, then checked once: one more message or request must
// be answered, so the connection is known to have stayed open.
package main

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"io"
	"math/rand"
	"net"
	"strconv"
	"strings"
	"time"
)

type idler interface {
	// check sends one more message (request) and reads its answer; true
	// when the connection then also closed cleanly (WebSocket close).
	check(i int) (bool, error)
	close()
}

func openIdle(cfg config, i int, rnd *rand.Rand) (idler, error) {
	switch cfg.proto {
	case "h1", "h1tls":
		return dialH1(cfg)
	case "h2c":
		return dialH2(cfg)
	default:
		w, err := dial(cfg, rnd)
		if err != nil {
			return nil, err
		}
		return &wsIdle{w}, nil
	}
}

// ------------------------------------------------------------ ws

type wsIdle struct{ w *wsConn }

func (x *wsIdle) check(i int) (bool, error) {
	msg := make([]byte, 64)
	fill(msg)
	stamp(msg, i, 0)
	if err := x.w.roundTrip(0x1, msg); err != nil {
		x.w.c.Close()
		return false, err
	}
	return x.w.closeHandshake() == nil, nil
}

func (x *wsIdle) close() { x.w.c.Close() }

// ------------------------------------------------------------ HTTP/1.1

type h1Conn struct {
	c       net.Conn
	r       *bufio.Reader
	req     string
	timeout time.Duration
}

func dialH1(cfg config) (*h1Conn, error) {
	c, err := net.DialTimeout("tcp", cfg.addr, cfg.timeout)
	if err != nil {
		return nil, err
	}
	if cfg.proto == "h1tls" {
		if c, err = tlsClient(c, cfg, "http/1.1"); err != nil {
			return nil, err
		}
	}
	h := &h1Conn{c: c, r: bufio.NewReaderSize(c, 4096), timeout: cfg.timeout,
		req: "GET " + cfg.path + " HTTP/1.1\r\nHost: " + cfg.addr + "\r\n\r\n"}
	if err := h.get(); err != nil {
		c.Close()
		return nil, err
	}
	return h, nil
}

// tlsClient runs a TLS handshake on c offering ALPN proto alone, which the
// server must choose. The bench's certificate is a self-signed test one
// (bench_tls), so it is not verified; the version and suite are what the
// server allows (TLS 1.3, TLS_AES_128_GCM_SHA256 for every fixture).
func tlsClient(c net.Conn, cfg config, proto string) (net.Conn, error) {
	t := tls.Client(c, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{proto},
		MinVersion: tls.VersionTLS12})
	t.SetDeadline(time.Now().Add(cfg.timeout))
	if err := t.Handshake(); err != nil {
		c.Close()
		return nil, err
	}
	if got := t.ConnectionState().NegotiatedProtocol; got != proto {
		t.Close()
		return nil, wrong("ALPN: the server chose %q, not %q", got, proto)
	}
	return t, nil
}

// get sends the request and reads a 200 with a Content-Length body.
func (h *h1Conn) get() error {
	h.c.SetDeadline(time.Now().Add(h.timeout))
	if _, err := io.WriteString(h.c, h.req); err != nil {
		return err
	}
	status, err := h.r.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(status, "HTTP/1.1 200") {
		return wrong("request answered %q", strings.TrimSpace(status))
	}
	length := -1
	for {
		line, err := h.r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if i := strings.IndexByte(line, ':'); i > 0 &&
			strings.EqualFold(strings.TrimSpace(line[:i]), "content-length") {
			length, _ = strconv.Atoi(strings.TrimSpace(line[i+1:]))
		}
		if strings.HasPrefix(strings.ToLower(line), "connection: close") {
			return wrong("the server closes the connection after a request")
		}
	}
	if length < 0 {
		return wrong("response without Content-Length")
	}
	_, err = io.CopyN(io.Discard, h.r, int64(length))
	return err
}

func (h *h1Conn) check(int) (bool, error) {
	defer h.c.Close()
	return true, h.get()
}

func (h *h1Conn) close() { h.c.Close() }

// ------------------------------------------------------------ h2c

type h2Conn struct {
	c       net.Conn
	r       *bufio.Reader
	cfg     config
	next    uint32
	timeout time.Duration
}

const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

func dialH2(cfg config) (*h2Conn, error) {
	c, err := net.DialTimeout("tcp", cfg.addr, cfg.timeout)
	if err != nil {
		return nil, err
	}
	h := &h2Conn{c: c, r: bufio.NewReaderSize(c, 16384), cfg: cfg, next: 1, timeout: cfg.timeout}
	c.SetDeadline(time.Now().Add(h.timeout))
	// the preface and an empty SETTINGS
	if _, err := io.WriteString(c, h2Preface+"\x00\x00\x00\x04\x00\x00\x00\x00\x00"); err != nil {
		c.Close()
		return nil, err
	}
	if err := h.get(); err != nil {
		c.Close()
		return nil, err
	}
	return h, nil
}

func (h *h2Conn) frame(typ, flags byte, stream uint32, payload []byte) error {
	hdr := make([]byte, 9, 9+len(payload))
	hdr[0], hdr[1], hdr[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	hdr[3], hdr[4] = typ, flags
	binary.BigEndian.PutUint32(hdr[5:], stream)
	_, err := h.c.Write(append(hdr, payload...))
	return err
}

// get sends GET on the next stream (HPACK: indexed :method GET and
// :scheme http, literal :path and :authority without indexing) and reads
// frames until that stream ends; the response must be a 200 (indexed
// :status 200 first in its block). SETTINGS and PING are acknowledged.
func (h *h2Conn) get() error {
	id := h.next
	h.next += 2
	h.c.SetDeadline(time.Now().Add(h.timeout))
	block := []byte{0x82, 0x86, 0x04, byte(len(h.cfg.path))}
	block = append(block, h.cfg.path...)
	block = append(block, 0x01, byte(len(h.cfg.addr)))
	block = append(block, h.cfg.addr...)
	if err := h.frame(0x1, 0x5, id, block); err != nil {
		return err
	}
	var hdr [9]byte
	for {
		if _, err := io.ReadFull(h.r, hdr[:]); err != nil {
			return err
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		typ, flags := hdr[3], hdr[4]
		stream := binary.BigEndian.Uint32(hdr[5:]) & 0x7fffffff
		payload := make([]byte, n)
		if _, err := io.ReadFull(h.r, payload); err != nil {
			return err
		}
		switch {
		case typ == 0x4 && flags&0x1 == 0:
			if err := h.frame(0x4, 0x1, 0, nil); err != nil {
				return err
			}
		case typ == 0x6 && flags&0x1 == 0:
			if err := h.frame(0x6, 0x1, 0, payload); err != nil {
				return err
			}
		case typ == 0x7:
			return wrong("GOAWAY from the server")
		case typ == 0x3 && stream == id:
			return wrong("stream %d reset", id)
		case typ == 0x1 && stream == id:
			if flags&0x28 != 0 || n == 0 || payload[0] != 0x88 {
				return wrong("response on stream %d is not a plain indexed 200", id)
			}
			if flags&0x1 != 0 {
				return nil
			}
		case typ == 0x0 && stream == id && flags&0x1 != 0:
			return nil
		}
	}
}

func (h *h2Conn) check(int) (bool, error) {
	defer h.c.Close()
	return true, h.get()
}

func (h *h2Conn) close() { h.c.Close() }
