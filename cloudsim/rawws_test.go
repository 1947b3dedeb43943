package cloudsim

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawWS is a minimal WebSocket client speaking Engine.IO v4 by hand, to see
// exactly what the server puts on the wire (frame opcodes, packet text, how
// the connection ends) without a client library in between.
type rawWS struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

type frame struct {
	opcode  byte
	payload []byte
}

func rawDial(t testing.TB, c *Cloud, tok string) *rawWS {
	t.Helper()
	nc, err := net.Dial("tcp", strings.TrimPrefix(c.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(nc, "GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: cloud\r\nUpgrade: websocket\r\n"+
		"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"+
		"Authorization: Bearer %s\r\n\r\n", tok)
	br := bufio.NewReader(nc)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade = %d", res.StatusCode)
	}
	return &rawWS{t: t, nc: nc, br: br}
}

func (w *rawWS) read() (frame, error) {
	var h [2]byte
	if _, err := io.ReadFull(w.br, h[:]); err != nil {
		return frame{}, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(w.br, b[:]); err != nil {
			return frame{}, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(w.br, b[:]); err != nil {
			return frame{}, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(w.br, p); err != nil {
		return frame{}, err
	}
	return frame{opcode: h[0] & 0x0f, payload: p}, nil
}

// text reads frames until a text frame and returns it.
func (w *rawWS) text() string {
	w.t.Helper()
	for {
		f, err := w.read()
		if err != nil {
			w.t.Fatalf("reading: %v", err)
		}
		if f.opcode == 1 {
			return string(f.payload)
		}
	}
}

// send writes one masked text frame (zero mask key: payload unchanged).
func (w *rawWS) send(s string) {
	w.t.Helper()
	if len(s) >= 126 {
		w.t.Fatal("rawWS sends short frames only")
	}
	b := append([]byte{0x81, 0x80 | byte(len(s)), 0, 0, 0, 0}, s...)
	if _, err := w.nc.Write(b); err != nil {
		w.t.Fatal(err)
	}
}

// join does the Engine.IO OPEN and the /ws CONNECT; it returns the
// namespace SID.
func (w *rawWS) join() string {
	w.t.Helper()
	if open := w.text(); !strings.HasPrefix(open, "0{") || !strings.Contains(open, `"sid":`) {
		w.t.Fatalf("OPEN = %q", open)
	}
	w.send("40/ws,")
	ack := w.text()
	if !strings.HasPrefix(ack, "40/ws,") {
		w.t.Fatalf("CONNECT ack = %q", ack)
	}
	var body struct{ SID string }
	if err := json.Unmarshal([]byte(strings.TrimPrefix(ack, "40/ws,")), &body); err != nil || body.SID == "" {
		w.t.Fatalf("CONNECT ack %q: %v", ack, err)
	}
	return body.SID
}

func TestWireNumericEvent22AndDelta(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	d := c.Devids()[0]
	w := rawDial(t, c, tok)
	sid := w.join()
	bind(t, c, tok, "wsid", sid, []string{d})
	c.EmitMemoryUpdated(d)
	if got, want := w.text(), `42/ws,[22,{"devid":"`+d+`"}]`; got != want {
		t.Fatalf("event 22 on the wire = %s, want %s", got, want)
	}
	c.SetParam(d, "P4.v1", 21.5)
	got := w.text()
	prefix := `42/ws,["app:modules:parameters:change",{"` + d + `":{"P4":{"v1":{"updatedAt":`
	if !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, `,"value":21.5}}}}]`) {
		t.Fatalf("delta on the wire = %s", got)
	}
}

func TestWireCloseTransportSendsCloseFrame(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	w := rawDial(t, c, tok)
	w.join()
	c.Inject(Fault{Kind: FaultCloseTransport})
	for {
		f, err := w.read()
		if err != nil {
			t.Fatalf("connection ended without a close frame: %v", err)
		}
		if f.opcode == 8 {
			if len(f.payload) < 2 || binary.BigEndian.Uint16(f.payload) != 1000 {
				t.Fatalf("close frame payload %v, want code 1000", f.payload)
			}
			return
		}
	}
}

func TestWireAbortTransportDropsWithoutCloseFrame(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	w := rawDial(t, c, tok)
	sid := w.join()
	c.Inject(Fault{Kind: FaultAbortTransport})
	for {
		f, err := w.read()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("connection still open after abort_transport")
			}
			break // reset or EOF, with no close frame before it
		}
		if f.opcode == 8 {
			t.Fatal("abort_transport sent a close frame")
		}
	}
	eventually(t, "server to see the session end", func() bool { s, _ := sessionBySID(c, sid); return !s.Connected })
	if len(c.Faults()) != 0 {
		t.Fatalf("one-shot fault still active: %v", c.Faults())
	}
}

func TestWireStallTransportBlackHolesUntilCleared(t *testing.T) {
	// Pings every 50 ms: a live connection carries traffic all the time.
	c := startCloud(t, Options{PingInterval: 50 * time.Millisecond, PingTimeout: 100 * time.Millisecond})
	tok := login(t, c)
	w := rawDial(t, c, tok)
	sid := w.join()
	if ping := w.text(); ping != "2" {
		t.Fatalf("first packet after the join = %q, want a ping", ping)
	}
	w.send("3")
	id := c.Inject(Fault{Kind: FaultStallTransport})
	// Nothing arrives, and the cloud's end of the session (its own ping
	// timeout, as no pong can answer a ping that was never sent) neither
	// closes nor resets the connection: reads only time out.
	eventually(t, "the cloud to end its side of the session", func() bool { s, _ := sessionBySID(c, sid); return !s.Connected })
	_ = w.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	f, err := w.read()
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("read on a stalled connection = opcode %d %q, %v; want a timeout", f.opcode, f.payload, err)
	}
	if got := c.Faults(); len(got) != 1 || got[0].ID != id {
		t.Fatalf("the fired stall is not listed until cleared: %+v", got)
	}
	// Cleared: the connection is dropped.
	c.Clear(id)
	_ = w.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		f, err := w.read()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("connection still open after the stall was cleared")
			}
			break
		}
		if f.opcode == 8 {
			t.Fatal("a close frame came out of a stalled connection")
		}
	}
	// A new session is not stalled.
	w2 := rawDial(t, c, tok)
	w2.join()
	if ping := w2.text(); ping != "2" {
		t.Fatalf("first packet on a new session = %q, want a ping", ping)
	}
}

func TestWireConnectErrorAfterTheJoin(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	w := rawDial(t, c, tok)
	w.join()
	c.Inject(Fault{Kind: FaultConnectError, Body: "token revoked"})
	if got, want := w.text(), `44/ws,{"message":"token revoked"}`; got != want {
		t.Fatalf("packet after the fault = %s, want %s", got, want)
	}
	if len(c.Faults()) != 0 {
		t.Fatalf("one-shot fault still active: %v", c.Faults())
	}
}

// A client packet that reaches the server before the library has filed the
// socket under its namespace must wait behind the join, not close the
// connection. A client that emits as soon as its join is acknowledged meets
// that window by chance; sending the event right behind the CONNECT meets
// it every time.
func TestEventRightBehindTheJoinIsKept(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	for i := range 5 {
		w := rawDial(t, c, tok)
		if open := w.text(); !strings.HasPrefix(open, "0{") {
			t.Fatalf("OPEN = %q", open)
		}
		w.send("40/ws,")
		w.send(`42/ws,["probe",` + fmt.Sprint(i) + `]`)
		ack := w.text()
		var body struct{ SID string }
		if !strings.HasPrefix(ack, "40/ws,") || json.Unmarshal([]byte(strings.TrimPrefix(ack, "40/ws,")), &body) != nil || body.SID == "" {
			t.Fatalf("CONNECT ack = %q", ack)
		}
		eventually(t, "the event behind the join to be recorded", func() bool {
			s, ok := sessionBySID(c, body.SID)
			return ok && s.Listens["probe"] == 1
		})
		if s, _ := sessionBySID(c, body.SID); !s.Connected || len(s.Emits) != 1 || s.Emits[0].Arg != float64(i) {
			t.Fatalf("session after the event = %+v", s)
		}
	}
}
