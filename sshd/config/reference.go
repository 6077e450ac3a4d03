package config

import (
	"strings"
)

// Include and Match are handled by the reader; their entries make them
// known keywords and document them.
func includeKW() *keyword {
	return &keyword{name: "Include", status: Supported, inMatch: true, perConn: true, minArgs: 1, maxArgs: -1,
		applied: "the reader: files read in place of the line (glob patterns, relative to the including file)",
		example: "sshd_config.d/*.conf"}
}

func matchKW() *keyword {
	return &keyword{name: "Match", status: Supported, inMatch: true, perConn: true, minArgs: 1, maxArgs: -1,
		applied: "ForConnection: blocks applied per connection (User, Group, Host, Address, LocalAddress, LocalPort, RDomain, Version, Invalid-User, all)",
		example: "User alice"}
}

var keywordIndex = func() map[string]*keyword {
	m := make(map[string]*keyword, len(keywords)+len(aliases))
	for _, kw := range keywords {
		m[strings.ToLower(kw.name)] = kw
	}
	for _, a := range aliases {
		m[strings.ToLower(a.old)] = m[strings.ToLower(a.target)]
	}
	return m
}()

func lookupKeyword(name string) (*keyword, bool) {
	kw, ok := keywordIndex[strings.ToLower(name)]
	return kw, ok
}

// Keywords returns the canonical names of every keyword, in -T order,
// whatever their status.
func Keywords() []string {
	out := make([]string, len(keywords))
	for i, kw := range keywords {
		out[i] = kw.name
	}
	return out
}

// KeywordInfo describes one keyword of the table: what offload does with
// it and where. The reference table of docs/configuration.md is made
// from these.
type KeywordInfo struct {
	Name   string
	Status Status
	// InMatch: OpenSSH allows it inside Match. PerConnection: offload
	// applies it per connection (otherwise it is refused inside Match).
	InMatch, PerConnection bool
	// Applied is where offload applies a supported keyword.
	Applied string
	// What names the feature of a refused or inert keyword; Owner is who
	// is building it; Accepted the one value of a refused keyword offload
	// takes (what it does anyway), "" for none.
	What, Owner, Accepted string
	// InertWhile names the refused keywords (comma-separated) that make
	// an inert one moot ("" when the feature is one offload has no keyword
	// for); InertNow reports whether that still holds.
	InertWhile string
	InertNow   func() bool
	// Example is a value other than the default.
	Example string
	// Default is the default as -T prints it ("" when it prints nothing).
	Default string
	// Aliases are the old spellings OpenSSH accepts for it.
	Aliases []string
	// Debian marks keywords only Debian's OpenSSH knows; Own offload's
	// own keywords.
	Debian, Own bool
}

// KeywordTable returns every keyword's description, in -T order.
func KeywordTable() []KeywordInfo {
	def := Defaults()
	out := make([]KeywordInfo, 0, len(keywords))
	for _, kw := range keywords {
		out = append(out, kw.info(def))
	}
	return out
}

func (kw *keyword) info(def *Config) KeywordInfo {
	ki := KeywordInfo{Name: kw.name, Status: kw.status, InMatch: kw.inMatch, PerConnection: kw.perConn,
		Applied: kw.applied, What: kw.what, Owner: kw.owner, Accepted: kw.accepted, InertWhile: kw.inertWhile,
		Example: kw.example, Debian: kw.debian, Own: kw.isOwn}
	switch {
	case kw.inertOff != nil:
		ki.InertNow = kw.inertOff
	case kw.inertWhile != "":
		while := strings.Split(kw.inertWhile, ",")
		ki.InertNow = func() bool {
			for _, name := range while {
				if w, ok := lookupKeyword(name); !ok || w.status != Refused {
					return false
				}
			}
			return true
		}
	}
	if kw.print != nil {
		var lines []string
		for _, args := range kw.print(def) {
			lines = append(lines, strings.Join(args, " "))
		}
		ki.Default = strings.Join(lines, "; ")
	}
	for _, a := range aliases {
		if a.target == kw.name {
			ki.Aliases = append(ki.Aliases, a.old)
		}
	}
	return ki
}
