package cloudsim

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/bragerone/bragerone_exporter/traffic"
)

// LoadReplay reads a recording from a file for NewReplay: a capture
// (serve --capture.file; JSON lines, gzipped or not), or a diagnostics
// bundle (a tar archive, gzipped or not) holding one: its member
// traffic.jsonl, else the first *.jsonl member that is a traffic file. A malformed or truncated line refuses the
// whole file, naming the line (and the member of an archive).
func LoadReplay(file string, opts ReplayOptions) (*Replay, traffic.Header, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, traffic.Header{}, err
	}
	defer f.Close()
	h, recs, err := ReadRecording(f)
	if err != nil {
		return nil, traffic.Header{}, fmt.Errorf("%s: %w", file, err)
	}
	rp, err := NewReplay(recs, opts)
	if err != nil {
		return nil, traffic.Header{}, fmt.Errorf("%s: %w", file, err)
	}
	return rp, h, nil
}

// ReadRecording reads a capture or a bundle's capture (see LoadReplay).
func ReadRecording(r io.Reader) (traffic.Header, []traffic.Record, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return traffic.Header{}, nil, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	if block, _ := br.Peek(512); len(block) == 512 && bytes.Equal(block[257:262], []byte("ustar")) {
		return readArchive(tar.NewReader(br))
	}
	return traffic.Read(br)
}

// readArchive reads the traffic file of a bundle: its member traffic.jsonl,
// else the first *.jsonl member that starts with a traffic header (a
// bundle's other JSON-lines members, its logs, do not).
func readArchive(tr *tar.Reader) (traffic.Header, []traffic.Record, error) {
	for {
		hd, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return traffic.Header{}, nil, errors.New("the archive holds no traffic file (traffic.jsonl)")
		}
		if err != nil {
			return traffic.Header{}, nil, fmt.Errorf("archive: %w", err)
		}
		if hd.Typeflag != tar.TypeReg || !strings.HasSuffix(hd.Name, ".jsonl") {
			continue
		}
		h, recs, err := traffic.Read(tr)
		var le *traffic.LineError
		if err != nil && path.Base(hd.Name) != "traffic.jsonl" && errors.As(err, &le) && le.Line == 1 {
			continue // another JSON-lines file
		}
		if err != nil {
			return traffic.Header{}, nil, fmt.Errorf("%s: %w", path.Clean(hd.Name), err)
		}
		return h, recs, nil
	}
}
