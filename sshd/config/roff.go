package config

import (
	"fmt"
	"io"
	"strings"
)

// WriteManPage writes the man page offload-sshd_config(5) in roff: the
// file syntax, then one entry per keyword made from KeywordTable (the
// same texts as the Markdown reference of docs/configuration.md), so the
// page cannot drift from the code.
func WriteManPage(w io.Writer) error {
	var b strings.Builder
	b.WriteString(manHead)
	counts := map[Status]int{}
	table := KeywordTable()
	for _, ki := range table {
		counts[ki.Status]++
	}
	fmt.Fprintf(&b, ".SH KEYWORDS\n%d keywords: %d supported, %d refused, %d inert, %d deprecated, %d unsupported.\n",
		len(table), counts[Supported], counts[Refused], counts[Inert], counts[Deprecated], counts[Unsupported])
	b.WriteString(manStatuses)
	for _, ki := range table {
		writeManKeyword(&b, ki)
	}
	b.WriteString(manTail)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeManKeyword(b *strings.Builder, ki KeywordInfo) {
	b.WriteString(".TP\n\\fB" + roffEscape(ki.Name) + "\\fR")
	var notes []string
	if len(ki.Aliases) > 0 {
		notes = append(notes, "also "+strings.Join(ki.Aliases, ", "))
	}
	if ki.Debian {
		notes = append(notes, "Debian")
	}
	if ki.Own {
		notes = append(notes, "offload")
	}
	if len(notes) > 0 {
		b.WriteString(" (" + roffText(strings.Join(notes, "; ")) + ")")
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "%s. In Match: %s. Default: %s.\n", roffText(ki.Status.String()), roffText(inMatchText(ki)), roffText(defaultText(ki)))
	if does := doesText(ki); does != "" {
		b.WriteString(".br\n" + roffText(does) + "\n")
	}
}

// roffText turns a reference text (Markdown code spans in backquotes)
// into roff: code spans in bold, everything escaped.
func roffText(s string) string {
	parts := strings.Split(s, "`")
	for i, p := range parts {
		p = roffEscape(p)
		if i%2 == 1 {
			p = "\\fB" + p + "\\fR"
		}
		parts[i] = p
	}
	out := strings.Join(parts, "")
	if strings.HasPrefix(out, ".") || strings.HasPrefix(out, "'") {
		out = "\\&" + out
	}
	return out
}

// roffEscape escapes backslashes, and hyphens as minus signs (options and
// values are copied from man pages); the dash of a missing default
// becomes roff's em dash.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, "\\", "\\e")
	s = strings.ReplaceAll(s, "-", "\\-")
	s = strings.ReplaceAll(s, "—", "\\(em")
	return s
}

const manHead = `.TH OFFLOAD\-SSHD_CONFIG 5 "" "offload" "File Formats"
.SH NAME
offload\-sshd_config \- offload SSH daemon configuration file
.SH SYNOPSIS
.B /etc/offload/sshd_config
.SH DESCRIPTION
.B offload sshd
reads its configuration from
.I /etc/offload/sshd_config
(or the file given with
.BR \-f ).
The file uses the keywords and syntax of OpenSSH's
.BR sshd_config (5),
plus a few of offload's own (host keys and crypto in PKCS #11 tokens,
provider choice, metrics).
A keyword offload does not implement is refused by
.B offload sshd \-t
with an error naming it, never accepted and ignored.
.PP
Each line holds a keyword and its arguments;
.I Keyword=arguments
works too.
Keywords are case\-insensitive, arguments are not.
Lines starting with
.B #
and empty lines are comments.
Arguments are separated by blanks; double or single quotes keep blanks
inside one argument.
For most keywords the first value obtained is used, as in OpenSSH.
.PP
.B Include
reads the files its glob patterns match in place of its line (relative
patterns are taken from the including file's directory).
.B Match
starts a block of lines applied to the connections its criteria match
(User, Group, Host, Address, LocalAddress, LocalPort, RDomain, Version,
Invalid\-User, all); it ends at the next Match or the end of the file.
.PP
.B offload sshd \-T
prints the effective configuration and, as comments, the provider that
serves each cipher, key exchange and host key.
`

const manStatuses = `.PP
Each keyword below has one status:
.TP
.B supported
implemented as OpenSSH documents it; the entry says where offload applies it.
.TP
.B refused
the feature is not implemented: a line asking for it fails
.BR "offload sshd \-t" ;
only the value that means what offload does anyway is accepted.
.TP
.B inert
configures a feature that is off because another keyword is refused; it
is checked as OpenSSH checks it and has no effect, as in OpenSSH with that
feature off.
.TP
.B deprecated
OpenSSH warns "Deprecated option" and ignores the line; so does offload.
.TP
.B unsupported
OpenSSH built without the feature (GSSAPI, Kerberos) warns "Unsupported
option" and ignores the line; so does offload.
.PP
The keywords, in the order
.B \-T
prints them:
`

const manTail = `.SH FILES
.TP
.I /etc/offload/sshd_config
the configuration.
.TP
.I /etc/offload/pin
a token PIN, when PKCS11PinSource names it (mode 0600, owned by root).
.SH SEE ALSO
.BR offload (1),
.BR offload\-sshd (8),
.BR sshd_config (5)
`
