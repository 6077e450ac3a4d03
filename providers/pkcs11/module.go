//go:build cgo && !nopkcs11

package pkcs11

import (
	"errors"
	"fmt"
	"github.com/offload/offload/providers/pkcs11/uri"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/pkcs11"
)

// module is one loaded PKCS #11 library. C_Initialize is called once per
// module per process, however many providers use it; the last Close calls
// C_Finalize. Every call into the module holds mu for reading; a
// reinitialization (the only way SoftHSM and some HSMs show a token that
// was removed and created again) holds it for writing, and bumps gen so
// that sessions opened before it are dropped rather than used.
type module struct {
	path string
	ctx  *pkcs11.Ctx
	mu   sync.RWMutex
	gen  atomic.Uint64
	refs int // guarded by modules.mu

	lastReinit   time.Time     // guarded by mu (write)
	ownsInit     bool          // false when another user had initialized it
	libraryDesc  uri.TokenInfo // library fields of uri.TokenInfo
	reinitPeriod time.Duration
}

var modules = struct {
	sync.Mutex
	m map[string]*module
}{m: map[string]*module{}}

// openModule loads and initializes the module at path, or returns the one
// already loaded, counting references.
func openModule(path string) (m *module, fresh bool, err error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, false, fmt.Errorf("pkcs11: module %s: %w", path, err)
	}
	modules.Lock()
	defer modules.Unlock()
	if m, ok := modules.m[real]; ok {
		m.refs++
		return m, false, nil
	}
	ctx := pkcs11.New(real)
	if ctx == nil {
		return nil, false, fmt.Errorf("pkcs11: module %s could not be loaded (not a PKCS #11 library, or a dependency is missing)", path)
	}
	m = &module{path: real, ctx: ctx, refs: 1, ownsInit: true}
	if err := ctx.Initialize(); err != nil {
		var pe pkcs11.Error
		if errors.As(err, &pe) && pe == pkcs11.CKR_CRYPTOKI_ALREADY_INITIALIZED {
			m.ownsInit = false // someone else in this process initialized it
		} else {
			ctx.Destroy()
			return nil, false, wrapErr(err, "initialize module "+path, "", "")
		}
	}
	m.gen.Store(1)
	m.readLibraryInfo()
	modules.m[real] = m
	return m, true, nil
}

func (m *module) readLibraryInfo() {
	if info, err := m.ctx.GetInfo(); err == nil {
		m.libraryDesc = uri.TokenInfo{
			LibraryManufacturer: info.ManufacturerID,
			LibraryDescription:  info.LibraryDescription,
			LibraryVersion:      fmt.Sprintf("%d.%d", info.LibraryVersion.Major, info.LibraryVersion.Minor),
		}
	}
}

// release drops a reference; the last one finalizes and unloads.
func (m *module) release() error {
	modules.Lock()
	defer modules.Unlock()
	m.refs--
	if m.refs > 0 {
		return nil
	}
	delete(modules.m, m.path)
	m.mu.Lock()
	defer m.mu.Unlock()
	var err error
	if m.ownsInit {
		err = m.ctx.Finalize()
	}
	m.ctx.Destroy()
	m.gen.Add(1)
	return wrapErr(err, "finalize module "+m.path, "", "")
}

// reinitialize finalizes and initializes the module again so that it
// rescans its tokens. Every session of
// every token is lost; their pools see the generation change and reopen.
// seen is the generation the caller observed: if another goroutine has
// reinitialized since, nothing is done. Callers pace it.
func (m *module) reinitialize(seen uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gen.Load() != seen || !m.ownsInit {
		return nil
	}
	_ = m.ctx.Finalize()
	m.gen.Add(1)
	if err := m.ctx.Initialize(); err != nil {
		return wrapErr(err, "reinitialize module "+m.path, "", "")
	}
	return nil
}
