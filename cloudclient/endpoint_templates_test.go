package cloudclient_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// TestEveryRequestNamesAListedEndpoint reads every request the client builds
// (each call literal in the package source) and checks that its template is
// one of cloudapi's Endpoint constants, listed in cloudapi.Endpoints, with the
// request's method and, where the path is fixed, its path. A request with a
// template of its own would put an endpoint label no one pre-creates or
// documents.
func TestEveryRequestNamesAListedEndpoint(t *testing.T) {
	values := map[string]string{} // constant name → template
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	vocabulary, err := filepath.Glob("../cloudapi/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var parsed []*ast.File
	for _, name := range append(files, vocabulary...) {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name == "cloudclient" {
			parsed = append(parsed, f)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(n.Name, "Endpoint") {
						values[n.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	if len(values) != len(cloudapi.Endpoints()) {
		t.Errorf("%d Endpoint constants, Endpoints lists %d", len(values), len(cloudapi.Endpoints()))
	}
	for name, v := range values {
		if !slices.Contains(cloudapi.Endpoints(), v) {
			t.Errorf("%s (%q) is not in Endpoints", name, v)
		}
	}
	requests := 0
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if id, ok := cl.Type.(*ast.Ident); !ok || id.Name != "call" {
				return true
			}
			requests++
			pos := fset.Position(cl.Pos())
			fields := map[string]ast.Expr{}
			for _, el := range cl.Elts {
				kv := el.(*ast.KeyValueExpr)
				fields[kv.Key.(*ast.Ident).Name] = kv.Value
			}
			sel, ok := fields["tmpl"].(*ast.SelectorExpr)
			if pkg, isIdent := selX(sel); !ok || !isIdent || pkg != "cloudapi" {
				t.Errorf("%s: request template is not a cloudapi Endpoint constant", pos)
				return true
			}
			tmpl, ok := values[sel.Sel.Name]
			if !ok {
				t.Errorf("%s: request template %s is not an Endpoint constant", pos, sel.Sel.Name)
				return true
			}
			method, path, _ := strings.Cut(tmpl, " ")
			if lit, ok := fields["method"].(*ast.BasicLit); !ok || lit.Value != strconv.Quote(method) {
				t.Errorf("%s: %s request method does not match its template", pos, tmpl)
			}
			if lit, ok := fields["path"].(*ast.BasicLit); ok && "/v1"+mustUnquote(t, lit.Value) != path {
				t.Errorf("%s: path %s does not match its template %s", pos, lit.Value, tmpl)
			}
			return true
		})
	}
	if requests < len(values) {
		t.Errorf("found %d request literals for %d endpoints", requests, len(values))
	}
}

// selX is the package name a selector expression selects from.
func selX(sel *ast.SelectorExpr) (string, bool) {
	if sel == nil {
		return "", false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", false
	}
	return id.Name, true
}

func mustUnquote(t *testing.T, s string) string {
	t.Helper()
	v, err := strconv.Unquote(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSimulatedCloudRoutesEveryEndpoint sends one unauthenticated request
// per endpoint template to the simulated cloud, which keeps its own routing
// table: a template the client requests but the simulator does not route
// (404 or 405 from the router) means the two have drifted apart.
func TestSimulatedCloudRoutesEveryEndpoint(t *testing.T) {
	sim := startSim(t, cloudsim.Options{})
	for _, tmpl := range cloudapi.Endpoints() {
		if tmpl == cloudapi.EndpointAsset {
			continue // served from the platform's asset host, not the API
		}
		method, path, _ := strings.Cut(tmpl, " ")
		path = strings.NewReplacer("{id}", "1", "{code}", "X").Replace(path)
		req, err := http.NewRequest(method, sim.URL()+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusMethodNotAllowed {
			t.Errorf("%s: the simulated cloud answers %d", tmpl, res.StatusCode)
		}
	}
}
