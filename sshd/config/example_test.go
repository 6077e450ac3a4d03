package config_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/offload/offload/sshd/config"
)

func ExampleParse() {
	file := `
Port 2222
HostKey pkcs11:token=offload;object=hostkey
Ciphers ^aes256-gcm@openssh.com
MaxAuthTries 3
ProviderMap aes128-gcm=cpu
`
	// -o overrides win over the file, as in sshd.
	c, err := config.Parse("sshd_config", strings.NewReader(file), []string{"MaxAuthTries=5"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Addrs(), c.HostKeys[0])
	fmt.Println(c.Ciphers[0], c.MaxAuthTries, c.IsSet("MaxSessions"), c.MaxSessions)
	fmt.Println(c.Policy())
	// Output:
	// [:2222] pkcs11:token=offload;object=hostkey
	// aes256-gcm@openssh.com 5 false 10
	// mode=fastest pin:aes128-gcm=cpu
}

func ExampleLineError() {
	_, err := config.Parse("/etc/offload/sshd_config", strings.NewReader("Port 22\nMaxSessions lots\n"), nil)
	var le *config.LineError
	if errors.As(err, &le) {
		fmt.Println(le.Line, le.Keyword)
	}
	fmt.Println(err)
	// Output:
	// 2 MaxSessions
	// config: /etc/offload/sshd_config line 2: MaxSessions: "lots" is not an integer
}

func ExampleParseAlgList() {
	kex, _, _ := config.ParseAlgList(config.KexList, "-sntrup*,curve25519-sha256*")
	fmt.Println(kex)
	ciphers, _, _ := config.ParseAlgList(config.CipherList, "+aes128-cbc")
	fmt.Println(ciphers)
	_, _, err := config.ParseAlgList(config.HostKeyAlgList, "+ssh-dss")
	fmt.Println(err)
	// Output:
	// [mlkem768x25519-sha256]
	// [chacha20-poly1305@openssh.com aes128-gcm@openssh.com aes256-gcm@openssh.com aes128-ctr aes256-ctr aes192-ctr aes128-cbc]
	// "ssh-dss": DSA keys and signatures are not supported (OpenSSH 10 removed them; docs/configuration.md)
}

func ExampleConfig_ForConnection() {
	file := `
MaxSessions 10
Match User alice Address 192.0.2.0/24
	MaxSessions 2
`
	c, _ := config.Parse("sshd_config", strings.NewReader(file), nil)
	alice, _ := c.ForConnection(config.ConnInfo{User: "alice", Addr: "192.0.2.7"})
	bob, _ := c.ForConnection(config.ConnInfo{User: "bob", Addr: "192.0.2.7"})
	fmt.Println(c.MaxSessions, alice.MaxSessions, bob.MaxSessions, bob == c)
	// Output:
	// 10 2 10 true
}

func ExampleConfig_Print() {
	c, _ := config.Parse("", strings.NewReader("LoginGraceTime 1m30s\nAcceptEnv LANG LC_*\n"), nil)
	var out strings.Builder
	c.Print(&out)
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "logingracetime") || strings.HasPrefix(line, "acceptenv") {
			fmt.Println(line)
		}
	}
	// Output:
	// logingracetime 90
	// acceptenv LANG
	// acceptenv LC_*
}
