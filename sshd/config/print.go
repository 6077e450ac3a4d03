package config

import (
	"bufio"
	"io"
	"strings"
)

// Print writes the effective configuration in the manner of sshd -T: one
// "keyword value" line per setting, keywords in lower case, every keyword
// present (defaults included), secrets in pkcs11: URIs redacted. The
// output parses back to the same configuration.
func (c *Config) Print(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, kw := range keywords {
		for _, args := range kw.print(c) {
			writeLine(bw, strings.ToLower(kw.name), args)
		}
	}
	return bw.Flush()
}

func writeLine(w *bufio.Writer, name string, args []string) {
	w.WriteString(name)
	for _, a := range args {
		w.WriteByte(' ')
		w.WriteString(quoteArg(a))
	}
	w.WriteByte('\n')
}
