package webapp

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file writes the simulated web app's JavaScript in the style of the
// live minified, obfuscated Vite bundle: hex number literals, _0x…
// identifiers, quoted and computed keys, !0 and void 0x0, builder arrow
// functions, ['map'] calls, hex-escaped strings and export{x as default}.

// obfNames hands out _0x… identifiers, stable per file and logical name.
type obfNames struct {
	salt   string
	byName map[string]string
	used   map[string]bool
}

func newObf(salt string) *obfNames {
	return &obfNames{salt: salt, byName: map[string]string{}, used: map[string]bool{}}
}

func (o *obfNames) id(name string) string {
	if v, ok := o.byName[name]; ok {
		return v
	}
	h := fnv.New32a()
	h.Write([]byte(o.salt + "\x00" + name))
	n := h.Sum32() & 0xffffff
	for {
		v := "_0x" + strconv.FormatUint(uint64(n), 16)
		if !o.used[v] {
			o.used[v] = true
			o.byName[name] = v
			return v
		}
		n = (n + 0x1f3) & 0xffffff
	}
}

// hx spells a non-negative integer as a hex literal, as minifiers do.
func hx(n int) string { return "0x" + strconv.FormatInt(int64(n), 16) }

// jsQuote spells s as a single-quoted JavaScript string. escaped writes
// spaces and every non-ASCII character as \x / \u escapes (astral ones as
// surrogate pairs), as most strings of the live bundle are.
func jsQuote(s string, escaped bool) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\'':
			b.WriteString(`\'`)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case escaped && r == ' ':
			b.WriteString(`\x20`)
		case escaped && r >= 0x80 && r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case escaped && r > 0xff && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case escaped && r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

func q(s string) string { return jsQuote(s, false) }

// sel spells a register selector.
func sel(pool string, index int, use string, extra ...string) string {
	s := "{'group':" + q(pool) + ",'number':" + hx(index) + ",'use':" + q(use)
	for _, x := range extra {
		s += "," + x
	}
	return s + "}"
}

// assetNames are the hashed file names the index and the chunks refer to.
type assetNames struct {
	enums   string            // "enums-Ab12Cd34.js"
	params  map[string]string // token → definition chunk
	menus   map[*simMenu]string
	i18n    map[string]string // "en/units" → chunk
	css     string
	preload []string // __vite__mapDeps list, file names
}

func (n *assetNames) dep(file string) int {
	for i, f := range n.preload {
		if f == file {
			return i
		}
	}
	panic("cloudsim: " + file + " is not in the preload list")
}

// ---- shared enums chunk ----

var iconNames = []string{"INFO", "TEMPERATURE", "DHW", "OUTDOOR", "FAN", "POWER", "PRESSURE", "FUEL", "FLAME", "PUMP",
	"SETTINGS", "VALVE", "THERMOSTAT", "CLOCK"}

// enumsJS is the chunk the menus and definition chunks import their enums
// and helpers from. Each export has an obfuscated and a readable name.
func enumsJS() string {
	o := newObf("enums")
	var w strings.Builder
	objOf := func(names []string) string {
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = q(n) + ":" + q(n)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	perms := []string{"DISPLAY_MENU_BOILER", "DISPLAY_MENU_DHW", "DISPLAY_MENU_SERVICE", "DISPLAY_MENU_INFO",
		"DISPLAY_MENU_VALVE", "DISPLAY_MENU_THERMOSTAT", permLevel1, permLevel2, permLevelMx, "MODULE_COMMAND_SEND"}
	fmt.Fprintf(&w, "const %s=%s,%s=%s,%s=%s,%s=%s,%s=(%s,%s)=>%s+':'+%s,%s=(%s,%s=0x0)=>%s&0xffff;\n",
		o.id("status"), objOf([]string{"INVISIBLE", "DEVICE_AVAILABLE", "ENABLED"}),
		o.id("icons"), objOf(iconNames),
		o.id("perms"), objOf(perms),
		o.id("actions"), objOf([]string{"READ", "WRITE", "STATUS"}),
		o.id("param"), o.id("a"), o.id("b"), o.id("a"), o.id("b"),
		o.id("convert"), o.id("w"), o.id("s"), o.id("w"))
	fmt.Fprintf(&w, "export{%s as S,%s as ParameterStatus,%s as I,%s as IconsList,%s as P,%s as Permissions,%s as A,%s as Actions,%s as p,%s as param,%s as c};\n",
		o.id("status"), o.id("status"), o.id("icons"), o.id("icons"), o.id("perms"), o.id("perms"),
		o.id("actions"), o.id("actions"), o.id("param"), o.id("param"), o.id("convert"))
	return w.String()
}

// ---- definitions ----

// defObject spells a symbol's full definition object (chunk forms). icons,
// status and convert are the chunk's local names of the imported enums.
func defObject(s *simSymbol, icons, status, convert string) string {
	parts := []string{"'id':" + hx(s.id)}
	if s.icon != "" {
		parts = append(parts, "'icon':"+icons+"['"+s.icon+"']")
	}
	parts = append(parts, "'name':"+q(s.labelToken()))
	if s.wide {
		parts = append(parts, "'value':["+sel(s.pool, s.index, "v", "'convert':"+convert)+","+
			sel(s.pool, s.index+1, "v", "'convert':"+convert, "'times':0x10000")+"]")
	} else {
		parts = append(parts, "'value':["+sel(s.pool, s.index, "v")+"]")
	}
	if s.noUChan {
		parts = append(parts, "'unit':"+hx(s.unit))
	} else {
		parts = append(parts, "'unit':["+sel(s.pool, s.index, "u")+"]")
	}
	if !s.wide {
		parts = append(parts, "'minValue':["+sel(s.pool, s.index, "n")+"]", "'maxValue':["+sel(s.pool, s.index, "x")+"]")
	}
	if s.setting {
		parts = append(parts, "'command':["+sel(s.pool, s.index, "v")+"]",
			"'status':{["+status+"['INVISIBLE']]:["+sel(s.pool, s.index, "s", "'bit':0x7")+"]}")
	}
	parts = append(parts, "'useComponent':"+q(s.comp))
	return "{" + strings.Join(parts, ",") + "}"
}

// definitionChunkJS is the chunk of one symbol defined outside the index.
func definitionChunkJS(s *simSymbol, n *assetNames) string {
	o := newObf(s.token)
	icons, status, convert := o.id("icons"), o.id("status"), "_0x35dce1"
	imp := fmt.Sprintf("import{I as %s,S as %s,c as %s}from'./%s';", icons, status, convert, n.enums)
	obj := defObject(s, icons, status, convert)
	switch s.form {
	case defChunkNamed:
		v := o.id("def")
		return imp + "const " + v + "=" + obj + ";export{" + v + " as default};\n"
	case defChunkTable:
		v := o.id("table")
		return imp + "const " + v + "={" + q(s.token) + ":" + obj + "};export default " + v + ";\n"
	default:
		return imp + "export default " + obj + ";\n"
	}
}

// ---- device menus ----

func menuChunkJS(m *simMenu, n *assetNames) string {
	o := newObf("menu/" + m.variant)
	perms, actions, param := o.id("perms"), o.id("actions"), o.id("param")
	var w strings.Builder
	fmt.Fprintf(&w, "import{P as %s,A as %s,p as %s,Permissions as R,Actions as A,param as E}from'./%s';", perms, actions, param, n.enums)
	spellPerm := func(p string, st permStyle, readable bool) string {
		switch {
		case readable || st == permMember:
			return "R." + p
		case st == permString:
			return q(p)
		}
		return perms + "[" + q(p) + "]"
	}
	action := map[string]string{"read": "READ", "write": "WRITE", "status": "STATUS", "special": "READ"}
	entry := func(r *menuRoute, en menuEntry) string {
		if en.perm == "" {
			return q(en.token)
		}
		if r.readable {
			return "{'permissionModule':R." + en.perm + ",'parameter':E(A." + action[en.section] + "," + q(en.token) + ")}"
		}
		return "{'permissionModule':" + perms + "[" + q(en.perm) + "],'parameter':" + param + "(" + actions + "['" + action[en.section] + "']," + q(en.token) + ")}"
	}
	sections := func(r *menuRoute) string {
		var parts []string
		for _, sec := range []string{"read", "write", "status", "special"} {
			if sec == "write" && len(r.mapWrite) > 0 {
				x := o.id("x")
				toks := make([]string, len(r.mapWrite))
				for i, t := range r.mapWrite {
					toks[i] = q(t)
				}
				parts = append(parts, "'write':["+strings.Join(toks, ",")+"]['map']("+x+"=>({'permissionModule':"+
					perms+"["+q(r.mapPerm)+"],'parameter':"+param+"("+actions+"['WRITE'],"+x+")}))")
				continue
			}
			var items []string
			for _, en := range r.entries {
				if en.section == sec {
					items = append(items, entry(r, en))
				}
			}
			if r.onRoute && len(items) == 0 {
				continue
			}
			parts = append(parts, q(sec)+":["+strings.Join(items, ",")+"]")
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	var route func(r *menuRoute) string
	route = func(r *menuRoute) string {
		if r.redirectTo != "" {
			return "{'path':" + q(r.path) + ",'redirect':{'name':" + q(r.redirectTo) + "}}"
		}
		parts := []string{"'path':" + q(r.path), "'name':" + q(r.name), "'component':" + o.id("view")}
		meta := []string{"'displayName':" + q(r.display), "'icon':" + q(r.icon)}
		if r.onRoute {
			parts = append(parts, "'permissionModule':"+spellPerm(r.perm, r.style, r.readable), "'parameters':"+sections(r))
		} else {
			meta = append(meta, "'permissionModule':"+spellPerm(r.perm, r.style, r.readable))
		}
		meta = append(meta, "'isVisibleOnSideMenu':!0", "'displayDropdown':'1'")
		if !r.onRoute && (len(r.entries) > 0 || len(r.mapWrite) > 0) {
			meta = append(meta, "'parameters':"+sections(r))
		}
		parts = append(parts, "'meta':{"+strings.Join(meta, ",")+"}")
		if len(r.children) > 0 {
			var cs []string
			for _, c := range r.children {
				cs = append(cs, route(c))
			}
			parts = append(parts, "'children':["+strings.Join(cs, ",")+"]")
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	var rs []string
	for _, r := range m.routes {
		rs = append(rs, route(r))
	}
	list := "[" + strings.Join(rs, ",") + "]"
	fmt.Fprintf(&w, "const %s=()=>null;", o.id("view"))
	switch m.variant {
	case "0":
		v := o.id("menu")
		fmt.Fprintf(&w, "const %s={'priority':0x64,'deviceMenu':%s};export default %s;\n", v, list, v)
	case "module.menu":
		v := o.id("menu")
		fmt.Fprintf(&w, "const %s={'deviceMenu':{'menu':%s}};export{%s as default};\n", v, list, v)
	default:
		fmt.Fprintf(&w, "export default %s;\n", list)
	}
	return w.String()
}

// ---- translations ----

// i18nStyle is how a translation chunk is written.
type i18nStyle uint8

const (
	i18nConsts  i18nStyle = iota // labels bound to constants, re-exported through an object
	i18nDefault                  // export default {…}
	i18nNamed                    // const x={…}; export{x as default}
	i18nString                   // one string bound to the namespace's name
)

func i18nStyleOf(ns, lang string) (i18nStyle, bool) {
	switch ns {
	case "parameters", "alarms":
		return i18nConsts, true
	case "units":
		return i18nDefault, true
	case "app", "menu":
		return i18nDefault, lang == "pl"
	case titleNamespace:
		return i18nString, true
	}
	return i18nNamed, false
}

func treeJS(t i18nTree, escaped, bareNumbers bool) string {
	var parts []string
	for _, k := range t.keys() {
		key := q(k)
		if _, err := strconv.Atoi(k); err == nil && bareNumbers {
			key = k
		}
		switch v := t[k].(type) {
		case string:
			parts = append(parts, key+":"+jsQuote(v, escaped))
		case i18nTree:
			parts = append(parts, key+":"+treeJS(v, escaped, bareNumbers))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func i18nChunkJS(lang, ns string, t i18nTree) string {
	style, escaped := i18nStyleOf(ns, lang)
	o := newObf(lang + "/" + ns)
	switch style {
	case i18nConsts:
		var consts, pairs []string
		for _, k := range t.keys() {
			v, ok := t[k].(string)
			if !ok {
				continue
			}
			c := o.id(k)
			consts = append(consts, c+"="+jsQuote(v, escaped))
			pairs = append(pairs, q(k)+":"+c)
		}
		x := o.id("table")
		return "const " + strings.Join(consts, ",") + "," + x + "={" + strings.Join(pairs, ",") + "};export{" + x + " as default};\n"
	case i18nDefault:
		return "export default " + treeJS(t, escaped, lang == "en") + ";\n"
	case i18nString:
		v, _ := t[ns].(string)
		return "const " + ns + "=" + jsQuote(v, escaped) + ";export{" + ns + " as default};\n"
	}
	x := o.id("table")
	return "const " + x + "=" + treeJS(t, escaped, false) + ";export{" + x + " as default};\n"
}

// ---- index ----

// indexJS is the entry bundle of build generation gen.
func indexJS(n *assetNames, gen int, version string) string {
	o := newObf("index")
	var w strings.Builder
	id := o.id

	// Vite's preload dependency list spells files as "assets/<file>".
	deps := make([]string, len(n.preload))
	for i, f := range n.preload {
		deps[i] = `"assets/` + f + `"`
	}
	fmt.Fprintf(&w, "const __vite__mapDeps=(i,m=__vite__mapDeps,d=(m.f||(m.f=[%s])))=>i.map(i=>d[i]);\n", strings.Join(deps, ","))

	// The module-preload polyfill.
	a, b, c, d, e, f, g, h, p := id("pa"), id("pb"), id("pc"), id("pd"), id("pe"), id("pf"), id("pg"), id("ph"), id("pp")
	fmt.Fprintf(&w, "(function(){const %[1]s=document['createElement']('link')['relList'];if(%[1]s&&%[1]s['supports']&&%[1]s['supports']('modulepreload'))return;"+
		"for(const %[2]s of document['querySelectorAll']('link[rel=\\x22modulepreload\\x22]'))%[9]s(%[2]s);"+
		"new MutationObserver(%[3]s=>{for(const %[4]s of %[3]s){if(%[4]s['type']!=='childList')continue;for(const %[5]s of %[4]s['addedNodes'])%[5]s['tagName']==='LINK'&&%[5]s['rel']==='modulepreload'&&%[9]s(%[5]s);}})['observe'](document,{'childList':!0,'subtree':!0});"+
		"function %[6]s(%[7]s){const %[8]s={};return %[7]s['integrity']&&(%[8]s['integrity']=%[7]s['integrity']),%[7]s['referrerPolicy']&&(%[8]s['referrerPolicy']=%[7]s['referrerPolicy']),"+
		"%[7]s['crossOrigin']==='use-credentials'?%[8]s['credentials']='include':%[7]s['crossOrigin']==='anonymous'?%[8]s['credentials']='omit':%[8]s['credentials']='same-origin',%[8]s;}"+
		"function %[9]s(%[7]s){if(%[7]s['ep'])return;%[7]s['ep']=!0;const %[8]s=%[6]s(%[7]s);fetch(%[7]s['href'],%[8]s);}}());\n",
		a, b, c, d, e, f, g, h, p)

	// The preload helper every lazy import goes through.
	hp := id("preload")
	fmt.Fprintf(&w, "const %[1]s='modulepreload',%[2]s=function(%[4]s){return'/'+%[4]s;},%[3]s={},%[5]s=function(%[6]s,%[7]s,%[8]s){let %[9]s=Promise['resolve']();"+
		"if(%[7]s&&%[7]s['length']>0x0){%[9]s=Promise['allSettled'](%[7]s['map'](%[10]s=>{if(%[10]s=%[2]s(%[10]s,%[8]s),%[10]s in %[3]s)return;%[3]s[%[10]s]=!0;"+
		"const %[11]s=document['createElement']('link');%[11]s['rel']=%[1]s;%[11]s['as']='script';%[11]s['crossOrigin']='';%[11]s['href']=%[10]s;document['head']['appendChild'](%[11]s);}));}"+
		"return %[9]s['then'](()=>%[6]s()['catch'](%[12]s=>{const %[13]s=new Event('vite:preloadError',{'cancelable':!0});%[13]s['payload']=%[12]s;window['dispatchEvent'](%[13]s);if(!%[13]s['defaultPrevented'])throw %[12]s;}));};\n",
		id("rel"), id("url"), id("seen"), id("u"), hp, id("load"), id("deps"), id("base"), id("pr"), id("dep"), id("link"), id("err"), id("ev"))

	// Enums.
	st, ic, op, bs := id("status"), id("icons"), id("ops"), id("boilerState")
	objOf := func(names []string) string {
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = q(n) + ":" + q(n)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	fmt.Fprintf(&w, "const %s=%s,%s=%s,%s=%s,%s=%s,kn={'ON':'ON','OFF':'OFF'};\n",
		st, objOf([]string{"INVISIBLE", "DEVICE_AVAILABLE", "ENABLED"}), ic, objOf(iconNames),
		op, objOf([]string{"equalTo", "notEqualTo", "greaterThan", "lessThan"}),
		bs, objOf([]string{"STOP", "WORK", "FIRING_UP", "ALARM", "STANDBY"}))

	// The unit descriptor table.
	var units []string
	for _, u := range simUnits {
		var parts []string
		if u.text != "" {
			parts = append(parts, "'text':"+q(u.text))
		}
		arg := id(fmt.Sprintf("unit%d", u.code))
		if u.value != "" {
			parts = append(parts, "'value':"+arg+"=>"+fmt.Sprintf(u.value, arg))
		}
		if u.prepare != "" {
			parts = append(parts, "'valuePrepare':"+arg+"=>"+fmt.Sprintf(u.prepare, arg))
		}
		if len(u.options) > 0 {
			var opts []string
			for _, op := range u.options {
				opts = append(opts, op.key+":"+q(op.token))
			}
			parts = append(parts, "'options':{"+strings.Join(opts, ",")+"}")
		}
		if u.colors {
			parts = append(parts, "'colors':{[kn.ON]:'#4caf50',[kn.OFF]:'#9e9e9e'}")
		}
		units = append(units, hx(u.code)+":{"+strings.Join(parts, ",")+"}")
	}
	fmt.Fprintf(&w, "const %s={%s};\n", id("units"), strings.Join(units, ","))

	// Parameter builders and the inline definition table.
	b4, b6, bc, bd := id("buildP4"), id("buildP6"), id("buildClassic"), id("buildDiode")
	x1, x2, x3, x4, x5, x6 := id("x1"), id("x2"), id("x3"), id("x4"), id("x5"), id("x6")
	selX := func(pool, v, use string, extra ...string) string {
		s := "{'group':'" + pool + "','number':" + v + ",'use':'" + use + "'"
		for _, x := range extra {
			s += "," + x
		}
		return s + "}"
	}
	fmt.Fprintf(&w, "const %s=({id:%s,icon:%s=%s['TEMPERATURE'],number:%s,name:%s,useComponent:%s=void 0x0})=>({'id':%s,'icon':%s,'name':%s??'parameters.PARAM_P4_'+%s,"+
		"'value':[%s],'unit':[%s],'minValue':[%s],'maxValue':[%s],'useComponent':%s??'TEXT'}),\n",
		b4, x1, x2, ic, x3, x4, x5, x1, x2, x4, x3,
		selX("P4", x3, "v"), selX("P4", x3, "u"), selX("P4", x3, "n"), selX("P4", x3, "x"), x5)
	fmt.Fprintf(&w, "%s=({id:%s,number:%s,icon:%s=%s['SETTINGS'],useComponent:%s=void 0x0,status:%s={}})=>{const %s={'id':%s,'icon':%s,'name':'parameters.PARAM_P6_'+%s,"+
		"'value':[%s],'unit':[%s],'minValue':[%s],'maxValue':[%s],'command':[%s],'status':{...{[%s['INVISIBLE']]:[%s]},...%s},'useComponent':%s};return %s;},\n",
		b6, x1, x2, x3, ic, x4, x5, x6, x1, x3, x2,
		selX("P6", x2, "v"), selX("P6", x2, "u"), selX("P6", x2, "n"), selX("P6", x2, "x"), selX("P6", x2, "v"),
		st, selX("P6", x2, "s", "'bit':0x7"), x5, x4, x6)
	fmt.Fprintf(&w, "%s=({id:%s,number:%s,name:%s,useComponent:%s='SLIDER'})=>({'id':%s,'icon':%s['SETTINGS'],'name':%s!==void 0x0?%s:'parameters.PARAM_'+%s,"+
		"'value':[%s],'unit':[%s],'minValue':[%s],'maxValue':[%s],'command':[%s],'status':{[%s['INVISIBLE']]:[%s]},'useComponent':%s}),\n",
		bc, x1, x2, x3, x4, x1, ic, x3, x3, x2,
		selX("P6", x2, "v"), selX("P6", x2, "u"), selX("P6", x2, "n"), selX("P6", x2, "x"), selX("P6", x2, "v"),
		st, selX("P6", x2, "s", "'bit':0x7"), x4)
	cond := func(expected, number string, extra string) string {
		return "{'operation':" + op + "['equalTo'],'expected':" + expected + ",'value':[" + selX("P5", number, "s", extra) + "]}"
	}
	fmt.Fprintf(&w, "%s=({id:%s,number:%s,bit:%s=0x0,icon:%s=%s['PUMP']})=>({'id':%s,'icon':%s,'name':`parameters.STATUS_P5_${%s}`,"+
		"'value':[{'if':[%s],'then':{'value':kn.ON}},{'elseif':[%s],'then':{'value':kn.OFF}},{'else':null}],'unit':%s,'useComponent':'DIODE'}),\n",
		bd, x1, x2, x3, x4, ic, x1, x4, x2,
		cond("0x1", x2, "'bit':"+x3), cond("0x0", x2, "'bit':"+x3), hx(unitDiode))

	var table []string
	for _, s := range simSymbols {
		if s.form.inChunk() {
			continue
		}
		var v string
		switch s.form {
		case defP4:
			args := []string{"'id':" + hx(s.id), "'number':" + hx(s.index)}
			if s.icon != "TEMPERATURE" {
				args = append(args, "'icon':"+ic+"['"+s.icon+"']")
			}
			if s.name != "" {
				args = append(args, "'name':"+q(s.name))
			}
			v = b4 + "({" + strings.Join(args, ",") + "})"
		case defP6:
			args := []string{"id:" + hx(s.id), "number:" + hx(s.index)}
			if s.comp != "" {
				args = append(args, "useComponent:"+q(s.comp))
			}
			v = b6 + "({" + strings.Join(args, ",") + "})"
		case defClassic:
			v = bc + "({'id':" + hx(s.id) + ",'number':" + hx(s.index) + "})"
		case defDiode:
			v = bd + "({'id':" + hx(s.id) + ",'number':" + hx(s.index) + "})"
		case defBoilerState:
			n := hx(s.index)
			rule := func(kind, expected, extra, state string) string {
				return "{'" + kind + "':[" + cond(expected, n, extra) + "],'then':{'value':" + bs + "['" + state + "']}}"
			}
			v = "{'id':" + hx(s.id) + ",'icon':" + ic + "['" + s.icon + "'],'name':" + q(s.name) + ",'value':[" +
				rule("if", "0x1", "'bit':0x6", "ALARM") + "," + rule("elseif", "0x1", "'bit':0x5", "STOP") + "," +
				rule("elseif", "0x1", "'bit':0x2", "FIRING_UP") + "," + rule("elseif", "0x1", "'bit':0x1", "WORK") + "," +
				rule("elseif", "0x0", "'mask':0x7f", "STANDBY") + ",{'else':null}],'unit':" + hx(s.unit) +
				",'useComponent':" + q(s.comp) + "}"
		case defStatusElsewhere:
			pool, reg, _ := strings.Cut(s.reads, ".")
			idx, _ := strconv.Atoi(reg[1:])
			v = "{'id':" + hx(s.id) + ",'icon':" + ic + "['" + s.icon + "'],'name':'parameters." + s.token + "','group':" + q(pool) +
				",'value':[" + selX(pool, hx(idx), reg[:1]) + "],'unit':" + hx(s.unit) + ",'useComponent':'TEXT'}"
		}
		table = append(table, q(s.token)+":"+v)
	}
	fmt.Fprintf(&w, "%s={%s};\n", id("params"), strings.Join(table, ","))

	// The device-menu router map (import.meta.glob output).
	prefixes := []string{"../../config/router", "../config/router", "/src/config/router"}
	var routes []string
	for i, m := range simMenus {
		file := n.menus[m]
		quote := `"`
		if i%2 == 1 {
			quote = "'"
		}
		routes = append(routes, fmt.Sprintf(`"%s/deviceMenu/%d/%s.ts":()=>%s(()=>import(%s./%s%s),__vite__mapDeps([%d,%d]))`,
			prefixes[i%len(prefixes)], m.deviceMenu, m.variant, hp, quote, file, quote, n.dep(file), n.dep(n.enums)))
	}
	fmt.Fprintf(&w, "const %s=Object['assign']({%s});\n", id("deviceMenus"), strings.Join(routes, ","))

	// Definition chunks (import.meta.glob output).
	var defs []string
	for _, s := range simSymbols {
		if file, ok := n.params[s.token]; ok {
			defs = append(defs, fmt.Sprintf(`"../../config/parameters/%s.ts":()=>%s(()=>import("./%s"),__vite__mapDeps([%d,%d]))`,
				s.token, hp, file, n.dep(file), n.dep(n.enums)))
		}
	}
	fmt.Fprintf(&w, "const %s=Object['assign']({%s});\n", id("definitions"), strings.Join(defs, ","))

	// Translations (import.meta.glob output), per language and namespace.
	var langs []string
	keys := make([]string, 0, len(n.i18n))
	for k := range n.i18n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		lang, ns, _ := strings.Cut(k, "/")
		tail := ""
		if i%3 == 1 {
			tail = "['then'](" + x1 + "=>" + x1 + "['default'])"
		}
		quote := `"`
		if i%2 == 1 {
			quote = "'"
		}
		langs = append(langs, fmt.Sprintf(`"../../resources/languages/%s/%s.json":()=>%s(()=>import(%s./%s%s),[])%s`,
			lang, ns, hp, quote, n.i18n[k], quote, tail))
	}
	fmt.Fprintf(&w, "const %s=Object['assign']({%s});\n", id("languages"), strings.Join(langs, ","))

	// The application configuration, language configuration nested inside.
	cfg := id("config")
	fmt.Fprintf(&w, "const %s=(()=>{const %s={'app':{'name':'BragerOne','i18n':{'defaultTranslation':'pl','fallbackLocale':'en',"+
		"'translations':[{'id':'PL','flag':'pl','countryFlag':'pl','name':'Polski','variants':{'153':{'1201':'PL_5_RTP_TIS'}}},"+
		"{id:'EN',flag:'en',countryFlag:'gb',name:'English'},{'id':'DE','flag':'de','countryFlag':'de','name':'Deutsch','dev':!0}]},"+
		"'api':{'timeout':0x1f40,'retries':0x3}}};return %s;})();\n", cfg, x1, x1)

	// Dashboard favourites, generated.
	fmt.Fprintf(&w, "const %s={'dashboard':['PARAM_P4_1','PARAM_P4_7','PARAM_P6_1']['map'](%s=>({'parameter':%s,'size':0x1}))};\n",
		id("favourites"), x1, x1)

	// Build stamp; it changes with every deployment.
	fmt.Fprintf(&w, "window['__BRAGERONE_BUILD__']={'version':%s,'build':%s,'devMode':!1,'menus':%s,'definitions':%s,'languages':%s,'config':%s,'favourites':%s};\n",
		q(version), hx(gen), id("deviceMenus"), id("definitions"), id("languages"), cfg, id("favourites"))
	fmt.Fprintf(&w, "export{%s as _,%s as default};\n", hp, id("params"))
	return w.String()
}
