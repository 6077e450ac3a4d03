package plan

import (
	"fmt"
	"io"
)

// Lookup returns the assignment of prim in stage s.
func (p *Plan) Lookup(s Stage, prim string) (Assignment, bool) {
	for _, a := range p.Assignments(s) {
		if a.Primitive == prim {
			return a, true
		}
	}
	return Assignment{}, false
}

// Print writes the plan's assignments as sshd_config comment lines, one
// per primitive: who serves it in each stage, and where.
func (p *Plan) Print(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "# plan (format %d, policy %s): what the pre-auth workers and post-auth processes construct\n", FormatVersion, p.Mode); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, l := range [][]Assignment{p.Preauth, p.Postauth} {
		for _, a := range l {
			if seen[a.Primitive] {
				continue
			}
			seen[a.Primitive] = true
			if _, err := fmt.Fprintf(w, "# plan %s: pre-auth %s, post-auth %s\n", a.Primitive, p.describe(Preauth, a.Primitive), p.describe(Postauth, a.Primitive)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *Plan) describe(s Stage, prim string) string {
	a, ok := p.Lookup(s, prim)
	if !ok {
		return "none"
	}
	return a.Provider + " " + a.Where.String()
}
