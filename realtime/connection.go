package realtime

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime/lifecycle"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

// The connection lifecycle (dial, attach, bind, reconnect, relogin, the
// recovery steps' session work, stop) is decided by package lifecycle; this
// file feeds it what the loop observes and runs the actions it returns.

// feed runs ev through the lifecycle machine, then the actions it returns,
// in order. Called on the loop only.
func (g *Gateway) feed(ctx context.Context, ev lifecycle.Event) {
	st, actions := g.lifeCfg.Step(g.life, ev, g.cfg.Now())
	g.life = st
	for _, a := range actions {
		g.act(ctx, a)
	}
}

// act runs one lifecycle action.
func (g *Gateway) act(ctx context.Context, a lifecycle.Action) {
	switch a := a.(type) {
	case lifecycle.Dial:
		g.dial(ctx, a.Transport)
	case lifecycle.DiscardDialled:
		// The transport was replaced (or we are stopping) while dialling.
		if s := g.dialled.s; s != nil {
			go s.Disconnect(context.Background())
		}
		g.dialled.tok.Release()
		g.dialled.tok = nil
	case lifecycle.RecordConnectFailure:
		g.session.ConnectFailed(a.Reason)
		lvl := g.log.Warn
		if a.Attempt > 1 {
			lvl = g.log.Debug
		}
		lvl("realtime connect failed", "reason", a.Reason, "err", compactErr(g.dialled.err), "attempt", a.Attempt)
	case lifecycle.Attach:
		g.attach(g.dialled.s)
	case lifecycle.Bind:
		if g.sess == nil {
			// The machine binds only a session it holds up; should the
			// two ever disagree, the bind is reported failed, not lost.
			g.feed(ctx, lifecycle.BindFinished{Session: a.Session, Failed: true})
			return
		}
		if a.Rebind {
			g.log.Info("realtime session not bound to the modules; binding again", "namespace_sid", g.sess.NamespaceSID())
		}
		g.resubscribe(ctx, g.sess, a.Session, a.Force)
	case lifecycle.SessionGone:
		g.sessionGone(a.Reason, a.Detail)
	case lifecycle.TearDown:
		if a.Abort {
			g.log.Warn("realtime session found dead without a disconnect; replacing it", "reason", a.Reason)
		}
		g.detach(a.Reason, a.Abort)
	case lifecycle.ReplaceTransport:
		g.replaceTransport()
	case lifecycle.Relogin:
		g.relogin(ctx)
	case lifecycle.PrimeWhileDown:
		g.startPrime(ctx, g.subscribed, PrimeConnect, nil)
	case lifecycle.StartStep:
		g.startStep(ctx, a.Step, a.ForceLogin)
	case lifecycle.RunStep:
		g.recordTransition("ladder_step", "step", fmt.Sprint(a.Step))
		g.log.Warn("recovery step", "step", a.Step)
	case lifecycle.FinishStep:
		g.finishRecovery(a.Step, a.Result)
	default:
		panic(fmt.Sprintf("realtime: unknown lifecycle action %T", a))
	}
}

// dial connects transport gen in a worker, building the transport first
// when the last one was replaced.
func (g *Gateway) dial(ctx context.Context, gen uint64) {
	if g.tr == nil {
		tr, err := g.cfg.NewTransport()
		if err != nil {
			g.log.Error("cannot build the realtime transport", "err", err)
			g.feed(ctx, lifecycle.DialUnavailable{})
			return
		}
		g.tr = tr
	}
	tr := g.tr
	// The handshake's token is held for the session's life, so it is not
	// revoked as superseded while the session uses it.
	dctx, tok := cloudclient.WithSessionToken(ctx)
	g.dialAt = g.cfg.Now()
	go func() {
		s, err := tr.Connect(dctx)
		g.post(func() { g.connected(ctx, gen, s, err, tok) })
	}()
}

// connected handles the end of a dial on the loop. The dial's session and
// error are held in g.dialled while the machine decides, for the actions
// that use them.
func (g *Gateway) connected(ctx context.Context, gen uint64, s transport.Session, err error, tok *cloudclient.SessionToken) {
	g.dialled = dialResult{s: s, err: err, tok: tok}
	defer func() {
		g.dialled.tok.Release() // not attached: the dial's token is not held
		g.dialled = dialResult{}
	}()
	if err != nil {
		if isHandshakeAuthRejection(err) {
			tok.Refused()
		}
		var ce *transport.ConnectError
		if errors.As(err, &ce) && ce.ConnectErrorEvent {
			g.countEvent(cloudapi.EventConnectError)
		}
		g.feed(ctx, lifecycle.DialFailed{
			Reason:           connectFailureReason(err),
			TooManyAbandoned: errors.Is(err, transport.ErrTooManyAbandoned),
			AuthRejected:     isHandshakeAuthRejection(err),
			PrimedOnce:       g.primedOnce(),
		})
		return
	}
	g.feed(ctx, lifecycle.DialOK{Transport: gen, Cancelled: ctx.Err() != nil})
}

// dialResult is the outcome of the dial being decided on.
type dialResult struct {
	s   transport.Session
	err error
	tok *cloudclient.SessionToken
}

// connectFailureReason is the reason of a failed connect. A connect that
// failed while building its handshake headers never dialled: the headers
// carry the token (HandshakeHeaders), so the login it needed failed.
func connectFailureReason(err error) string {
	var ce *transport.ConnectError
	if errors.As(err, &ce) {
		if ce.Phase == transport.PhaseHeaders {
			return loginFailureReason(ce.Err)
		}
		if ce.Reason != "" {
			return ce.Reason
		}
	}
	return outage.ReasonConnectError
}

// attach makes s the current session; the machine has just counted it.
func (g *Gateway) attach(s transport.Session) {
	g.sess, g.sessEvents = s, s.Events()
	g.sessToken.Release()
	g.sessToken, g.dialled.tok = g.dialled.tok, nil
	now := g.cfg.Now()
	res := g.session.Connected(now)
	g.recordTransition("session_up", "namespace_sid", s.NamespaceSID(), "restored", strconv.FormatBool(res.Restored),
		"blink", strconv.FormatBool(res.Blink))
	if res.Restored {
		g.log.Info("cloud session restored", "after", res.RestoredAfter.Round(100*time.Millisecond), "reason", res.RestoredReason)
	} else if res.Blink {
		g.log.Info("cloud session blink absorbed", "namespace_sid", s.NamespaceSID())
	} else {
		g.log.Info("cloud session up", "namespace_sid", s.NamespaceSID())
	}
	g.evaluatePush(now)
}

// sessionEnded reports the end of the current session (a disconnect event,
// or its event stream closing) to the machine.
func (g *Gateway) sessionEnded(ctx context.Context, reason, detail string) {
	g.feed(ctx, lifecycle.SessionEnded{Reason: reason, Detail: detail})
}

// sessionGone drops the session that ended by itself and its binding, and
// records the disconnect.
func (g *Gateway) sessionGone(reason, detail string) {
	now := g.cfg.Now()
	g.sess, g.sessEvents = nil, nil
	g.sessToken.Release()
	g.sessToken = nil
	g.bind.forget()
	if reason == "" {
		reason = outage.ReasonDisconnect
	}
	res := g.session.Disconnected(now, reason)
	g.recordTransition("session_down", "reason", reason, "detail", detail, "went_down", strconv.FormatBool(res.WentDown))
	if res.WentDown {
		g.log.Warn("cloud session down", "reason", reason, "detail", detail)
	} else if res.Pending {
		g.log.Info("cloud session lost; reconnecting inside the hysteresis", "reason", reason, "detail", detail)
	}
	g.evaluatePush(now)
}

// isHandshakeAuthRejection reports whether a connect failed because the cloud
// refused the token: the namespace join answered "Unauthorized" (the cloud's
// CONNECT_ERROR), or the upgrade was answered 401/403.
func isHandshakeAuthRejection(err error) bool {
	var ce *transport.ConnectError
	if !errors.As(err, &ce) || ce.Phase == transport.PhaseHeaders || ce.Phase == transport.PhaseLimit {
		return false
	}
	text := strings.ToLower(err.Error())
	for _, s := range []string{"unauthorized", "forbidden", "401", "403"} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// relogin forces a fresh login in a worker after the cloud refused the
// session's token; the next connect's handshake waits for it through the
// client.
func (g *Gateway) relogin(ctx context.Context) {
	g.log.Warn("the cloud refused the session's token; logging in afresh before the next connect")
	since := g.dialAt // a token issued since the refused dial began is fresh, whoever asked for it
	go func() {
		err := g.client.FreshLogin(ctx, since)
		g.post(func() {
			g.feed(ctx, lifecycle.ReloginFinished{})
			if err != nil && !errors.Is(err, cloudclient.ErrNoCredentials) {
				g.log.Warn("fresh login after a refused connect failed", "err", compactErr(err))
			}
		})
	}()
}

// detach takes the current session away from the loop and tears it down in
// the background, bounded; reason is what the session machine records.
func (g *Gateway) detach(reason string, abort bool) {
	s := g.sess
	if s == nil {
		return
	}
	now := g.cfg.Now()
	g.sess, g.sessEvents = nil, nil
	g.sessToken.Release()
	g.sessToken = nil
	g.bind.forget()
	var res outage.SessionResult
	if abort {
		res = g.session.Abort(now, reason)
	} else {
		res = g.session.Disconnected(now, reason)
	}
	g.recordTransition("session_down", "reason", reason, "abort", strconv.FormatBool(abort), "went_down", strconv.FormatBool(res.WentDown))
	if res.WentDown {
		g.log.Warn("cloud session down", "reason", reason)
	}
	g.evaluatePush(now)
	timeout := g.cfg.TeardownTimeout
	log := g.log
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := s.Disconnect(ctx); err != nil {
			log.Debug("session teardown", "err", err)
		}
	}()
}

// replaceTransport closes the transport in the background; the next dial
// builds a new one.
func (g *Gateway) replaceTransport() {
	if tr := g.tr; tr != nil {
		g.tr = nil
		go closeBounded(tr, g.cfg.TeardownTimeout, g.log)
	}
}

// compactErr keeps logs short: an API error prints as its type and status,
// never its (possibly HTML) body.
func compactErr(err error) string {
	var apiErr *cloudclient.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Error()
	}
	return err.Error()
}
