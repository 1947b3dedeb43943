package exporter

import (
	"reflect"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/fleet"
)

type fixedAccount cloudclient.AccountState

func (a fixedAccount) Account() cloudclient.AccountState { return cloudclient.AccountState(a) }

// fullAccount sets every field of the client's account standing to a
// value of its own.
func fullAccount(t0 time.Time) cloudclient.AccountState {
	return cloudclient.AccountState{
		HasToken: true, TokenIssuedAt: t0.Add(-time.Minute), TokenExpires: t0.Add(time.Hour),
		PausedUntil: t0.Add(30 * time.Second), Pauses: 3,
		LastLogin:    cloudclient.LoginState{Outcome: cloudapi.LoginBlocked, At: t0.Add(-2 * time.Minute), Err: "POST /v1/auth/user: 403"},
		LoginRetryAt: t0.Add(4 * time.Second), CredentialsHeldUntil: t0.Add(50 * time.Minute),
		TokensHeld: 4, SupersededRevoked: 5, RevokeDisabled: true,
	}
}

// TestFleetSourceAddsTheAccount: the serving snapshot carries the
// account's standing, and its token expiry is the account's: none while
// the account holds no token, whatever the fleet's status still says.
func TestFleetSourceAddsTheAccount(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)
	stale := t0.Add(20 * time.Minute)
	status := func() *fleet.Status { return &fleet.Status{TokenExpiry: stale} }
	now := func() time.Time { return t0 }

	if s := (FleetSource{Status: status, Now: now}).Snapshot(); s.Account != nil || !s.TokenExpiry.Equal(stale) {
		t.Fatalf("without an account source: Account %+v, TokenExpiry %v; want nil and the fleet's", s.Account, s.TokenExpiry)
	}

	acc := fullAccount(t0)
	s := FleetSource{Status: status, Now: now, Account: ClientAccount{Client: fixedAccount(acc)}}.Snapshot()
	if s.Account == nil || !reflect.DeepEqual(*s.Account, acc) {
		t.Fatalf("Account = %+v, want %+v", s.Account, acc)
	}
	if !s.TokenExpiry.Equal(acc.TokenExpires) {
		t.Errorf("TokenExpiry = %v, want the account's %v", s.TokenExpiry, acc.TokenExpires)
	}

	acc = cloudclient.AccountState{LastLogin: cloudclient.LoginState{Outcome: cloudapi.LoginRejected, At: t0}}
	s = FleetSource{Status: status, Now: now, Account: ClientAccount{Client: fixedAccount(acc)}}.Snapshot()
	if !s.TokenExpiry.IsZero() {
		t.Errorf("TokenExpiry = %v while the account holds no token, want none", s.TokenExpiry)
	}
	if reason, failed := s.Account.LoginFailure(); !failed || reason != cloudapi.LoginRejected {
		t.Errorf("LoginFailure = %q, %v; want rejected", reason, failed)
	}
}

var _ collector.AccountSource = ClientAccount{}
