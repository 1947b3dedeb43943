package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func yamlFiles(t *testing.T) []string {
	var files []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// A chart's templates are Go templates; TestHelmTemplate parses
		// what they render.
		if d.IsDir() && d.Name() == "templates" && strings.HasPrefix(filepath.ToSlash(p), ChartDir+"/") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".yaml")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// decodeAll decodes every document of a YAML stream; duplicate keys are errors.
func decodeAll(data []byte) ([]map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

func TestEveryYAMLFileParses(t *testing.T) {
	files := yamlFiles(t)
	if len(files) < 10 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		docs, err := decodeAll(readFile(t, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(docs) == 0 {
			t.Errorf("%s: no document", f)
		}
	}
	// The check catches what it is there for.
	if _, err := decodeAll([]byte("a: 1\na: 2\n")); err == nil {
		t.Error("a duplicate key was accepted")
	}
}
