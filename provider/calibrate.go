package provider

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultBudget is the default measuring time per candidate and algorithm.
const DefaultBudget = 50 * time.Millisecond

// Calibration sizes: an SSH packet and a small interactive packet.
const (
	smallBlock = 1 << 10
	largeBlock = 32 << 10
)

// Measurement is the calibration result of one provider for one algorithm.
type Measurement struct {
	Algorithm string
	Provider  string  // provider identity
	MBps1K    float64 `json:",omitempty"` // bulk: MB/s (10^6 bytes) at 1 KiB
	MBps32K   float64 `json:",omitempty"` // bulk: MB/s at 32 KiB
	OpsPerSec float64 `json:",omitempty"` // non-bulk: operations per second
	At        time.Time
}

// Score is the number rankings compare, larger is faster: the geometric
// mean of the two bulk sizes (so a device with a high cost per call loses
// at small packets), or operations per second.
func (m Measurement) Score() float64 {
	if m.OpsPerSec > 0 {
		return m.OpsPerSec
	}
	return math.Sqrt(m.MBps1K * m.MBps32K)
}

// Summary prints the measurement in a few words.
func (m Measurement) Summary() string {
	if m.OpsPerSec > 0 {
		return fmt.Sprintf("%.0f ops/s", m.OpsPerSec)
	}
	return fmt.Sprintf("%.0f MB/s@1KiB %.0f MB/s@32KiB", m.MBps1K, m.MBps32K)
}

func (m Measurement) valid() bool {
	ok := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 && v < 1e7 }
	// Score > 0, not only each rate > 0: the product of two tiny rates
	// (1e-200 each) underflows to a zero score, which ranks as unmeasured.
	return m.Algorithm != "" && m.Provider != "" && ok(m.MBps1K) && ok(m.MBps32K) && ok(m.OpsPerSec) &&
		(m.OpsPerSec > 0 || (m.MBps1K > 0 && m.MBps32K > 0)) && m.Score() > 0
}

// CalibratorConfig configures a Calibrator; the zero value measures for
// DefaultBudget and caches under os.UserCacheDir()/offload.
type CalibratorConfig struct {
	// Dir holds the cache file; empty means os.UserCacheDir()/offload.
	Dir string
	// NoCache keeps results in memory only.
	NoCache bool
	// Budget is the measuring time per provider and algorithm.
	Budget time.Duration
	Logger *slog.Logger
}

// CacheKey identifies the machine and build a cache file belongs to.
type CacheKey struct {
	CPU    string
	Go     string
	GOARCH string
}

// CurrentCacheKey describes this process.
func CurrentCacheKey() CacheKey {
	return CacheKey{CPU: CPUModel(), Go: runtime.Version(), GOARCH: runtime.GOARCH}
}

// Calibrator measures providers and caches the results on disk.
type Calibrator struct {
	cfg     CalibratorConfig
	key     CacheKey
	log     *slog.Logger
	mu      sync.Mutex
	loaded  bool
	results map[string]*calEntry
	gen     atomic.Uint64 // bumped when results change, so registries re-plan
}

// generation changes whenever a result is added or dropped; 0 for nil.
func (c *Calibrator) generation() uint64 {
	if c == nil {
		return 0
	}
	return c.gen.Load()
}

type calEntry struct {
	done chan struct{}
	m    Measurement
	err  error
}

// NewCalibrator returns a calibrator; nothing is read or measured until
// a result is needed.
func NewCalibrator(cfg CalibratorConfig) *Calibrator {
	if cfg.Budget <= 0 {
		cfg.Budget = DefaultBudget
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Calibrator{cfg: cfg, key: CurrentCacheKey(), log: log, results: map[string]*calEntry{}}
}

func resultKey(alg, ident string) string { return ident + "\x00" + alg }

// Cached returns a finished measurement without measuring.
func (c *Calibrator) Cached(alg *Algorithm, p Provider) (Measurement, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loadLocked()
	e, ok := c.results[resultKey(alg.Name, identity(p))]
	if !ok {
		return Measurement{}, false
	}
	select {
	case <-e.done:
		return e.m, e.err == nil
	default:
		return Measurement{}, false
	}
}

// Measure returns the cached measurement of p for alg, measuring (once,
// however many goroutines ask) and saving it when there is none.
func (c *Calibrator) Measure(alg *Algorithm, p Provider) (Measurement, error) {
	k := resultKey(alg.Name, identity(p))
	c.mu.Lock()
	c.loadLocked()
	e, ok := c.results[k]
	if !ok {
		e = &calEntry{done: make(chan struct{})}
		c.results[k] = e
	}
	c.mu.Unlock()
	if ok {
		<-e.done
		return e.m, e.err
	}
	e.m, e.err = measure(alg, p, c.cfg.Budget)
	close(e.done)
	if e.err != nil {
		c.mu.Lock()
		delete(c.results, k) // a failure is not cached: the device may come back
		c.mu.Unlock()
		return e.m, e.err
	}
	c.gen.Add(1)
	c.save()
	return e.m, nil
}

// Remeasure drops cached results for the given providers and algorithms
// (all algorithms when algs is nil) and measures them again.
func (c *Calibrator) Remeasure(ctx context.Context, algs []*Algorithm, ps []Provider) error {
	if algs == nil {
		algs = Algorithms()
	}
	c.mu.Lock()
	c.loadLocked()
	for _, p := range ps {
		for _, a := range algs {
			delete(c.results, resultKey(a.Name, identity(p)))
		}
	}
	c.gen.Add(1)
	c.mu.Unlock()
	for _, p := range ps {
		for _, a := range algs {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !Supports(p, a.Name, opFor(a.Family)) {
				continue
			}
			if _, err := c.Measure(a, p); err != nil {
				c.log.Warn("calibration failed", "algorithm", a.Name, "provider", p.Name(), "err", err)
			}
		}
	}
	return nil
}

// cacheFile is the path of this machine's and build's cache file.
func (c *Calibrator) cacheFile() string {
	if c.cfg.NoCache {
		return ""
	}
	dir := c.cfg.Dir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "offload")
	}
	b, _ := json.Marshal(c.key)
	sum := sha256.Sum256(b)
	return filepath.Join(dir, "calibration-"+hex.EncodeToString(sum[:8])+".json")
}

// CacheFile returns the path results are saved to, or "" with no cache.
func (c *Calibrator) CacheFile() string { return c.cacheFile() }

type cacheDoc struct {
	Format  int
	Key     CacheKey
	Results []Measurement
}

const cacheFormat = 1

// loadLocked reads the cache file once. A corrupt or foreign file is
// ignored with a warning; entries that fail a sanity check are dropped.
func (c *Calibrator) loadLocked() {
	if c.loaded {
		return
	}
	c.loaded = true
	path := c.cacheFile()
	if path == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		if !os.IsNotExist(err) {
			c.log.Warn("calibration cache unreadable, ignoring it", "path", path, "err", err)
		}
		return
	}
	var doc cacheDoc
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		c.log.Warn("calibration cache corrupt, ignoring it", "path", path, "err", err)
		return
	}
	if doc.Format != cacheFormat || doc.Key != c.key {
		c.log.Warn("calibration cache is for another machine or build, ignoring it", "path", path,
			"format", doc.Format, "cpu", doc.Key.CPU, "go", doc.Key.Go)
		return
	}
	for _, m := range doc.Results {
		if _, err := Lookup(m.Algorithm); err != nil || !m.valid() {
			c.log.Warn("calibration cache entry rejected", "path", path, "algorithm", m.Algorithm, "provider", m.Provider)
			continue
		}
		e := &calEntry{done: make(chan struct{}), m: m}
		close(e.done)
		c.results[resultKey(m.Algorithm, m.Provider)] = e
	}
	c.gen.Add(1)
}

// save writes finished results atomically; failures are logged only.
func (c *Calibrator) save() {
	path := c.cacheFile()
	if path == "" {
		return
	}
	doc := cacheDoc{Format: cacheFormat, Key: c.key}
	c.mu.Lock()
	for _, e := range c.results {
		select {
		case <-e.done:
			if e.err == nil {
				doc.Results = append(doc.Results, e.m)
			}
		default:
		}
	}
	c.mu.Unlock()
	if err := writeFileAtomic(path, doc); err != nil {
		c.log.Warn("calibration cache not saved", "path", path, "err", err)
	}
}

func writeFileAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".calibration-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

var cpuModel = sync.OnceValue(func() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		k = strings.TrimSpace(k)
		if ok && (k == "model name" || k == "Model" || k == "cpu model") {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
})

// CPUModel returns the CPU model name, or GOARCH when it cannot be read.
func CPUModel() string { return cpuModel() }

// Record stores a measurement of p for alg made elsewhere — imported from
// another machine of the same kind, or fixed by a test — in place of
// measuring. It is saved with the rest.
func (c *Calibrator) Record(alg *Algorithm, p Provider, m Measurement) error {
	m.Algorithm, m.Provider = alg.Name, identity(p)
	if !m.valid() {
		return fmt.Errorf("provider: measurement of %s by %s is not plausible", alg.Name, p.Name())
	}
	e := &calEntry{done: make(chan struct{}), m: m}
	close(e.done)
	c.mu.Lock()
	c.loadLocked()
	c.results[resultKey(alg.Name, m.Provider)] = e
	c.gen.Add(1)
	c.mu.Unlock()
	c.save()
	return nil
}
