// WebSocket over HTTP/2 (RFC 8441) for -proto wsh2c: each connection is an
// h2c connection with prior knowledge whose stream 1 is opened with an
// extended CONNECT (:protocol websocket); the WebSocket frames of main.go
// then go as that stream's DATA. h2Stream is the stream as a byte stream
// for wsConn: its writes are DATA frames within the server's windows, its
// reads the DATA payloads, other frames handled on the way (SETTINGS
// acknowledged, PING answered, WINDOW_UPDATE counted).
package main

import (
	"bufio"
	"encoding/binary"
	"io"
	"math/rand"
	"net"
	"time"
)

// Our receive windows: the connection's and each stream's are raised to
// this at the start and given back when half of it is used, so the
// server's sends are bounded by its own backpressure, not by ours.
const h2Window = 1 << 30

type h2Stream struct {
	c        net.Conn
	r        *bufio.Reader
	id       uint32
	sendConn int64 // the server's windows for what we send
	sendStrm int64
	initial  int64 // the server's SETTINGS_INITIAL_WINDOW_SIZE
	maxFrame int
	used     int64  // DATA bytes received and not yet given back
	pending  []byte // DATA payload received and not yet read
	ended    bool   // the server's END_STREAM
	out      []byte
}

func dialH2WS(cfg config, rnd *rand.Rand) (*wsConn, error) {
	c, err := net.DialTimeout("tcp", cfg.addr, cfg.timeout)
	if err != nil {
		return nil, err
	}
	s := &h2Stream{c: c, r: bufio.NewReaderSize(c, 65536), id: 1, sendConn: 65535,
		sendStrm: 65535, initial: 65535, maxFrame: 16384}
	w := &wsConn{c: s, r: bufio.NewReaderSize(s, 65536), rnd: rnd, timeout: cfg.timeout}
	if err := s.open(cfg); err != nil {
		c.Close()
		return nil, err
	}
	return w, nil
}

// open: the preface, our SETTINGS (INITIAL_WINDOW_SIZE) and connection
// window, the server's SETTINGS (ENABLE_CONNECT_PROTOCOL must be 1), then
// the extended CONNECT and its 200.
func (s *h2Stream) open(cfg config) error {
	s.c.SetDeadline(time.Now().Add(cfg.timeout))
	settings := make([]byte, 6)
	binary.BigEndian.PutUint16(settings, 0x4)
	binary.BigEndian.PutUint32(settings[2:], h2Window)
	inc := make([]byte, 4)
	binary.BigEndian.PutUint32(inc, h2Window-65535)
	if _, err := io.WriteString(s.c, h2Preface); err != nil {
		return err
	}
	if err := s.frame(0x4, 0, 0, settings); err != nil {
		return err
	}
	if err := s.frame(0x8, 0, 0, inc); err != nil {
		return err
	}
	connect := false
	for !connect {
		typ, flags, _, payload, err := s.readFrame()
		if err != nil {
			return err
		}
		if typ != 0x4 || flags&0x1 != 0 {
			continue
		}
		for i := 0; i+6 <= len(payload); i += 6 {
			if binary.BigEndian.Uint16(payload[i:]) == 0x8 && binary.BigEndian.Uint32(payload[i+2:]) == 1 {
				connect = true
			}
		}
		if !connect {
			return wrong("the server's SETTINGS do not enable the extended CONNECT")
		}
	}
	// HPACK without Huffman or indexing: :method CONNECT (name 2),
	// :protocol (a new name), :scheme http (static 6), :path (name 4),
	// :authority (name 1), sec-websocket-version: 13.
	block := lit([]byte{0x02}, "CONNECT")
	block = append(block, lit(append([]byte{0x00}, str(":protocol")...), "websocket")...)
	block = append(block, 0x86)
	block = append(block, lit([]byte{0x04}, cfg.path)...)
	block = append(block, lit([]byte{0x01}, cfg.addr)...)
	block = append(block, lit(append([]byte{0x00}, str("sec-websocket-version")...), "13")...)
	if err := s.frame(0x1, 0x4, s.id, block); err != nil {
		return err
	}
	for {
		typ, flags, stream, payload, err := s.readFrame()
		if err != nil {
			return err
		}
		if typ == 0x1 && stream == s.id {
			if flags&0x28 != 0 || len(payload) == 0 || payload[0] != 0x88 {
				return wrong("the extended CONNECT is not answered with a plain indexed 200")
			}
			if flags&0x1 != 0 {
				return wrong("the 200 of the extended CONNECT ends the stream")
			}
			return nil
		}
	}
}

func str(v string) []byte { return append([]byte{byte(len(v))}, v...) }

// lit: a literal field without indexing, its name given by prefix.
func lit(prefix []byte, value string) []byte { return append(prefix, str(value)...) }

func (s *h2Stream) frame(typ, flags byte, stream uint32, payload []byte) error {
	n := 9 + len(payload)
	if cap(s.out) < n {
		s.out = make([]byte, n)
	}
	b := s.out[:n]
	b[0], b[1], b[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	b[3], b[4] = typ, flags
	binary.BigEndian.PutUint32(b[5:], stream)
	copy(b[9:], payload)
	_, err := s.c.Write(b)
	return err
}

// readFrame reads the next frame and does what the connection needs
// (ACKs, windows, DATA kept for Read); GOAWAY and a reset of our stream
// are errors.
func (s *h2Stream) readFrame() (byte, byte, uint32, []byte, error) {
	var hdr [9]byte
	if _, err := io.ReadFull(s.r, hdr[:]); err != nil {
		return 0, 0, 0, nil, err
	}
	n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
	typ, flags := hdr[3], hdr[4]
	stream := binary.BigEndian.Uint32(hdr[5:]) & 0x7fffffff
	payload := make([]byte, n)
	if _, err := io.ReadFull(s.r, payload); err != nil {
		return 0, 0, 0, nil, err
	}
	switch {
	case typ == 0x0 && stream == s.id:
		data := payload
		if flags&0x8 != 0 && len(data) > 0 {
			pad := int(data[0])
			if pad+1 > len(data) {
				return 0, 0, 0, nil, wrong("DATA with more padding than payload")
			}
			data = data[1 : len(data)-pad]
		}
		s.pending = append(s.pending, data...)
		s.ended = s.ended || flags&0x1 != 0
		if err := s.giveBack(int64(n)); err != nil {
			return 0, 0, 0, nil, err
		}
	case typ == 0x4 && flags&0x1 == 0:
		for i := 0; i+6 <= len(payload); i += 6 {
			v := int64(binary.BigEndian.Uint32(payload[i+2:]))
			switch binary.BigEndian.Uint16(payload[i:]) {
			case 0x4:
				s.sendStrm += v - s.initial
				s.initial = v
			case 0x5:
				s.maxFrame = int(v)
			}
		}
		if err := s.frame(0x4, 0x1, 0, nil); err != nil {
			return 0, 0, 0, nil, err
		}
	case typ == 0x6 && flags&0x1 == 0:
		if err := s.frame(0x6, 0x1, 0, payload); err != nil {
			return 0, 0, 0, nil, err
		}
	case typ == 0x8 && len(payload) == 4:
		inc := int64(binary.BigEndian.Uint32(payload) & 0x7fffffff)
		if stream == 0 {
			s.sendConn += inc
		} else if stream == s.id {
			s.sendStrm += inc
		}
	case typ == 0x7:
		return 0, 0, 0, nil, wrong("GOAWAY from the server")
	case typ == 0x3 && stream == s.id:
		return 0, 0, 0, nil, wrong("stream %d reset", s.id)
	}
	return typ, flags, stream, payload, nil
}

// giveBack: WINDOW_UPDATEs for the connection and the stream once half
// of our window is used.
func (s *h2Stream) giveBack(n int64) error {
	s.used += n
	if s.used < h2Window/2 {
		return nil
	}
	inc := make([]byte, 4)
	binary.BigEndian.PutUint32(inc, uint32(s.used))
	s.used = 0
	if err := s.frame(0x8, 0, 0, inc); err != nil {
		return err
	}
	return s.frame(0x8, 0, s.id, inc)
}

// Read: the stream's DATA payload, reading frames until some came.
func (s *h2Stream) Read(p []byte) (int, error) {
	for len(s.pending) == 0 {
		if s.ended {
			return 0, io.EOF
		}
		if _, _, _, _, err := s.readFrame(); err != nil {
			return 0, err
		}
	}
	n := copy(p, s.pending)
	s.pending = s.pending[n:]
	if len(s.pending) == 0 {
		s.pending = s.pending[:0:0]
	}
	return n, nil
}

// Write: DATA frames of at most the server's frame size, within its
// windows, reading frames (for their WINDOW_UPDATEs) while they are spent.
func (s *h2Stream) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		n := int64(len(p) - written)
		n = min64(n, min64(s.sendConn, min64(s.sendStrm, int64(s.maxFrame))))
		if n <= 0 {
			if _, _, _, _, err := s.readFrame(); err != nil {
				return written, err
			}
			continue
		}
		if err := s.frame(0x0, 0, s.id, p[written:written+int(n)]); err != nil {
			return written, err
		}
		s.sendConn -= n
		s.sendStrm -= n
		written += int(n)
	}
	return written, nil
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}

func (s *h2Stream) SetDeadline(t time.Time) error { return s.c.SetDeadline(t) }

func (s *h2Stream) Close() error { return s.c.Close() }
