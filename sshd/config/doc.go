// Package config reads offload sshd's configuration: an sshd_config(5)
// style file plus -o overrides, into a Config holding the effective value
// of every keyword, and evaluates its Match blocks per connection.
//
// # Keywords
//
// Every keyword of OpenSSH 10's sshd_config(5) (and Debian's additions)
// is in one table (table.go) with its status: supported (applied, the
// table says where), refused (the feature is not implemented: -t fails
// with ErrNotImplemented, except for the one value that means what
// offload does anyway, such as "X11Forwarding no"), inert (configures a
// feature that a refused keyword keeps off, as in OpenSSH with it off),
// deprecated or unsupported (a Warning, as sshd logs, and ignored).
// Nothing is accepted and ignored. KeywordTable describes the table; the
// reference in docs/configuration.md is generated from it
// (go generate).
//
// # Syntax
//
// One "Keyword arguments" line per setting; "Keyword=arguments" works
// too. Keywords are case-insensitive. '#' starts a comment at the start of
// a line or of an argument. Double or single quotes keep blanks inside an
// argument and a backslash escapes the next character. Include reads other
// files (glob patterns, relative to the including file) in place of its
// line, also inside a Match block; loops and nesting deeper than 16 are
// errors.
//
// # Precedence
//
// As in sshd: a single-valued keyword takes its first value and later
// lines are only checked. Port, ListenAddress, HostKey, AllowUsers,
// AcceptEnv, Subsystem and the like accumulate. A keyword given with -o
// (Parse's overrides) wins over every line of the file that sets it.
//
// # Match
//
// Match blocks (User, Group, Host, Address, LocalAddress, LocalPort,
// RDomain, Version, Invalid-User, all; pattern lists with '!' negation,
// CIDR for addresses) hold only the keywords sshd allows there; a keyword
// sshd allows but offload applies only server-wide is refused inside
// Match. ForConnection applies the blocks matching a ConnInfo over the
// global values, in sshd's order (a block's value wins over the file's
// and the -o one; within the blocks the first wins).
//
// # Errors and warnings
//
// Every error about a line is a *LineError carrying the file name (or
// CommandLine), the line number, the keyword and the cause; its message
// starts with "config:". What sshd only warns about is a Warning
// (Config.Warnings) for the caller to log.
//
// # Algorithm lists
//
// Ciphers, KexAlgorithms, MACs, HostKeyAlgorithms, PubkeyAcceptedAlgorithms
// and CASignatureAlgorithms take a comma list that replaces the default,
// or a list starting with '+' (append to the defaults), '-' (remove the
// defaults matching the patterns) or '^' (put first); names may be
// wildcard patterns. The names offload implements are the transport's and
// auth's tables. A name OpenSSH knows but offload lacks is left out with a
// Warning; an unknown name, or a list leaving nothing, is an error.
//
// # Printing
//
// Print writes the configuration as sshd -T does, one lower-case keyword
// per line with every default spelled out, in sshd's order; the output
// parses back to an equal Config.
package config

//go:generate go test -run ^(TestReferenceTable|TestManPage)$ -update
