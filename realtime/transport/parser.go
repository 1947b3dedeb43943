package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/zishang520/socket.io/parsers/socket/v3/parser"
	"github.com/zishang520/socket.io/v3/pkg/types"

	"github.com/bragerone/bragerone_exporter/wire"
)

// rawParser is the Socket.IO v5 packet parser the transport gives the
// library (ManagerOptions.SetParser). It differs from the library's own in
// one thing: the arguments of an EVENT packet stay the JSON text they arrived
// as (json.RawMessage), instead of being decoded into maps and slices that
// the session would have to encode again before the payload decoders parse
// them a third time. Live parameter pushes are the exporter's hot path.
//
// Everything else is what the library's decoder does, so that the library
// sees exactly the packets it expects:
//
//   - CONNECT data is a map[string]any ({"sid": ...}) or absent; DISCONNECT
//     has no data; CONNECT_ERROR data is a map or a string; ACK data is a
//     []any. These are rare and decoded with encoding/json as the library
//     does.
//   - An EVENT's data is []any{name, args...}: the name a string (never a
//     reserved one such as "connect") or a float64 for a numeric name (event
//     22), every argument a json.RawMessage.
//   - The packet header (type, namespace, ack id) is read with the library's
//     rules and limits; what the library rejects, this parser rejects with
//     the library's error values, and a JSON value is read the way
//     encoding/json reads one (including its nesting limit and its refusal
//     of numbers beyond float64), followed by anything.
//   - BINARY_EVENT and BINARY_ACK packets and their attachments are handed
//     to the library's own decoder; the cloud does not send them.
//
// Encoding (what the client sends) is the library's encoder.
type rawParser struct{}

var _ parser.Parser = rawParser{}

// NewEncoder implements parser.Parser.
func (rawParser) NewEncoder() parser.Encoder { return parser.NewEncoder() }

// NewDecoder implements parser.Parser.
func (rawParser) NewDecoder() parser.Decoder { return newRawDecoder() }

// Limits of the library's decoder, kept so both accept the same packets.
const (
	maxNamespaceLen = parser.DefaultMaxNamespaceLength
	maxPacketIDLen  = parser.DefaultMaxPacketIDLength
)

// errEventPayload is returned for an EVENT whose data is not an array that
// starts with a usable event name.
var errEventPayload = fmt.Errorf("%w: an event is an array starting with a non-reserved name or a number", parser.ErrInvalidPayload)

// rawDecoder decodes one connection's packets. The library calls Add from
// the connection's reader goroutine and Destroy on cleanup.
type rawDecoder struct {
	types.EventEmitter

	// binary is the library's decoder, which reassembles binary packets.
	binary parser.Decoder
	// inBinary is set while a binary packet waits for its attachments.
	inBinary atomic.Bool
	// nsp remembers the last namespace seen, so the usual case of every
	// packet naming the same namespace costs no allocation.
	nsp atomic.Pointer[string]
}

func newRawDecoder() *rawDecoder {
	d := &rawDecoder{EventEmitter: types.NewEventEmitter(), binary: parser.NewDecoder()}
	_ = d.binary.On("decoded", func(a ...any) {
		d.inBinary.Store(false)
		d.Emit("decoded", a...)
	})
	return d
}

// Add implements parser.Decoder: text is one packet, anything else is an
// attachment of the binary packet being reassembled.
func (d *rawDecoder) Add(data any) error {
	var text []byte
	switch v := data.(type) {
	case string:
		text = []byte(v)
	case *types.StringBuffer:
		// The packet's arguments keep pointing into this copy; the buffer
		// belongs to the library.
		text = bytes.Clone(v.Bytes())
	case *strings.Reader:
		b, err := io.ReadAll(v)
		if err != nil {
			return err
		}
		text = b
	default:
		return d.binary.Add(data)
	}
	if d.inBinary.Load() {
		return parser.ErrPlaintextDuringReconstruction
	}
	if len(text) > 0 && (text[0] == '0'+byte(parser.BINARY_EVENT) || text[0] == '0'+byte(parser.BINARY_ACK)) {
		// Set first: a packet without attachments is emitted (and the flag
		// cleared) inside Add.
		d.inBinary.Store(true)
		if err := d.binary.Add(string(text)); err != nil {
			d.inBinary.Store(false)
			return err
		}
		return nil
	}
	p, err := d.decode(text)
	if err != nil {
		return err
	}
	d.Emit("decoded", p)
	return nil
}

// Destroy implements parser.Decoder.
func (d *rawDecoder) Destroy() {
	d.binary.Destroy()
	d.inBinary.Store(false)
}

// decode parses one text packet: <type>[/<namespace>,][<id>][<json>].
func (d *rawDecoder) decode(b []byte) (*parser.Packet, error) {
	if len(b) == 0 {
		return nil, parser.ErrInvalidPayload
	}
	p := &parser.Packet{Type: parser.PacketType(int(b[0]) - '0')}
	if !p.Type.Valid() {
		return nil, fmt.Errorf("unknown packet type %d", p.Type)
	}
	i := 1

	p.Nsp = "/"
	if i < len(b) && b[i] == '/' {
		end := bytes.IndexByte(b[i:], ',')
		next := len(b)
		if end < 0 {
			end = len(b)
		} else {
			end += i
			next = end + 1
		}
		if end-i > maxNamespaceLen {
			return nil, parser.ErrIllegalNamespace
		}
		p.Nsp = d.namespace(b[i:end])
		i = next
	}

	if i < len(b) {
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j-i >= maxPacketIDLen {
			return nil, parser.ErrIllegalID
		}
		if j > i {
			id, err := strconv.ParseUint(string(b[i:j]), 10, 64)
			if err != nil {
				return nil, err
			}
			p.Id = &id
		}
		i = j
	}

	rest := b[i:]
	if p.Type == parser.EVENT {
		data, err := eventData(rest)
		if err != nil {
			return nil, err
		}
		p.Data = data
		return p, nil
	}
	if len(rest) > 0 {
		// The library's own reading: one JSON value, whatever follows it.
		if err := json.NewDecoder(bytes.NewReader(rest)).Decode(&p.Data); err != nil {
			return nil, parser.ErrInvalidPayload
		}
	}
	if !dataFits(p.Type, p.Data) {
		return nil, parser.ErrInvalidPayload
	}
	return p, nil
}

func (d *rawDecoder) namespace(b []byte) string {
	if last := d.nsp.Load(); last != nil && *last == string(b) {
		return *last
	}
	s := string(b)
	d.nsp.Store(&s)
	return s
}

// dataFits is the library's check of the data of a non-event packet.
func dataFits(t parser.PacketType, data any) bool {
	switch t {
	case parser.CONNECT:
		_, isMap := data.(map[string]any)
		return data == nil || isMap
	case parser.DISCONNECT:
		return data == nil
	case parser.CONNECT_ERROR:
		switch data.(type) {
		case map[string]any, string:
			return true
		}
		return false
	case parser.ACK:
		_, ok := data.([]any)
		return ok
	default:
		return false
	}
}

// eventData reads the JSON array of an EVENT packet into the name (string
// or float64) and the arguments as raw JSON, sharing b's memory. The JSON is
// checked by the payload scanner with encoding/json's rules (wire.Scanner).
func eventData(b []byte) ([]any, error) {
	s := wire.NewScanner(b, wire.Float64Numbers)
	s.SkipSpace()
	c, ok := s.Peek()
	if !ok {
		return nil, parser.ErrInvalidPayload // nothing at all
	}
	if c != '[' {
		if err := s.SkipValue(0); err != nil {
			return nil, invalidJSON(err)
		}
		return nil, errEventPayload
	}
	empty, err := s.OpenArray(0)
	if err != nil {
		return nil, invalidJSON(err)
	}
	if empty {
		return nil, errEventPayload // no name
	}
	data := make([]any, 0, 2)
	for {
		start := s.Pos()
		if err := s.SkipValue(1); err != nil {
			return nil, invalidJSON(err)
		}
		end := s.Pos()
		if len(data) == 0 {
			name, err := eventName(b[start:end])
			if err != nil {
				return nil, err
			}
			data = append(data, name)
		} else {
			data = append(data, json.RawMessage(b[start:end:end]))
		}
		more, err := s.NextElement()
		if err != nil {
			return nil, invalidJSON(err)
		}
		if !more {
			return data, nil
		}
	}
}

// invalidJSON makes a payload syntax error (a *wire.SyntaxError, with its
// offset in the packet's JSON) the library's invalid-payload error.
func invalidJSON(err error) error {
	return fmt.Errorf("%w: JSON %w", parser.ErrInvalidPayload, err)
}

// eventName turns the first array element into the name the library's
// decoder would give: a string that is not reserved, or a number as float64.
func eventName(raw []byte) (any, error) {
	switch raw[0] {
	case '"':
		var name string
		body := raw[1 : len(raw)-1]
		if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
			name = string(body)
		} else if err := json.Unmarshal(raw, &name); err != nil {
			return nil, errEventPayload
		}
		if parser.ReservedEvents.Has(name) {
			return nil, errEventPayload
		}
		return name, nil
	case '{', '[', 't', 'f', 'n':
		return nil, errEventPayload
	default:
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return nil, parser.ErrInvalidPayload
		}
		return f, nil
	}
}
