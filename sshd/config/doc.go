// Package config reads offload sshd's configuration: an sshd_config(5)
// style file plus -o overrides, into a Config holding the effective value
// of every keyword.
//
// # Syntax
//
// One "Keyword arguments" line per setting; "Keyword=arguments" works
// too. Keywords are case-insensitive. '#' starts a comment at the start of
// a line or of an argument. Double or single quotes keep blanks inside an
// argument and a backslash escapes the next character. Include reads other
// files (glob patterns, relative to the including file) in place of its
// line. Match is rejected as not supported; so is any other sshd keyword
// offload does not implement, with an error naming it; OpenSSH keywords
// for absent features are accepted when they turn the feature off
// (X11Forwarding no).
//
// # Precedence
//
// As in sshd: a single-valued keyword takes its first value and later
// lines are only checked. HostKey, ListenAddress, Port, AcceptEnv,
// AllowUsers, Subsystem, PKCS11Token, ProviderMap and ProviderDeny
// accumulate. A keyword given with -o (Parse's overrides) wins over every
// line of the file that sets it.
//
// # Errors
//
// Every error about a line is a *LineError carrying the file name (or
// CommandLine), the line number, the keyword and the cause; its message
// starts with "config:".
//
// # Algorithm lists
//
// Ciphers, KexAlgorithms, MACs and HostKeyAlgorithms take a comma list that
// replaces the default, or a list starting with '+' (append to the
// defaults), '-' (remove the defaults matching the patterns) or '^' (put
// first). Only names offload's transport implements are accepted; see
// Supported, DefaultAlgorithms and Primitives, which maps an SSH name to
// the provider catalog algorithms serving it.
//
// # Printing
//
// Print writes the configuration as sshd -T does, one lower-case keyword
// per line with every default spelled out; the output parses back to an
// equal Config.
package config
