package config

import "strings"

// The texts of the keyword reference's columns, shared by the Markdown
// table of docs/configuration.md (reference_test.go) and the man page
// offload-sshd_config(5) (roff.go).

func inMatchText(ki KeywordInfo) string {
	switch {
	case !ki.InMatch:
		return "no"
	case ki.Status == Supported && !ki.PerConnection:
		return "refused there"
	}
	return "yes"
}

func defaultText(ki KeywordInfo) string {
	switch {
	case ki.Default == "":
		return "—"
	case len(ki.Default) > 48:
		return "see `-T`"
	}
	return "`" + ki.Default + "`"
}

func doesText(ki KeywordInfo) string {
	switch ki.Status {
	case Supported:
		return ki.Applied
	case Refused:
		s := "not implemented: " + ki.What
		if ki.Accepted != "" {
			s += "; only `" + ki.Name + " " + ki.Accepted + "` accepted"
		}
		if ki.Owner != "" {
			s += " (in progress: " + ki.Owner + ")"
		}
		return s
	case Inert:
		if ki.InertWhile != "" {
			return "no effect while " + strings.ReplaceAll(ki.InertWhile, ",", " and ") + " is refused (" + ki.What + ")"
		}
		return "no effect: offload has no " + ki.What
	case Deprecated:
		return "warning \"Deprecated option\", ignored (as OpenSSH)"
	case Unsupported:
		return "warning \"Unsupported option\", ignored (as OpenSSH built without it)"
	}
	return ""
}
