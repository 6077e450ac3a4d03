//go:build cgo && !nopkcs11

package pkcs11

import (
	"errors"
	"fmt"
	"strings"

	"github.com/miekg/pkcs11"
)

// classOfCode maps a CKR_* value to its class.
func classOfCode(rv uint) Class {
	switch rv {
	case pkcs11.CKR_OK:
		return ClassOK
	case pkcs11.CKR_SESSION_HANDLE_INVALID, pkcs11.CKR_SESSION_CLOSED, pkcs11.CKR_OPERATION_ACTIVE,
		pkcs11.CKR_OPERATION_NOT_INITIALIZED, pkcs11.CKR_CRYPTOKI_NOT_INITIALIZED:
		return ClassSession
	case pkcs11.CKR_OBJECT_HANDLE_INVALID, pkcs11.CKR_KEY_HANDLE_INVALID:
		return ClassHandle
	case pkcs11.CKR_DEVICE_REMOVED, pkcs11.CKR_TOKEN_NOT_PRESENT, pkcs11.CKR_DEVICE_ERROR,
		pkcs11.CKR_SLOT_ID_INVALID, pkcs11.CKR_TOKEN_NOT_RECOGNIZED, pkcs11.CKR_GENERAL_ERROR,
		pkcs11.CKR_USER_PIN_NOT_INITIALIZED: // a token being set up: the PIN was not checked
		return ClassDevice
	case pkcs11.CKR_USER_NOT_LOGGED_IN:
		return ClassLogin
	case pkcs11.CKR_PIN_INCORRECT, pkcs11.CKR_PIN_LOCKED, pkcs11.CKR_PIN_EXPIRED, pkcs11.CKR_PIN_INVALID,
		pkcs11.CKR_PIN_LEN_RANGE:
		return ClassPIN
	case pkcs11.CKR_MECHANISM_INVALID, pkcs11.CKR_MECHANISM_PARAM_INVALID, pkcs11.CKR_KEY_TYPE_INCONSISTENT,
		pkcs11.CKR_KEY_FUNCTION_NOT_PERMITTED, pkcs11.CKR_FUNCTION_NOT_SUPPORTED, pkcs11.CKR_ATTRIBUTE_TYPE_INVALID,
		pkcs11.CKR_DOMAIN_PARAMS_INVALID, pkcs11.CKR_CURVE_NOT_SUPPORTED, pkcs11.CKR_KEY_SIZE_RANGE,
		pkcs11.CKR_TEMPLATE_INCONSISTENT, pkcs11.CKR_ATTRIBUTE_VALUE_INVALID, pkcs11.CKR_KEY_NOT_WRAPPABLE,
		pkcs11.CKR_ATTRIBUTE_SENSITIVE, pkcs11.CKR_KEY_UNEXTRACTABLE:
		return ClassUnsupported
	case pkcs11.CKR_DATA_INVALID, pkcs11.CKR_DATA_LEN_RANGE, pkcs11.CKR_ENCRYPTED_DATA_INVALID,
		pkcs11.CKR_ENCRYPTED_DATA_LEN_RANGE, pkcs11.CKR_SIGNATURE_INVALID, pkcs11.CKR_SIGNATURE_LEN_RANGE,
		pkcs11.CKR_ARGUMENTS_BAD, pkcs11.CKR_TEMPLATE_INCOMPLETE, pkcs11.CKR_BUFFER_TOO_SMALL:
		return ClassInput
	case pkcs11.CKR_HOST_MEMORY, pkcs11.CKR_DEVICE_MEMORY, pkcs11.CKR_SESSION_COUNT, pkcs11.CKR_FUNCTION_FAILED,
		pkcs11.CKR_CANT_LOCK:
		return ClassBusy
	}
	return ClassOther
}

// classify returns the class of an error from a module call.
func classify(err error) Class {
	if err == nil {
		return ClassOK
	}
	var pe pkcs11.Error
	if errors.As(err, &pe) {
		return classOfCode(uint(pe))
	}
	return ClassOf(err)
}

// wrapErr turns an error from a module call into an *Error naming the
// operation, the token and the object. Errors that already are *Error
// pass through.
func wrapErr(err error, op, token, what string) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	var pe pkcs11.Error
	if errors.As(err, &pe) {
		return &Error{Op: op, Token: token, What: what, Class: classOfCode(uint(pe)), Code: uint(pe),
			Name: ckrName(pe), Err: fmt.Errorf("%w: %w", errModule, err)}
	}
	return &Error{Op: op, Token: token, What: what, Class: ClassOther, Err: err}
}

// ckrName returns "CKR_..." for a module error.
func ckrName(pe pkcs11.Error) string {
	s := pe.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}
