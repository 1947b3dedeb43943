package exporter

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bragerone/bragerone_exporter/catalogload"
	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/redact"
	"github.com/bragerone/bragerone_exporter/traffic"
)

// Diagnostics configures what the exporter keeps for a field report: the
// ring of recent cloud traffic, the log lines, and the capture file.
type Diagnostics struct {
	// RingBytes bounds the traffic ring (--diagnostics.ring-bytes): 0 is
	// off, a negative value sizes it by the account (RingBytesFor).
	RingBytes int
	// Logs are the recent log lines, at debug level whatever the log
	// level (the CLI tees its logger into them); nil: none in the bundle.
	Logs *traffic.LogRing
	// Settings is the effective configuration with the secrets masked, as
	// the CLI resolved it; nil: the bundle describes Config itself.
	Settings map[string]string

	CaptureFile     string // --capture.file ("" = no capture)
	CaptureMaxBytes int64  // --capture.max-bytes (0 = never rotated)
	CaptureKeep     int    // --capture.keep: rotated files kept
}

// The traffic ring's size by account: a base and a share per watched
// module, capped. A module's share of a prime is about 20 KB of JSON (a
// 100-module prime about 2 MB), so the ring holds the latest prime whole
// with room for the minutes of events and polls around it.
const (
	RingBase      = 256 << 10
	RingPerModule = 32 << 10
	RingCap       = 4 << 20
)

// RingBytesFor is the traffic ring's default bound for an account watching
// modules modules: RingBase + RingPerModule each, at most RingCap.
func RingBytesFor(modules int) int {
	return min(RingBase+RingPerModule*max(modules, 0), RingCap)
}

// diag is the exporter's diagnostics state.
type diag struct {
	ring    *traffic.Ring
	auto    bool // the ring follows the account's size
	capture atomic.Pointer[traffic.Capture]
	seq     atomic.Uint64
	started time.Time
}

// record is the Recorder of the REST client and of every gateway: the
// records come redacted.
func (d *diag) record(r traffic.Record) {
	r.Seq = d.seq.Add(1) // one numbering for the ring and the capture
	d.ring.Add(r)
	if c := d.capture.Load(); c != nil {
		c.Record(r)
	}
}

// recorder returns the Recorder to configure, nil when nothing records.
func (e *Exporter) recorder() func(traffic.Record) {
	if e.diag.ring == nil && e.cfg.Diagnostics.CaptureFile == "" {
		return nil
	}
	return e.diag.record
}

// newDiag sets up the ring.
func (e *Exporter) newDiag() {
	e.diag.started = time.Now()
	n := e.cfg.Diagnostics.RingBytes
	switch {
	case n < 0:
		e.diag.ring, e.diag.auto = traffic.NewRing(RingBytesFor(0)), true
	case n > 0:
		e.diag.ring = traffic.NewRing(n)
	}
}

// sizeRing resizes an account-sized ring to the modules watched now.
func (e *Exporter) sizeRing() {
	if !e.diag.auto {
		return
	}
	n := 0
	for _, o := range e.fleet.Status().Objects {
		if o.Gateway != nil {
			n += len(o.Gateway.Modules)
		}
	}
	e.diag.ring.SetLimit(RingBytesFor(n))
}

// diagnosticsPath serves the bundle.
const diagnosticsPath = "/debug/diagnostics"

// ringResizeInterval is how often an account-sized ring follows the
// account's modules.
const ringResizeInterval = 30 * time.Second

// followAccount resizes the ring as the watched modules change, until ctx
// ends.
func (e *Exporter) followAccount(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-e.fleet.Ready():
	}
	e.sizeRing()
	t := time.NewTicker(ringResizeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.sizeRing()
		}
	}
}

// captureSnapshot says which records start each rotated capture file: the
// latest answer of the object list, of each object's module list and of
// each prime (by its request's module list), so the file replays alone.
func captureSnapshot(r traffic.Record) (string, bool) {
	if r.Kind != traffic.KindREST || r.Status < 200 || r.Status > 299 {
		return "", false
	}
	switch r.Endpoint {
	case cloudapi.EndpointObjects, cloudapi.EndpointModules, cloudapi.EndpointParameters,
		cloudapi.EndpointModulesConnect, cloudapi.EndpointAlarmsQuantity:
		return r.Endpoint + "\x00" + strconv.Itoa(r.Object) + "\x00" + string(r.Request), true
	}
	return "", false
}

// openCapture starts the capture file, when one is configured.
func (e *Exporter) openCapture() error {
	d := e.cfg.Diagnostics
	if d.CaptureFile == "" {
		return nil
	}
	c, err := traffic.OpenCapture(traffic.CaptureConfig{
		Path: d.CaptureFile, MaxBytes: d.CaptureMaxBytes, Keep: d.CaptureKeep,
		Settings: e.trafficSettings(), Snapshot: captureSnapshot,
	})
	if err != nil {
		return fmt.Errorf("--capture.file: %w", err)
	}
	e.diag.capture.Store(c)
	e.log.Info("capturing the cloud's traffic", "file", d.CaptureFile, "max_bytes", d.CaptureMaxBytes, "keep", d.CaptureKeep)
	return nil
}

// closeCapture flushes and closes the capture file.
func (e *Exporter) closeCapture() {
	if c := e.diag.capture.Swap(nil); c != nil {
		if err := c.Close(); err != nil {
			e.log.Warn("capture file", "err", err)
		}
	}
}

// trafficSettings are the settings that shape the traffic, for the header
// of a capture or of a bundle's traffic: no secret, no personal datum.
func (e *Exporter) trafficSettings() map[string]string {
	h := e.cfg.Health
	s := map[string]string{
		"exporter_version": e.cfg.Version,
		"poll_interval":    h.PollInterval.String(),
		"objects_refresh":  h.ObjectsRefreshInterval.String(),
		"stale_after":      h.StaleAfter.String(),
		"catalog":          strconv.FormatBool(!e.cfg.Catalog.Disable),
		"catalog_language": e.cfg.Catalog.Language,
		"simulate":         strconv.FormatBool(e.cfg.Simulate.Enabled),
	}
	if p, err := e.cfg.Cloud.Platform(); err == nil && !e.cfg.Simulate.Enabled {
		s["api_url"], s["assets_url"] = p.BaseURL, p.AssetsURL
	}
	if len(e.cfg.Cloud.ObjectIDs) > 0 {
		s["object_ids"] = fmt.Sprint(e.cfg.Cloud.ObjectIDs)
	}
	if len(e.cfg.Cloud.Modules) > 0 {
		s["modules"] = fmt.Sprint(e.cfg.Cloud.Modules)
	}
	return s
}

// Ready is closed once every watched object's first parameter snapshot is
// stored.
func (e *Exporter) Ready() <-chan struct{} { return e.fleet.Ready() }

// Traffic returns the records the ring holds now, oldest first.
func (e *Exporter) Traffic() []traffic.Record { return e.diag.ring.Records() }

// TrafficStats returns the ring's figures.
func (e *Exporter) TrafficStats() traffic.Stats { return e.diag.ring.Stats() }

// The diagnostics bundle: one gzip-compressed tar archive, every file
// under the directory bragerone-diagnostics/:
//
//	version.json        the exporter's version, Go version, platform, build settings, when the bundle was made
//	config.json         the effective configuration, secrets masked
//	status.json         the /status model (objects with session, push, recovery ladder; modules with states,
//	                    outages, alarms, history; the account's login, token and throttling; outage episodes;
//	                    the objects and modules that left)
//	catalog.json        the catalog load report (index asset, language, loads, failures by stage, modules
//	                    described and their parameter counts, tokens without a definition)
//	traffic.jsonl       the traffic ring as a traffic file (package traffic's JSON lines: header, records)
//	traffic-stats.json  the ring's bound, use, records, dropped and evicted counts, and the capture's
//	logs.jsonl          the last log records, JSON, at debug level
//
// Everything passed the redactor (package redact) before it got here.
const BundleDir = "bragerone-diagnostics"

// BundleFiles are the files of a bundle, in archive order.
var BundleFiles = []string{"version.json", "config.json", "status.json", "catalog.json", "traffic.jsonl", "traffic-stats.json", "logs.jsonl"}

// WriteBundle writes the diagnostics bundle to w.
func (e *Exporter) WriteBundle(w io.Writer) error {
	now := time.Now()
	files := map[string][]byte{}
	put := func(name string, v any) error {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("diagnostics %s: %w", name, err)
		}
		files[name] = append(b, '\n')
		return nil
	}
	secrets := e.client.Secrets()
	version := map[string]string{
		"version": e.cfg.Version, "go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH,
		"made_at": now.UTC().Format(time.RFC3339Nano), "started": e.diag.started.UTC().Format(time.RFC3339Nano),
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		version["module"] = bi.Main.Path + "@" + bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision", "vcs.time", "vcs.modified", "GOOS", "GOARCH", "CGO_ENABLED", "-tags":
				version["build."+s.Key] = s.Value
			}
		}
	}
	cfgView := e.cfg.Diagnostics.Settings
	if cfgView == nil {
		cfgView = e.configView()
	}
	status, err := statusModel(e.source.Snapshot())
	if err != nil {
		return err
	}
	// The status model passes the same redactor as the traffic: gateway
	// addresses, user ids and names never leave in it.
	status, _ = secrets.RecordJSON(status)
	files["status.json"] = status
	var catalogReport any = map[string]any{"disabled": true}
	if e.loader != nil {
		catalogReport = catalogReportOf(e.loader.State())
	}
	ring := e.diag.ring.Stats()
	var tr bytes.Buffer
	tw, err := traffic.NewWriter(&tr, traffic.NewHeader(e.diag.started, e.trafficSettings()))
	if err != nil {
		return err
	}
	for _, r := range e.diag.ring.Records() {
		if err := tw.Write(r); err != nil {
			return err
		}
	}
	files["traffic.jsonl"] = tr.Bytes()
	stats := map[string]any{"ring": map[string]any{"limit_bytes": ring.Limit, "used_bytes": ring.Used, "records": ring.Records,
		"dropped": ring.Dropped, "evicted": ring.Evicted, "sized_by_account": e.diag.auto}}
	if c := e.diag.capture.Load(); c != nil {
		stats["capture"] = c.Stats()
	}
	stats["log_lines_dropped"] = e.cfg.Diagnostics.Logs.Dropped()
	for name, v := range map[string]any{"version.json": version, "config.json": cfgView, "catalog.json": catalogReport, "traffic-stats.json": stats} {
		if err := put(name, v); err != nil {
			return err
		}
	}
	// The log lines passed the log handler's secrets; the personal data of
	// a debug line (a gateway address in an event's text) pass the
	// redactor's text scrub of remembered secrets here once more.
	files["logs.jsonl"] = []byte(secrets.ScrubRecord(string(e.cfg.Diagnostics.Logs.Lines())))

	gz := gzip.NewWriter(w)
	tarw := tar.NewWriter(gz)
	for _, name := range BundleFiles {
		b := files[name]
		if err := tarw.WriteHeader(&tar.Header{Name: BundleDir + "/" + name, Mode: 0o600, Size: int64(len(b)), ModTime: now, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tarw.Write(b); err != nil {
			return err
		}
	}
	if err := tarw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// configView describes Config without its secrets, for a bundle made
// without the CLI's view.
func (e *Exporter) configView() map[string]string {
	c := e.cfg
	out := e.trafficSettings()
	out["cloud.email"] = redact.Mask
	if c.Cloud.PasswordFile != "" {
		out["cloud.password-file"] = c.Cloud.PasswordFile
	}
	out["web.listen-address"] = c.Web.ListenAddress
	out["web.telemetry-path"] = c.Web.TelemetryPath
	out["web.config.file"] = c.Web.ConfigFile
	out["diagnostics.ring-bytes"] = strconv.Itoa(c.Diagnostics.RingBytes)
	out["capture.file"] = c.Diagnostics.CaptureFile
	return out
}

// statusModel is the /status model as JSON.
func statusModel(s collector.Snapshot) ([]byte, error) {
	b, err := json.Marshal(struct {
		Now                     time.Time
		Objects                 []collector.ObjectState
		Modules                 []collector.ModuleState
		ObjectListFailureStreak int
		TokenExpiry             time.Time
		Account                 *collector.AccountState
		Episodes                []collector.Episode
		DepartedObjects         []collector.DepartedObject
		DepartedModules         []collector.DepartedModule
	}{s.Now, s.Objects, s.Modules, s.ObjectListFailureStreak, s.TokenExpiry, s.Account, s.Episodes, s.DepartedObjects, s.DepartedModules})
	if err != nil {
		return nil, fmt.Errorf("diagnostics status.json: %w", err)
	}
	return b, nil
}

// catalogReportOf is the catalog load report.
func catalogReportOf(st *catalogload.State) any {
	if st == nil {
		return map[string]any{"loaded": false}
	}
	failures := map[string]uint64{}
	for k, n := range st.Failures {
		failures[string(k)] = n
	}
	rep := map[string]any{
		"loaded": st.Catalog != nil, "loaded_at": st.LoadedAt, "index_asset": st.IndexAsset, "language": st.Language,
		"loads": st.Loads, "failures_by_stage": failures, "assets_known": st.AssetsKnown, "assets_up": st.AssetsUp,
	}
	if st.LastError != nil {
		rep["last_error"] = st.LastError.Error()
	}
	if st.Catalog != nil {
		mods := map[string]int{}
		undefined := map[string][]string{}
		for _, m := range st.Catalog.Modules() {
			mods[m.DevID()] = len(m.Params())
			if u := m.Undefined(); len(u) > 0 {
				undefined[m.DevID()] = u
			}
		}
		rep["modules_params_described"] = mods
		rep["tokens_without_definition"] = undefined
		inCatalog := map[string]int{}
		for k, n := range st.Catalog.Failures() {
			inCatalog[string(k)] = n
		}
		rep["catalog_failures_by_stage"] = inCatalog
	}
	return rep
}

// diagnosticsHandler serves GET /debug/diagnostics: the bundle, as a
// download.
func (e *Exporter) diagnosticsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		var b bytes.Buffer
		if err := e.WriteBundle(&b); err != nil {
			e.log.Warn("diagnostics bundle", "err", err)
			http.Error(w, "diagnostics bundle: "+e.client.Secrets().Scrub(err.Error()), http.StatusInternalServerError)
			return
		}
		name := "bragerone-diagnostics-" + time.Now().UTC().Format("20060102T150405Z") + ".tar.gz"
		w.Header().Set("Content-Type", "application/gzip")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
		w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
		w.Header().Set("Cache-Control", "no-store")
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(b.Bytes())
	})
}
