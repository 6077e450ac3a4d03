package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseLine(t *testing.T) {
	cases := []struct {
		line    string
		keyword string
		args    []string
	}{
		{"", "", nil},
		{"   # comment", "", nil},
		{"Port 22", "Port", []string{"22"}},
		{"Port=22", "Port", []string{"22"}},
		{"Port = 22", "Port", []string{"22"}},
		{"\tPort\t22  \r\n", "Port", []string{"22"}},
		{"Port 22 # the default", "Port", []string{"22"}},
		{"Banner /a#b", "Banner", []string{"/a#b"}},
		{`Banner "/my file"`, "Banner", []string{"/my file"}},
		{`Banner '/my "file"'`, "Banner", []string{`/my "file"`}},
		{`Banner /my\ file`, "Banner", []string{"/my file"}},
		{`Banner "a\"b"`, "Banner", []string{`a"b`}},
		// a backslash escapes quotes, backslashes and an unquoted blank,
		// in single quotes too; before anything else it stays
		{`Banner a\b`, "Banner", []string{`a\b`}},
		{`Banner a\\b`, "Banner", []string{`a\b`}},
		{`Banner 'a\'b'`, "Banner", []string{`a'b`}},
		{`Banner "a\ b"`, "Banner", []string{`a\ b`}},
		{`Banner x\`, "Banner", []string{`x\`}},
		{`Banner a\#b \#c`, "Banner", []string{`a\#b`, `\#c`}},
		{`AllowUsers "" b`, "AllowUsers", []string{"", "b"}},
		{"ProviderMap aes128-gcm=pkcs11:token=unit0", "ProviderMap", []string{"aes128-gcm=pkcs11:token=unit0"}},
		{"PubkeyAuthentication", "PubkeyAuthentication", nil},
	}
	for _, tc := range cases {
		kw, args, err := ParseLine(tc.line)
		if err != nil || kw != tc.keyword || !reflect.DeepEqual(args, tc.args) {
			t.Errorf("ParseLine(%q) = %q, %q, %v; want %q, %q", tc.line, kw, args, err, tc.keyword, tc.args)
		}
	}
	for _, bad := range []string{`Banner "x`, `Banner 'x`, `Banner "x\"`, "=22", "Port \x01", "Port \xff"} {
		if _, _, err := ParseLine(bad); err == nil {
			t.Errorf("ParseLine(%q) accepted", bad)
		}
	}
}

func TestQuoteArgRoundTrip(t *testing.T) {
	for _, a := range []string{"", "plain", "two words", `q"uote`, `back\slash`, "#hash", "it's"} {
		_, args, err := ParseLine("Banner " + quoteArg(a))
		if err != nil || len(args) != 1 || args[0] != a {
			t.Errorf("quoteArg(%q) = %q reads back as %q, %v", a, quoteArg(a), args, err)
		}
	}
}

// FuzzParseLine checks that the tokenizer never panics, that what it
// returns prints back (through quoteArg) to the same tokens, and that the
// whole parser survives any line.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{"Port 22", `Banner "a b"`, "HostKey=pkcs11:token=x", "Ciphers +aes128-ctr",
		"MaxStartups 1:2:3", `x '\'`, "# c", "LoginGraceTime 1h30m", "RekeyLimit 1G 1h", "Match User x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		kw, args, err := ParseLine(line)
		if err != nil || kw == "" {
			return
		}
		var b strings.Builder
		b.WriteString(kw)
		for _, a := range args {
			b.WriteString(" " + quoteArg(a))
		}
		kw2, args2, err := ParseLine(b.String())
		if err != nil || kw2 != kw || len(args2) != len(args) || (len(args) > 0 && !reflect.DeepEqual(args, args2)) {
			t.Fatalf("%q -> %q %q -> %q %q %v", line, kw, args, kw2, args2, err)
		}
		if strings.EqualFold(kw, "Include") {
			return // reads files; TestInclude covers it
		}
		c, err := Parse("fuzz", strings.NewReader(line), nil)
		if err == nil {
			var out strings.Builder
			if err := c.Print(&out); err != nil {
				t.Fatal(err)
			}
			if _, err := Parse("printed", strings.NewReader(out.String()), nil); err != nil {
				t.Fatalf("Print output of %q does not parse: %v\n%s", line, err, out.String())
			}
		}
	})
}

// FuzzParse feeds whole files and overrides: Parse must not panic, and a
// configuration it accepts must print to text that parses to an equal
// configuration (apart from listen addresses, which -T prints resolved).
func FuzzParse(f *testing.F) {
	f.Add("Port 22\nHostKey /k\nCiphers +aes128-ctr\n", "MaxSessions=3")
	f.Add("AcceptEnv LANG LC_*\nSubsystem sftp internal-sftp\nProviderMap aes128-gcm=cpu\n", "Port 2")
	f.Add("RekeyLimit 1G 1h\nMaxStartups 1:2:3\nLoginGraceTime 1h30m\n", "")
	f.Add("Banner \"a b\"\nAllowUsers a b@10.0.0.0/8\nProviderDeny aes128-ctr software\n", "Ciphers=^aes256-ctr")
	f.Add("SetEnv A=1 \"B=x y\" A=2\nPermitListen 8080 localhost:*\nPermitUserEnvironment LANG,!LC_ALL\n", "ChannelTimeout=session=5m")
	f.Add("ForceCommand internal-sftp -R -l INFO\nXAuthLocation none\nStreamLocalBindMask 0117\n", "PermitOpen=none")
	f.Fuzz(func(t *testing.T, text, override string) {
		if strings.Contains(strings.ToLower(text), "include") {
			t.Skip("Include reads files; TestInclude covers it")
		}
		c, err := Parse("fuzz", strings.NewReader(text), []string{override})
		if err != nil {
			return
		}
		var out strings.Builder
		if err := c.Print(&out); err != nil {
			t.Fatal(err)
		}
		back, err := Parse("printed", strings.NewReader(out.String()), nil)
		if err != nil {
			t.Fatalf("printed config does not parse: %v\n%s", err, out.String())
		}
		var again strings.Builder
		back.Print(&again)
		if again.String() != out.String() {
			t.Fatalf("print is not stable:\n%s\n---\n%s", out.String(), again.String())
		}
	})
}
