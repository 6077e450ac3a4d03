package plan

import (
	"time"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd/transport"
)

// Where says in which process a primitive runs.
type Where uint8

// Places of a primitive.
const (
	// InChild: the child builds it with its own instance of the provider.
	InChild Where = iota
	// InMonitor: the child reaches the monitor's provider through the
	// monitor (AEADs of a token), or the monitor alone uses it (host-key
	// signatures: children never sign).
	InMonitor
)

func (w Where) String() string {
	if w == InMonitor {
		return "in the monitor"
	}
	return "in the child"
}

// Stage is the part of a connection a kind of child carries.
type Stage uint8

// Stages.
const (
	Preauth  Stage = iota // the pre-auth workers: the first key exchange until the login
	Postauth              // the post-auth processes: after the login
)

func (s Stage) String() string {
	if s == Postauth {
		return "post-auth processes"
	}
	return "pre-auth workers (before the login)"
}

// Assignment is the provider of one registry primitive in one stage.
type Assignment struct {
	Primitive string // registry algorithm name, e.g. aes128-gcm
	Provider  string
	Where     Where
}

// Plan is what a child constructs its transport from. The zero value is
// a plan with transport defaults and no assignments (the child's
// registry then ranks by its policy Mode alone).
type Plan struct {
	// Algorithm lists the server negotiates (transport.Config).
	Ciphers, MACs, KexAlgorithms, HostKeyAlgorithms, ServerSigAlgs []string

	Version                   string
	RekeyBytes                uint64
	RekeyInterval, KexTimeout time.Duration
	HostPublicKeys            [][]byte // SSH wire format
	HostCertificates          [][]byte // OpenSSH host certificates, wire format
	// HostKeyProvenance says where each host key lives (by the hex of its
	// wire form), for the children's log lines.
	HostKeyProvenance map[string]string
	CipherSelection   string // transport.Config.CipherSelection
	CipherScores      map[string]float64
	Compression       bool // transport.Config.Compression
	// ModuliFile is read by the pre-auth workers as they start, before
	// their sandbox closes (as the sshd account: it must be readable to
	// it, as /etc/ssh/moduli is).
	ModuliFile string

	// Mode is the policy mode (provider.Mode), which orders the fail-open
	// fallbacks behind each planned provider.
	Mode string
	// Preauth and Postauth are the assignments of each stage.
	Preauth, Postauth []Assignment
}

// Assignments returns the assignments of stage s.
func (p *Plan) Assignments(s Stage) []Assignment {
	if s == Postauth {
		return p.Postauth
	}
	return p.Preauth
}

// Remote maps the AEADs the post-auth processes reach through the
// monitor to the monitor's provider that serves them.
func (p *Plan) Remote() map[string]string {
	out := map[string]string{}
	for _, a := range p.Postauth {
		if a.Where == InMonitor && isAEAD(a.Primitive) {
			out[a.Primitive] = a.Provider
		}
	}
	return out
}

// Resolved is the outcome of Resolve.
type Resolved struct {
	Preauth, Postauth []Assignment
	// Away lists, as "primitive=provider", the monitor's choices the
	// children cannot follow: a primitive other than an AEAD or a host-key
	// signature chosen on a token. The children serve them with their own
	// providers.
	Away []string
}

// Resolve decides, for every registry primitive the SSH algorithms are
// built from, which provider serves it in each stage, from reg's choice:
// a software or CPU provider runs in the child; a token's AEAD runs in
// the monitor after the login and, before it, with the child's best
// software or CPU candidate; a token's host-key signature is the
// monitor's (children never sign); a token's other primitives are
// served in the child by its best software or CPU candidate (Away).
func Resolve(reg *provider.Registry) Resolved {
	var r Resolved
	seen := map[string]bool{}
	for _, a := range transport.Algorithms() {
		for _, prim := range a.Primitives {
			if seen[prim] {
				continue
			}
			seen[prim] = true
			if ex, err := reg.Explain(prim); err == nil {
				r.add(prim, ex)
			}
		}
	}
	return r
}

func (r *Resolved) add(prim string, ex *provider.Explanation) {
	kind := chosenKind(ex)
	alg, _ := provider.Lookup(prim)
	local := Assignment{Primitive: prim, Provider: ex.Chosen, Where: InChild}
	switch {
	case kind == provider.KindSoftware || kind == provider.KindCPU:
		r.both(local, local)
	case alg != nil && alg.Family == provider.FamilySignature:
		r.both(Assignment{Primitive: prim, Provider: ex.Chosen, Where: InMonitor}, Assignment{})
	case alg != nil && alg.Family == provider.FamilyAEAD:
		r.both(localChoice(prim, ex), Assignment{Primitive: prim, Provider: ex.Chosen, Where: InMonitor})
	default:
		r.Away = append(r.Away, prim+"="+ex.Chosen)
		l := localChoice(prim, ex)
		r.both(l, l)
	}
}

// both records pre and post, leaving out empty ones (a signature is
// recorded once: in the monitor for both stages).
func (r *Resolved) both(pre, post Assignment) {
	if post.Primitive == "" {
		post = pre
	}
	if pre.Provider != "" {
		r.Preauth = append(r.Preauth, pre)
	}
	if post.Provider != "" {
		r.Postauth = append(r.Postauth, post)
	}
}

// localChoice is the best candidate a child has of its own: the first
// eligible CPU provider, else software (the static order of a registry
// without measurements).
func localChoice(prim string, ex *provider.Explanation) Assignment {
	best := ""
	for _, k := range []provider.Kind{provider.KindCPU, provider.KindSoftware} {
		for _, c := range ex.Candidates {
			if best == "" && c.Kind == k && c.Excluded == "" {
				best = c.Provider
			}
		}
	}
	return Assignment{Primitive: prim, Provider: best, Where: InChild}
}

func chosenKind(ex *provider.Explanation) provider.Kind {
	for _, c := range ex.Candidates {
		if c.Provider == ex.Chosen {
			return c.Kind
		}
	}
	return provider.KindHardware
}

func isAEAD(prim string) bool {
	alg, err := provider.Lookup(prim)
	return err == nil && alg.Family == provider.FamilyAEAD
}

// Apply sets the assignments of p from r.
func (p *Plan) Apply(r Resolved) {
	p.Preauth, p.Postauth = r.Preauth, r.Postauth
}
