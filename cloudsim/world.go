package cloudsim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim/webapp"
)

// paramForm is how one parameter is written in a prime body
// (docs/spec.md W-2.1a): a bare scalar, an object with value and meta, or a
// meta-only object.
type paramForm uint8

const (
	formObject   paramForm = iota // {"value":x,"storable":true,"updatedAt":...}
	formBare                      // x
	formMetaOnly                  // {"storable":1}
)

// driftKind says how a value parameter drifts, if at all.
type driftKind uint8

const (
	driftNone driftKind = iota
	driftTemp
	driftPercent
	driftCounter
	driftWide // a 32-bit counter over two words (param.hi holds the high word)
	driftFuel // the fuel level and its fuel-burned counter: moved by burnFuelLocked, not picked at random
)

type param struct {
	pool, key string // "P4", "v1"
	value     any
	form      paramForm
	storable  bool
	updatedAt int64 // epoch seconds; 0 = no updatedAt meta
	drift     driftKind
	min, max  float64
	hi        *param // driftWide: the high word
}

type gateway struct {
	Address   string  `json:"address"`
	Interface *string `json:"interface"`
	Version   string  `json:"version"`
}

type module struct {
	id          int
	devid       string
	name, title string
	version     string
	address     string
	gw          gateway
	connectedAt int64 // epoch seconds, 0 = offline
	acceptedAt  int64
	params      map[string]*param // by "P4.v1"
	driftKeys   []string
	activity    []map[string]any
	alarms      []map[string]any
	history     []map[string]any
	nextAct     int
	profile     *webapp.Profile // menu, permissions and described registers
	fuel        *param          // the drifting fuel level, nil when the module has none
	fuelBurned  *param          // the low word of its fuel-burned counter, nil when none
	fuelSteps   int             // drift steps since the level last fell
	obj         *object         // the object (installation) it belongs to
}

// object is one installation of the account: a contiguous run of the
// modules, in devid order. A hidden object is one the account no longer
// sees (access revoked): it is absent from every list, and calls naming it
// or its modules are refused.
type object struct {
	id      int
	name    string
	city    string
	modules []*module
	hidden  bool
}

type userRecord struct {
	ID                         int    `json:"id"`
	Name                       string `json:"name"`
	Email                      string `json:"email"`
	Language                   string `json:"language"`
	AllowEmailTypeInformations bool   `json:"allow_email_type_informations"`
	AllowEmailTypeAlarms       bool   `json:"allow_email_type_alarms"`
	AllowEmailTypeMarketing    bool   `json:"allow_email_type_marketing"`
	AllowEmailTypeWarnings     bool   `json:"allow_email_type_warnings"`
	ActivatedAt                string `json:"activated_at"`
	ShowRateUsModal            bool   `json:"show_rate_us_modal"`
}

var moduleTitles = []string{
	"HT DasPell GL 37kW", "Kostrzewa Pellets Fuzzy Logic 24kW", "Brager PellTech 16kW",
	"Defro Optima Komfort Pellet 20kW", "Galmet Eko-Pell 25kW", "Heiztechnik Q Pell 15kW",
}

var userPermissions = []string{
	"DISPLAY_MENU_OBJECTS", "DISPLAY_MENU_DHW", "DISPLAY_MENU_BOILER", "DISPLAY_PARAMETER_LEVEL_1",
	"DISPLAY_PARAMETER_LEVEL_2", "SUBMISSION_CREATE", "MODULE_COMMAND_SEND",
}

// buildWorld creates the account, its objects and the modules from the seed.
func (c *Cloud) buildWorld() {
	firstObject := 1000 + c.rng.IntN(9000)
	c.user = userRecord{
		ID: 100 + c.rng.IntN(900), Name: "Demo User", Email: c.opts.Email, Language: "en",
		AllowEmailTypeInformations: true, AllowEmailTypeAlarms: true, AllowEmailTypeWarnings: true,
		ActivatedAt: "2023-01-01T00:00:00Z",
	}
	now := c.now().Unix()
	seen := map[string]bool{}
	for i := 0; i < c.opts.Modules; i++ {
		devid := ""
		for devid == "" || seen[devid] {
			var b [10]byte
			for j := range b {
				b[j] = byte('A' + c.rng.IntN(26))
			}
			devid = string(b[:])
		}
		seen[devid] = true
		iface := "wifi"
		m := &module{
			id:          300 + i,
			devid:       devid,
			name:        fmt.Sprintf("Boiler room %d", i+1),
			title:       moduleTitles[i%len(moduleTitles)],
			version:     fmt.Sprintf("2.%02d", 1+c.rng.IntN(9)),
			address:     fmt.Sprintf("%02X:%02X:%02X", c.rng.IntN(256), c.rng.IntN(256), c.rng.IntN(256)),
			gw:          gateway{Address: fmt.Sprintf("10.0.%d.%d", i, 2+c.rng.IntN(200)), Interface: &iface, Version: "V2.08"},
			connectedAt: now - int64(60+c.rng.IntN(86400)),
			acceptedAt:  now - int64(86400*(30+c.rng.IntN(600))),
			params:      map[string]*param{},
			profile:     webapp.Profiles()[i%len(webapp.Profiles())],
		}
		c.buildParams(m, now)
		c.buildEvents(m, now)
		c.modules = append(c.modules, m)
		c.byDevid[devid] = m
	}
	c.buildObjects(firstObject)
}

// Names of the objects after "Home" and "Cottage": every kind in every town,
// in an order the seed shuffles.
var (
	objectKinds = []string{"Workshop", "Guest house", "Farm", "Office", "Garage", "Bakery",
		"School", "Chapel", "Warehouse", "Greenhouse", "Clinic", "Hotel"}
	objectTowns = []string{"Krakow", "Gdansk", "Poznan", "Wroclaw", "Lodz", "Lublin",
		"Torun", "Opole", "Rzeszow", "Olsztyn", "Kielce", "Sopot"}
)

// buildObjects splits the modules, in devid order, over Options.Objects
// objects: contiguous runs, the first objects taking one module more when
// the count does not divide evenly. The first object keeps the id drawn
// first from the world's seed (so one object is the world it always was);
// the other ids and names come from a stream of their own, so adding
// objects changes no devid, name or parameter of the modules.
func (c *Cloud) buildObjects(firstID int) {
	n := c.opts.Objects
	rng := rand.New(rand.NewPCG(uint64(c.opts.Seed)^0x6a09e667f3bcc909, uint64(c.opts.Seed)+0xbb67ae8584caa73b))
	names := []string{"Home", "Cottage"}
	towns := []string{"Warsaw", "Zakopane"}
	var generated [][2]string
	for _, k := range objectKinds {
		for _, t := range objectTowns {
			generated = append(generated, [2]string{k + " " + t, t})
		}
	}
	rng.Shuffle(len(generated), func(i, j int) { generated[i], generated[j] = generated[j], generated[i] })
	for i := 0; len(names) < n; i++ {
		g := generated[i%len(generated)]
		name := g[0]
		if round := i / len(generated); round > 0 {
			name = fmt.Sprintf("%s %d", name, round+1)
		}
		names, towns = append(names, name), append(towns, g[1])
	}
	used := map[int]bool{}
	base, extra := len(c.modules)/n, len(c.modules)%n
	next := 0
	for i := 0; i < n; i++ {
		id := firstID
		for i > 0 && used[id] {
			id = 10000 + rng.IntN(90000) // never the first id (1000-9999)
		}
		used[id] = true
		size := base
		if i < extra {
			size++
		}
		o := &object{id: id, name: names[i], city: towns[i], modules: c.modules[next : next+size : next+size]}
		for _, m := range o.modules {
			m.obj = o
		}
		next += size
		c.objects = append(c.objects, o)
		c.byObject[id] = o
	}
}

// buildParams fills a module with ParamsPerModule entries: families of a
// value channel with its unit, status and min/max channels, spread over
// pools P4 (measurements), P5 (status and counters) and P6 (configuration).
func (c *Cloud) buildParams(m *module, now int64) {
	n := c.opts.ParamsPerModule
	add := func(p *param) bool {
		if len(m.params) >= n {
			return false
		}
		k := p.pool + "." + p.key
		m.params[k] = p
		if p.drift != driftNone && p.drift != driftFuel {
			m.driftKeys = append(m.driftKeys, k)
		}
		return true
	}
	ts := func() int64 { return now - int64(c.rng.IntN(3600)) }
	described := c.addDescribedParams(m, add, ts)
	for idx := 1; len(m.params) < n; idx++ {
		for _, pool := range []string{"P4", "P5", "P6"} {
			v := strconv.Itoa(idx)
			if described[pool+"."+v] {
				continue
			}
			switch c.pickFamily(pool) {
			case "temp":
				lo, hi := -30.0, 90.0
				val := math.Round((15+c.rng.Float64()*60)*10) / 10
				add(&param{pool: pool, key: "v" + v, value: val, form: formObject, storable: true, updatedAt: ts(), drift: driftTemp, min: lo, max: hi})
				add(&param{pool: pool, key: "u" + v, value: 1, form: formObject})
				add(&param{pool: pool, key: "n" + v, value: int(lo), form: formBare})
				add(&param{pool: pool, key: "x" + v, value: int(hi), form: formBare})
			case "setpoint":
				lo, hi := 20, 80
				add(&param{pool: pool, key: "v" + v, value: lo + c.rng.IntN(hi-lo), form: formObject, storable: true, updatedAt: ts()})
				add(&param{pool: pool, key: "u" + v, value: 1, form: formObject})
				add(&param{pool: pool, key: "n" + v, value: lo, form: formBare})
				add(&param{pool: pool, key: "x" + v, value: hi, form: formBare})
				add(&param{pool: pool, key: "s" + v, value: c.rng.IntN(4), form: formBare})
			case "percent":
				add(&param{pool: pool, key: "v" + v, value: c.rng.IntN(101), form: formObject, updatedAt: ts(), drift: driftPercent, min: 0, max: 100})
				add(&param{pool: pool, key: "u" + v, value: "PERCENT", form: formObject})
				add(&param{pool: pool, key: "n" + v, value: 0, form: formBare})
				add(&param{pool: pool, key: "x" + v, value: 100, form: formBare})
			case "status":
				add(&param{pool: pool, key: "s" + v, value: c.rng.IntN(1 << 12), form: formBare})
				add(&param{pool: pool, key: "v" + v, value: c.rng.IntN(2), form: formBare})
			case "counter":
				add(&param{pool: pool, key: "v" + v, value: 1000 + c.rng.IntN(50000), form: formObject, storable: true, updatedAt: ts(), drift: driftCounter})
				add(&param{pool: pool, key: "u" + v, value: nil, form: formObject})
			case "enum":
				add(&param{pool: pool, key: "v" + v, value: c.rng.IntN(6), form: formObject, storable: true})
				add(&param{pool: pool, key: "u" + v, value: nil, form: formMetaOnly, storable: true})
				add(&param{pool: pool, key: "s" + v, value: c.rng.IntN(16), form: formObject})
			}
		}
	}
	sort.Strings(m.driftKeys)
}

func (c *Cloud) pickFamily(pool string) string {
	r := c.rng.IntN(100)
	switch pool {
	case "P4":
		switch {
		case r < 45:
			return "temp"
		case r < 65:
			return "percent"
		case r < 85:
			return "setpoint"
		default:
			return "status"
		}
	case "P5":
		switch {
		case r < 50:
			return "status"
		case r < 80:
			return "counter"
		default:
			return "percent"
		}
	default:
		switch {
		case r < 60:
			return "enum"
		default:
			return "setpoint"
		}
	}
}

// buildEvents seeds the activity feed and the alarm lists of a module.
func (c *Cloud) buildEvents(m *module, now int64) {
	// Three changes of one setting of the module's own, each row naming
	// the parameter it was made through (its symbol's token) and the
	// register it changed (the prev_value snapshot), as one setting would.
	var setting webapp.Register
	for _, r := range m.profile.Registers {
		if r.Setting && !r.Status && !r.Wide && r.Address != "" {
			setting = r
			break
		}
	}
	pool, idx, symbol := "P6", "219", ""
	if p, chanIdx, ok := strings.Cut(setting.Address, "."); ok && setting.Symbol != "" && len(chanIdx) > 1 {
		pool, idx, symbol = p, chanIdx[1:], setting.Symbol
	}
	for i := 0; i < 3; i++ {
		// Drawn whether used or not: the seed's world (devids, values)
		// stays what it was.
		name := "parameters.PARAM_" + strconv.Itoa(1+c.rng.IntN(120))
		if symbol != "" {
			name = "parameters." + symbol
		}
		m.nextAct++
		m.activity = append(m.activity, map[string]any{
			"id": m.nextAct, "devid": m.devid, "module_id": m.id, "name": name,
			"unit": 1, "value": 50 + i, "prevValue": 49 + i, "prev_value": map[string]any{pool: map[string]any{idx: map[string]any{"v": 49 + i, "u": 1}}},
			"state": "success", "created_at": time.Unix(now-int64(3600*(3-i)), 0).UTC().Format(time.RFC3339),
			"user": map[string]any{"name": c.user.Name, "id": c.user.ID}, "user_id": c.user.ID,
		})
	}
	for i, a := range m.profile.Alarms {
		m.alarms = append(m.alarms, map[string]any{
			"id": a.ID, "name": a.Code, "devid": m.devid,
			"created_at": time.Unix(now-1800-int64(600*i), 0).UTC().Format(time.RFC3339), "finished_at": nil,
		})
	}
	m.history = append(m.history, map[string]any{
		"id": 12, "name": "ERROR_CZUJNIK_CO", "devid": m.devid,
		"created_at":  time.Unix(now-86400*3, 0).UTC().Format(time.RFC3339),
		"finished_at": time.Unix(now-86400*3+900, 0).UTC().Format(time.RFC3339),
	})
}

// splitKey turns "P4.v12" into ("P4", "v12"), checking the key grammar
// of docs/spec.md W-2.1a.
func splitKey(key string) (pool, chanKey string, err error) {
	pool, chanKey, ok := strings.Cut(key, ".")
	if !ok || len(pool) < 2 || pool[0] != 'P' || len(chanKey) < 2 {
		return "", "", fmt.Errorf("cloudsim: parameter key %q is not of the form P<n>.<chan><idx>", key)
	}
	if _, err := strconv.Atoi(pool[1:]); err != nil {
		return "", "", fmt.Errorf("cloudsim: parameter key %q: bad pool", key)
	}
	if _, err := strconv.Atoi(chanKey[1:]); err != nil {
		return "", "", fmt.Errorf("cloudsim: parameter key %q: bad index", key)
	}
	return pool, chanKey, nil
}

// primeBody is the body of one parameter in a prime (docs/spec.md W-2.1a).
func (p *param) primeBody() any {
	switch p.form {
	case formBare:
		return p.value
	case formMetaOnly:
		b := map[string]any{}
		if p.storable {
			b["storable"] = 1
		}
		if p.updatedAt != 0 {
			b["updatedAt"] = p.updatedAt
		}
		return b
	default:
		b := map[string]any{"value": p.value}
		if p.storable {
			b["storable"] = true
		}
		if p.updatedAt != 0 {
			b["updatedAt"] = p.updatedAt
		}
		return b
	}
}

// Devids lists the modules' device ids in a stable order, object by object
// (those of hidden objects too).
func (c *Cloud) Devids() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.modules))
	for i, m := range c.modules {
		out[i] = m.devid
	}
	return out
}

// ObjectID is the id of the account's first object (the group_id of its
// module calls): with Options.Objects 1, the account's only object.
func (c *Cloud) ObjectID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.objects[0].id
}

// Params returns the current values of a module by "P4.v1". Parameters
// without a value (meta-only, or a null value) are left out, as a client's
// store ignores them too. Nil for an unknown devid.
func (c *Cloud) Params(devid string) map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.byDevid[devid]
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m.params))
	for k, p := range m.params {
		if p.form == formMetaOnly || p.value == nil {
			continue
		}
		out[k] = p.value
	}
	return out
}

// SetParam sets a parameter (creating it when new) and pushes it as a live
// delta to the sessions bound to the module. Unknown modules and malformed
// keys are logged and ignored.
func (c *Cloud) SetParam(devid, key string, value any) {
	pool, ck, err := splitKey(key)
	if err != nil {
		c.log.Warn("cloudsim: SetParam ignored", "devid", devid, "err", err)
		return
	}
	c.mu.Lock()
	m := c.byDevid[devid]
	if m == nil {
		c.mu.Unlock()
		c.log.Warn("cloudsim: SetParam for an unknown module ignored", "devid", devid)
		return
	}
	delta := c.setParamLocked(m, pool, ck, value)
	c.mu.Unlock()
	c.pushParams(devid, delta)
}

// setParamLocked applies one value and returns the delta payload for it.
func (c *Cloud) setParamLocked(m *module, pool, ck string, value any) map[string]any {
	k := pool + "." + ck
	p := m.params[k]
	if p == nil {
		p = &param{pool: pool, key: ck, form: formObject}
		m.params[k] = p
	}
	if p.form == formMetaOnly {
		p.form = formObject
	}
	p.value = value
	p.updatedAt = c.now().Unix()
	return map[string]any{m.devid: map[string]any{pool: map[string]any{ck: map[string]any{"value": value, "updatedAt": p.updatedAt}}}}
}

// Drift makes one drift step: a few value parameters of every online module
// change plausibly, and each module's changes go out as one live delta.
func (c *Cloud) Drift() {
	type push struct {
		devid string
		delta map[string]any
	}
	var pushes []push
	c.mu.Lock()
	ts := c.now().Unix()
	for _, m := range c.modules {
		if m.connectedAt == 0 || len(m.driftKeys) == 0 {
			continue
		}
		pools := map[string]any{}
		n := 2 + c.rng.IntN(3)
		for i := 0; i < n; i++ {
			p := m.params[m.driftKeys[c.rng.IntN(len(m.driftKeys))]]
			pm, _ := pools[p.pool].(map[string]any)
			if pm == nil {
				pm = map[string]any{}
				pools[p.pool] = pm
			}
			if p.drift == driftWide {
				c.driftWideLocked(p, pm, ts)
				continue
			}
			p.value = c.drifted(p)
			p.updatedAt = ts
			pm[p.key] = map[string]any{"value": p.value, "updatedAt": ts}
		}
		c.burnFuelLocked(m, pools, ts)
		pushes = append(pushes, push{m.devid, map[string]any{m.devid: pools}})
	}
	c.mu.Unlock()
	for _, p := range pushes {
		c.pushParams(p.devid, p.delta)
	}
}

func (c *Cloud) drifted(p *param) any {
	switch p.drift {
	case driftTemp:
		f, _ := p.value.(float64)
		step := float64(1+c.rng.IntN(5)) / 10
		if c.rng.IntN(2) == 0 {
			step = -step
		}
		return math.Round(math.Max(p.min, math.Min(p.max, f+step))*10) / 10
	case driftPercent:
		v, _ := p.value.(int)
		v += c.rng.IntN(11) - 5
		return max(int(p.min), min(int(p.max), v))
	case driftCounter:
		v, _ := p.value.(int)
		return v + 1
	}
	return p.value
}
