package cloudsim

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
)

// controlRoutes mounts the control endpoint:
//
//	POST   /control/faults                       {Fault} -> {"id":N}
//	DELETE /control/faults/{id}
//	DELETE /control/faults
//	POST   /control/modules/{devid}/online|offline|memory-updated
//	POST   /control/objects/{id}/hide|show
//	POST   /control/drift
//	POST   /control/revoke-tokens
//	POST   /control/reset-counters
//	GET    /control/state
//	GET    /control/assets, POST /control/assets/rotate-index (assetControlRoutes)
func (c *Cloud) controlRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /control/faults", c.control(c.ctlInject))
	mux.HandleFunc("DELETE /control/faults/{id}", c.control(c.ctlClear))
	mux.HandleFunc("DELETE /control/faults", c.control(func(w http.ResponseWriter, _ *http.Request) {
		c.ClearAll()
		writeJSON(w, http.StatusOK, map[string]any{})
	}))
	mux.HandleFunc("POST /control/modules/{devid}/{action}", c.control(c.ctlModule))
	mux.HandleFunc("POST /control/objects/{id}/{action}", c.control(c.ctlObject))
	mux.HandleFunc("POST /control/drift", c.control(func(w http.ResponseWriter, _ *http.Request) {
		c.Drift()
		writeJSON(w, http.StatusOK, map[string]any{})
	}))
	mux.HandleFunc("POST /control/revoke-tokens", c.control(func(w http.ResponseWriter, _ *http.Request) {
		c.RevokeTokens()
		writeJSON(w, http.StatusOK, map[string]any{})
	}))
	mux.HandleFunc("POST /control/reset-counters", c.control(func(w http.ResponseWriter, _ *http.Request) {
		c.ResetCounters()
		writeJSON(w, http.StatusOK, map[string]any{})
	}))
	mux.HandleFunc("GET /control/state", c.control(c.ctlState))
	c.assetControlRoutes(mux)
	mux.HandleFunc("/control/", c.control(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not found"})
	}))
}

// control refuses non-loopback clients unless AllowRemoteControl is set.
func (c *Cloud) control(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !c.opts.AllowRemoteControl && !isLoopback(r.RemoteAddr) {
			writeJSON(w, http.StatusForbidden, map[string]any{"message": "control endpoint answers loopback clients only"})
			return
		}
		h(w, r)
	}
}

func isLoopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *Cloud) ctlInject(w http.ResponseWriter, r *http.Request) {
	var f Fault
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		badRequest(w, errors.New("fault body: "+err.Error()))
		return
	}
	id, err := c.InjectFault(f)
	if err != nil {
		badRequest(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id})
}

func (c *Cloud) ctlClear(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		badRequest(w, errors.New("fault id must be an integer"))
		return
	}
	c.mu.Lock()
	found := c.removeFaultLocked(id)
	c.mu.Unlock()
	if !found {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "no such fault"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

func (c *Cloud) ctlModule(w http.ResponseWriter, r *http.Request) {
	devid := r.PathValue("devid")
	c.mu.Lock()
	known := c.byDevid[devid] != nil
	c.mu.Unlock()
	if !known {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Module not found"})
		return
	}
	switch r.PathValue("action") {
	case "online":
		c.SetModuleOnline(devid, true)
	case "offline":
		c.SetModuleOnline(devid, false)
	case "memory-updated":
		c.EmitMemoryUpdated(devid)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "action must be online, offline or memory-updated"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

// ctlObject hides an object from the account or shows it again.
func (c *Cloud) ctlObject(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		badRequest(w, errors.New("object id must be an integer"))
		return
	}
	var act func(int) error
	switch r.PathValue("action") {
	case "hide":
		act = c.HideObject
	case "show":
		act = c.ShowObject
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "action must be hide or show"})
		return
	}
	if err := act(id); err != nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}

// ModuleState is one module in /control/state.
type ModuleState struct {
	Devid       string `json:"devid"`
	ObjectID    int    `json:"object_id"`
	Online      bool   `json:"online"`
	ConnectedAt int64  `json:"connectedAt"`
}

// State is the answer of GET /control/state.
type State struct {
	URL      string        `json:"url"`
	ObjectID int           `json:"object_id"` // the first object's (ObjectID)
	Objects  []ObjectInfo  `json:"objects"`   // every object, hidden ones too
	Modules  []ModuleState `json:"modules"`
	Sessions []Session     `json:"sessions"`
	Faults   []ActiveFault `json:"faults"`
	// Replay is the replay's state when the cloud plays a recording back.
	Replay *ReplayState `json:"replay,omitempty"`
	// Counters (logins, requests, tokens, handshakes: the Counters) sit
	// flat beside the rest: "logins", "requests", "tokens_valid", ...
	Counters
}

// Snapshot returns what GET /control/state shows.
func (c *Cloud) Snapshot() State {
	st := State{URL: c.URL(), Objects: c.Objects(), Sessions: c.Sessions(), Faults: c.Faults(), Counters: c.Counters()}
	if rs, ok := c.ReplayState(); ok {
		st.Replay = &rs
	}
	c.mu.Lock()
	st.ObjectID = c.objects[0].id
	for _, m := range c.modules {
		st.Modules = append(st.Modules, ModuleState{Devid: m.devid, ObjectID: m.obj.id, Online: m.connectedAt != 0, ConnectedAt: m.connectedAt})
	}
	c.mu.Unlock()
	return st
}

func (c *Cloud) ctlState(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, c.Snapshot())
}
