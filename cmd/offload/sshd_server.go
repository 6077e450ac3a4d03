package main

import (
	"crypto"
	"fmt"
	"log/slog"
	"os"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/sshd"
	"github.com/offload/offload/sshd/auth"
	"github.com/offload/offload/sshd/config"
	"github.com/offload/offload/sshd/connection"
	"github.com/offload/offload/sshd/transport"
)

// maxBannerSize bounds the Banner file, which is sent before login.
const maxBannerSize = 64 << 10

// serverConfig translates a parsed configuration into the server's
// Config. Lists not set in the file stay nil so that the server picks its
// defaults (the cipher order then follows calibration).
func serverConfig(c *config.Config, reg *provider.Registry, keys []crypto.Signer, log *slog.Logger) (*sshd.Config, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a, err := authConfig(c, log)
	if err != nil {
		return nil, err
	}
	sc := &sshd.Config{
		Registry: reg, HostKeys: keys,
		Ciphers: setList(c, "Ciphers", c.Ciphers), MACs: setList(c, "MACs", c.MACs),
		KexAlgorithms: setList(c, "KexAlgorithms", c.KexAlgorithms), HostKeyAlgorithms: setList(c, "HostKeyAlgorithms", c.HostKeyAlgorithms),
		CryptoProfile: transport.Profile(c.CryptoProfile),
		RekeyLimit:    uint64(c.RekeyLimit.Bytes), RekeyInterval: c.RekeyLimit.Interval,
		LoginGraceTime: c.LoginGraceTime, MaxStartups: c.MaxStartups.Full,
		DropStartup: func(pending int) bool { return c.MaxStartups.Drop(pending, nil) },
		Auth:        a, Logger: log,
	}
	if c.LoginGraceTime == 0 {
		sc.LoginGraceTime = -1 // sshd_config: 0 means no limit
	}
	sc.Conn = connectionConfig(c, log)
	return sc, nil
}

func setList(c *config.Config, keyword string, v []string) []string {
	if c.IsSet(keyword) {
		return v
	}
	return nil
}

func authConfig(c *config.Config, log *slog.Logger) (*auth.Config, error) {
	if !c.PubkeyAuthentication {
		log.Warn("PubkeyAuthentication no leaves no authentication method: nobody can log in")
	}
	a := &auth.Config{
		AuthorizedKeysFiles: c.AuthorizedKeysFile,
		TrustedUserCAKeys:   c.TrustedUserCAKeys,
		MaxAuthTries:        c.MaxAuthTries,
		PermitRootLogin:     auth.RootLogin(c.PermitRootLogin),
		AllowUsers:          c.AllowUsers,
		IgnoreFileModes:     !c.StrictModes,

		PasswordAuthentication: c.PasswordAuthentication, // against the shadow database

		AuthorizedPrincipalsFile: c.AuthorizedPrincipalsFile,
		PermitUserEnvironment:    c.PermitUserEnvironment,
		PublicKeyAlgorithms:      setList(c, "PubkeyAcceptedAlgorithms", c.PubkeyAcceptedAlgorithms),
		CASignatureAlgorithms:    setList(c, "CASignatureAlgorithms", c.CASignatureAlgorithms),
		Logger:                   log,
	}
	if len(a.AuthorizedKeysFiles) == 0 {
		a.AuthorizedKeysFiles = []string{"none"}
	}
	if !c.PubkeyAuthentication {
		a.AuthorizedKeysFiles, a.TrustedUserCAKeys = []string{"none"}, ""
	}
	if c.Banner != "" {
		b, err := readBanner(c.Banner)
		if err != nil {
			return nil, err
		}
		a.Banner = b
	}
	return a, a.Validate()
}

func readBanner(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("Banner: %w", err)
	}
	defer f.Close()
	b := make([]byte, maxBannerSize+1)
	n, _ := f.Read(b)
	if n > maxBannerSize {
		return "", fmt.Errorf("Banner %s: larger than %d bytes", path, maxBannerSize)
	}
	return string(b[:n]), nil
}

// connectionConfig translates the connection-layer keywords.
func connectionConfig(c *config.Config, log *slog.Logger) *connection.Config {
	fwd, _ := connection.ParseTCPForwarding(c.AllowTCPForwarding) // checked by the parser
	cc := &connection.Config{
		WindowSize:          uint32(min(c.ChannelWindowSize, 1<<31-1)),
		MaxSessions:         c.MaxSessions,
		AcceptEnv:           c.AcceptEnv,
		AllowTCPForwarding:  fwd,
		Subsystems:          map[string]string{},
		ClientAliveInterval: c.ClientAliveInterval,
		ClientAliveCountMax: c.ClientAliveCountMax,
		Logger:              log,
	}
	if c.MaxSessions == 0 {
		cc.MaxSessions = -1 // sshd_config: 0 means no sessions
	}
	for _, s := range c.Subsystems {
		cc.Subsystems[s.Name] = s.Command
	}
	return cc
}
