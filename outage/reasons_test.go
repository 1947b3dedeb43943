package outage

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestNormalizeReasonKnownTokens(t *testing.T) {
	for _, r := range SessionReasons() {
		if NormalizeReason(r) != r {
			t.Fatalf("%q must be kept", r)
		}
	}
	if len(SessionReasons()) != 11 {
		t.Fatalf("spec lists 11 reason tokens, have %d", len(SessionReasons()))
	}
}

// TestEveryReasonConstantIsListed reads the Reason* constants declared in
// reasons.go: a token added there but left out of SessionReasons would be
// normalised to "disconnect" and have no pre-created series.
func TestEveryReasonConstantIsListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "reasons.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Reason") {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("%s is not a string literal", name.Name)
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				declared = append(declared, v)
			}
		}
	}
	if len(declared) != len(ConnectFailureReasons()) {
		t.Errorf("reasons.go declares %d Reason constants, ConnectFailureReasons lists %d", len(declared), len(ConnectFailureReasons()))
	}
	login := []string{ReasonLoginUnreachable, ReasonLoginRejected, ReasonLoginBlocked, ReasonRateLimited}
	for _, v := range declared {
		if !slices.Contains(ConnectFailureReasons(), v) {
			t.Errorf("reason %q is declared but not in ConnectFailureReasons", v)
		}
		if !slices.Contains(login, v) && !slices.Contains(SessionReasons(), v) {
			t.Errorf("reason %q is declared but not in SessionReasons", v)
		}
	}
}

// The login reasons explain a connect that never dialled; they are never the
// reason of an outage, so an outage carrying one is normalised away and they
// have no outage series.
func TestLoginReasonsAreConnectFailuresOnly(t *testing.T) {
	for _, r := range []string{ReasonLoginUnreachable, ReasonLoginRejected, ReasonLoginBlocked, ReasonRateLimited} {
		if IsSessionReason(r) || NormalizeReason(r) != ReasonDisconnect {
			t.Errorf("%q is a session outage reason", r)
		}
		if !IsConnectFailureReason(r) {
			t.Errorf("%q is not a connect failure reason", r)
		}
	}
	for _, r := range SessionReasons() {
		if !IsConnectFailureReason(r) {
			t.Errorf("session reason %q is not a connect failure reason", r)
		}
	}
}

func TestSessionReasonsIsACopy(t *testing.T) {
	r := SessionReasons()
	r[0] = "mutated"
	if SessionReasons()[0] != ReasonDisconnect {
		t.Fatal("SessionReasons hands out the package's own slice")
	}
}
