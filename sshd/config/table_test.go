package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// opensshKeywords is every keyword of OpenSSH 10's servconf.c keyword
// table (10.2; GSSAPIDelegateCredentials from 10.5), lower case.
var opensshKeywords = strings.Fields(`acceptenv addressfamily afstokenpassing allowagentforwarding allowgroups
allowstreamlocalforwarding allowtcpforwarding allowusers authenticationmethods authorizedkeyscommand
authorizedkeyscommanduser authorizedkeysfile authorizedkeysfile2 authorizedprincipalscommand
authorizedprincipalscommanduser authorizedprincipalsfile banner casignaturealgorithms challengeresponseauthentication
channeltimeout checkmail chrootdirectory ciphers clientalivecountmax clientaliveinterval compression denygroups
denyusers disableforwarding dsaauthentication exposeauthinfo fingerprinthash forcecommand gatewayports
gssapiauthentication gssapicleanupcredentials gssapidelegatecredentials gssapistrictacceptorcheck
hostbasedacceptedalgorithms hostbasedacceptedkeytypes hostbasedauthentication hostbasedusesnamefrompacketonly
hostcertificate hostdsakey hostkey hostkeyagent hostkeyalgorithms ignorerhosts ignoreuserknownhosts include ipqos
kbdinteractiveauthentication keepalive kerberosauthentication kerberosgetafstoken kerberosorlocalpasswd
kerberostgtpassing kerberosticketcleanup kexalgorithms keyregenerationinterval listenaddress logingracetime
loglevel logverbose macs match maxauthtries maxsessions maxstartups modulifile pamauthenticationviakbdint
pamservicename passwordauthentication permitemptypasswords permitlisten permitopen permitrootlogin permittty
permittunnel permituserenvironment permituserrc persourcemaxstartups persourcenetblocksize persourcepenalties
persourcepenaltyexemptlist pidfile port printlastlog printmotd protocol pubkeyacceptedalgorithms
pubkeyacceptedkeytypes pubkeyauthentication pubkeyauthoptions rdomain refuseconnection rekeylimit
requiredrsasize reversemappingcheck revokedkeys rhostsauthentication rhostsrsaauthentication
rsaauthentication securitykeyprovider serverkeybits setenv skeyauthentication sshdauthpath sshdsessionpath
streamlocalbindmask streamlocalbindunlink strictmodes subsystem syslogfacility tcpkeepalive trustedusercakeys
unusedconnectiontimeout usedns uselogin usepam useprivilegeseparation verifyreversemapping versionaddendum
x11displayoffset x11forwarding x11uselocalhost xauthlocation`)

// opensshInMatch are those OpenSSH 10 allows inside Match (SSHCFG_ALL).
var opensshInMatch = strings.Fields(`acceptenv allowagentforwarding allowgroups allowstreamlocalforwarding
allowtcpforwarding allowusers authenticationmethods authorizedkeyscommand authorizedkeyscommanduser
authorizedkeysfile authorizedkeysfile2 authorizedprincipalscommand authorizedprincipalscommanduser
authorizedprincipalsfile banner casignaturealgorithms channeltimeout chrootdirectory clientalivecountmax
clientaliveinterval denygroups denyusers disableforwarding exposeauthinfo forcecommand gatewayports
gssapiauthentication hostbasedacceptedalgorithms hostbasedauthentication hostbasedusesnamefrompacketonly
ignorerhosts include ipqos kbdinteractiveauthentication kerberosauthentication loglevel logverbose match
maxauthtries maxsessions pamservicename passwordauthentication permitemptypasswords permitlisten permitopen
permitrootlogin permittty permittunnel permituserrc pubkeyacceptedalgorithms pubkeyauthentication
pubkeyauthoptions rdomain refuseconnection rekeylimit requiredrsasize revokedkeys rhostsrsaauthentication
rsaauthentication setenv streamlocalbindmask streamlocalbindunlink subsystem trustedusercakeys
unusedconnectiontimeout x11displayoffset x11forwarding x11uselocalhost`)

// TestKeywordTableCoversOpenSSH: every OpenSSH 10 keyword has an entry
// (or is an alias of one), with OpenSSH's Match scope.
func TestKeywordTableCoversOpenSSH(t *testing.T) {
	for _, name := range opensshKeywords {
		kw, ok := lookupKeyword(name)
		if !ok {
			t.Errorf("OpenSSH keyword %s is not in the table", name)
			continue
		}
		isAlias := !strings.EqualFold(kw.name, name)
		if want := slices.Contains(opensshInMatch, name); kw.inMatch != want && !isAlias {
			t.Errorf("%s: allowed in Match = %v, OpenSSH: %v", kw.name, kw.inMatch, want)
		}
	}
	for _, kw := range keywords {
		isOpenSSH := slices.Contains(opensshKeywords, strings.ToLower(kw.name))
		if n := btoi(isOpenSSH) + btoi(kw.isOwn) + btoi(kw.debian); n != 1 {
			t.Errorf("%s: OpenSSH's %v, offload's own %v, Debian's %v", kw.name, isOpenSSH, kw.isOwn, kw.debian)
		}
	}
}

// TestKeywordTable checks what each status promises, with each entry's
// example value.
func TestKeywordTable(t *testing.T) {
	owners := []string{"auth", "connection", "transport", "lead", "config", ""}
	def := printed(Defaults())
	for _, ki := range KeywordTable() {
		line := ki.Name + " " + ki.Example + "\n"
		switch ki.Status {
		case Supported:
			if ki.Applied == "" || ki.Example == "" {
				t.Errorf("%s: supported without Applied or an example", ki.Name)
				continue
			}
			if ki.Name == "Include" || ki.Name == "Match" {
				continue // the reader's; TestInclude and TestMatch
			}
			c, err := Parse("f", strings.NewReader(line), nil)
			if err != nil {
				t.Errorf("%s: example: %v", ki.Name, err)
			} else if printed(c) == def {
				t.Errorf("%s: example %q prints as the default", ki.Name, ki.Example)
			}
		case Refused:
			if ki.What == "" || !slices.Contains(owners, ki.Owner) {
				t.Errorf("%s: refused without a feature name or with owner %q", ki.Name, ki.Owner)
			}
			if err := parseErr(line); !errors.Is(err, ErrNotImplemented) || !strings.Contains(err.Error(), ki.What) {
				t.Errorf("%s: example %q: %v", ki.Name, ki.Example, err)
			}
			if ki.Accepted == "" {
				continue
			}
			c, err := Parse("f", strings.NewReader(ki.Name+" "+ki.Accepted+"\n"), nil)
			if err != nil || printed(c) != def {
				t.Errorf("%s %s: accepted value: %v, or it changes the configuration", ki.Name, ki.Accepted, err)
			}
		case Inert:
			if ki.InertNow == nil || !ki.InertNow() {
				t.Errorf("%s: inert while %q, which is no longer refused: implement it (or refuse it)", ki.Name, ki.InertWhile)
			}
			if _, err := Parse("f", strings.NewReader(line), nil); err != nil {
				t.Errorf("%s: example: %v", ki.Name, err)
			}
		case Deprecated, Unsupported:
			c := parse(t, line)
			if len(c.Warnings()) != 1 || printed(c) != def {
				t.Errorf("%s: warnings %v", ki.Name, c.Warnings())
			}
		default:
			t.Errorf("%s: no status", ki.Name)
		}
	}
}

// TestKeywordsInMatch: inside a Match block a keyword sshd does not allow
// there fails with sshd's message; one offload applies only server-wide is
// refused; the others are accepted.
func TestKeywordsInMatch(t *testing.T) {
	for _, ki := range KeywordTable() {
		if ki.Name == "Include" || ki.Name == "Match" {
			continue
		}
		text := "Match User alice\n\t" + ki.Name + " " + ki.Example + "\n"
		err := parseErr(text)
		switch {
		case !ki.InMatch:
			if !errors.Is(err, ErrNotInMatch) || !strings.Contains(err.Error(), "directive '"+ki.Name+"' is not allowed within a Match block") {
				t.Errorf("%s in Match: %v", ki.Name, err)
			}
		case ki.Status == Supported && !ki.PerConnection:
			if !errors.Is(err, ErrNotImplemented) || !strings.Contains(err.Error(), "inside a Match block") {
				t.Errorf("%s in Match: %v", ki.Name, err)
			}
		case ki.Status == Refused:
			if !errors.Is(err, ErrNotImplemented) {
				t.Errorf("%s in Match: %v", ki.Name, err)
			}
		default:
			if err != nil {
				t.Errorf("%s in Match: %v", ki.Name, err)
			}
		}
	}
	// Match all is the global context again, as in sshd.
	c := parse(t, "Match all\nPort 2200\n")
	if !slices.Equal(c.Ports, []int{2200}) {
		t.Errorf("Match all: Ports %v", c.Ports)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
