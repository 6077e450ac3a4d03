package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sampleSpeedReport() *speedReport {
	sizes := []int{16, 1024, 32768}
	return &speedReport{Multi: 1, Bulk: []bulkRow{
		{Algorithm: "aes128-gcm", Provider: "cpu", Sizes: sizes, BytesPerSec: []float64{5e7, 2e9, 6e9}},
		{Algorithm: "aes128-gcm", Provider: "software", Sizes: sizes, BytesPerSec: []float64{1e7, 8e7, 9e7}},
		{Algorithm: "chacha20-poly1305", Provider: "software", Sizes: sizes, BytesPerSec: []float64{3e7, 1e9, 2.5e9}},
		{Algorithm: "x<&>y", Provider: "pkcs11", Sizes: sizes, BytesPerSec: []float64{1e6, 2e8, 8.5e8}},
	}}
}

func TestWriteSpeedPlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "speed.svg")
	if err := writeSpeedPlot(path, sampleSpeedReport()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	lines, root := 0, ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "polyline" {
				lines++
			}
		}
	}
	if root != "svg" || lines != 4 {
		t.Errorf("root %q, %d polylines; want svg and 4", root, lines)
	}
	s := string(b)
	for _, want := range []string{"aes128-gcm (software)", "x&lt;&amp;&gt;y (pkcs11)", "32K", `stroke-dasharray="6 3"`, ">6000<"} {
		if !strings.Contains(s, want) {
			t.Errorf("plot lacks %q", want)
		}
	}
}

func TestWriteSpeedPlotErrors(t *testing.T) {
	dir := t.TempDir()
	if err := writeSpeedPlot(filepath.Join(dir, "x.svg"), &speedReport{}); err == nil || !strings.Contains(err.Error(), "no bulk results") {
		t.Errorf("empty report: %v", err)
	}
	if err := writeSpeedPlot(filepath.Join(dir, "missing", "x.svg"), sampleSpeedReport()); err == nil {
		t.Error("unwritable path succeeded")
	}
}

func TestSpeedPlotAxes(t *testing.T) {
	a := speedRanges(sampleSpeedReport().Bulk)
	if a.minSize != 16 || a.maxSize != 32768 || a.top != 6000 || a.step != 1000 {
		t.Errorf("axes %+v", a)
	}
	if x := a.x(16); x != plotX0 {
		t.Errorf("x(16) = %v", x)
	}
	if x := a.x(32768); x != plotX1 {
		t.Errorf("x(32768) = %v", x)
	}
	// One block size only: the axis still has a width.
	one := speedRanges([]bulkRow{{Sizes: []int{1024}, BytesPerSec: []float64{0}}})
	if !(one.minSize < one.maxSize) || one.top <= 0 {
		t.Errorf("single-size axes %+v", one)
	}
	for in, want := range map[int]string{16: "16", 1024: "1K", 32768: "32K", 1000: "1000"} {
		if got := sizeLabel(in); got != want {
			t.Errorf("sizeLabel(%d) = %q", in, got)
		}
	}
}
