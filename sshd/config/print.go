package config

import (
	"bufio"
	"io"
	"strings"
)

// Print writes the effective configuration in the manner of sshd -T: one
// "keyword value" line per setting, keywords in lower case, every keyword
// offload knows present (defaults included, refused ones with the value
// offload applies), in sshd's order, then offload's own; secrets in
// pkcs11: URIs redacted. The output parses back to the same
// configuration.
func (c *Config) Print(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, kw := range keywords {
		if kw.print == nil || kw.noPrint {
			continue
		}
		for _, args := range kw.print(c) {
			writeLine(bw, strings.ToLower(kw.name), args, kw.rest)
		}
	}
	return bw.Flush()
}

// writeLine writes one line; raw writes the arguments unquoted (the rest
// of the line is the argument, as for ForceCommand).
func writeLine(w *bufio.Writer, name string, args []string, raw bool) {
	w.WriteString(name)
	if raw && len(args) > 0 && strings.HasPrefix(args[0], "=") {
		w.WriteString(" =") // an explicit separator, or the value's own '=' would be taken for it
	}
	for _, a := range args {
		w.WriteByte(' ')
		if raw {
			w.WriteString(a)
		} else {
			w.WriteString(quoteArg(a))
		}
	}
	w.WriteByte('\n')
}
