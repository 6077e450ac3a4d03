//go:build cgo && !nopkcs11

package pkcs11

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// # The PIN guard
//
// Tokens lock after a few wrong PINs, so a PIN a token refused must never
// be sent again by the same process, by a later start, by `sshd -t` or by
// a reload — until the PIN source changes. The guard records each refusal
// as a marker, one file per token in Config.StateDir
// (pin-refused-<hash of module, label and serial>.json, mode 0600) and in
// the process's memory, and checks the marker before every login:
//
//   - A PIN from a file (pin-source, Config.PINSource) is recognised by
//     the file's identity: path, device, inode, size and modification
//     time. Nothing derived from the PIN is stored. Editing the file
//     (or replacing it) changes the identity, and the new PIN is tried.
//   - A PIN given as a value (pin-value, Config.PIN, the environment, a
//     prompt) is recognised by a 16-bit tag: the first two bytes of
//     HMAC-SHA-256 under a random key kept in StateDir/pin-guard.key
//     (0600). So few bits name thousands of PINs of any length, so the
//     marker and the key together do not give the PIN away; a changed PIN
//     has a 1 in 65,536 chance of being taken for the refused one, and
//     is then refused without being sent, with a message naming the
//     marker to delete.
//
// Without StateDir the markers live in memory only: a refusal then holds
// for the life of the process.

// marker is what a refusal records.
type marker struct {
	Module, Token, Serial string
	Source                string // what kind of PIN source, for the message
	Path                  string `json:",omitempty"`
	Dev, Ino              uint64 `json:",omitempty"`
	Size, MtimeNS         int64  `json:",omitempty"`
	Tag                   string `json:",omitempty"` // value sources only
	Code                  string // what the token answered
	At                    time.Time
}

type pinGuard struct {
	dir string
}

// refusedInProcess holds markers for this process, by token key.
var refusedInProcess = struct {
	sync.Mutex
	m map[string]marker
}{m: map[string]marker{}}

func newPINGuard(dir string) *pinGuard { return &pinGuard{dir: dir} }

// key names a token across processes: module path, label and serial.
func tokenKey(module, label, serial string) string {
	sum := sha256.Sum256([]byte(module + "\x00" + label + "\x00" + serial))
	return hex.EncodeToString(sum[:12])
}

func (g *pinGuard) file(key string) string {
	if g.dir == "" {
		return ""
	}
	return filepath.Join(g.dir, "pin-refused-"+key+".json")
}

// identify describes the PIN's source as a marker would record it.
func (g *pinGuard) identify(src pinSource, serial, pin string) (marker, error) {
	m := marker{Source: src.String()}
	if src.isFile() {
		fi, err := os.Stat(src.Path)
		if err != nil {
			return m, err
		}
		m.Path, m.Size, m.MtimeNS = src.Path, fi.Size(), fi.ModTime().UnixNano()
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			m.Dev, m.Ino = uint64(st.Dev), uint64(st.Ino)
		}
		return m, nil
	}
	key, err := g.hmacKey()
	if err != nil {
		return m, err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(serial + "\x00" + pin))
	m.Tag = hex.EncodeToString(mac.Sum(nil)[:2])
	return m, nil
}

// processKey keys the tags of value PINs when there is no state dir.
var processKey = sync.OnceValue(func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
})

func (g *pinGuard) hmacKey() ([]byte, error) {
	if g.dir == "" {
		return processKey(), nil
	}
	path := filepath.Join(g.dir, "pin-guard.key")
	if b, err := os.ReadFile(path); err == nil && len(b) == 32 {
		return b, nil
	}
	k := make([]byte, 32)
	rand.Read(k)
	if err := writeFileAtomic(path, k); err != nil {
		return nil, err
	}
	return k, nil
}

func sameSource(a, b marker) bool {
	return a.Path == b.Path && a.Dev == b.Dev && a.Ino == b.Ino && a.Size == b.Size &&
		a.MtimeNS == b.MtimeNS && a.Tag == b.Tag
}

// lookup returns the recorded refusal for key, from memory or the state dir.
func (g *pinGuard) lookup(key string) (marker, string, bool) {
	refusedInProcess.Lock()
	m, ok := refusedInProcess.m[key]
	refusedInProcess.Unlock()
	if ok {
		return m, "this process's memory", true
	}
	f := g.file(key)
	if f == "" {
		return marker{}, "", false
	}
	b, err := readBounded(f, 64<<10)
	if err != nil || json.Unmarshal(b, &m) != nil {
		return marker{}, "", false
	}
	return m, f, true
}

// check refuses, without sending it, a PIN the token refused before from
// the same source. A marker whose source has changed is dropped.
func (g *pinGuard) check(t *token) error {
	t.mu.Lock()
	pin, src, d := t.pin, t.pinSrc, t.desc
	t.mu.Unlock()
	if pin == "" {
		return nil
	}
	key := tokenKey(t.p.mod.path, d.Label, d.Serial)
	old, where, ok := g.lookup(key)
	if !ok {
		return nil
	}
	now, err := g.identify(src, d.Serial, pin)
	if err != nil {
		return fmt.Errorf("pkcs11: PIN source of token %q: %w", d.Label, err)
	}
	if !sameSource(old, now) {
		g.forget(key)
		t.p.log.Info("the PIN source changed since the token refused a PIN; trying the new one", "token", d.Label, "source", src.String())
		return nil
	}
	return &Error{Op: "log in", Token: d.Label, Class: ClassPIN, Err: fmt.Errorf(
		"%w on %s (%s) from the same %s; it is not sent again until the PIN source changes (marker: %s)",
		ErrPINRejected, old.At.Format(time.RFC3339), old.Code, src, where)}
}

// record remembers that the token refused the PIN, returning where.
func (g *pinGuard) record(t *token, refusal error) string {
	t.mu.Lock()
	pin, src, d := t.pin, t.pinSrc, t.desc
	t.mu.Unlock()
	m, err := g.identify(src, d.Serial, pin)
	if err != nil {
		t.p.log.Warn("refused PIN not recorded", "token", d.Label, "err", err)
		return ""
	}
	m.Module, m.Token, m.Serial, m.At = t.p.mod.path, d.Label, d.Serial, time.Now().UTC().Truncate(time.Second)
	var e *Error
	if errors.As(refusal, &e) {
		m.Code = e.Name
	}
	key := tokenKey(t.p.mod.path, d.Label, d.Serial)
	refusedInProcess.Lock()
	refusedInProcess.m[key] = m
	refusedInProcess.Unlock()
	f := g.file(key)
	if f == "" {
		return "memory"
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := writeFileAtomic(f, b); err != nil {
		t.p.log.Warn("refused PIN recorded in memory only", "token", d.Label, "err", err)
		return "memory"
	}
	return f
}

func (g *pinGuard) forget(key string) {
	refusedInProcess.Lock()
	delete(refusedInProcess.m, key)
	refusedInProcess.Unlock()
	if f := g.file(key); f != "" {
		os.Remove(f)
	}
}

// writeFileAtomic writes b to path (0600, directory 0700) by renaming a
// temporary file over it.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".offload-*")
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
