package pkcs11faults

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CKR_* values the fault injector is most often asked for, usable in
// builds without cgo (the names follow PKCS #11; see ParseCKR for the rest).
const (
	CKRDeviceError          uint = 0x30
	CKRDeviceMemory         uint = 0x31
	CKRDeviceRemoved        uint = 0x32
	CKRSessionHandleInvalid uint = 0xB3
)

// ckrNames are the CKR_* values ParseCKR knows by name: those the
// provider classifies (classify.go) and a few more.
var ckrNames = map[string]uint{
	"CKR_OK": 0x00, "CKR_HOST_MEMORY": 0x02, "CKR_SLOT_ID_INVALID": 0x03, "CKR_GENERAL_ERROR": 0x05,
	"CKR_FUNCTION_FAILED": 0x06, "CKR_ARGUMENTS_BAD": 0x07, "CKR_CANT_LOCK": 0x0A,
	"CKR_ATTRIBUTE_SENSITIVE": 0x11, "CKR_ATTRIBUTE_TYPE_INVALID": 0x12, "CKR_ATTRIBUTE_VALUE_INVALID": 0x13,
	"CKR_DATA_INVALID": 0x20, "CKR_DATA_LEN_RANGE": 0x21,
	"CKR_DEVICE_ERROR": 0x30, "CKR_DEVICE_MEMORY": 0x31, "CKR_DEVICE_REMOVED": 0x32,
	"CKR_ENCRYPTED_DATA_INVALID": 0x40, "CKR_ENCRYPTED_DATA_LEN_RANGE": 0x41, "CKR_FUNCTION_CANCELED": 0x50,
	"CKR_FUNCTION_NOT_SUPPORTED": 0x54, "CKR_KEY_HANDLE_INVALID": 0x60, "CKR_KEY_SIZE_RANGE": 0x62,
	"CKR_KEY_TYPE_INCONSISTENT": 0x63, "CKR_KEY_FUNCTION_NOT_PERMITTED": 0x68, "CKR_KEY_NOT_WRAPPABLE": 0x69,
	"CKR_KEY_UNEXTRACTABLE": 0x6A, "CKR_MECHANISM_INVALID": 0x70, "CKR_MECHANISM_PARAM_INVALID": 0x71,
	"CKR_OBJECT_HANDLE_INVALID": 0x82, "CKR_OPERATION_ACTIVE": 0x90, "CKR_OPERATION_NOT_INITIALIZED": 0x91,
	"CKR_PIN_INCORRECT": 0xA0, "CKR_PIN_INVALID": 0xA1, "CKR_PIN_LEN_RANGE": 0xA2, "CKR_PIN_EXPIRED": 0xA3,
	"CKR_PIN_LOCKED": 0xA4, "CKR_SESSION_CLOSED": 0xB0, "CKR_SESSION_COUNT": 0xB1,
	"CKR_SESSION_HANDLE_INVALID": 0xB3, "CKR_SIGNATURE_INVALID": 0xC0, "CKR_SIGNATURE_LEN_RANGE": 0xC1,
	"CKR_TEMPLATE_INCOMPLETE": 0xD0, "CKR_TEMPLATE_INCONSISTENT": 0xD1, "CKR_TOKEN_NOT_PRESENT": 0xE0,
	"CKR_TOKEN_NOT_RECOGNIZED": 0xE1, "CKR_USER_ALREADY_LOGGED_IN": 0x100, "CKR_USER_NOT_LOGGED_IN": 0x101,
	"CKR_USER_PIN_NOT_INITIALIZED": 0x102, "CKR_DOMAIN_PARAMS_INVALID": 0x130, "CKR_CURVE_NOT_SUPPORTED": 0x140,
	"CKR_BUFFER_TOO_SMALL": 0x150, "CKR_CRYPTOKI_NOT_INITIALIZED": 0x190,
	"CKR_CRYPTOKI_ALREADY_INITIALIZED": 0x191, "CKR_FUNCTION_REJECTED": 0x200,
}

// ParseCKR reads a CKR_* value: a name ("CKR_DEVICE_REMOVED", the prefix
// and case optional) or a number (0x32, 50).
func ParseCKR(s string) (uint, error) {
	s = strings.TrimSpace(s)
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "CKR_") {
		name = "CKR_" + name
	}
	if v, ok := ckrNames[name]; ok {
		return v, nil
	}
	if v, err := strconv.ParseUint(s, 0, 32); err == nil {
		return uint(v), nil
	}
	return 0, fmt.Errorf("pkcs11faults: unknown CKR_* value %q (give a name such as CKR_DEVICE_REMOVED or a number)", s)
}

// CKRName returns the name of a CKR_* value ParseCKR knows, or its number
// in hexadecimal.
func CKRName(code uint) string {
	for n, v := range ckrNames {
		if v == code {
			return n
		}
	}
	return fmt.Sprintf("0x%X", code)
}

// Parse reads a fault from space-separated key=value fields, for
// configuration and command lines:
//
//	calls=sign,bulk code=CKR_DEVICE_REMOVED times=3 slot=1234 delay=50ms max-delay=200ms
//
// calls is required; code, delay or both; times (0: until removed), slot
// (a comma-separated list) and max-delay are optional. Fault.String
// prints this form back.
func Parse(spec string) (Fault, error) {
	var ft Fault
	seen := map[string]bool{}
	for _, field := range strings.Fields(spec) {
		k, v, ok := strings.Cut(field, "=")
		if !ok || v == "" {
			return Fault{}, fmt.Errorf("pkcs11faults: fault %q: field %q is not key=value", spec, field)
		}
		if seen[k] {
			return Fault{}, fmt.Errorf("pkcs11faults: fault %q: %s given twice", spec, k)
		}
		seen[k] = true
		if err := ft.set(k, v); err != nil {
			return Fault{}, fmt.Errorf("pkcs11faults: fault %q: %w", spec, err)
		}
	}
	if _, err := newFaultRule(ft); err != nil {
		return Fault{}, err
	}
	return ft, nil
}

func (ft *Fault) set(k, v string) error {
	var err error
	switch k {
	case "calls":
		ft.Calls = strings.Split(v, ",")
		_, err = faultMask(ft.Calls)
	case "code":
		ft.Code, err = ParseCKR(v)
	case "times":
		ft.Times, err = strconv.Atoi(v)
	case "delay":
		ft.Delay, err = time.ParseDuration(v)
	case "max-delay":
		ft.MaxDelay, err = time.ParseDuration(v)
	case "slot":
		for _, s := range strings.Split(v, ",") {
			n, perr := strconv.ParseUint(s, 0, 32)
			if perr != nil {
				return fmt.Errorf("slot %q is not a number", s)
			}
			ft.Slots = append(ft.Slots, uint(n))
		}
	default:
		return fmt.Errorf("unknown field %q (want calls, code, times, slot, delay, max-delay)", k)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", k, err)
	}
	return nil
}

// String prints the fault as Parse reads it.
func (ft Fault) String() string {
	parts := []string{"calls=" + strings.Join(ft.Calls, ",")}
	if ft.Code != 0 {
		parts = append(parts, "code="+CKRName(ft.Code))
	}
	if ft.Times != 0 {
		parts = append(parts, "times="+strconv.Itoa(ft.Times))
	}
	if len(ft.Slots) > 0 {
		s := make([]string, len(ft.Slots))
		for i, n := range ft.Slots {
			s[i] = strconv.FormatUint(uint64(n), 10)
		}
		parts = append(parts, "slot="+strings.Join(s, ","))
	}
	if ft.Delay != 0 {
		parts = append(parts, "delay="+ft.Delay.String())
	}
	if ft.MaxDelay != 0 {
		parts = append(parts, "max-delay="+ft.MaxDelay.String())
	}
	return strings.Join(parts, " ")
}
