package monitor

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offload/offload/sshd/ipc"
	"github.com/offload/offload/sshd/wire"
)

// stageLetters name the stages in wantTable: n none, k kex, b busy,
// a auth, l login, o over, x authed (being exported), h handed.
var stageLetters = map[stage]byte{stageNone: 'n', stageKex: 'k', stageBusy: 'b', stageAuth: 'a', stageLogin: 'l',
	stageOver: 'o', stageAuthed: 'x', stageHanded: 'h'}

// wantTable is the policy, written out apart from the table: for each
// type, the stages in which a pre-auth worker, a post-auth process and
// a PAM keeper may send it ("n": it names no connection).
var wantTable = map[ipc.Type][numRoles]string{
	ipc.TypeReady:       {"n", "n", "n"},
	ipc.TypeLog:         {"n", "n", "n"},
	ipc.TypeMetrics:     {"n", "n", ""},
	ipc.TypeConnDone:    {"kbalox", "h", ""},
	ipc.TypeAEADClose:   {"", "n", ""},
	ipc.TypeAEADOrigin:  {"", "h", ""},
	ipc.TypeSign:        {"kal", "h", ""},
	ipc.TypeProve:       {"alx", "h", ""},
	ipc.TypeBeginDecide: {"a", "", ""},
	ipc.TypeDecide:      {"l", "", ""},
	ipc.TypeRespond:     {"l", "", ""},
	ipc.TypeHandoff:     {"x", "", ""},
	ipc.TypeLoginRecord: {"", "h", ""},
	ipc.TypeAEADNew:     {"", "n", ""},
	ipc.TypeAEADSeal:    {"", "n", ""},
	ipc.TypeAEADOpen:    {"", "n", ""},
}

// wantOnce: the requests that make their connection busy, and where.
var wantOnce = map[ipc.Type]stage{ipc.TypeSign: stageKex, ipc.TypeHandoff: stageAuthed}

// connIn makes a connection of owner in stage s.
func connIn(owner *child, s stage) *mconn {
	c := &mconn{id: 1, owner: owner, sessionID: make([]byte, 32), begun: true}
	switch s {
	case stageKex:
		c.sessionID, c.begun = nil, false
	case stageBusy:
		c.sessionID, c.begun, c.busy = nil, false, &call{}
	case stageAuth:
		c.begun = false
	case stageOver:
		c.authOver = true
	case stageAuthed:
		c.phase = phaseAuthed
	case stageHanded:
		c.phase = phaseHanded
	}
	return c
}

// TestTableExhaustive: every message type, from every role, naming a
// connection in every stage, is admitted or refused as wantTable says;
// a once-only request makes its connection busy until it is released.
func TestTableExhaustive(t *testing.T) {
	m := &Monitor{table: newTable()}
	if len(m.table) != len(wantTable) {
		t.Errorf("the table has %d types, the policy %d", len(m.table), len(wantTable))
	}
	for typ := range 256 {
		e, ok := m.table[ipc.Type(typ)]
		want, listed := wantTable[ipc.Type(typ)]
		if ok != listed {
			t.Errorf("%v: in the table %v, in the policy %v", ipc.Type(typ), ok, listed)
			continue
		}
		if ok {
			checkEntry(t, m, ipc.Type(typ), e, want)
		}
	}
}

func checkEntry(t *testing.T, m *Monitor, typ ipc.Type, e *entry, want [numRoles]string) {
	t.Helper()
	if wantReq := typ != ipc.TypeReady && typ != ipc.TypeLog && typ != ipc.TypeMetrics && typ != ipc.TypeConnDone &&
		typ != ipc.TypeAEADClose && typ != ipc.TypeAEADOrigin; e.request != wantReq {
		t.Errorf("%v: request %v, want %v", typ, e.request, wantReq)
	}
	for r := range numRoles {
		c := &child{role: r.String()}
		for s := range numStages {
			if s == stageNone {
				continue
			}
			conn := connIn(c, s)
			if got := conn.stage(); got != s {
				t.Fatalf("connIn(%d) is in stage %d", s, got)
			}
			m.conns = map[uint64]*mconn{1: conn}
			in, err := m.admit(c, r, e, &ipc.Message{Type: typ, Payload: wire.AppendUint64(nil, 1)})
			allowed := strings.IndexByte(want[r], stageLetters[s]) >= 0 || want[r] == "n"
			if (err == nil) != allowed {
				t.Errorf("%v from a %v process, connection in stage %c: err %v, want allowed %v", typ, r, stageLetters[s], err, allowed)
				continue
			}
			checkRefusal(t, typ, r, s, err)
			checkOnce(t, m, typ, s, conn, in)
		}
	}
}

// checkRefusal: a refusal says why, as the children (and the tests of
// compromised workers) read it.
func checkRefusal(t *testing.T, typ ipc.Type, r role, s stage, err error) {
	t.Helper()
	var no *refusal
	switch {
	case err == nil:
	case !errors.As(err, &no):
		t.Errorf("%v from %v in %c: %v is not a refusal", typ, r, stageLetters[s], err)
	case !strings.Contains(err.Error(), "not for a "+r.String()) && s == stageOver && !errors.Is(err, errAuthOver):
		t.Errorf("%v from %v after a Disconnect: %v", typ, r, err)
	case !strings.Contains(err.Error(), "not for a "+r.String()) && s != stageOver && !errors.Is(err, errWrongPhase):
		t.Errorf("%v from %v in %c: %v", typ, r, stageLetters[s], err)
	}
}

// checkOnce: the connection is busy after admission iff the request is
// once-only in that stage, and free again once it is released.
func checkOnce(t *testing.T, m *Monitor, typ ipc.Type, s stage, conn *mconn, in *call) {
	t.Helper()
	if in == nil {
		return
	}
	once, ok := wantOnce[typ]
	if busy := conn.busy == in; busy != (ok && once == s) {
		t.Errorf("%v in stage %c: busy %v", typ, stageLetters[s], busy)
	}
	m.release(in)
	if conn.busy == in {
		t.Errorf("%v in stage %c: still busy after release", typ, stageLetters[s])
	}
}

// TestTableConnection: a message that names a connection is refused
// for one the sender does not hold, and is malformed without the id.
func TestTableConnection(t *testing.T) {
	m := &Monitor{table: newTable()}
	mine, other := &child{role: ipc.RolePreauth}, &child{role: ipc.RolePreauth}
	m.conns = map[uint64]*mconn{1: connIn(other, stageAuth)}
	for typ, e := range m.table {
		if !e.names() || e.from[roleWorker] == 0 {
			continue
		}
		for _, id := range []uint64{1, 2} {
			_, err := m.admit(mine, roleWorker, e, &ipc.Message{Type: typ, Payload: wire.AppendUint64(nil, id)})
			if !errors.Is(err, errNotYours) {
				t.Errorf("%v for connection %d, not the sender's: %v", typ, id, err)
			}
		}
		var pe *ipc.ProtocolError
		if _, err := m.admit(mine, roleWorker, e, &ipc.Message{Type: typ, Payload: []byte{0, 0, 1}}); !errors.As(err, &pe) {
			t.Errorf("%v without a connection id: %v", typ, err)
		}
	}
}

// TestTableIsWhatChildrenSend: the types the children's code sends the
// monitor (read from the source of sshd/preauth, sshd/postauth,
// sshd/remote and the child side of sshd/ipc) are the table's, each
// allowed to a role of the package that sends it: nothing a child sends
// is missing, and nothing in the table is dead.
func TestTableIsWhatChildrenSend(t *testing.T) {
	tab := newTable()
	roles := map[string][]role{"preauth": {roleWorker}, "postauth": {rolePost, roleKeeper},
		"ipc": {roleWorker, rolePost, roleKeeper}, "remote": {roleWorker, rolePost, roleKeeper}}
	sent := map[ipc.Type]bool{}
	for pkg, rs := range roles {
		for typ := range sentBy(t, filepath.Join("..", pkg)) {
			// A keeper of an in-process server's connection tells that
			// server (sshd/postauth/pamclient.go), never a monitor.
			if typ == ipc.TypePAMSessionOpened && pkg == "postauth" {
				continue
			}
			sent[typ] = true
			e, ok := tab[typ]
			if !ok {
				t.Errorf("sshd/%s sends %v, which is not in the table", pkg, typ)
				continue
			}
			if !anyAllowed(e, rs) {
				t.Errorf("sshd/%s sends %v, which the table allows none of %v", pkg, typ, rs)
			}
		}
	}
	for typ := range tab {
		if !sent[typ] {
			t.Errorf("%v is in the table but no child sends it", typ)
		}
	}
}

func anyAllowed(e *entry, rs []role) bool {
	for _, r := range rs {
		if e.from[r] != 0 {
			return true
		}
	}
	return false
}

// sentBy reads the message types the package in dir passes to Call,
// Notify or call (directly, or through a variable of the function).
func sentBy(t *testing.T, dir string) map[ipc.Type]bool {
	t.Helper()
	names := typeConsts(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no source in %s: %v", dir, err)
	}
	out := map[ipc.Type]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		// pamclient.go is an in-process server's side of its PAM keeper:
		// what it sends goes to that keeper, never to a monitor.
		if strings.HasSuffix(f, "_test.go") || filepath.Base(f) == "pamclient.go" {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
				sendsIn(fn.Body, names, out)
			}
		}
	}
	return out
}

// typeConsts maps the names of ipc's message types to them, checked
// against the constants sshd/ipc declares.
func typeConsts(t *testing.T) map[string]ipc.Type {
	t.Helper()
	names := map[string]ipc.Type{"TypeConfig": ipc.TypeConfig, "TypeNewConn": ipc.TypeNewConn,
		"TypeCloseConn": ipc.TypeCloseConn, "TypeAdopt": ipc.TypeAdopt, "TypeSign": ipc.TypeSign, "TypeDecide": ipc.TypeDecide,
		"TypeHandoff": ipc.TypeHandoff, "TypeConnDone": ipc.TypeConnDone, "TypeLog": ipc.TypeLog, "TypeReady": ipc.TypeReady,
		"TypeMetrics": ipc.TypeMetrics, "TypeAEADNew": ipc.TypeAEADNew, "TypeAEADSeal": ipc.TypeAEADSeal,
		"TypeAEADOpen": ipc.TypeAEADOpen, "TypeAEADClose": ipc.TypeAEADClose, "TypeRespond": ipc.TypeRespond,
		"TypeLoginRecord": ipc.TypeLoginRecord, "TypeProve": ipc.TypeProve, "TypeBeginDecide": ipc.TypeBeginDecide,
		"TypePAMSessionOpened": ipc.TypePAMSessionOpened, "TypeSpawn": ipc.TypeSpawn, "TypeReply": ipc.TypeReply,
		"TypeAEADOrigin": ipc.TypeAEADOrigin}
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "ipc", "messages.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := 0
	for _, d := range file.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, sp := range gd.Specs {
			for _, n := range sp.(*ast.ValueSpec).Names {
				if _, ok := names[n.Name]; strings.HasPrefix(n.Name, "Type") {
					declared++
					if !ok {
						t.Fatalf("ipc declares %s, which this test does not know", n.Name)
					}
				}
			}
		}
	}
	if declared != len(names) {
		t.Fatalf("ipc declares %d message types, this test knows %d", declared, len(names))
	}
	return names
}

// sendsIn adds the types body sends to out.
func sendsIn(body *ast.BlockStmt, names map[string]ipc.Type, out map[ipc.Type]bool) {
	assigned := assignedTypes(body, names)
	ast.Inspect(body, func(n ast.Node) bool {
		ce, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := ce.Fun.(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "Call" && sel.Sel.Name != "Notify" && sel.Sel.Name != "call") {
			return true
		}
		for _, a := range ce.Args {
			if typ, ok := names[constName(a)]; ok {
				out[typ] = true
			}
			if id, ok := a.(*ast.Ident); ok {
				for _, typ := range assigned[id.Name] {
					out[typ] = true
				}
			}
		}
		return true
	})
}

// assignedTypes maps each variable of body to the message types
// assigned to it.
func assignedTypes(body *ast.BlockStmt, names map[string]ipc.Type) map[string][]ipc.Type {
	out := map[string][]ipc.Type{}
	ast.Inspect(body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Lhs) != len(as.Rhs) {
			return true
		}
		for i, l := range as.Lhs {
			id, ok := l.(*ast.Ident)
			if typ, known := names[constName(as.Rhs[i])]; ok && known {
				out[id.Name] = append(out[id.Name], typ)
			}
		}
		return true
	})
	return out
}

// constName is the name of ipc.TypeX or TypeX, "" for anything else.
func constName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		if pkg, ok := x.X.(*ast.Ident); ok && pkg.Name == "ipc" {
			return x.Sel.Name
		}
	}
	return ""
}

// TestTableDocumented: the table in the package documentation is the
// table.
func TestTableDocumented(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), "monitor.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ipc.Type{}
	for typ := range newTable() {
		byName[typ.String()] = typ
	}
	rows := 0
	for _, line := range strings.Split(file.Doc.Text(), "\n") {
		f := strings.Fields(line)
		typ, ok := byName[firstOr(f)]
		if !ok || len(f) != 6 {
			continue
		}
		rows++
		if want := strings.Join(describe(newTable()[typ]), " "); strings.Join(f[1:], " ") != want {
			t.Errorf("documented %q, the table says %q", line, want)
		}
	}
	if rows != len(newTable()) {
		t.Errorf("the documentation has %d rows, the table %d types", rows, len(newTable()))
	}
}

func firstOr(f []string) string {
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

var stageWords = [numStages]string{"*", "kex", "busy", "auth", "login", "over", "authed", "handed"}

// describe is an entry as the documentation shows it.
func describe(e *entry) []string {
	kind := "note"
	if e.request {
		kind = "request"
	}
	out := []string{kind}
	for _, s := range e.from {
		out = append(out, stageList(s))
	}
	return append(out, stageList(e.once))
}

func stageList(s stages) string {
	var w []string
	for x := range numStages {
		if s.has(x) {
			w = append(w, stageWords[x])
		}
	}
	if len(w) == 0 {
		return "-"
	}
	return strings.Join(w, ",")
}

// TestKeeperMessages: a session keeper's log lines are relayed as its
// own; its Ready is not taken for the post-auth process's, and whatever
// else it sends is dropped without stopping the process it serves (a
// stop here would kill a process the test never started).
func TestKeeperMessages(t *testing.T) {
	logs := &logLines{}
	m := &Monitor{table: newTable(), log: slog.New(slog.NewTextHandler(logs, nil)), conns: map[uint64]*mconn{}}
	c := &child{m: m, role: ipc.RolePostauth, name: "offload-sshd: u", ready: make(chan struct{})}
	conn := connIn(c, stageHanded)
	conn.ctx, conn.cancel = context.WithCancel(context.Background())
	conn.preauthEnd, conn.done = func() {}, make(chan struct{})
	conn.local, conn.remote = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 22}, &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 5555}
	m.conns[1] = conn
	c.keeperMessage(&ipc.Message{Type: ipc.TypeLog, Payload: (&ipc.Log{Msg: "session closed"}).Marshal()})
	c.keeperMessage(&ipc.Message{Type: ipc.TypeReady})
	c.keeperMessage(&ipc.Message{Type: ipc.TypeConnDone, Payload: ipc.NewConnDone(1, nil, ipc.OutcomeClosed, nil).Marshal()})
	for _, typ := range []ipc.Type{ipc.TypeMetrics, ipc.TypeSign, ipc.TypeAEADClose, 17} {
		c.keeperMessage(&ipc.Message{Type: typ, Payload: wire.AppendUint64(nil, 1)})
	}
	if l := lineWith(logs.String(), "session closed"); !strings.Contains(l, "offload-sshd: u [session]") {
		t.Errorf("relayed as %q", l)
	}
	select {
	case <-c.ready:
		t.Error("the keeper's Ready was taken for the post-auth process's")
	default:
	}
	if m.conns[1] == nil || m.conns[1].phase != phaseHanded {
		t.Error("a keeper's conn-done ended the process's connection")
	}
}

// FuzzAdmit: whatever type and bytes a child sends, from whatever role,
// the table's check never fails on them, and admits only what the
// policy allows for the connection's stage.
func FuzzAdmit(f *testing.F) {
	f.Add(uint8(ipc.TypeSign), uint8(roleWorker), uint8(stageKex), wire.AppendUint64(nil, 1))
	f.Add(uint8(ipc.TypeHandoff), uint8(roleWorker), uint8(stageAuthed), []byte{0, 0, 0})
	f.Add(uint8(ipc.TypeAEADSeal), uint8(rolePost), uint8(stageHanded), []byte{})
	tab := newTable()
	f.Fuzz(func(t *testing.T, typ, r, s uint8, payload []byte) {
		e, ok := tab[ipc.Type(typ)]
		if !ok {
			return // handle stops the child
		}
		from, st := role(r%uint8(numRoles)), stage(s%uint8(numStages))
		c := &child{role: from.String()}
		m := &Monitor{table: tab, conns: map[uint64]*mconn{}}
		if st != stageNone {
			m.conns[1] = connIn(c, st)
		}
		in, err := m.admit(c, from, e, &ipc.Message{Type: ipc.Type(typ), Payload: payload})
		want := wantTable[ipc.Type(typ)][from]
		if err == nil && want != "n" && (in.conn == nil || strings.IndexByte(want, stageLetters[in.stage]) < 0) {
			t.Fatalf("%v from %v admitted for stage %d", ipc.Type(typ), from, in.stage)
		}
		if err == nil && want == "" {
			t.Fatalf("%v admitted from %v", ipc.Type(typ), from)
		}
	})
}
