package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// Fetcher returns one asset's bytes by its path on the assets origin ("/",
// "/assets/", "/assets/index-Ab12.js"). cloudclient.(*Client).Asset
// satisfies it (conditional GET, retries, requests in flight bounded). The
// returned bytes are only read.
type Fetcher interface {
	Asset(ctx context.Context, path string) ([]byte, error)
}

// ModuleSpec is what the module list row says about a module's catalog.
type ModuleSpec struct {
	DevID       string
	DeviceMenu  int      // module row "deviceMenu"
	Permissions []string // module row "permissions"; nil means no filtering (everything visible)
	// Values optionally gives the module's raw values at load time. The unit
	// of most registers is selected by a register of its own (the u channel
	// of the family); with Values the static Unit, Enum, Min and Max of each
	// Param are filled from them. Display and UnitFor always read live.
	Values store.Reader
	// ConnectedAt is the module row's "connectedAt" (Unix seconds), the only
	// runtime value definitions reach through storeGetter conditions.
	ConnectedAt int64
}

// Defaults, defined once here and referenced by the exporter's flags.
const (
	DefaultLanguage      = "en"
	DefaultTimeout       = 2 * time.Minute
	DefaultMaxAssetBytes = 16 << 20
	DefaultMaxTotalBytes = 96 << 20
)

// Options bound and tune a Load. Zero values take the defaults.
type Options struct {
	// Language of names, units and labels; "" takes the index's default
	// translation. A language the index does not offer gives a
	// *LanguageError.
	Language      string
	Timeout       time.Duration // bound of the whole load
	MaxAssetBytes int64         // bound of one asset
	MaxTotalBytes int64         // bound of all assets of one load together
	// KnownIndex is the index asset of a previous load ("index-Ab12.js"),
	// tried when the HTML pages name no index (their fetch failed); a stale
	// one simply fails over to the fixed fallbacks.
	KnownIndex string
	Logger     *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxAssetBytes <= 0 {
		o.MaxAssetBytes = DefaultMaxAssetBytes
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Stage names a step of loading; failures are counted per stage.
type Stage string

// The stages of a load.
const (
	StageDiscovery  Stage = "discovery"  // no index bundle could be found
	StageIndex      Stage = "index"      // the index bundle did not parse whole
	StageMenu       Stage = "menu"       // a device menu is missing or broken
	StageDefinition Stage = "definition" // a definition chunk could not be fetched or parsed
	StageI18n       Stage = "i18n"       // a translation namespace could not be fetched or parsed
	StageUnits      Stage = "units"      // the unit descriptor table is missing
)

// Stages lists every stage, in load order.
var Stages = []Stage{StageDiscovery, StageIndex, StageMenu, StageDefinition, StageI18n, StageUnits}

// ErrNoIndex is wrapped by Load's error when no index bundle was found.
var ErrNoIndex = errors.New("catalog: no index bundle found on the assets origin")

// LanguageError says the requested language is not one the assets offer.
type LanguageError struct {
	Language string
	Offered  []string
}

func (e *LanguageError) Error() string {
	return fmt.Sprintf("catalog: language %q is not offered by the web app (offered: %s)", e.Language, strings.Join(e.Offered, ", "))
}

// Address is one register: pool, channel letter and index (P4.v7).
type Address struct {
	Pool  string // "P4"
	Chan  byte   // 'v' value, 's' status, 'u' unit, 'n' min, 'x' max, …
	Index int
}

func (a Address) String() string { return a.Pool + "." + a.ChanIdx() }

// ChanIdx is the register's key inside its pool ("v7").
func (a Address) ChanIdx() string { return string(a.Chan) + strconv.Itoa(a.Index) }

// IsZero says whether a is unset.
func (a Address) IsZero() bool { return a.Pool == "" }

// ParseAddress reads "P4.v7".
func ParseAddress(s string) (Address, bool) {
	pool, key, ok := strings.Cut(strings.TrimSpace(s), ".")
	if !ok || len(pool) < 2 || pool[0] != 'P' || len(key) < 2 {
		return Address{}, false
	}
	if _, err := strconv.Atoi(pool[1:]); err != nil {
		return Address{}, false
	}
	c := key[0]
	if c < 'a' || c > 'z' {
		return Address{}, false
	}
	idx, err := strconv.Atoi(key[1:])
	if err != nil || idx < 0 {
		return Address{}, false
	}
	return Address{Pool: pool, Chan: c, Index: idx}, true
}

// read is the raw live value of register key of a's pool, through r (the
// module's values; nil reads nothing).
func read(r store.Reader, a Address, key string) (float64, bool) {
	if r == nil {
		return 0, false
	}
	return r(a.Pool, key)
}

// Catalog is one loaded catalog. It is immutable after Load and safe for
// concurrent readers.
type Catalog struct {
	indexAsset  string
	language    string
	languages   []string
	modules     map[string]*Module
	order       []string
	failures    map[Stage]int
	alarms      map[string]string
	fingerprint string
	res         *resolver
}

// IndexAsset is the file name of the index bundle, e.g. "index-Ab12.js".
func (c *Catalog) IndexAsset() string { return c.indexAsset }

// Language is the language of names and labels.
func (c *Catalog) Language() string { return c.language }

// Languages are the languages the web app offers (lower case, sorted).
func (c *Catalog) Languages() []string { return append([]string(nil), c.languages...) }

// Module returns the catalog of one module, nil when it was not loaded.
func (c *Catalog) Module(devid string) *Module { return c.modules[devid] }

// Modules returns every module's catalog, ordered by devid.
func (c *Catalog) Modules() []*Module {
	out := make([]*Module, 0, len(c.order))
	for _, id := range c.order {
		out = append(out, c.modules[id])
	}
	return out
}

// Failures counts the failures of the load by stage (every stage present).
func (c *Catalog) Failures() map[Stage]int {
	out := make(map[Stage]int, len(Stages))
	for _, s := range Stages {
		out[s] = c.failures[s]
	}
	return out
}

// AlarmName is the translated name of an alarm, by its code ("38") or,
// failing that, its symbol ("ERROR_BRAK_PALIWA"), wherever the web app's
// translations carry one (see alarmTranslations): in the catalog's
// language, else in the language the app falls back to. The asset spec does
// not describe alarm names, so these are the places a name is looked for;
// false when none holds one.
func (c *Catalog) AlarmName(code, symbol string) (string, bool) {
	for _, k := range []string{code, symbol} {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if n, ok := c.alarms[k]; ok {
			return n, true
		}
	}
	return "", false
}

// Fingerprint changes if and only if the described content changes: the
// language, every module's parameters and everything that decides their
// display, and the alarm names. It does not depend on asset file names, so a redeployed but
// unchanged web app keeps it.
func (c *Catalog) Fingerprint() string { return c.fingerprint }

// Module is the catalog of one module: what its own menu and permissions
// show.
type Module struct {
	devid    string
	params   []*Param
	byAddr   map[addrKey]*Param
	users    map[addrKey][]*Param
	bySymbol map[string]*Param
	byName   map[string][]*Param
	// undefined are the symbols the module's menu shows that no
	// definition describes, in menu order.
	undefined []string
}

// Undefined returns the symbols the module's menu shows that no definition
// describes (tokens without a definition), in menu order.
func (m *Module) Undefined() []string { return append([]string(nil), m.undefined...) }

type addrKey struct{ pool, key string }

// DevID is the module's id.
func (m *Module) DevID() string { return m.devid }

// Params returns the described parameters in menu order.
func (m *Module) Params() []*Param { return append([]*Param(nil), m.params...) }

// Lookup is the inverse index: the parameter whose primary register is
// ("P4", "v7"), nil if none. When several symbols share a register the first
// in menu order answers.
func (m *Module) Lookup(pool, chanIdx string) *Param {
	if m == nil {
		return nil
	}
	return m.byAddr[addrKey{pool, chanIdx}]
}

// Readers returns every parameter whose display reads the register: its
// primary register, the words of a composed value, the inputs of computed
// rules and visibility bits, and the registers of its unit and limits.
func (m *Module) Readers(pool, chanIdx string) []*Param {
	if m == nil {
		return nil
	}
	return append([]*Param(nil), m.users[addrKey{pool, chanIdx}]...)
}

// BySymbol returns the parameter of a symbol, nil if the module does not
// describe it.
func (m *Module) BySymbol(symbol string) *Param {
	if m == nil {
		return nil
	}
	return m.bySymbol[symbol]
}

// ByName returns the parameters with exactly this translated name.
func (m *Module) ByName(name string) []*Param {
	if m == nil {
		return nil
	}
	return append([]*Param(nil), m.byName[name]...)
}
