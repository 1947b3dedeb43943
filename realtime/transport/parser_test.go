package transport

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/zishang520/socket.io/parsers/socket/v3/parser"
	"github.com/zishang520/socket.io/v3/pkg/types"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/wire"
)

// decodeWith feeds one text packet to a decoder and returns what it emitted.
func decodeWith(d parser.Decoder, packet string) ([]*parser.Packet, error) {
	var got []*parser.Packet
	_ = d.On("decoded", func(a ...any) {
		p, _ := argAt(a, 0).(*parser.Packet)
		got = append(got, p)
	})
	// The library's engine hands over text frames as *types.StringBuffer.
	err := d.Add(types.NewStringBufferString(packet))
	return got, err
}

func decodeRaw(t *testing.T, packet string) *parser.Packet {
	t.Helper()
	got, err := decodeWith(newRawDecoder(), packet)
	if err != nil {
		t.Fatalf("decode %q: %v", packet, err)
	}
	if len(got) != 1 || got[0] == nil {
		t.Fatalf("decode %q emitted %d packets, want 1", packet, len(got))
	}
	return got[0]
}

func ptr(v uint64) *uint64 { return &v }

func TestRawParserPacketTypes(t *testing.T) {
	cases := []struct {
		in   string
		typ  parser.PacketType
		nsp  string
		id   *uint64
		data any // for EVENT: []any with the name, then the raw arguments as strings
	}{
		// CONNECT ack: the library reads "sid" (and "pid") from a map[string]any.
		{`0/ws,{"sid":"abc"}`, parser.CONNECT, "/ws", nil, map[string]any{"sid": "abc"}},
		{`0{"sid":"x","pid":"y"}`, parser.CONNECT, "/", nil, map[string]any{"sid": "x", "pid": "y"}},
		{`0/ws,`, parser.CONNECT, "/ws", nil, nil},
		{`0`, parser.CONNECT, "/", nil, nil},
		{`1/ws,`, parser.DISCONNECT, "/ws", nil, nil},
		{`1/ws`, parser.DISCONNECT, "/ws", nil, nil},
		// EVENT: string and numeric names, arguments untouched.
		{`2/ws,["app:modules:parameters:change",{"M1":{"P4":{"v2":1,"v1":{"value":21.50}}}}]`, parser.EVENT, "/ws", nil,
			[]any{"app:modules:parameters:change", `{"M1":{"P4":{"v2":1,"v1":{"value":21.50}}}}`}},
		{`2/ws,[22,{"devid":"M1"}]`, parser.EVENT, "/ws", nil, []any{22.0, `{"devid":"M1"}`}},
		{`2/ws,[61.5]`, parser.EVENT, "/ws", nil, []any{61.5}},
		{`2/ws,12["x", "a" , 3,null,[true,false],{}]`, parser.EVENT, "/ws", ptr(12), []any{"x", `"a"`, `3`, `null`, `[true,false]`, `{}`}},
		{`2["caf\u00e9 \"q\"",1]`, parser.EVENT, "/", nil, []any{`café "q"`, `1`}},
		{"2[\"bad \xff byte\"]", parser.EVENT, "/", nil, []any{"bad \uFFFD byte"}},
		{`2["x"] trailing`, parser.EVENT, "/", nil, []any{"x"}}, // the library reads one value and ignores the rest
		{`3/ws,7["ok",2]`, parser.ACK, "/ws", ptr(7), []any{"ok", 2.0}},
		{`3/ws,8[]`, parser.ACK, "/ws", ptr(8), []any{}},
		{`4/ws,{"message":"not authorized"}`, parser.CONNECT_ERROR, "/ws", nil, map[string]any{"message": "not authorized"}},
		{`4/ws,{"message":"x","data":{"a":1}}`, parser.CONNECT_ERROR, "/ws", nil, map[string]any{"message": "x", "data": map[string]any{"a": 1.0}}},
		{`4/ws,"plain text"`, parser.CONNECT_ERROR, "/ws", nil, "plain text"},
		// A binary event without attachments is complete at once.
		{`50-/ws,["bin",1]`, parser.BINARY_EVENT, "/ws", nil, []any{"bin", 1.0}},
	}
	for _, tc := range cases {
		p := decodeRaw(t, tc.in)
		if p.Type != tc.typ || p.Nsp != tc.nsp || !reflect.DeepEqual(p.Id, tc.id) {
			t.Errorf("%q: type %v nsp %q id %v, want %v %q %v", tc.in, p.Type, p.Nsp, p.Id, tc.typ, tc.nsp, tc.id)
			continue
		}
		data := p.Data
		if tc.typ == parser.EVENT {
			args, ok := p.Data.([]any)
			if !ok {
				t.Errorf("%q: data %T, want []any", tc.in, p.Data)
				continue
			}
			conv := []any{args[0]}
			for _, a := range args[1:] {
				raw, ok := a.(json.RawMessage)
				if !ok {
					t.Errorf("%q: argument %T, want json.RawMessage", tc.in, a)
				}
				conv = append(conv, string(raw))
			}
			data = conv
		}
		if !reflect.DeepEqual(data, tc.data) {
			t.Errorf("%q: data %#v, want %#v", tc.in, data, tc.data)
		}
	}
}

func TestRawParserMalformed(t *testing.T) {
	for _, in := range []string{
		``, `7`, `9["x"]`, `x`, `-1`,
		`2`, `2/ws,`, `2/ws,[]`, `2/ws,{}`, `2/ws,"x"`, `2/ws,[`, `2/ws,["x"`, `2/ws,["x",]`, `2/ws,["x" 1]`,
		`2["connect"]`, `2["disconnect",{}]`, `2["connect_error"]`, `2[null,1]`, `2[true]`, `2[{}]`, `2[[1]]`,
		`2["x",{"a":}]`, `2["x",{"a" 1}]`, `2["x",{1:2}]`, `2["x",tru]`, `2["x",nul]`, `2["x",01]`, `2["x",1.]`, `2["x",1e]`,
		`2["x",-]`, `2["x",+1]`, `2["x",.5]`, `2["x","\x"]`, `2["x","\u12"]`, "2[\"x\",\"a\x01b\"]", `2["x","open]`,
		`2["x",1e400]`, `2[1e400]`, `2["x",-1e999]`, `2["x",` + "1" + strings.Repeat("0", 400) + `]`,
		`2["x",` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `]`,
		`2/ws,123456789012345678901["x"]`, `2/` + strings.Repeat("n", 600) + `,["x"]`,
		`0/ws,"text"`, `0/ws,[1]`, `1/ws,{}`, `1/ws,"x"`, `3/ws,1{}`, `3/ws,1`, `4/ws,`, `4/ws,[1]`, `4/ws,{`,
		`5/ws,["x"]`, `5x-/ws,["x"]`, `511-/ws,["x"]`,
	} {
		d := newRawDecoder()
		var emitted bool
		_ = d.On("decoded", func(...any) { emitted = true })
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%.60q: panic %v", in, r)
				}
			}()
			return d.Add(types.NewStringBufferString(in))
		}()
		if err == nil {
			t.Errorf("%.60q: accepted", in)
		}
		if emitted {
			t.Errorf("%.60q: emitted a packet", in)
		}
	}
	// Nesting up to encoding/json's limit is fine.
	deep := `2["x",` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `]`
	if _, err := decodeWith(newRawDecoder(), deep); err != nil {
		t.Errorf("nesting of 10000: %v", err)
	}
	// A syntax error says where it is and is the library's invalid payload.
	_, err := decodeWith(newRawDecoder(), `2["x",{"a":}]`)
	var se *wire.SyntaxError
	if !errors.As(err, &se) || !errors.Is(err, parser.ErrInvalidPayload) || se.Offset != 10 {
		t.Errorf("syntax error = %v (%T), want a *wire.SyntaxError at offset 10 (of the JSON) wrapping ErrInvalidPayload", err, err)
	}
}

// The payload of an event shares nothing with the library's buffer: a
// buffer reused after Add does not change what was decoded.
func TestRawParserCopiesTheFrame(t *testing.T) {
	d := newRawDecoder()
	var got *parser.Packet
	_ = d.On("decoded", func(a ...any) { got = a[0].(*parser.Packet) })
	buf := types.NewStringBufferString(`2["x",{"v":1}]`)
	if err := d.Add(buf); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	copy(b, strings.Repeat("#", len(b)))
	if arg := string(got.Data.([]any)[1].(json.RawMessage)); arg != `{"v":1}` {
		t.Fatalf("argument changed with the library's buffer: %s", arg)
	}
}

func TestRawParserBinaryPackets(t *testing.T) {
	d := newRawDecoder()
	var got []*parser.Packet
	_ = d.On("decoded", func(a ...any) { got = append(got, a[0].(*parser.Packet)) })

	if err := d.Add([]byte{1}); err == nil {
		t.Error("an attachment without a binary packet was accepted")
	}
	if err := d.Add(`51-/ws,["upload",{"_placeholder":true,"num":0}]`); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatal("binary packet emitted before its attachment")
	}
	if err := d.Add(`2/ws,["x"]`); !errors.Is(err, parser.ErrPlaintextDuringReconstruction) {
		t.Errorf("text while an attachment is awaited = %v", err)
	}
	if err := d.Add(types.NewBytesBuffer([]byte{1, 2, 3})); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Type != parser.BINARY_EVENT || got[0].Nsp != "/ws" {
		t.Fatalf("reassembled %+v", got)
	}
	args := got[0].Data.([]any)
	if buf, ok := args[1].(types.BufferInterface); len(args) != 2 || args[0] != "upload" || !ok || string(buf.Bytes()) != "\x01\x02\x03" {
		t.Fatalf("binary event data %#v", args)
	}
	// Text flows again once the attachment arrived.
	if err := d.Add(`2/ws,["x"]`); err != nil || len(got) != 2 {
		t.Fatalf("text after the binary packet: %v, %d packets", err, len(got))
	}

	// Destroy abandons a half-received binary packet.
	if err := d.Add(`51-/ws,["upload",{"_placeholder":true,"num":0}]`); err != nil {
		t.Fatal(err)
	}
	d.Destroy()
	if err := d.Add(`2/ws,["y"]`); err != nil || len(got) != 3 {
		t.Fatalf("text after Destroy: %v, %d packets", err, len(got))
	}
}

// What the library's encoder writes (the client's own packets, and the
// Go server's, which uses the same encoder) decodes to the same packet.
func TestRawParserReadsTheEncoder(t *testing.T) {
	enc := rawParser{}.NewEncoder()
	for _, p := range []*parser.Packet{
		{Type: parser.CONNECT, Nsp: "/ws", Data: map[string]any{"sid": "s1", "pid": "p1"}},
		{Type: parser.DISCONNECT, Nsp: "/ws"},
		{Type: parser.EVENT, Nsp: "/ws", Data: []any{"app:modules:parameters:change", map[string]any{"M1": map[string]any{"P4": map[string]any{"v1": 1.5}}}, "x"}},
		{Type: parser.EVENT, Nsp: "/", Data: []any{22.0, map[string]any{"devid": "M1"}}, Id: ptr(3)},
		{Type: parser.ACK, Nsp: "/ws", Data: []any{"done"}, Id: ptr(4)},
		{Type: parser.CONNECT_ERROR, Nsp: "/ws", Data: map[string]any{"message": "nope"}},
	} {
		bufs := enc.Encode(p)
		if len(bufs) != 1 {
			t.Fatalf("%v encoded into %d buffers", p.Type, len(bufs))
		}
		got := decodeRaw(t, bufs[0].String())
		if p.Type == parser.EVENT {
			got.Data = libraryArgs(t, got.Data.([]any))
		}
		if !reflect.DeepEqual(got, p) {
			t.Errorf("%s decoded to %+v, want %+v", bufs[0].String(), got, p)
		}
	}
}

// libraryArgs decodes raw event arguments the way the library would have.
func libraryArgs(t testing.TB, data []any) []any {
	t.Helper()
	out := []any{data[0]}
	for _, a := range data[1:] {
		var v any
		if err := json.Unmarshal(a.(json.RawMessage), &v); err != nil {
			t.Fatalf("argument %s is not JSON: %v", a, err)
		}
		out = append(out, v)
	}
	return out
}

// parserCorpus seeds the comparison with the library and the fuzz target.
var parserCorpus = []string{
	`0/ws,{"sid":"abc"}`, `0`, `0/ws,`, `1/ws,`, `2/ws,["app:modules:parameters:change",{"M1":{"P4":{"v1":{"value":21.5}}}}]`,
	`2/ws,[22,{"devid":"M1"}]`, `2/ws,12["x",1,"a",null,true,false,[1,2],{"k":[{}]}]`, `2["x"] tail`, `2 ["x"]`,
	`2["caf\u00e9",1]`, `2["x",1e400]`, `2["x",1e-400]`, `2["x",-0.0e+5]`, `2["connect"]`, `2[]`, `2{}`, `2["x",]`,
	`3/ws,7["ok"]`, `3/ws,7`, `4/ws,{"message":"m"}`, `4/ws,"m"`, `4/ws,1`, `50-/ws,["b"]`, `51-/ws,["b",{"_placeholder":true,"num":0}]`,
	`2/ws,123456789012345678901["x"]`, `2/ws,1234567890123456789["x"]`, `2/ws`, `2/ws,`, "2[\"\xff\",\"\xfe\"]", `2["x","\ud800"]`,
	`2[1.5e3]`, `2[-7]`, `2["x",{"a":1,"a":2}]`, "2[\"x\"\n,\t{}\r]",
}

// TestRawParserAgreesWithLibrary decodes the corpus with both parsers: the
// same packets are accepted, with the same header and the same data.
func TestRawParserAgreesWithLibrary(t *testing.T) {
	for _, in := range parserCorpus {
		compareWithLibrary(t, in)
	}
}

func compareWithLibrary(t *testing.T, in string) {
	t.Helper()
	want, werr := decodeWith(parser.NewDecoder(), in)
	got, gerr := decodeWith(newRawDecoder(), in)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%.80q: library error %v, raw parser error %v", in, werr, gerr)
	}
	if len(want) != len(got) {
		t.Fatalf("%.80q: library emitted %d packets, raw parser %d", in, len(want), len(got))
	}
	for i := range got {
		g, w := *got[i], *want[i]
		if g.Type == parser.EVENT {
			g.Data = libraryArgs(t, g.Data.([]any))
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%.80q: raw parser %+v, library %+v", in, g, w)
		}
	}
}

// FuzzRawParser: any frame is decoded without a panic, and exactly as the
// library's decoder decodes it, except that event arguments stay raw JSON
// that reads as what the library would have built.
func FuzzRawParser(f *testing.F) {
	for _, s := range parserCorpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		compareWithLibrary(t, in)
	})
}

// Over a real session, event arguments reach the consumer as the server
// wrote them: key order, number spelling and escapes untouched, several
// arguments each on their own, an ack request not among them.
func TestEventArgumentsArriveAsSent(t *testing.T) {
	g := newGoServer(t, goServerOptions{})
	c := newTestClient(t, g.URL, g.token, nil)
	s := connect(t, c)
	eventOf(t, s, cloudapi.EventConnect)
	emitRaw(g.socket(1), `2/ws,["app:modules:parameters:change",{"M1":{"P4":{"v2":1.50,"v1":{"value":2e3}}},"M0":{"P5":{"s1":"a\u00e9\"b"}}}]`)
	emitRaw(g.socket(1), `2/ws,[22, {"devid":"M1"} ,[1,2],"x"]`)
	emitRaw(g.socket(1), `2/ws,9["snapshot",{"M1":{}}]`)

	ev := eventOf(t, s, cloudapi.EventParamsChange)
	if want := `{"M1":{"P4":{"v2":1.50,"v1":{"value":2e3}}},"M0":{"P5":{"s1":"a\u00e9\"b"}}}`; string(ev.Payload) != want || len(ev.Args) != 1 {
		t.Errorf("params change payload %s (%d args), want %s", ev.Payload, len(ev.Args), want)
	}
	ev = eventOf(t, s, cloudapi.EventMemoryUpdated)
	if len(ev.Args) != 3 || string(ev.Args[0]) != `{"devid":"M1"}` || string(ev.Args[1]) != `[1,2]` || string(ev.Args[2]) != `"x"` || string(ev.Payload) != `{"devid":"M1"}` {
		t.Errorf("event 22 args %q", ev.Args)
	}
	ev = eventOf(t, s, cloudapi.EventSnapshot)
	if len(ev.Args) != 1 || string(ev.Payload) != `{"M1":{}}` {
		t.Errorf("snapshot with an ack id: args %q", ev.Args)
	}
}
