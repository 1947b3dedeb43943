package cloudclient

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// Tokens: every token the client obtained is the cloud's session until it
// is revoked or expires. The client counts who uses each (requests in
// flight, realtime sessions that authenticated with it) and revokes a token
// once a newer login replaced it and nothing uses it any more, so the
// account does not pile up valid sessions with every re-login. At exit
// every token still held is revoked (LogoutOnExit).

// tokenUse is what the client knows of one token it obtained.
type tokenUse struct {
	users      int  // requests in flight and sessions using it
	superseded bool // a newer login replaced it (or the cloud refused the credentials)
	revoking   bool // a revoke is under way
}

// replaceTokenLocked makes t the current token, issued at now; the token it
// replaces is superseded. The caller holds c.mu.
func (c *Client) replaceTokenLocked(t Token, now time.Time) {
	var old string
	if c.hasTok && c.tok.AccessToken != t.AccessToken {
		old = c.tok.AccessToken
	}
	c.tok, c.hasTok, c.tokIssued = t, true, now
	if c.tokens[t.AccessToken] == nil {
		c.tokens[t.AccessToken] = &tokenUse{}
	}
	if old != "" {
		// After the new token is current: a revoke watches its answers.
		c.supersedeLocked(old)
	}
}

// dropTokenLocked forgets the current token; it is superseded.
func (c *Client) dropTokenLocked() {
	old := c.tok.AccessToken
	c.tok, c.hasTok = Token{}, false
	if old != "" {
		c.supersedeLocked(old)
	}
}

func (c *Client) supersedeLocked(tok string) {
	u := c.tokens[tok]
	if u == nil {
		u = &tokenUse{}
		c.tokens[tok] = u
	}
	u.superseded = true
	c.maybeRevokeLocked(tok, u)
}

// useTokenLocked counts a user of tok.
func (c *Client) useTokenLocked(tok string) {
	u := c.tokens[tok]
	if u == nil {
		u = &tokenUse{}
		c.tokens[tok] = u
	}
	u.users++
}

// releaseToken ends one use of tok; a superseded token nothing uses any
// more is revoked.
func (c *Client) releaseToken(tok string) {
	if tok == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if u := c.tokens[tok]; u != nil && u.users > 0 {
		u.users--
		c.maybeRevokeLocked(tok, u)
	}
}

// maybeRevokeLocked starts the revoke of a superseded token nothing uses:
// in the background, bounded by RevokeTimeout, best effort (a failure
// leaves it for the revokes at exit), never in a recovery's way.
func (c *Client) maybeRevokeLocked(tok string, u *tokenUse) {
	if !u.superseded || u.users > 0 || u.revoking || c.revokeOff || c.cfg.KeepSupersededTokens {
		return
	}
	u.revoking = true
	// The answers to the token current now, from the revoke on, tell
	// whether the cloud's revoke ends only the token it was given: one
	// refused means it ended every session; the first accepted after the
	// revoke finished clears the doubt.
	if c.hasTok {
		c.probeTok, c.probeSettled = c.tok.AccessToken, false
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RevokeTimeout)
		defer cancel()
		err := c.revoke(ctx, tok)
		if err != nil {
			c.recordTransition("token_revoke_failed", map[string]string{"reason": "superseded", "err": err.Error()})
		} else {
			c.recordTransition("token_revoked", map[string]string{"reason": "superseded"})
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		// Only a request sent from now on proves the current token
		// survived the revoke: one sent before may have been answered
		// before the cloud carried the revoke out.
		c.probeSettled, c.probeAfter = true, c.sends.Load()
		if err != nil {
			if u := c.tokens[tok]; u != nil {
				u.revoking = false
			}
			c.log.Debug("revoking a superseded token failed; it is revoked at exit", "err", err)
			return
		}
		delete(c.tokens, tok)
		c.revokedSuperseded++
	}()
}

// noteTokenAnswer watches the answers to the current token around a
// revoke (send is the number the request got from c.sends when it was
// sent): a cloud whose revoke ends every session of the user refuses it.
// Then superseded tokens are no longer revoked for the rest of the run
// (the exit's logout still is: it ends them all on such a cloud).
func (c *Client) noteTokenAnswer(tok string, status int, send uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.probeTok == "" || tok != c.probeTok || !c.hasTok || tok != c.tok.AccessToken {
		return
	}
	refused := status == 401 || status == 403
	if !refused {
		if c.probeSettled && send > c.probeAfter && status >= 200 && status < 300 {
			c.probeTok = "" // the revoke ended only its own token
		}
		return
	}
	c.probeTok = ""
	if !c.revokeOff {
		c.revokeOff = true
		defer c.recordTransition("revoke_off", map[string]string{"status": strconv.Itoa(status)})
		c.log.Warn("the current token was refused right after a superseded one was revoked: this cloud's revoke seems to end every session of the user; superseded tokens are left to expire for the rest of the run")
	}
}

// SessionToken holds the token a realtime session authenticated with, so
// the token is not revoked while the session lives. A gateway puts one in
// the dial's context (WithSessionToken); the handshake's token resolution
// (HandshakeToken) fills it; the gateway releases it when the session ends
// or the dial fails.
type SessionToken struct {
	mu  sync.Mutex
	c   *Client
	tok string
}

type sessionTokenKey struct{}

// WithSessionToken returns ctx carrying a new, empty SessionToken.
func WithSessionToken(ctx context.Context) (context.Context, *SessionToken) {
	st := &SessionToken{}
	return context.WithValue(ctx, sessionTokenKey{}, st), st
}

// Release ends the session's use of its token. Safe to call more than once
// and on nil.
func (s *SessionToken) Release() {
	if s == nil {
		return
	}
	s.mu.Lock()
	c, tok := s.c, s.tok
	s.c, s.tok = nil, ""
	s.mu.Unlock()
	if c != nil {
		c.releaseToken(tok)
	}
}

// Refused reports that the cloud refused the session's token (the
// handshake or the namespace join was unauthorized).
func (s *SessionToken) Refused() {
	if s == nil {
		return
	}
	s.mu.Lock()
	c, tok := s.c, s.tok
	s.mu.Unlock()
	if c != nil {
		c.noteTokenAnswer(tok, 401, c.sends.Load())
	}
}

func (s *SessionToken) hold(c *Client, tok string) {
	s.Release()
	s.mu.Lock()
	s.c, s.tok = c, tok
	s.mu.Unlock()
}

// HandshakeToken returns the token for a realtime handshake: it waits out
// the account's throttle pause (a handshake is a request to the API host
// too), logs in when the token is due, and falls back to the current token
// when the login fails for a reason that is no verdict, so a session never
// goes without a token it could have used. When ctx carries a
// SessionToken, the token is held by it.
func (c *Client) HandshakeToken(ctx context.Context) (string, error) {
	if err := c.waitThrottle(ctx, cloudapi.Handshake); err != nil {
		return "", err
	}
	st, _ := ctx.Value(sessionTokenKey{}).(*SessionToken)
	tok, err := c.obtainToken(ctx, loginNeed{lease: st != nil})
	if err != nil {
		c.mu.Lock()
		if !c.hasTok || c.tok.AccessToken == "" || IsCredentialVerdict(err) {
			c.mu.Unlock()
			return "", err
		}
		tok = c.tok.AccessToken
		if st != nil {
			c.useTokenLocked(tok)
		}
		c.mu.Unlock()
	}
	if st != nil {
		st.hold(c, tok)
	}
	return tok, nil
}

// AccountState and LoginState are the account's standing with the cloud,
// as package cloudapi defines it: the client keeps it, the collector and
// the status page render it.
type (
	AccountState = cloudapi.AccountState
	LoginState   = cloudapi.LoginState
)

// Account returns the account's standing now.
func (c *Client) Account() AccountState {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := AccountState{
		HasToken: c.hasTok && c.tok.AccessToken != "", PausedUntil: c.pausedUntil, Pauses: c.pauseCount,
		LastLogin: c.lastLogin, LoginRetryAt: c.loginRetryAt, TokensHeld: len(c.tokens),
		SupersededRevoked: c.revokedSuperseded, RevokeDisabled: c.revokeOff,
	}
	if s.HasToken {
		s.TokenIssuedAt, s.TokenExpires = c.tokIssued, c.tok.ExpiresAt
	}
	if c.heldKey != "" {
		s.CredentialsHeldUntil = c.heldUntil
	}
	return s
}
