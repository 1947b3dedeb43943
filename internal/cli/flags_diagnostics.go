package cli

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/bragerone/bragerone_exporter/exporter"
	"github.com/bragerone/bragerone_exporter/redact"
)

// diagnosticsFlags are serve's flags of the traffic ring and the capture
// file (README "Reporting a problem").
type diagnosticsFlags struct {
	RingBytes       int    `name:"diagnostics.ring-bytes" default:"-1" help:"Bound in bytes of the ring of recent cloud traffic kept for the diagnostics bundle (/debug/diagnostics); -1 sizes it by the account (256 KiB + 32 KiB per watched module, at most 4 MiB); 0 turns it off." group:"Diagnostics"`
	CaptureFile     string `name:"capture.file" type:"path" help:"Write the redacted cloud traffic to this file as JSON lines, to record a problem that takes hours to appear (default: no capture)." group:"Diagnostics"`
	CaptureMaxBytes int64  `name:"capture.max-bytes" default:"104857600" help:"Size at which the capture file is rotated; each new file starts with a snapshot of the module lists and primes (0 = never rotated)." group:"Diagnostics"`
	CaptureKeep     int    `name:"capture.keep" default:"3" help:"Rotated capture files kept beside the current one (FILE.1 the newest)." group:"Diagnostics"`
}

// diagnostics maps the flags to the exporter's settings; g's log ring and
// the effective configuration cmd (a command's flag struct) go with them.
func (f *diagnosticsFlags) diagnostics(g *Globals, cmd any) (exporter.Diagnostics, error) {
	if f.RingBytes < -1 {
		return exporter.Diagnostics{}, usageErrorf("--diagnostics.ring-bytes %d: want -1 (by the account), 0 (off) or a size in bytes", f.RingBytes)
	}
	if f.CaptureMaxBytes < 0 || f.CaptureKeep < 0 {
		return exporter.Diagnostics{}, usageErrorf("--capture.max-bytes and --capture.keep must not be negative")
	}
	return exporter.Diagnostics{
		RingBytes: f.RingBytes, Logs: g.LogRing, Settings: effectiveConfig(g, cmd),
		CaptureFile: f.CaptureFile, CaptureMaxBytes: f.CaptureMaxBytes, CaptureKeep: f.CaptureKeep,
	}, nil
}

// maskedFlags are flags whose values are personal data (the account's
// email): shown as set or not, never as given.
var maskedFlags = map[string]bool{"cloud.email": true}

// effectiveConfig is the configuration a command runs with, by flag name
// (every flag of cmd, nested groups included, and the log flags), secrets
// and personal data masked.
func effectiveConfig(g *Globals, cmd any) map[string]string {
	out := map[string]string{"log.level": g.LogLevel, "log.format": g.LogFormat}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			if sf.Tag.Get("embed") != "" || (sf.Anonymous && sf.Type.Kind() == reflect.Struct) {
				walk(v.Field(i))
				continue
			}
			name := sf.Tag.Get("name")
			if name == "" || !sf.IsExported() {
				continue
			}
			val := fmt.Sprint(v.Field(i).Interface())
			if s, ok := v.Field(i).Interface().([]string); ok {
				val = strings.Join(s, ",")
			}
			if (redact.SecretKey(lastWord(name)) || maskedFlags[name]) && val != "" {
				val = redact.Mask
			}
			out[name] = g.Secrets.Scrub(val)
		}
	}
	v := reflect.ValueOf(cmd)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		walk(v)
	}
	return out
}

// lastWord is the part of a flag's name after its last dot or dash.
func lastWord(name string) string {
	return name[strings.LastIndexAny(name, ".-")+1:]
}
